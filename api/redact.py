"""Kept for imports: the one redaction function lives in ``kg.redact``."""

from __future__ import annotations

from kg.redact import scrub

__all__ = ["scrub"]
