"""In-place migration of a graph written by an older kg to :data:`kg.graph.meta.MODEL_VERSION`.

Model 1 -> 2:
1. every Entity-to-Entity relation gets ``predicate`` = its type;
2. each predicate gets its storage decided by the writer's rule (its own type for the ones
   that matter, ``RELATED`` for the long tail and for names kg reserves for structure), and
   relations of the long tail are moved to ``RELATED`` with all their properties;
3. documents get ``source`` (their old ``root``) and the source-scoped id, their chunks follow,
   and their hash is cleared, so the next ``kg ingest`` rewrites each one in the new form
   instead of reporting it unchanged;
4. the graph is stamped with the new version.
Every step is idempotent, so a migration that stops midway can simply be run again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, LiteralString, cast

from neo4j import Driver

from kg.documents import document_id
from kg.errors import StoreError
from kg.graph.meta import MODEL_VERSION, read_model, stamp
from kg.graph.writer import GraphWriter
from kg.models import GENERIC_RELATION_TYPE, is_relation_type

_SET_PREDICATES: LiteralString = """
MATCH (:Entity)-[r]->(:Entity) WHERE r.predicate IS NULL
CALL (r) { SET r.predicate = type(r) } IN TRANSACTIONS OF 10000 ROWS
"""

_PREDICATE_COUNTS: LiteralString = """
MATCH (:Entity)-[r]->(:Entity)
RETURN r.predicate AS predicate, type(r) AS type, count(*) AS n
"""

# Rendered per type from the allowlist (the types come from the graph and pass
# is_relation_type); one batch per run, repeated until nothing is left.
_RETYPE_TEMPLATE = """
MATCH (a:Entity)-[r:`__TYPE__`]->(b:Entity)
WITH a, r, b LIMIT 5000
CREATE (a)-[n:RELATED]->(b)
SET n = properties(r)
DELETE r
RETURN count(*) AS moved
"""

_OLD_DOCUMENTS: LiteralString = """
MATCH (d:Document) WHERE d.source IS NULL
RETURN d.id AS id, d.path AS path, coalesce(d.root, '') AS root
"""

_REID_DOCUMENTS: LiteralString = """
UNWIND $rows AS row
MATCH (d:Document {id: row.old})
SET d.id = row.new, d.source = row.source, d.sha256 = null
WITH d, row
MATCH (c:Chunk {document_id: row.old})
SET c.document_id = row.new
"""


@dataclass
class MigrationReport:
    from_version: int | None
    to_version: int = MODEL_VERSION
    relations_retyped: int = 0
    predicates: int = 0
    documents_reset: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def migrate(driver: Driver, database: str, writer: GraphWriter) -> MigrationReport:
    """Bring the graph to the current model; a current graph is left alone."""
    found = read_model(driver, database).effective
    report = MigrationReport(from_version=found)
    if found is None or found == MODEL_VERSION:
        if found is None:
            stamp(driver, database)
        report.notes.append("nothing to do")
        return report
    if found > MODEL_VERSION:
        raise StoreError(f"graph model {found} is newer than this kg ({MODEL_VERSION})")
    with driver.session(database=database) as session:
        session.run(_SET_PREDICATES).consume()  # IN TRANSACTIONS needs an auto-commit run
    records, _, _ = driver.execute_query(_PREDICATE_COUNTS, database_=database)
    counts: dict[str, int] = {}
    stored_types: set[str] = set()
    for r in records:
        counts[r["predicate"]] = counts.get(r["predicate"], 0) + int(r["n"])
        stored_types.add(r["type"])
    storage = writer.predicate_storage(counts)
    report.predicates = len(storage)
    long_tail = sorted(
        t for t in stored_types if storage.get(t) == GENERIC_RELATION_TYPE and t != "RELATED"
    )
    for rel_type in long_tail:
        report.relations_retyped += _retype(driver, database, rel_type)
    report.documents_reset = _reid_documents(driver, database, writer.batch_size)
    stamp(driver, database)
    return report


def _retype(driver: Driver, database: str, rel_type: str) -> int:
    if not is_relation_type(rel_type):
        raise StoreError(f"refusing to render relationship type {rel_type!r}")
    query = cast(LiteralString, _RETYPE_TEMPLATE.replace("__TYPE__", rel_type))
    total = 0
    while True:
        records, _, _ = driver.execute_query(query, database_=database)
        moved = int(records[0]["moved"]) if records else 0
        total += moved
        if moved == 0:
            return total


def _reid_documents(driver: Driver, database: str, batch_size: int) -> int:
    records, _, _ = driver.execute_query(_OLD_DOCUMENTS, database_=database)
    rows = [
        {"old": r["id"], "new": document_id(r["path"], r["root"]), "source": r["root"]}
        for r in records
    ]
    for start in range(0, len(rows), batch_size):
        driver.execute_query(_REID_DOCUMENTS, rows=rows[start : start + batch_size],
                             database_=database)  # fmt: skip
    return len(rows)
