"""Fact nodes (graph model 5) against the real server: one per relation, embedded, indexed, in
step with their relation through re-ingest, closing, removal and prune, and made by migrate.

No LLM is involved: facts come from triplets files, through the real ingest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.graph.facts import fact_text
from kg.graph.meta import MODEL_VERSION, read_embedders, read_model, stamp
from kg.graph.migrate import migrate
from kg.graph.writer import EntityRow, RelationRow
from kg.ingest import ingest, make_writer
from kg.resolve.embed import HashingEmbedder, embedder_identity, make_chunk_embedder
from kg.settings import Settings
from tests.graphsnap import snapshot

_PAYMENTS = {
    "id": "adr-7",
    "title": "ADR 7: Payments",
    "text": "Payments depends on Ledger. Payments is owned by Team Core since 2020. "
    "Ledger runs on Postgres.",
    "triplets": [
        {"subject": "Payments", "predicate": "depends on", "object": "Ledger"},
        {"subject": "Payments", "predicate": "owned by", "object": "Team Core",
         "valid_from": "2020"},
        {"subject": "Ledger", "predicate": "runs on", "object": "Postgres",
         "object_type": "Database"},
    ],
}  # fmt: skip
_REORG = {
    "id": "adr-9",
    "title": "ADR 9: Reorganisation",
    "text": "Payments is owned by Team Money since 2024. Ledger runs on Postgres.",
    "triplets": [
        {"subject": "Payments", "predicate": "owned by", "object": "Team Money",
         "valid_from": "2024"},
        {"subject": "Ledger", "predicate": "runs on", "object": "Postgres",
         "object_type": "Database"},
    ],
}  # fmt: skip

_RELATIONS = """
MATCH (a:Entity)-[r]->(b:Entity) WHERE r.key IS NOT NULL
RETURN r.key AS key, a.id AS a, b.id AS b, r.predicate AS predicate, r.chunk_ids AS chunks,
       r.validFrom AS valid_from, r.validTo AS valid_to
"""
_FACTS = """
MATCH (f:Fact)
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
RETURN f.id AS key, f.subject_id AS a, f.object_id AS b, f.predicate AS predicate,
       f.chunk_ids AS chunks, f.validFrom AS valid_from, f.validTo AS valid_to, f.text AS text,
       f.embedding AS embedding, collect(e.id) AS about
