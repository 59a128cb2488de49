"""GraphWriter against the real server: idempotent MERGE, allowlisted types, temporal closing."""

from __future__ import annotations

from datetime import date

import pytest
from neo4j import Driver

from kg.errors import StoreError
from kg.graph.writer import ChunkRow, DocumentRow, EntityRow, GraphWriter, RelationRow
from kg.settings import Settings
from tests.graphsnap import counts, snapshot


@pytest.fixture
def writer(clean_graph: Driver, settings: Settings) -> GraphWriter:
    return GraphWriter(
        clean_graph, settings.neo4j.database, batch_size=2, single_valued=frozenset({"OWNED_BY"})
    )


def seed(writer: GraphWriter) -> None:
    writer.upsert_documents(
        [DocumentRow("d1", "a.md", "A", "h1"), DocumentRow("d2", "b.md", "B", "h2")]
    )
    writer.upsert_chunks(
        [ChunkRow("c1", "d1", 0, "one", "s1"), ChunkRow("c2", "d1", 1, "two", "s2"),
         ChunkRow("c3", "d2", 0, "three", "s3")]
    )  # fmt: skip
    writer.upsert_entities(
        [EntityRow("auth", "AuthService", "Service", aliases=("auth-svc",)),
         EntityRow("pg", "PostgreSQL", "Database"), EntityRow("id", "Team Identity", "Team"),
         EntityRow("sec", "Team Platform Security", "Team")]
    )  # fmt: skip
    writer.upsert_mentions([("c1", "auth"), ("c1", "pg"), ("c2", "auth"), ("c2", "id"),
                            ("c3", "auth"), ("c3", "pg"), ("c3", "sec")])  # fmt: skip
    writer.upsert_relations(
        [RelationRow("auth", "pg", "STORES_DATA_IN", "keeps sessions", 0.8, chunk_ids=("c1",)),
         RelationRow("auth", "pg", "STORES_DATA_IN", "", 0.6, chunk_ids=("c3",)),
         RelationRow("auth", "id", "OWNED_BY", valid_from=date(2020, 1, 1), chunk_ids=("c2",)),
         RelationRow("auth", "sec", "OWNED_BY", valid_from=date(2024, 3, 1), chunk_ids=("c3",))]
    )  # fmt: skip


def test_writes_are_idempotent(writer: GraphWriter, clean_graph: Driver) -> None:
    seed(writer)
    first = snapshot(clean_graph)
    seed(writer)
    assert snapshot(clean_graph) == first
    # 2 docs + 3 chunks + 4 entities; 3 PART_OF + 1 NEXT + 7 MENTIONS + 3 facts
    assert counts(clean_graph) == (9, 14)


def test_duplicate_facts_fold_into_one_edge_with_provenance(
    writer: GraphWriter, clean_graph: Driver
) -> None:
    seed(writer)
    records, _, _ = clean_graph.execute_query(
        "MATCH (:Entity {id:'auth'})-[r:STORES_DATA_IN]->(:Entity {id:'pg'}) "
        "RETURN count(r) AS n, collect(r)[0] AS r"
    )
    assert records[0]["n"] == 1
    rel = records[0]["r"]
    assert sorted(rel["chunk_ids"]) == ["c1", "c3"]
    assert rel["weight"] == 0.8
    assert rel["description"] == "keeps sessions"


def test_reasserting_updates_last_seen_and_provenance(
    writer: GraphWriter, clean_graph: Driver
) -> None:
    seed(writer)
    before = clean_graph.execute_query(
        "MATCH ()-[r:STORES_DATA_IN]->() RETURN r.last_seen AS seen"
    ).records[0]["seen"]
    writer.upsert_relations([RelationRow("auth", "pg", "STORES_DATA_IN", chunk_ids=("c2",))])
    rows = clean_graph.execute_query(
        "MATCH ()-[r:STORES_DATA_IN]->() RETURN r.last_seen AS seen, r.chunk_ids AS ids"
    ).records
    assert len(rows) == 1
    assert rows[0]["seen"] > before
    assert sorted(rows[0]["ids"]) == ["c1", "c2", "c3"]


def test_newer_fact_closes_the_older_edge_instead_of_deleting_it(
    writer: GraphWriter, clean_graph: Driver
) -> None:
    seed(writer)
    rows = clean_graph.execute_query(
        "MATCH (:Entity {id:'auth'})-[r:OWNED_BY]->(t) "
        "RETURN t.id AS team, r.validFrom AS since, r.validTo AS until ORDER BY since"
    ).records
    assert [(r["team"], str(r["since"]), r["until"] and str(r["until"])) for r in rows] == [
        ("id", "2020-01-01", "2024-03-01"),
        ("sec", "2024-03-01", None),
    ]


def test_only_same_source_and_type_are_candidates(writer: GraphWriter, clean_graph: Driver) -> None:
    seed(writer)
    writer.upsert_relations(
        [RelationRow("pg", "id", "OWNED_BY", valid_from=date(2025, 1, 1), chunk_ids=("c1",))]
    )
    open_auth = clean_graph.execute_query(
        "MATCH (:Entity {id:'auth'})-[r:OWNED_BY]->() WHERE r.validTo IS NULL RETURN count(r) AS n"
    ).records[0]["n"]
    assert open_auth == 1


def test_relationship_types_pass_the_allowlist(writer: GraphWriter, clean_graph: Driver) -> None:
    seed(writer)
    before = snapshot(clean_graph)
    for bad in ("DEPENDS`]->() DETACH DELETE n //", "lower_case", "WITH SPACE", "1ABC", ""):
        with pytest.raises(StoreError, match="refusing relationship type"):
            writer.upsert_relations([RelationRow("auth", "pg", bad)])
    assert snapshot(clean_graph) == before


def test_unicode_relationship_types_are_real_types(
    writer: GraphWriter, clean_graph: Driver
) -> None:
    seed(writer)
    writer.upsert_relations([RelationRow("auth", "pg", "ЗАВИСИТ_ОТ", chunk_ids=("c1",))])
    types = {
        r["t"]
        for r in clean_graph.execute_query(
            "CALL db.relationshipTypes() YIELD relationshipType AS t"
        ).records
    }
    assert "ЗАВИСИТ_ОТ" in types


def test_removing_a_document_keeps_what_others_support(
    writer: GraphWriter, clean_graph: Driver
) -> None:
    seed(writer)
    writer.remove_document_contents(["d1"])
    rel = clean_graph.execute_query(
        "MATCH ()-[r:STORES_DATA_IN]->() RETURN r.chunk_ids AS ids"
    ).records
    assert [r["ids"] for r in rel] == [["c3"]]  # d2's chunk still supports it
    owned = clean_graph.execute_query("MATCH ()-[r:OWNED_BY]->(t) RETURN t.id AS t").records
    assert [r["t"] for r in owned] == ["sec"]  # only d1 supported the Identity edge
    ents = {
        r["id"] for r in clean_graph.execute_query("MATCH (e:Entity) RETURN e.id AS id").records
    }
    assert ents == {"auth", "pg", "sec"}  # Team Identity is gone with its only support
    chunks = {
        r["id"] for r in clean_graph.execute_query("MATCH (c:Chunk) RETURN c.id AS id").records
    }
    assert chunks == {"c3"}
