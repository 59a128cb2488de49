"""A second label per entity type (``:Entity:Service``), so that Neo4j Browser can colour
entities by type: a GRASS style selects nodes by label only.

Labels come from data (the entity's type), so they are bounded and allowlisted as relationship
types are (kg.models.RELATION_TYPE_RE): a type becomes a label only when it spells one in
PascalCase ASCII (``Service``, ``programming language`` -> ``ProgrammingLanguage``), is not a
label kg uses for structure, and the graph holds fewer than ``write.max_type_labels`` type labels
yet. The labels granted so far are kept on the model stamp (``KgMeta.type_labels``), first come
first served, so a run with 10,000 invented types adds at most that many labels. Entities of other
types keep ``:Entity`` alone and the style's Entity colour; search never reads these labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import LiteralString

from neo4j import Driver

from kg.languages import LABELS as LANGUAGE_LABELS

TYPE_LABEL_RE = re.compile(r"[A-Z][A-Za-z0-9]{1,39}")
#: Labels kg gives nodes for structure: never a type's.
RESERVED = frozenset(
    {"Entity", "Chunk", "Document", "Community", "KgMeta", "Predicate", "Fact", *LANGUAGE_LABELS}
)

_READ: LiteralString = "OPTIONAL MATCH (m:KgMeta {id: 'kg'}) RETURN m.type_labels AS labels"
_GRANT: LiteralString = """
MERGE (m:KgMeta {id: 'kg'})
SET m.type_labels = coalesce(m.type_labels, [])
    + [l IN $labels WHERE NOT l IN coalesce(m.type_labels, [])]
"""


def type_label(entity_type: str) -> str | None:
    """The label ``entity_type`` would get, or None when it cannot be one."""
    parts = re.findall(r"[A-Za-z0-9]+", entity_type)
    label = "".join(p[0].upper() + p[1:] for p in parts)
    if not TYPE_LABEL_RE.fullmatch(label) or label in RESERVED:
        return None
    if len("".join(parts)) != len(re.sub(r"[\s_\-]", "", entity_type)):
        return None  # other characters (Cyrillic, punctuation) would be dropped: not the type
    return label


def grant(driver: Driver, database: str, types: Iterable[str], limit: int) -> dict[str, str]:
    """Labels for ``types``: those already granted, and new ones while fewer than ``limit``
    exist. Returns type -> label for the types that have one."""
    if not any(type_label(t) is not None for t in set(types)):
        return {}
    records, _, _ = driver.execute_query(_READ, database_=database)
    granted = list(records[0]["labels"] or []) if records else []
    new, labels = choose(granted, types, limit)
    if new:
        driver.execute_query(_GRANT, labels=new, database_=database)
    return labels


def choose(
    granted: list[str], types: Iterable[str], limit: int
) -> tuple[list[str], dict[str, str]]:
    """The decision of :func:`grant` without the store: the labels to grant now (first come,
    in name order, while fewer than ``limit`` exist), and type -> label for the types that
    have one afterwards. A bulk load (kg.bulk) keeps ``granted`` in memory."""
    wanted = {t: label for t in set(types) if (label := type_label(t)) is not None}
    new = [label for label in sorted(set(wanted.values())) if label not in granted]
    new = new[: max(0, limit - len(granted))]
    allowed = {*granted, *new}
    return new, {t: label for t, label in wanted.items() if label in allowed}
