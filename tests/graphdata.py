"""A small graph in kg's exact graph model, written with parameterized Cypher (tests only).

Two documents about a payments platform and one in Russian. The entities and relations let
tests ask 2-hop questions (Payment Service -DEPENDS_ON-> Ledger DB -OWNED_BY-> Finance Team),
check validity in time (HOSTED_ON Legacy Mainframe closed in 2022, HOSTED_ON Kubernetes
Cluster since then) and use a Unicode relationship type (ЯВЛЯЕТСЯ_ЧАСТЬЮ).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, TypeVar

from neo4j import Driver

from kg.cypher.templates import REGISTRY, Registry
from kg.graph.driver import open_async_driver
from kg.resolve import make_embedder
from kg.resolve.embed import make_chunk_embedder
from kg.search.service import SearchService
from kg.settings import Settings
from tests.fixture_model import as_current_model

T = TypeVar("T")

DOCUMENTS = [
    {"id": "doc-pay", "path": "docs/payments.md", "title": "Payments"},
    {"id": "doc-auth", "path": "docs/auth.md", "title": "Auth"},
    {"id": "doc-ru", "path": "docs/ru/платежи.md", "title": "Платежи"},
]

# (id, document, index, text, mentioned entity ids)
CHUNKS = [
    (
        "c-pay-1",
        "doc-pay",
        0,
        "The Payment Service depends on the Ledger DB for balances.",
        ["payment", "ledger"],
    ),
    ("c-pay-2", "doc-pay", 1, "The Ledger DB is owned by the Finance Team.", ["ledger", "finance"]),
    (
        "c-pay-3",
        "doc-pay",
        2,
        "Until mid-2022 the Payment Service ran on the Legacy Mainframe; it moved to the "
        "Kubernetes Cluster.",
        ["payment", "mainframe", "k8s"],
    ),
    (
        "c-auth-1",
        "doc-auth",
        0,
        "The Auth Service calls the User Store to check passwords.",
        ["auth", "userstore"],
    ),
    ("c-ru-1", "doc-ru", 0, "Команда финансов является частью Acme Corp.", ["finance", "acme"]),
]

# (id, name, type, description, aliases)
ENTITIES = [
    ("payment", "Payment Service", "service", "Takes card payments.", ["payments-svc"]),
    ("ledger", "Ledger DB", "database", "Double-entry ledger.", ["ledger"]),
    ("finance", "Finance Team", "team", "Owns money-related systems.", ["Команда финансов"]),
    ("auth", "Auth Service", "service", "Logs users in.", []),
    ("userstore", "User Store", "database", "Users and password hashes.", []),
    ("mainframe", "Legacy Mainframe", "system", "The old host.", []),
    ("k8s", "Kubernetes Cluster", "system", "The new host.", ["k8s"]),
    ("acme", "Acme Corp", "organization", "The company.", []),
]

# (source, type, target, weight, valid_from, valid_to, chunk_ids)
RELATIONS: list[tuple[str, str, str, float, Any, Any, list[str]]] = [
    ("payment", "DEPENDS_ON", "ledger", 0.9, date(2020, 1, 1), None, ["c-pay-1"]),
    ("ledger", "OWNED_BY", "finance", 0.8, None, None, ["c-pay-2"]),
    ("auth", "CALLS", "userstore", 0.7, None, None, ["c-auth-1"]),
    (
        "payment",
        "HOSTED_ON",
        "mainframe",
        0.9,
        date(2015, 1, 1),
        datetime(2022, 6, 30, tzinfo=UTC),
        ["c-pay-3"],
    ),
    ("payment", "HOSTED_ON", "k8s", 0.9, datetime(2022, 6, 30, tzinfo=UTC), None, ["c-pay-3"]),
    ("finance", "ЯВЛЯЕТСЯ_ЧАСТЬЮ", "acme", 0.6, None, None, ["c-ru-1"]),
]

_DOCS = """
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
SET d.path = row.path, d.title = row.title, d.sha256 = row.sha256, d.ingested_at = datetime()
"""
_CHUNKS = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document})
MERGE (c:Chunk {id: row.id})
SET c.index = row.index, c.text = row.text, c.sha256 = row.sha256, c.embedding = row.embedding,
    c.document_id = d.id,
    c.title = d.title
MERGE (c)-[:PART_OF]->(d)
"""
_NEXT = """
MATCH (a:Chunk)-[:PART_OF]->(d:Document)<-[:PART_OF]-(b:Chunk)
WHERE b.index = a.index + 1
MERGE (a)-[:NEXT]->(b)
"""
_ENTITIES = """
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
SET e.name = row.name, e.type = row.type, e.description = row.description,
    e.aliases = row.aliases, e.embedding = row.embedding
"""
_MENTIONS = """
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk}), (e:Entity {id: row.entity})
MERGE (c)-[:MENTIONS]->(e)
"""
# Parameterized dynamic relationship type, as the ingest writer does (Neo4j 5.26).
_RELATIONS = """
UNWIND $rows AS row
MATCH (s:Entity {id: row.source}), (t:Entity {id: row.target})
CREATE (s)-[r:$(row.type)]->(t)
SET r.description = row.description, r.weight = row.weight, r.validFrom = row.valid_from,
    r.validTo = row.valid_to, r.chunk_ids = row.chunk_ids, r.first_seen = datetime(),
    r.last_seen = datetime()
"""


