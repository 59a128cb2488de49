"""The base of kg's pydantic models: each builds its validator on first use, not at import.

A command imports many models and uses a few: ``kg search --mode text`` loads some eighty and
validates a handful. Built at import they cost more than a fifth of the CLI's 0.6 s bound
(docs/architecture.md, "A CLI at the speed of its work"); deferred, a model pays on its first
validation, once per process.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Model"]


class Model(BaseModel):
    """``BaseModel`` with ``defer_build``: a subclass's own ``model_config`` merges with it."""

    model_config = ConfigDict(defer_build=True)