"""


def _jsonl(path: Path, *lines: dict[str, Any]) -> Path:
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n")
    return path


def _settings(settings: Settings) -> Settings:
    s = settings.model_copy(deep=True)
    s.write.single_valued_predicates = ["OWNED_BY"]
    return s


def _relations(driver: Driver) -> dict[str, tuple[Any, ...]]:
    records = driver.execute_query(_RELATIONS).records
    return {
        r["key"]: (r["a"], r["b"], r["predicate"], sorted(r["chunks"]), r["valid_from"],
                   r["valid_to"])
        for r in records
    }  # fmt: skip


def _facts(driver: Driver) -> dict[str, dict[str, Any]]:
    return {r["key"]: dict(r) for r in driver.execute_query(_FACTS).records}


def _assert_in_step(driver: Driver) -> dict[str, dict[str, Any]]:
    """Every relation has exactly one fact agreeing with it, and no fact lacks a relation."""
    relations, facts = _relations(driver), _facts(driver)
    assert set(facts) == set(relations)
    for key, fact in facts.items():
        assert (fact["a"], fact["b"], fact["predicate"], sorted(fact["chunks"]),
                fact["valid_from"], fact["valid_to"]) == relations[key]  # fmt: skip
        assert sorted(fact["about"]) == sorted({fact["a"], fact["b"]})
    return facts


def _names(driver: Driver) -> dict[str, str]:
    return {
        r["id"]: r["name"]
        for r in driver.execute_query("MATCH (e:Entity) RETURN e.id AS id, e.name AS name").records
    }


def test_a_triplets_ingest_writes_one_embedded_fact_per_relation(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    s = _settings(settings)
    summary = ingest(s, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "t.jsonl", _PAYMENTS))
    facts = _assert_in_step(clean_graph)
    assert len(facts) == 3
    assert summary.facts_created == 3
    names = _names(clean_graph)
    for fact in facts.values():
        assert fact["text"] == fact_text(names[fact["a"]], fact["predicate"], names[fact["b"]])
        assert len(fact["embedding"]) == s.chunks.embedding_dim
    assert {f["text"] for f in facts.values()} == {
        "Payments depends on Ledger",
        "Payments owned by Team Core",
        "Ledger runs on Postgres",
    }
    index = clean_graph.execute_query(
        "SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options "
        "WHERE name = 'fact_embedding' "
        "RETURN state, labelsOrTypes AS labels, properties, "
        "options.indexConfig['vector.dimensions'] AS dims"
    ).records
    assert [(r["labels"], r["properties"], r["dims"]) for r in index] == [
        (["Fact"], ["embedding"], s.chunks.embedding_dim)
    ]
    clean_graph.execute_query("CALL db.awaitIndex('fact_embedding', 60)")
    assert (
        clean_graph.execute_query(
            "SHOW VECTOR INDEXES YIELD name, state WHERE name = 'fact_embedding' RETURN state"
        ).records[0]["state"]
        == "ONLINE"
    )
    # The index finds each fact first for its own text, embedded again by the chunk embedder.
    embedder = make_chunk_embedder(s.chunks)
    for key, fact in facts.items():
        vector = [float(x) for x in embedder.embed([fact["text"]])[0]]
        top = clean_graph.execute_query(
            "CALL db.index.vector.queryNodes('fact_embedding', 1, $v) YIELD node, score "
            "RETURN node.id AS id, score",
            v=vector,
        ).records
        assert top[0]["id"] == key
        assert top[0]["score"] > 0.99


def test_reingest_changes_nothing_and_a_changed_document_keeps_facts_in_step(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    s = _settings(settings)
    triplets = _jsonl(tmp_path / "t.jsonl", _PAYMENTS, _REORG)
    ingest(s, clean_graph, tmp_path, triplets=triplets)
    first = snapshot(clean_graph)
    embeddings = {k: f["embedding"] for k, f in _facts(clean_graph).items()}
    again = ingest(s, clean_graph, tmp_path, triplets=triplets)
    assert again.documents_unchanged == 2
    assert again.facts_created == 0
    assert snapshot(clean_graph) == first
    # A changed document is rewritten: its fact that no other document states goes; the fact
    # both documents state keeps the other's provenance only.
    changed = {**_PAYMENTS, "triplets": _PAYMENTS["triplets"][1:]}
    _jsonl(triplets, changed, _REORG)
    ingest(s, clean_graph, tmp_path, triplets=triplets)
    facts = _assert_in_step(clean_graph)
    assert "Payments depends on Ledger" not in {f["text"] for f in facts.values()}
    assert len(facts) == 3
    # Facts that stayed keep their vectors (the same text, the same embedder).
    for key, fact in facts.items():
        assert fact["embedding"] == embeddings[key]


def test_a_closed_relation_closes_its_fact(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    s = _settings(settings)
    ingest(s, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "a.jsonl", _PAYMENTS))
    ingest(s, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "a.jsonl", _PAYMENTS, _REORG))
    facts = _assert_in_step(clean_graph)
    by_text = {f["text"]: f for f in facts.values()}
    old, new = by_text["Payments owned by Team Core"], by_text["Payments owned by Team Money"]
    assert old["valid_to"] is not None
    assert old["valid_to"].iso_format() == "2024-01-01"
    assert new["valid_to"] is None


def test_pruned_documents_take_their_facts_with_them(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    s = _settings(settings)
    triplets = _jsonl(tmp_path / "t.jsonl", _PAYMENTS, _REORG)
    ingest(s, clean_graph, tmp_path, triplets=triplets)
    _jsonl(triplets, _REORG)
    summary = ingest(s, clean_graph, tmp_path, triplets=triplets, prune=True)
    assert summary.documents_pruned == 1
    facts = _assert_in_step(clean_graph)
    assert {f["text"] for f in facts.values()} == {
        "Payments owned by Team Money",
        "Ledger runs on Postgres",
    }
    count = clean_graph.execute_query("MATCH (f:Fact) RETURN count(f) AS n").records[0]["n"]
    assert count == 2


def _as_model_4(driver: Driver, database: str, keep: int = 0) -> None:
    """What a model 4 kg left: no fact nodes (``keep`` of them survive: a migration that
    stopped midway), an entity of type ``fact`` with that type as its label, stamped 4."""
    driver.execute_query(
        "MATCH (f:Fact) WITH f ORDER BY f.id SKIP $keep DETACH DELETE f",
        keep=keep,
        database_=database,
    )
    driver.execute_query(
        "MATCH (e:Entity {name: 'Postgres'}) SET e:Fact "
        "WITH e MATCH (m:KgMeta) SET m.type_labels = coalesce(m.type_labels, []) + 'Fact'",
        database_=database,
    )
    stamp(driver, database, 4)


@pytest.mark.parametrize("keep", [0, 2])
def test_migrate_4_to_5_makes_the_facts_an_ingest_would_have(
    clean_graph: Driver, settings: Settings, tmp_path: Path, keep: int
) -> None:
    s = _settings(settings)
    db = s.neo4j.database
    ingest(s, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "t.jsonl", _PAYMENTS, _REORG))
    written = snapshot(clean_graph)
    vectors = {k: f["embedding"] for k, f in _facts(clean_graph).items()}
    assert len(vectors) == 4
    _as_model_4(clean_graph, db, keep)
    assert len(_facts(clean_graph)) == keep + 1  # the labelled entity, which is no fact

    chunk_embedder = make_chunk_embedder(s.chunks)
    report = migrate(clean_graph, db, make_writer(s, clean_graph), chunk_embedder=chunk_embedder)
    assert report.from_version == 4
    assert report.facts_created == 4 - keep
    assert read_model(clean_graph, db).version == MODEL_VERSION
    assert snapshot(clean_graph) == written
    assert {k: f["embedding"] for k, f in _facts(clean_graph).items()} == vectors
    again = migrate(clean_graph, db, make_writer(s, clean_graph), chunk_embedder=chunk_embedder)
    assert again.facts_created == 0
    assert again.notes == ["nothing to do"]


def test_a_new_chunk_embedder_reembeds_the_facts_too(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    s = _settings(settings)
    db = s.neo4j.database
    ingest(s, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "t.jsonl", _PAYMENTS))
    before = {k: f["embedding"] for k, f in _facts(clean_graph).items()}
    other = HashingEmbedder(s.chunks.embedding_dim)
    report = migrate(clean_graph, db, make_writer(s, clean_graph), chunk_embedder=other)
    assert report.facts_reembedded == 3
    assert read_embedders(clean_graph, db)["chunk"] == embedder_identity(other)
    for key, fact in _facts(clean_graph).items():
        expected = [float(x) for x in other.embed([fact["text"]])[0]]
        assert fact["embedding"] == pytest.approx(expected, abs=1e-6)
        assert fact["embedding"] != pytest.approx(before[key], abs=1e-3)


def test_a_relation_whose_key_the_fact_index_cannot_hold_is_written_without_a_fact(
    clean_graph: Driver, settings: Settings
) -> None:
    """A library caller's entity ids may be 1,024 characters (kg's own are 20): a relation key
    of two such ids, in 4-byte characters, is larger than a range index holds (8,167 bytes;
    kg/limits.py). The relation is written; its fact is left out; nothing fails."""
    db = settings.neo4j.database
    writer = make_writer(settings, clean_graph)
    a, b = "\U0001d538" * 1024, "\U0001d539" * 1024
    assert len(f"{a}|DEPENDS_ON|{b}|".encode()) > 8167
    writer.upsert_entities([EntityRow(a, "Alpha", "Service"), EntityRow(b, "Beta", "Service")])
    writer.upsert_entities([EntityRow("s", "Short", "Service")])
    counts = writer.upsert_relations(
        [RelationRow(a, b, "DEPENDS_ON", chunk_ids=("c1",)),
         RelationRow("s", a, "DEPENDS_ON", chunk_ids=("c1",))]
    )  # fmt: skip
    assert counts.relations_written == 2
    assert counts.facts_written == 1
    facts = _facts(clean_graph)
    assert [f["text"] for f in facts.values()] == ["Short depends on Alpha"]
    # Writing the same relations again still does not fail on the long key.
    again = writer.upsert_relations([RelationRow(a, b, "DEPENDS_ON", chunk_ids=("c2",))])
    assert again.facts_written == 0
    rels = clean_graph.execute_query(_RELATIONS, database_=db).records
    assert len(rels) == 2
