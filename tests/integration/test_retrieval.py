"""Retrieval end to end: the zero-LLM document graph, text/vector/graph/hybrid search through
REST, the embedder identities in the graph, and the model 2 -> 3 migration."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg.client import KnowledgeGraph
from kg.errors import GraphModelError
from kg.graph.meta import MODEL_VERSION, read_embedders, read_model, stamp
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.clienv import cli_env

SLICE = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_slice" / "slice.json"


def _write_passages(folder: Path) -> tuple[dict[str, str], dict[str, object]]:
    """The vendored HotpotQA slice as Markdown files (``# Title`` + text); path -> title."""
    data = json.loads(SLICE.read_text(encoding="utf-8"))
    titles: dict[str, str] = {}
    for i, (title, sentences) in enumerate(data["passages"].items()):
        path = f"p{i:02d}.md"
        (folder / path).write_text(f"# {title}\n\n{''.join(sentences).strip()}\n", "utf-8")
        titles[path] = title
    return titles, data["question"]


def _offline(settings: Settings) -> Settings:
    """Settings whose LLM endpoint is a closed port: any LLM call would fail the ingest."""
    llm = settings.llm.model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    return settings.model_copy(update={"llm": llm})


@pytest.fixture(scope="module")
def hotpot(
    driver: Driver, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, str], dict[str, object]]]:
    from tests.conftest import _wipe

    _wipe(driver, settings.neo4j.database)
    folder = tmp_path_factory.mktemp("hotpot")
    titles, question = _write_passages(folder)
    with KnowledgeGraph(_offline(settings)) as graph:
        summary = graph.ingest(folder, graph="metadata")
    assert summary.ok
    assert summary.llm_calls == 0
    assert summary.chunks >= len(titles)  # a long passage is two chunks
    assert summary.docgraph_entities >= len(titles) - 2  # equal names are one entity
    yield titles, question
    _wipe(driver, settings.neo4j.database)


@pytest.fixture(scope="module")
def client(hotpot: object, settings: Settings) -> Iterator[httpx.Client]:
    app = create_app(
        api_settings(settings, require_auth=False), service_factory=verified_once_factory
    )
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


def _top(client: httpx.Client, titles: dict[str, str], question: str, mode: str) -> list[str]:
    resp = client.post(
        "/search/local", json={"query": question, "mode": mode, "depth": 2, "limit": 5}
    )
    assert resp.status_code == 200, resp.text
    return [titles[c["document_path"]] for c in resp.json()["chunks"]]


def test_a_two_hop_question_finds_both_passages_through_rest(
    client: httpx.Client, hotpot: tuple[dict[str, str], dict[str, object]]
) -> None:
    titles, q = hotpot
    gold = {str(t) for t, _ in q["supporting_facts"]}  # type: ignore[attr-defined]
    assert gold == {"Leland, North Carolina", "Maximum Overdrive"}
    question = str(q["question"])
    # The question names Leland; only the graph knows Leland's passage mentions the film.
    assert gold <= set(_top(client, titles, question, "hybrid"))
    assert gold <= set(_top(client, titles, question, "graph"))
    assert "Leland, North Carolina" in _top(client, titles, question, "text")


def test_every_mode_answers_through_rest(
    client: httpx.Client, hotpot: tuple[dict[str, str], dict[str, object]]
) -> None:
    titles, _ = hotpot
    for mode in ("text", "vector", "graph", "hybrid"):
        top = _top(client, titles, "Who directed Maximum Overdrive?", mode)
        assert top[0] == "Maximum Overdrive", mode


def test_the_document_graph_links_titles_and_mentions(
    driver: Driver, settings: Settings, hotpot: object
) -> None:
    records, _, _ = driver.execute_query(
        "MATCH (c:Chunk)-[:PART_OF]->(:Document {title: 'Leland, North Carolina'}) "
        "MATCH (c)-[:MENTIONS]->(e:Entity) RETURN collect(e.name) AS names, c.title AS title",
        database_=settings.neo4j.database,
    )
    assert records[0]["title"] == "Leland, North Carolina"
    assert {"Leland, North Carolina", "Maximum Overdrive"} <= set(records[0]["names"])
    stored = read_embedders(driver, settings.neo4j.database)
    assert stored == {"entity": "hashing-ngram/256", "chunk": "wordllama-l2_supercat/256"}


