"""Bounds on text from data that reaches an indexed property of the graph, defined once.

Neo4j refuses to index a property value whose key is larger than 8,167 bytes in a range index
("Property value is too large to index"), and the refusal fails the whole write batch: one
9,000-character heading once left every document of its folder without a hash, on every rerun
(issue 26, break 1). So every text from data that reaches an indexed property has a bound here,
counted in characters (Python code points, so a cut never splits a character; a code point is at
most 4 UTF-8 bytes, so 1,024 characters are at most 4,096 bytes, half of Neo4j's limit):

- :data:`MAX_NAME_CHARS` (300) for names: entity names, types and aliases, document titles,
  headings, link targets and declared names. Names an LLM extracts or a triplets file states
  are refused over it (the LLM is asked again; an import item drops alone and is reported):
  a cut name could merge with another entity. Names kg takes from a document's structure
  (titles, headings, front matter) are cut with :func:`cut_name`: the document still loads,
  under its first 299 characters and an ellipsis.
- :data:`MAX_KEY_CHARS` (1,024) for identifiers: document paths (a file's relative path, a
  triplets line's ``id``) and sources (the ingested folder's path). They are cut with
  :func:`cut_key`, which keeps the start and appends a hash of the whole value, so two long
  identifiers stay two documents. A ``--namespace`` over the bound is refused
  (:func:`check_namespace`): it names a whole run, and the user can shorten it.

- :data:`MAX_FACT_CHARS` (1,024) for a fact's text (``subject predicate object``, embedded for
  the ``fact_embedding`` vector index): its names are already bounded, the cut keeps any future
  caller's text bounded too. :data:`MAX_FACT_KEY_CHARS` (2,000) for a fact's id (its relation's
  key, indexed by the ``fact_id`` constraint): 2,000 characters are at most 8,000 bytes. kg's own
  entity ids are 20 characters, so only a library caller's 900-character entity ids could make a
  longer key; such a relation gets no fact node.

- :data:`MAX_DESCRIPTION_CHARS` (2,000) for an entity's or a relation's description ("one
  sentence from the text"): not indexed, but stored, returned by every read and sent to the
  LLM in answers, so a 1,000,000-character description from a hostile extraction or triplets
  file would be too (issue 39). It is cut with :func:`cut_name`, never refused: a cut
  description merges nothing.

The graph writer applies the same cuts again to every row it writes, so no caller of the
library can reach an index with an unbounded value either.

Text from data must also be valid Unicode to be stored: a file name that is not valid UTF-8
(Python holds its bytes as lone surrogates) cannot be encoded for Neo4j. :func:`printable_path`
gives such a name a safe, reportable form (``bad\\xff.md``).
"""

from __future__ import annotations

import hashlib

__all__ = [
    "INDEX_KEY_BYTES",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FACT_CHARS",
    "MAX_FACT_KEY_CHARS",
    "MAX_KEY_CHARS",
    "MAX_NAME_CHARS",
    "check_namespace",
    "cut_key",
    "cut_name",
    "is_valid_unicode",
    "printable_path",
]

INDEX_KEY_BYTES = 8167  # Neo4j 5.26: the largest key a range index holds
MAX_NAME_CHARS = 300
MAX_KEY_CHARS = 1024
MAX_FACT_CHARS = 1024
MAX_FACT_KEY_CHARS = 2000
MAX_DESCRIPTION_CHARS = 2000
_ELLIPSIS = "…"
_HASH_CHARS = 16


def cut_name(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters, else its start and an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + _ELLIPSIS


def cut_key(text: str, limit: int = MAX_KEY_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters, else its start, ``…#`` and a hash of all of
    it: deterministic (a rerun finds the same document) and distinct for distinct values."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    suffix = f"{_ELLIPSIS}#{digest}"
    return text[: limit - len(suffix)] + suffix


def check_namespace(namespace: str) -> str | None:
    """Why ``namespace`` cannot name a source, or None when it can."""
    if len(namespace) > MAX_KEY_CHARS:
        return f"namespace is {len(namespace)} characters long; at most {MAX_KEY_CHARS} are allowed"
    if not is_valid_unicode(namespace):
        return "namespace is not valid Unicode (undecodable bytes)"
    return None


def is_valid_unicode(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (undecodable bytes of a file name, or a
    ``\\ud800`` escape in JSON): such text cannot be encoded as UTF-8, so Neo4j cannot store it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(text: str) -> str:
    """``text`` with every lone surrogate written as an escape: ``\\xff`` for an undecodable
    byte of a file name, ``\\ud800`` for any other; valid text is returned unchanged."""
    if is_valid_unicode(text):
        return text
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape of one byte
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)
