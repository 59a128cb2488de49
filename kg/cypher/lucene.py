"""Turning a free-text question into a safe Lucene query for the fulltext index."""

from __future__ import annotations

import re

_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')
_WORD = re.compile(r"\w")
_OPERATORS = frozenset({"AND", "OR", "NOT", "TO"})
MAX_TERMS = 64


def escape_lucene(text: str, max_terms: int = MAX_TERMS) -> str:
    """Every character Lucene treats as syntax escaped; operator words lower-cased.

    The result is a plain OR of terms, so a question holding ``"`` or ``title:(x OR y)``
    searches for those words rather than failing to parse. Empty when nothing is searchable.
    """
    terms: list[str] = []
    for raw in text.replace("\x00", " ").split():
        if not _WORD.search(raw):
            continue
        term = raw.lower() if raw in _OPERATORS else raw
        terms.append(_SPECIAL.sub(r"\\\1", term))
        if len(terms) >= max_terms:
            break
    return " ".join(terms)
