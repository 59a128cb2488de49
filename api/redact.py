"""Keep secrets out of logs: Neo4j passwords, API keys, ``user:pass@`` in URIs."""

from __future__ import annotations

import re
from collections.abc import Iterable

_URI_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret and URI userinfo replaced by ``***``."""
    text = _URI_USERINFO.sub("***@", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
