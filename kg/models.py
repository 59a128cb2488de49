"""Domain types shared by the stages: plain frozen dataclasses, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Document:
    """A loaded source file. ``id`` is stable across runs (derived from the relative path)."""

    id: str
    path: str
    title: str
    text: str
    sha256: str
    # The document's own date (ISO YYYY-MM-DD): front matter, the file's metadata, or its title.
    date: str | None = None


@dataclass(frozen=True)
class Chunk:
    """A piece of a document; ``id`` derives from the document id and the chunk's content hash."""

    id: str
    document_id: str
    index: int
    text: str
    sha256: str


@dataclass(frozen=True)
class SkippedFile:
    """A file the loader did not load, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Mention:
    """One surface form of an entity as extracted from one chunk."""

    name: str
    type: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    chunk_id: str | None = None


@dataclass(frozen=True)
class KnownEntity:
    """An entity already in the graph, as the resolver needs it."""

    id: str
    name: str
    type: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    embedding: tuple[float, ...] | None = None


@dataclass
class ResolvedEntity:
    """A canonical entity after resolution, ready to write."""

    id: str
    name: str
    type: str
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    embedding: list[float] | None = None


@dataclass(frozen=True)
class MergeRecord:
    """An audit row: ``mention`` joined ``entity_id`` by ``method`` with ``score``."""

    mention: str
    mention_type: str
    entity_id: str
    canonical: str
    score: float
    method: str


# The one allowlist for names that may reach query text as relationship types, and for
# predicates named in filters: a letter, then letters, digits or underscores (any script), at
# most 64 characters, upper case. ``fullmatch`` so that a trailing newline never passes.
RELATION_TYPE_PATTERN = r"[^\W\d_]\w{0,63}"
RELATION_TYPE_RE = re.compile(RELATION_TYPE_PATTERN)

#: Why text that reaches Neo4j or Lucene from a caller may not hold a NUL: the one rule and reason.
NO_NUL = "must not contain NUL characters"


def has_nul(value: str) -> bool:
    return "\x00" in value


def no_nul(value: str) -> str:
    """``value`` unchanged, or a ``ValueError`` (for a Pydantic validator) when it holds a NUL."""
    if has_nul(value):
        raise ValueError(NO_NUL)
    return value


# The relationship type that stores every predicate without a type of its own (the long tail
# of open-vocabulary extraction); the fact's predicate is always on the ``predicate`` property.
GENERIC_RELATION_TYPE = "RELATED"

# Types kg itself uses for structure. An extracted predicate with one of these names is kept as
# a predicate but never stored as that type, so it cannot pose as provenance or structure.
# ABOUT links a fact node to its subject and object (kg/graph/facts.py).
STRUCTURAL_TYPES = frozenset(
    {"MENTIONS", "PART_OF", "NEXT", "IN_COMMUNITY", "PARENT", "ABOUT", GENERIC_RELATION_TYPE}
)


def is_relation_type(name: str) -> bool:
    """True for names safe to put in query text as a relationship type (UPPER_SNAKE, any script)."""
    return (
        isinstance(name, str)
        and RELATION_TYPE_RE.fullmatch(name) is not None
        and name == name.upper()
    )
