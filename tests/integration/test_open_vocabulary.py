"""The open-vocabulary graph model end to end: ingest through --triplets, search, migrate.

Real Neo4j, real ingest; no LLM is involved (facts come from triplets files).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.errors import GraphModelError
from kg.graph.meta import MODEL_VERSION, read_model, stamp
from kg.graph.migrate import migrate
from kg.ingest import ingest, make_writer
from kg.search.models import SearchRequest, SearchResponse
from kg.settings import Settings
from tests.clienv import cli_env
from tests.graphdata import with_service

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


def _jsonl(path: Path, *lines: dict[str, Any]) -> Path:
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n")
    return path


def _search(settings: Settings, **request: Any) -> SearchResponse:
    return with_service(settings, lambda s: s.local_search(SearchRequest(**request)))


def _long_tail_corpus(tmp_path: Path, n_predicates: int) -> Path:
    lines = []
    for i in range(n_predicates):
        lines.append(
            {
                "id": f"p/{i}",
                "title": f"Passage {i}",
                "text": f"Alpha Corp predicate{i} Beta Labs. Beta Labs was founded in {1900 + i}.",
                "triplets": [
                    {"subject": "Alpha Corp", "predicate": f"rare relation {i:03d}",
                     "object": "Beta Labs"},
                    {"subject": "Alpha Corp", "predicate": "depends on", "object": "Beta Labs"},
                ],
            }
        )  # fmt: skip
    return _jsonl(tmp_path / "tail.jsonl", *lines)


def test_thousands_of_predicates_give_a_bounded_number_of_types(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    capped = settings.model_copy(deep=True)
    capped.write.max_relation_types = 5
    summary = ingest(capped, clean_graph, tmp_path, triplets=_long_tail_corpus(tmp_path, 300))
    assert summary.import_errors == []
    types = {
        r["t"]
        for r in clean_graph.execute_query(
            "CALL db.relationshipTypes() YIELD relationshipType AS t"
        ).records
    }
    # Structural types (ABOUT: facts to their ends) + DEPENDS_ON (configured) + RELATED: 300
    # rare predicates, no new types.
    assert types <= {"PART_OF", "NEXT", "MENTIONS", "ABOUT", "DEPENDS_ON", "RELATED"}
    # Every fact keeps its own predicate.
    predicates = clean_graph.execute_query(
        "MATCH (:Entity)-[r]->(:Entity) RETURN count(DISTINCT r.predicate) AS n"
    ).records[0]["n"]
    assert predicates == 301
    # The filter names a long-tail predicate and finds exactly its fact.
    response = _search(settings, query="Alpha Corp", depth=1, relation_types=["RARE_RELATION_042"])
    assert {r.type for r in response.relations} == {"RARE_RELATION_042"}
    # Browser-style variable-length queries still traverse every fact.
    reached = clean_graph.execute_query(
        "MATCH p = (:Entity {name: 'Alpha Corp'})-[*1..3]->() RETURN count(p) AS n"
    ).records[0]["n"]
    assert reached >= 301


def test_document_without_triplets_is_written_and_found_by_vector_search(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    text = "The Zarqawi glacier retreats forty metres every summer near the Kelvin ridge."
    path = _jsonl(
        tmp_path / "plain.jsonl",
        {"id": "glacier", "title": "Zarqawi glacier", "text": text, "triplets": []},
        {"id": "other", "title": "Other", "text": "Unrelated prose about bread.", "triplets": []},
    )
    summary = ingest(settings, clean_graph, tmp_path, triplets=path)
    assert summary.chunks == 2
    chunks = clean_graph.execute_query("MATCH (c:Chunk) RETURN count(c) AS n").records[0]["n"]
    assert chunks == 2
    response = _search(settings, query="Zarqawi glacier Kelvin ridge", mode="vector", limit=1)
    assert [c.text for c in response.chunks] == [text]


def test_a_bad_triplet_drops_alone_and_is_reported(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    long_name = "Overlong " + "word " * 80
    path = _jsonl(
        tmp_path / "mixed.jsonl",
        {
            "id": "mixed",
            "title": "Mixed",
            "text": "Gamma Service calls Delta Store. Gamma Service uses Epsilon Queue.",
            "entities": [{"name": "Gamma Service", "aliases": [" "] * 3}, {"name": " "}],
            "triplets": [
                {"subject": "Gamma Service", "predicate": "calls", "object": "Delta Store"},
                {"subject": long_name, "predicate": "calls", "object": "Delta Store"},
                {"subject": "Gamma Service", "predicate": "?!", "object": "Delta Store"},
                {"subject": "Gamma Service", "predicate": "uses", "object": "Epsilon Queue"},
            ],
        },
    )
    summary = ingest(settings, clean_graph, tmp_path, triplets=path)
    assert summary.documents_new == 1
    assert [(d["line"], d["item"]) for d in summary.dropped] == [
        (1, "entities[1]"),
        (1, "triplets[1]"),
        (1, "triplets[2]"),
    ]
    assert "longer than 300" in summary.dropped[1]["reason"]
    facts = clean_graph.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name + ' ' + r.predicate + ' ' + b.name AS f"
    ).records
    assert sorted(r["f"] for r in facts) == [
        "Gamma Service CALLS Delta Store",
        "Gamma Service USES Epsilon Queue",
    ]
    complete = clean_graph.execute_query(
        "MATCH (d:Document {path: 'mixed'}) RETURN d.sha256 IS NOT NULL AS done"
    ).records[0]["done"]
    assert complete


def test_example_keeps_temporal_closing_and_typed_browser_edges(
    clean_graph: Driver, settings: Settings
) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    owned = clean_graph.execute_query(
        "MATCH (s:Entity {name: 'AuthService'})-[r:OWNED_BY]->(t:Entity) "
        "RETURN t.name AS team, r.validTo AS until ORDER BY r.validFrom"
    ).records
    open_owners = {r["team"] for r in owned if r["until"] is None}
    closed_owners = {r["team"] for r in owned if r["until"] is not None}
    assert open_owners == {"Team Platform Security"}
    assert "Team Identity" in closed_owners
    # The README's Browser query reaches typed, readable edges.
    types = clean_graph.execute_query(
        "MATCH p = (:Entity {name: 'Checkout Web'})-[*1..3]->() "
        "UNWIND relationships(p) AS r RETURN collect(DISTINCT type(r)) AS types"
    ).records[0]["types"]
    assert "CALLS" in types
    # An extracted "part of" fact never poses as provenance.
    wrong = clean_graph.execute_query(
        "MATCH (:Entity)-[r:PART_OF|MENTIONS|NEXT]->() RETURN count(r) AS n"
    ).records[0]["n"]
    assert wrong == 0


def test_json_summary_shows_time_per_stage(settings: Settings, clean_graph: Driver) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", str(EXAMPLE), "--triplets", str(TRIPLETS),
         "--json"],
        cwd=REPO, env=cli_env(settings), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    timings = json.loads(proc.stdout)["timings"]
    assert set(timings) == {"load", "chunk", "extract", "resolve", "write"}
    assert all(v >= 0 for v in timings.values())
    assert timings["write"] > 0


# -- document integrity (issue 17, item 2) ------------------------------------------------------


def test_sources_never_overwrite_each_others_documents(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    hostile = _jsonl(
        tmp_path / "other.jsonl",
        {"id": "services/auth-service.md", "title": "Fake", "text": "AuthService is a toaster.",
         "triplets": []},
    )  # fmt: skip
    other_root = tmp_path / "other"
    other_root.mkdir()
    ingest(settings, clean_graph, other_root, triplets=hostile)
    rows = clean_graph.execute_query(
        "MATCH (d:Document {path: 'services/auth-service.md'}) RETURN d.title AS t, d.source AS s"
    ).records
    assert len(rows) == 2  # two sources, two documents
    again = ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    assert again.documents_unchanged == 14
    # With the same namespace the user says they are the same source: then it updates.
    ingest(settings, clean_graph, other_root, triplets=hostile, namespace="shared")
    ingest(settings, clean_graph, tmp_path, triplets=hostile, namespace="shared")
    shared = clean_graph.execute_query(
        "MATCH (d:Document {source: 'shared'}) RETURN count(d) AS n"
    ).records[0]["n"]
    assert shared == 1


def test_a_write_failing_midway_is_repaired_by_the_next_run(
    clean_graph: Driver, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _jsonl(
        tmp_path / "v1.jsonl",
        {"id": "doc", "title": "Doc", "text": "Omega Service calls Sigma Store.",
         "triplets": [{"subject": "Omega Service", "predicate": "calls",
                       "object": "Sigma Store"}]},
    )  # fmt: skip
    root = tmp_path / "root"
    root.mkdir()
    ingest(settings, clean_graph, root, triplets=first)
    second = _jsonl(
        tmp_path / "v1.jsonl",
        {"id": "doc", "title": "Doc", "text": "Omega Service uses Tau Queue.",
         "triplets": [{"subject": "Omega Service", "predicate": "uses", "object": "Tau Queue"}]},
    )  # fmt: skip

    from kg.graph.writer import GraphWriter

    def fail(self: GraphWriter, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("write failed midway")

    with monkeypatch.context() as patch:
        patch.setattr(GraphWriter, "upsert_relations", fail)
        with pytest.raises(RuntimeError, match="midway"):
            ingest(settings, clean_graph, root, triplets=second)
    # The old hash is gone: the graph holds half of the new version and says so.
    stored = clean_graph.execute_query("MATCH (d:Document) RETURN d.sha256 AS h").records
    assert [r["h"] for r in stored] == [None]
    repaired = ingest(settings, clean_graph, root, triplets=second)
    assert repaired.documents_changed == 1
    facts = clean_graph.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name + ' ' + r.predicate + ' ' + b.name AS f"
    ).records
    assert [r["f"] for r in facts] == ["Omega Service USES Tau Queue"]


# -- model stamp and migration (issue 10, item 4) -----------------------------------------------

_V1_GRAPH = """
CREATE (d:Document {id: 'doc_v1', path: 'a.md', root: '/corpus', title: 'A', sha256: 'h'})
CREATE (c:Chunk {id: 'chk_v1', document_id: 'doc_v1', index: 0, text: 'Kappa depends on Lambda.'})
CREATE (c)-[:PART_OF]->(d)
CREATE (k:Entity {id: 'k', name: 'Kappa', type: 'Service'})
CREATE (l:Entity {id: 'l', name: 'Lambda', type: 'Service'})
CREATE (c)-[:MENTIONS]->(k), (c)-[:MENTIONS]->(l)
CREATE (k)-[:DEPENDS_ON {key: 'k|DEPENDS_ON|l|', weight: 0.9, chunk_ids: ['chk_v1']}]->(l)
CREATE (k)-[:WAS_ONCE_ADMIRED_BY {key: 'k|WAS_ONCE_ADMIRED_BY|l|', weight: 0.5,
                                   chunk_ids: ['chk_v1']}]->(l)