@dataclass(frozen=True)
class GraphCounts:
    nodes: int
    relationships: int


def write_test_graph(driver: Driver, settings: Settings) -> None:
    """Write the graph above; embeddings come from kg's own (offline) embedders: the chunk
    embedder (WordLlama) for chunks, the entity embedder (n-gram hashing) for names."""
    embedder = make_embedder(settings.resolve)
    chunk_embedder = make_chunk_embedder(settings.chunks)
    db = settings.neo4j.database
    driver.execute_query(
        _DOCS, {"rows": [{**d, "sha256": d["id"]} for d in DOCUMENTS]}, database_=db
    )
    chunk_vectors = chunk_embedder.embed([c[3] for c in CHUNKS])
    driver.execute_query(
        _CHUNKS,
        {
            "rows": [
                {
                    "id": cid,
                    "document": doc,
                    "index": idx,
                    "text": text,
                    "sha256": cid,
                    "embedding": [float(x) for x in vec],
                }
                for (cid, doc, idx, text, _), vec in zip(CHUNKS, chunk_vectors, strict=True)
            ]
        },
        database_=db,
    )
    driver.execute_query(_NEXT, database_=db)
    entity_vectors = embedder.embed([e[1] for e in ENTITIES])
    driver.execute_query(
        _ENTITIES,
        {
            "rows": [
                {
                    "id": eid,
                    "name": name,
                    "type": typ,
                    "description": desc,
                    "aliases": aliases,
                    "embedding": [float(x) for x in vec],
                }
                for (eid, name, typ, desc, aliases), vec in zip(
                    ENTITIES, entity_vectors, strict=True
                )
            ]
        },
        database_=db,
    )
    driver.execute_query(
        _MENTIONS,
        {"rows": [{"chunk": c[0], "entity": e} for c in CHUNKS for e in c[4]]},
        database_=db,
    )
    driver.execute_query(
        _RELATIONS,
        {
            "rows": [
                {
                    "source": s,
                    "type": t,
                    "target": o,
                    "weight": w,
                    "valid_from": vf,
                    "valid_to": vt,
                    "chunk_ids": ch,
                    "description": f"{s} {t} {o}",
                }
                for s, t, o, w, vf, vt, ch in RELATIONS
            ]
        },
        database_=db,
    )
    as_current_model(driver, settings.neo4j.database)


def counts(driver: Driver, settings: Settings) -> GraphCounts:
    records, _, _ = driver.execute_query(
        "CALL () { MATCH (n) RETURN count(n) AS nodes } "
        "CALL () { MATCH ()-[r]->() RETURN count(r) AS rels } RETURN nodes, rels",
        database_=settings.neo4j.database,
    )
    return GraphCounts(records[0]["nodes"], records[0]["rels"])


def with_service(
    settings: Settings,
    fn: Callable[[SearchService], Awaitable[T]],
    registry: Registry = REGISTRY,
) -> T:
    """Run ``fn(service)`` from a sync test: one event loop and async driver per call."""

    async def main() -> T:
        async with open_async_driver(settings.neo4j) as driver:
            service = SearchService(
                driver, settings, make_embedder(settings.resolve), registry=registry
            )
            return await fn(service)

    return asyncio.run(main())


def record_reads(service: SearchService) -> list[tuple[str, Any]]:
    """Every guarded read the service makes from now on, as (template, parameters): the real
    guard still runs each one."""
    reads: list[tuple[str, Any]] = []
    guarded = service.guard.run

    async def recorded(name: str, params: Any) -> Any:
        reads.append((name, params))
        return await guarded(name, params)

    service.guard.run = recorded  # type: ignore[method-assign]
    return reads


def tuned(settings: Settings, **search: Any) -> Settings:
    """A copy of the session settings with some search settings changed."""
    return settings.model_copy(update={"search": settings.search.model_copy(update=search)})