def test_other_embedders_are_refused_by_ingest_and_search(
    settings: Settings, hotpot: object, tmp_path: Path
) -> None:
    (tmp_path / "x.md").write_text("# X\n\nSomething new.\n")
    hashing = settings.model_copy(
        update={"chunks": settings.chunks.model_copy(update={"embedder": "hashing"})}
    )
    with KnowledgeGraph(hashing) as graph:
        with pytest.raises(GraphModelError, match=r"chunk_embedding.*wordllama-l2_supercat/256"):
            graph.ingest(tmp_path, graph="metadata")
        with pytest.raises(GraphModelError, match="KG_CHUNKS__EMBEDDER"):
            graph.check_model()  # what kg search and the API's start-up run first


def test_the_document_graph_adds_the_mentions_an_llm_missed(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    lines = [
        {"id": "a.md", "title": "Ledger", "text": "The Ledger DB keeps balances.",
         "entities": [{"name": "Ledger DB", "type": "database"}], "triplets": []},
        {"id": "b.md", "title": "Payments", "text": "Payments write to the ledger db nightly.",
         "entities": [], "triplets": []},
    ]  # fmt: skip
    triplets = tmp_path / "facts.jsonl"
    triplets.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    with KnowledgeGraph(_offline(settings)) as graph:
        summary = graph.ingest(tmp_path, triplets=triplets)
    assert summary.llm_calls == 0
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Chunk)-[:MENTIONS]->(:Entity {name: 'Ledger DB'}) "
        "MATCH (c)-[:PART_OF]->(d:Document) RETURN collect(d.path) AS paths",
        database_=settings.neo4j.database,
    )
    assert sorted(records[0]["paths"]) == ["a.md", "b.md"]


def test_migrate_brings_a_model_2_graph_to_titles_and_chunk_vectors(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    db = settings.neo4j.database
    (tmp_path / "a.md").write_text("# Alpha\n\nAlpha calls Beta.\n")
    with KnowledgeGraph(_offline(settings)) as graph:
        graph.ingest(tmp_path, graph="metadata")
    # Make it look like model 2: no titles on chunks, hashing vectors, no embedder records.
    clean_graph.execute_query(
        "MATCH (c:Chunk) SET c.title = null, c.embedding = [x IN range(1, 256) | 0.5] "
        "WITH 1 AS one MATCH (m:KgMeta) REMOVE m.entity_embedder, m.chunk_embedder",
        database_=db,
    )
    stamp(clean_graph, db, 2)
    with KnowledgeGraph(settings) as graph:
        with pytest.raises(GraphModelError, match="kg migrate"):
            graph.check_model()
        report = graph.migrate()
        assert report.from_version == 2
        assert report.chunks_reembedded == 1
        assert (
            graph.search("Who does Alpha call?", mode="vector").chunks[0].text.startswith("# Alpha")
        )
    assert read_model(clean_graph, db).version == MODEL_VERSION
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Chunk) RETURN c.title AS title, c.embedding[0] AS first", database_=db
    )
    assert records[0]["title"] == "Alpha"
    assert records[0]["first"] != 0.5


def test_kg_ingest_graph_metadata_calls_no_llm(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ledger.md").write_text("# Ledger DB\n\nThe ledger keeps balances.\n")
    (docs / "pay.md").write_text("# Payments\n\nPayments write to the [ledger](ledger.md).\n")
    env = cli_env(settings, KG_EXTRACT__BASE_URL="http://127.0.0.1:9/v1")
    run = [sys.executable, "-m", "cli.main", "ingest", str(docs), "--graph", "metadata", "--json"]
    proc = subprocess.run(run, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["llm_calls"] == 0
    assert summary["docgraph_entities"] == 2
    records, _, _ = clean_graph.execute_query(
        "MATCH (:Document {path: 'pay.md'})<-[:PART_OF]-(:Chunk)-[:MENTIONS]->(e:Entity) "
        "RETURN collect(e.name) AS names",
        database_=settings.neo4j.database,
    )
    assert sorted(records[0]["names"]) == ["Ledger DB", "Payments"]
