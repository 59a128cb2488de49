"""Predicate normalization: free text to the UPPER_SNAKE relationship type Neo4j will show.

Shared by the extraction schema, the importer and the graph writer, so one spelling of a
relation ("published by", "publishedBy", "Published-By") always lands on one type
(``PUBLISHED_BY``). Unicode letters are kept: ``"является частью"`` -> ``ЯВЛЯЕТСЯ_ЧАСТЬЮ``.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_PREDICATE_LENGTH", "PREDICATE_RE", "is_valid_predicate", "normalize_predicate"]

MAX_PREDICATE_LENGTH = 64
# A letter first, then letters, digits or underscores: nothing Cypher would need quoted.
PREDICATE_RE = re.compile(r"^[^\W\d_]\w{0,63}$")

_NON_WORD = re.compile(r"[\W_]+")


def normalize_predicate(value: str) -> str:
    """Return ``value`` as UPPER_SNAKE, or raise ``ValueError`` if no letter survives."""
    text = unicodedata.normalize("NFKC", str(value)).strip()
    text = _split_camel(text)
    text = _NON_WORD.sub("_", text).strip("_")
    # The type must start with a letter: drop leading digits ("3d_printed_by" -> "D_PRINTED_BY"
    # would be wrong, so we drop the whole leading numeric word instead).
    while text and not text[0].isalpha():
        head, _, rest = text.partition("_")
        text = rest if head and not head[0].isalpha() else text[1:]
    text = text.upper()[:MAX_PREDICATE_LENGTH].rstrip("_")
    if not text or not PREDICATE_RE.match(text):
        raise ValueError(f"predicate {value!r} has no usable letters")
    return text


def _split_camel(text: str) -> str:
    """``ownedBy`` -> ``owned_By`` for any script with case (Latin, Cyrillic, Greek ...)."""
    out: list[str] = []
    for i, ch in enumerate(text):
        if i and ch.isupper() and text[i - 1].islower():
            out.append("_")
        out.append(ch)
    return "".join(out)


def is_valid_predicate(value: str) -> bool:
    """True when ``value`` is already a normalized predicate (safe as a relationship type)."""
    return bool(PREDICATE_RE.match(value)) and value == value.upper()
