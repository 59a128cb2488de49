"""Issue 29 item 4: a bulk first load (``neo4j-admin database import full``) builds the same
graph as ``kg ingest --triplets``: nodes, labels, relationships, properties (embeddings too),
indexes and the model stamp; search works on it; a non-empty or non-local target is refused.

The load stops and restarts its server, so it gets a throwaway local server of its own (the
session's server serves the other tests). Both ways run on it, one after the other, on the
same file of hostile names (tests/bulkdata.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg import KnowledgeGraph
from kg.bulk import BULK_STAGES, bulk_ingest
from kg.bulk.load import check_target
from kg.errors import ConfigError
from kg.graph.driver import open_driver
from kg.localserver import throwaway_server
from kg.settings import Settings
from tests import bulkdata

# Write timestamps differ between two runs by nature; everything else must not.
VOLATILE = {"ingested_at", "first_seen", "last_seen", "updated_at"}


def _value(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(round(x, 9) if isinstance(x, float) else x for x in value)
    return value


def _props(props: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(_value(v))) for k, v in props.items() if k not in VOLATILE))


def fingerprint(driver: Driver) -> dict[str, Any]:
    """Nodes by labels and properties, relationships by type, ends' keys and properties,
    and the schema: no internal ids, no write times."""
    nodes = driver.execute_query(
        "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props"
    ).records
    rels = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN type(r) AS type, coalesce(a.id, a.name) AS a, "
        "coalesce(b.id, b.name) AS b, properties(r) AS props"
    ).records
    indexes = driver.execute_query(
        "SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options, state "
        "RETURN name, type, labelsOrTypes, properties, options.indexConfig AS config, state"
    ).records
    return {
        "nodes": sorted((tuple(sorted(r["labels"])), _props(r["props"])) for r in nodes),
        "relationships": sorted((r["type"], r["a"], r["b"], _props(r["props"])) for r in rels),
        "indexes": sorted(
            (
                r["name"],
                r["type"],
                repr(r["labelsOrTypes"]),
                repr(r["properties"]),
                repr(sorted((r["config"] or {}).items())),
                r["state"],
            )
            for r in indexes
        ),
    }


def _diff(ours: list[Any], theirs: list[Any]) -> tuple[list[Any], list[Any]]:
    """What only the bulk load has, and what only the ingest has (readable on failure)."""
    return [x for x in ours if x not in theirs], [x for x in theirs if x not in ours]


def _wipe(driver: Driver) -> None:
    driver.execute_query("MATCH (n) DETACH DELETE n")


@pytest.fixture(scope="module")
def server() -> Any:
    with throwaway_server(password="bulk-test-password") as settings:
        settings.resolve.embedding_dim = 256
        yield settings


@pytest.mark.slow
def test_bulk_load_builds_the_graph_ingest_builds(server: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "root"
    folder.mkdir()
    triplets = bulkdata.write(tmp_path / "hostile.jsonl")

    loaded = bulk_ingest(server, folder, triplets=triplets, namespace="ns")
    assert loaded.ingest.ok
    assert not loaded.ingest.import_errors
    assert loaded.files["fact"] == loaded.ingest.facts_created > 0
    assert tuple(loaded.timings) == BULK_STAGES
    with open_driver(server.neo4j) as driver:
        bulk = fingerprint(driver)
        assert {index[-1] for index in bulk["indexes"]} == {"ONLINE"}
        # Search works on the imported graph (fulltext, vectors and graph through one call).
        with KnowledgeGraph(server) as graph:
            hits = graph.search("Ledger calls Billing", mode="hybrid", limit=5)
        assert hits.chunks, "search found nothing in the bulk-loaded graph"

        _wipe(driver)
        with KnowledgeGraph(server) as graph:
            merged = graph.ingest(folder, triplets=triplets, namespace="ns")
        assert merged.ok
        ingested = fingerprint(driver)

    assert _diff(bulk["relationships"], ingested["relationships"]) == ([], [])
    assert _diff(bulk["nodes"], ingested["nodes"]) == ([], [])
    assert bulk["indexes"] == ingested["indexes"]
    # The file exercises what could go wrong: a hostile name in full, a closed edge, a type
    # label, a chunk chain, facts and mentions.
    flat = repr(bulk)
    assert "acme;corp" in flat
    assert "Служба аутентификации" in flat
    types = {r[0] for r in bulk["relationships"]}
    assert {"NEXT", "PART_OF", "MENTIONS", "ABOUT", "OWNED_BY"} <= types
    assert any("'closed_by'" in repr(r[3]) for r in bulk["relationships"])
    assert any("Service" in n[0] for n in bulk["nodes"])


def test_bulk_load_refuses_a_graph_with_data(server: Settings, tmp_path: Path) -> None:
    triplets = bulkdata.write(tmp_path / "t.jsonl")
    with open_driver(server.neo4j) as driver:
        _wipe(driver)
        driver.execute_query("CREATE (:Document {id: 'keep-me'})")
        with pytest.raises(ConfigError, match="empty database only"):
            bulk_ingest(server, tmp_path, triplets=triplets)
        kept = driver.execute_query("MATCH (d:Document {id: 'keep-me'}) RETURN count(d) AS n")
        assert kept.records[0]["n"] == 1


def test_bulk_load_refuses_a_server_that_is_not_the_local_one(server: Settings) -> None:
    elsewhere = server.model_copy(
        update={"neo4j": server.neo4j.model_copy(update={"uri": "neo4j://db.example.com:7687"})}
    )
    with pytest.raises(ConfigError, match="local server only"):
        check_target(elsewhere)
