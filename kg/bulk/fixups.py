"""What the importer cannot write, set after it: empty arrays.

``neo4j-admin database import`` reads an empty array field as "no value", but the MERGE path
stores ``[]`` (an entity without aliases has ``aliases: []``), and search and migrations read
the two differently. So the export records which rows had an empty array (per file and
property) and these statements set them, batched and parameterized, once the server is back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, LiteralString

from neo4j import Driver

from kg.errors import StoreError

_BATCH = 10_000

# (import file, property) -> the statement that sets it to [] on the listed rows.
_SET_EMPTY: dict[tuple[str, str], LiteralString] = {
    ("entity", "aliases"): "UNWIND $ids AS id MATCH (n:Entity {id: id}) SET n.aliases = []",
    ("entity", "alias_sources"):
        "UNWIND $ids AS id MATCH (n:Entity {id: id}) SET n.alias_sources = []",
    ("entity", "namespaces"): "UNWIND $ids AS id MATCH (n:Entity {id: id}) SET n.namespaces = []",
    ("fact", "chunk_ids"): "UNWIND $ids AS id MATCH (n:Fact {id: id}) SET n.chunk_ids = []",
    ("fact", "namespaces"): "UNWIND $ids AS id MATCH (n:Fact {id: id}) SET n.namespaces = []",
    ("relations", "chunk_ids"):
        "UNWIND $ids AS id MATCH (:Entity {id: split(id, '|')[0]})-[r]->(:Entity) "
        "WHERE r.key = id SET r.chunk_ids = []",
    ("relations", "namespaces"):
        "UNWIND $ids AS id MATCH (:Entity {id: split(id, '|')[0]})-[r]->(:Entity) "
        "WHERE r.key = id SET r.namespaces = []",
}  # fmt: skip


def set_empty_arrays(
    driver: Driver, database: str, empty: Mapping[tuple[str, str], Sequence[str]]
) -> int:
    """Set every recorded empty array; how many properties were set."""
    unknown = sorted(set(empty) - set(_SET_EMPTY))
    if unknown:
        raise StoreError(f"no statement sets these empty arrays after an import: {unknown}")
    done = 0
    for where, ids in sorted(empty.items()):
        for start in range(0, len(ids), _BATCH):
            batch: list[Any] = list(ids[start : start + _BATCH])
            driver.execute_query(_SET_EMPTY[where], ids=batch, database_=database)
            done += len(batch)
    return done
