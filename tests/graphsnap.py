"""A comparable snapshot of the whole graph, without the timestamps a rerun legitimately moves."""

from __future__ import annotations

from typing import Any

from neo4j import Driver

VOLATILE = {"ingested_at", "first_seen", "last_seen", "created_at", "updated_at"}


def _clean(props: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    out = []
    for key, value in props.items():
        if key in VOLATILE or key == "embedding":
            continue
        if isinstance(value, list):
            value = sorted(map(str, value)) if key in {"chunk_ids", "aliases"} else value
        out.append((key, repr(value)))
    return tuple(sorted(out))


def snapshot(driver: Driver, database: str = "neo4j") -> tuple[frozenset[Any], frozenset[Any]]:
    nodes, _, _ = driver.execute_query(
        "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props", database_=database
    )
    rels, _, _ = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN type(r) AS type, a.id AS a, b.id AS b, properties(r) AS props",
        database_=database,
    )
    node_set = frozenset((tuple(sorted(r["labels"])), _clean(r["props"])) for r in nodes)
    rel_set = frozenset((r["type"], r["a"], r["b"], _clean(r["props"])) for r in rels)
    assert len(node_set) == len(nodes), "duplicate nodes"
    assert len(rel_set) == len(rels), "duplicate relationships"
    return node_set, rel_set


def counts(driver: Driver, database: str = "neo4j") -> tuple[int, int]:
    records, _, _ = driver.execute_query(
        "MATCH (n) WITH count(n) AS nodes OPTIONAL MATCH ()-[r]->() RETURN nodes, count(r) AS rels",
        database_=database,
    )
    return int(records[0]["nodes"]), int(records[0]["rels"])
