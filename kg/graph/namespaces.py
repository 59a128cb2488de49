"""Forgetting a namespace: its documents, chunks, the facts only it supported, the entities
left with no mention and no fact, and the community reports built from it.

A namespace is a document source (``kg ingest --namespace NAME``, else the folder's absolute
path). Removal goes through the writer's one removal path
(:meth:`kg.graph.writer.GraphWriter.delete_documents`, the path a changed or deleted file
takes), so what other namespaces share survives with their provenance only: a shared fact keeps
the other namespaces' chunk ids, a shared entity the aliases and description their texts gave.
Community reports embed their members' text, so every community with a member in the namespace
goes too (``kg communities build`` makes them again from what is left). Running it again finds
nothing and removes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, LiteralString

from neo4j import Driver

from kg.errors import ConfigError
from kg.graph.driver import repeat_batches
from kg.graph.writer import GraphWriter
from kg.limits import check_namespace

__all__ = ["ForgetReport", "forget"]

_DOCUMENTS: LiteralString = """
MATCH (d:Document {source: $namespace})
RETURN d.id AS id ORDER BY id
"""

# What the removal will take: the namespace's chunks, and its facts (those it alone supports go).
_BEFORE: LiteralString = """
CALL () { MATCH (c:Chunk {namespace: $namespace}) RETURN count(c) AS chunks }
CALL () {
  MATCH (f:Fact) WHERE $namespace IN f.namespaces
  RETURN count(f) AS facts, count(CASE WHEN size(f.namespaces) = 1 THEN 1 END) AS only
}
RETURN chunks, facts, only
"""

# Chunks of the namespace whose document is gone (a crash between the two deletes).
_STRAY_CHUNK_DOCUMENTS: LiteralString = """
MATCH (c:Chunk {namespace: $namespace})
RETURN DISTINCT c.document_id AS id
"""

_DELETE_COMMUNITIES: LiteralString = """
MATCH (c:Community) WHERE $namespace IN coalesce(c.namespaces, [])
WITH c LIMIT 1000
DETACH DELETE c
RETURN count(*) AS deleted
"""

# A Predicate no fact uses any more (the namespace's own words): deleted, so that no template
# lists text made from forgotten documents (kg/cypher/render.py RELATION_TYPES). A promoted one
# frees its place under the cap of relationship types (kg/graph/writer.py); the relationship
# type Neo4j made for it stays a token in the store (Neo4j never deletes tokens), with no
# relationship of that type and listed by no kg template. One fact_predicate lookup each.
_DELETE_UNUSED_PREDICATES: LiteralString = """
MATCH (p:Predicate)
WHERE NOT EXISTS { MATCH (f:Fact) WHERE f.predicate = p.name }
WITH p LIMIT 5000
DETACH DELETE p
RETURN count(*) AS deleted
"""


@dataclass(frozen=True)
class ForgetReport:
    """What ``kg forget`` removed (all zero when there was nothing to remove)."""

    namespace: str
    documents: int = 0
    chunks: int = 0
    facts_removed: int = 0  # facts only this namespace supported
    facts_kept: int = 0  # facts other namespaces support too (they lose this one's provenance)
    entities_removed: int = 0  # left with no mention and no fact
    communities_removed: int = 0  # reports built from the namespace's members
    predicates_removed: int = 0  # predicates no remaining fact uses

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def forget(driver: Driver, database: str, writer: GraphWriter, namespace: str) -> ForgetReport:
    """Remove ``namespace`` from the graph; other namespaces keep everything of theirs."""
    name = namespace.strip()
    problem = check_namespace(name) if name else "must not be empty"
    if problem:
        raise ConfigError(f"--namespace: {problem}")
    records, _, _ = driver.execute_query(_DOCUMENTS, namespace=name, database_=database)
    ids = [str(r["id"]) for r in records]
    records, _, _ = driver.execute_query(_BEFORE, namespace=name, database_=database)
    chunks, facts, only = (int(records[0][k]) for k in ("chunks", "facts", "only"))
    strays, _, _ = driver.execute_query(_STRAY_CHUNK_DOCUMENTS, namespace=name, database_=database)
    stray_ids = sorted({str(r["id"]) for r in strays} - set(ids))
    counts = writer.delete_documents(ids)
    if stray_ids:
        counts.add(writer.remove_document_contents(stray_ids))
    communities = repeat_batches(driver, database, _DELETE_COMMUNITIES, "deleted", namespace=name)
    predicates = repeat_batches(driver, database, _DELETE_UNUSED_PREDICATES, "deleted")
    return ForgetReport(
        namespace=name,
        documents=len(ids),
        chunks=chunks,
        facts_removed=only,
        facts_kept=facts - only,
        entities_removed=counts.entities_deleted,
        communities_removed=communities,
        predicates_removed=predicates,
    )
