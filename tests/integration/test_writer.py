"""GraphWriter against the real server: idempotent MERGE, bounded types, temporal closing."""

from __future__ import annotations

from datetime import date

import pytest
from neo4j import Driver

from kg.graph.writer import (
    Bounds,
    ChunkRow,
    DocumentRow,
    EntityRow,
    GraphWriter,
    RelationRow,
    TypePolicy,
)
from kg.settings import Settings
from tests.graphsnap import counts, snapshot


@pytest.fixture
def writer(clean_graph: Driver, settings: Settings) -> GraphWriter:
    return GraphWriter(
        clean_graph,
        settings.neo4j.database,
        batch_size=2,
        single_valued=frozenset({"OWNED_BY"}),
        types=TypePolicy(max_promoted=3, min_count=1),
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
    # 2 docs + 3 chunks + 4 entities + 2 predicates + the stamp (KgMeta, which records the
    # granted type labels); 3 PART_OF + 1 NEXT + 7 MENTIONS + 3 facts
    assert counts(clean_graph) == (12, 14)


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


def _types(driver: Driver) -> set[str]:
    records = driver.execute_query("CALL db.relationshipTypes() YIELD relationshipType AS t")
    return {r["t"] for r in records.records}


def _stored(driver: Driver) -> dict[str, str]:
    records = driver.execute_query(
        "MATCH (:Entity)-[r]->(:Entity) RETURN DISTINCT r.predicate AS p, type(r) AS t"
    ).records
    return {r["p"]: r["t"] for r in records}


def test_hostile_predicates_stay_data(writer: GraphWriter, clean_graph: Driver) -> None:
    seed(writer)
    types_before = _types(clean_graph)
    bad = ["DEPENDS`]->() DETACH DELETE n //", "lower_case", "WITH SPACE", "1ABC", "", "X\n"]
    writer.upsert_relations([RelationRow("auth", "pg", p) for p in bad])
    # No new type: every hostile name is only a property value of a RELATED edge.
    assert _types(clean_graph) - types_before <= {"RELATED"}
    stored = _stored(clean_graph)
    assert all(stored[p] == "RELATED" for p in bad)
    assert counts(clean_graph)[0] == 12 + len(bad)  # nothing deleted; one Predicate node each


def test_structural_names_never_become_fact_types(writer: GraphWriter, clean_graph: Driver) -> None:
    seed(writer)
    writer.upsert_relations(
        [RelationRow("auth", "pg", p, chunk_ids=("c1",)) for p in ("MENTIONS", "PART_OF", "NEXT")]
    )
    stored = _stored(clean_graph)
    assert {p: stored[p] for p in ("MENTIONS", "PART_OF", "NEXT")} == dict.fromkeys(
        ("MENTIONS", "PART_OF", "NEXT"), "RELATED"
    )
    # Provenance is unchanged: MENTIONS still only goes from chunks to entities.
    wrong = clean_graph.execute_query(
        "MATCH (:Entity)-[r:MENTIONS|PART_OF|NEXT]->() RETURN count(r) AS n"
    ).records[0]["n"]
    assert wrong == 0


def test_long_tail_is_stored_as_related_with_its_predicate(
    writer: GraphWriter, clean_graph: Driver
) -> None:
    seed(writer)  # STORES_DATA_IN and OWNED_BY: one promoted, one single-valued
    rows = [
        RelationRow("auth", "pg", f"P_{i:03d}", chunk_ids=("c1",))
        for i in range(40)
        for _ in range(1 + (i < 5))  # P_000..P_004 twice: the most frequent of this write
    ]
    writer.upsert_relations(rows)
    stored = _stored(clean_graph)
    typed = sorted(p for p, t in stored.items() if t == p)
    # The cap (3) allows two more promotions after STORES_DATA_IN; ties break by name.
    assert typed == ["OWNED_BY", "P_000", "P_001", "STORES_DATA_IN"]
    assert all(stored[f"P_{i:03d}"] == "RELATED" for i in range(2, 40))
    assert len(_types(clean_graph)) <= 4 + 4  # PART_OF, NEXT, MENTIONS + typed + RELATED
    # A later write keeps each predicate's storage (no flapping between types).
    writer.upsert_relations([RelationRow("pg", "auth", "P_039", chunk_ids=("c2",))] * 5)
    assert _stored(clean_graph)["P_039"] == "RELATED"


def test_unicode_predicates_are_real_types(writer: GraphWriter, clean_graph: Driver) -> None:
    seed(writer)
    writer.upsert_relations([RelationRow("auth", "pg", "ЗАВИСИТ_ОТ", chunk_ids=("c1",))])
    assert "ЗАВИСИТ_ОТ" in _types(clean_graph)


def test_lists_the_writer_grows_are_bounded(clean_graph: Driver, settings: Settings) -> None:
    writer = GraphWriter(
        clean_graph,
        settings.neo4j.database,
        bounds=Bounds(max_aliases=5, max_alias_chars=20, max_chunk_ids=3),
    )
    aliases = (*(f"alias {i}" for i in range(20_000)), "x" * 100_000)
    writer.upsert_entities([EntityRow("a", "A", "T", aliases=aliases), EntityRow("b", "B", "T")])
    writer.upsert_entities([EntityRow("a", "A", "T", aliases=("late one",))])
    for i in range(10):
        writer.upsert_relations([RelationRow("a", "b", "USES", chunk_ids=(f"c{i}", f"d{i}"))])
    stored = clean_graph.execute_query(
        "MATCH (a:Entity {id:'a'})-[r]->() RETURN a.aliases AS aliases, r.chunk_ids AS ids"
    ).records[0]
    assert stored["aliases"] == [f"alias {i}" for i in range(5)]
    assert stored["ids"] == ["c0", "d0", "c1"]


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