CREATE (l)-[:PART_OF {key: 'l|PART_OF|k|', weight: 0.5, chunk_ids: ['chk_v1']}]->(k)
"""


def test_an_older_graph_is_refused_then_migrated(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    db = settings.neo4j.database
    clean_graph.execute_query(_V1_GRAPH, database_=db)
    assert read_model(clean_graph, db).effective == 1
    with pytest.raises(GraphModelError, match="kg migrate"):
        ingest(settings, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "x.jsonl"))
    with pytest.raises(GraphModelError, match="kg migrate"):  # what search's startup runs
        with_service(settings, lambda s: s.check_model())

    report = migrate(clean_graph, db, make_writer(settings, clean_graph))
    assert report.from_version == 1
    assert report.documents_reset == 1
    assert read_model(clean_graph, db).version == MODEL_VERSION
    stored = {
        r["p"]: r["t"]
        for r in clean_graph.execute_query(
            "MATCH (:Entity)-[r]->(:Entity) RETURN r.predicate AS p, type(r) AS t"
        ).records
    }
    # DEPENDS_ON is configured as typed; a once-seen predicate joins the long tail; a fact
    # named like a structural type no longer poses as one.
    assert stored == {
        "DEPENDS_ON": "DEPENDS_ON",
        "WAS_ONCE_ADMIRED_BY": "RELATED",
        "PART_OF": "RELATED",
    }
    doc = clean_graph.execute_query(
        "MATCH (d:Document) OPTIONAL MATCH (c:Chunk {document_id: d.id}) "
        "RETURN d.sha256 AS h, d.source AS s, count(c) AS chunks"
    ).records[0]
    assert (doc["h"], doc["s"], doc["chunks"]) == (None, "/corpus", 1)
    # Running it again changes nothing.
    assert migrate(clean_graph, db, make_writer(settings, clean_graph)).notes == ["nothing to do"]


def test_a_newer_graph_is_refused(clean_graph: Driver, settings: Settings, tmp_path: Path) -> None:
    stamp(clean_graph, settings.neo4j.database, MODEL_VERSION + 1)
    with pytest.raises(GraphModelError, match="newer kg"):
        ingest(settings, clean_graph, tmp_path, triplets=_jsonl(tmp_path / "x.jsonl"))
