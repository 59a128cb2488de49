"""A small graph in kg's exact model, written with parameterized Cypher, for the API tests.

Embeddings come from the embedder the service uses (the hashing embedder by default), so
vector matching in local search finds these entities by name.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from neo4j import Driver

from kg.resolve import make_embedder
from kg.settings import Settings
from tests.fixture_model import as_current_model

DOCUMENTS = [
    {"id": "doc-payments", "path": "wiki/payments.md", "title": "Payments", "sha256": "a" * 64},
]
CHUNKS = [
    {
        "id": "chunk-1",
        "index": 0,
        "doc": "doc-payments",
        "text": "PaymentService stores ledgers in PostgreSQL and calls AuthService.",
    },
    {
        "id": "chunk-2",
        "index": 1,
        "doc": "doc-payments",
        "text": "AuthService published events to Kafka until 2022.",
    },
]
ENTITIES = [
    ("ent-payments", "PaymentService", "Service", "Takes card payments.", ["payments svc"]),
    ("ent-postgres", "PostgreSQL", "Database", "Relational database.", ["Postgres"]),
    ("ent-auth", "AuthService", "Service", "Issues tokens.", ["auth"]),
    ("ent-kafka", "Kafka", "Queue", "Event log.", []),
]
MENTIONS = [
    ("chunk-1", "ent-payments"),
    ("chunk-1", "ent-postgres"),
    ("chunk-1", "ent-auth"),
    ("chunk-2", "ent-auth"),
    ("chunk-2", "ent-kafka"),
]
DEPENDS_ON: list[dict[str, Any]] = [
    {
        "source": "ent-payments",
        "target": "ent-postgres",
        "description": "stores ledgers in",
        "weight": 0.9,
        "validFrom": date(2023, 1, 1),
        "validTo": None,
        "chunk_ids": ["chunk-1"],
    },
    {
        "source": "ent-payments",
        "target": "ent-auth",
        "description": "calls",
        "weight": 0.8,
        "validFrom": None,
        "validTo": None,
        "chunk_ids": ["chunk-1"],
    },
    {
        "source": "ent-auth",
        "target": "ent-kafka",
        "description": "published events to",
        "weight": 0.5,
        "validFrom": date(2020, 1, 1),
        "validTo": date(2022, 1, 1),
        "chunk_ids": ["chunk-2"],
    },
]


def write_graph(driver: Driver, settings: Settings) -> None:
    """Write the graph; the caller's fixture (clean_graph) wipes it afterwards."""
    embedder = make_embedder(settings.resolve)
    vectors = embedder.embed([e[1] for e in ENTITIES])
    entities = [
        {
            "id": eid,
            "name": name,
            "type": etype,
            "description": desc,
            "aliases": aliases,
            "embedding": [float(x) for x in vectors[i]],
        }
        for i, (eid, name, etype, desc, aliases) in enumerate(ENTITIES)
    ]
    chunk_vectors = embedder.embed([c["text"] for c in CHUNKS])
    chunks = [
        {**c, "sha256": f"{i:064d}", "embedding": [float(x) for x in chunk_vectors[i]]}
        for i, c in enumerate(CHUNKS)
    ]
    db = settings.neo4j.database
    driver.execute_query(
        "UNWIND $rows AS row MERGE (d:Document {id: row.id}) "
        "SET d.path = row.path, d.title = row.title, d.sha256 = row.sha256",
        rows=DOCUMENTS,
        database_=db,
    )
    driver.execute_query(
        "UNWIND $rows AS row MATCH (d:Document {id: row.doc}) "
        "MERGE (c:Chunk {id: row.id}) "
        "SET c.index = row.index, c.text = row.text, c.sha256 = row.sha256, "
        "c.embedding = row.embedding, c.document_id = d.id "
        "MERGE (c)-[:PART_OF]->(d)",
        rows=chunks,
        database_=db,
    )
    driver.execute_query(
        "UNWIND $rows AS row MERGE (e:Entity {id: row.id}) "
        "SET e.name = row.name, e.type = row.type, e.description = row.description, "
        "e.aliases = row.aliases, e.embedding = row.embedding",
        rows=entities,
        database_=db,
    )
    driver.execute_query(
        "UNWIND $rows AS row MATCH (c:Chunk {id: row[0]}) MATCH (e:Entity {id: row[1]}) "
        "MERGE (c)-[:MENTIONS]->(e)",
        rows=[list(m) for m in MENTIONS],
        database_=db,
    )
    driver.execute_query(
        "UNWIND $rows AS row "
        "MATCH (s:Entity {id: row.source}) MATCH (t:Entity {id: row.target}) "
        "MERGE (s)-[r:DEPENDS_ON]->(t) "
        "SET r.description = row.description, r.weight = row.weight, "
        "r.validFrom = row.validFrom, r.validTo = row.validTo, r.chunk_ids = row.chunk_ids",
        rows=DEPENDS_ON,
        database_=db,
    )
    as_current_model(driver, settings.neo4j.database)


def graph_counts(driver: Driver, settings: Settings) -> tuple[int, int]:
    """(nodes, relationships) now: hostile-input tests compare before and after."""
    records, _, _ = driver.execute_query(
        "MATCH (n) WITH count(n) AS nodes OPTIONAL MATCH ()-[r]->() RETURN nodes, count(r) AS rels",
        database_=settings.neo4j.database,
    )
    return int(records[0]["nodes"]), int(records[0]["rels"])


def graph_fingerprint(driver: Driver, settings: Settings) -> list[Any]:
    """Every node and relationship with its properties (sans embeddings), sorted: proof that
    nothing was added, removed or changed."""
    db = settings.neo4j.database
    nodes, _, _ = driver.execute_query(
        "MATCH (n) RETURN labels(n) AS labels, "
        "[k IN keys(n) WHERE k <> 'embedding' | [k, n[k]]] AS props",
        database_=db,
    )
    rels, _, _ = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS type, b.id AS b, "
        "[k IN keys(r) | [k, r[k]]] AS props",
        database_=db,
    )
    out = [repr((sorted(r["labels"]), sorted(map(repr, r["props"])))) for r in nodes]
    out += [repr((r["a"], r["type"], r["b"], sorted(map(repr, r["props"])))) for r in rels]
    return sorted(out)


def wipe(driver: Driver, settings: Settings) -> None:
    """Delete everything (Community has one database; each test module cleans after itself)."""
    with driver.session(database=settings.neo4j.database) as session:
        # Relationships first, in batches: a supernode's 100k edges in one DETACH DELETE
        # would exceed the server's transaction memory.
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
