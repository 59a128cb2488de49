"""Russian and mixed-language corpora: each chunk in its language's index, morphology that works,
and bridges from a Russian question to English-named entities (docs/search.md, "Languages")."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from neo4j import Driver

from kg.client import KnowledgeGraph
from kg.errors import GraphModelError
from kg.graph.driver import open_async_driver
from kg.graph.meta import MODEL_VERSION, read_model, stamp
from kg.ingest import ingest
from kg.resolve import make_embedder
from kg.search.models import SearchRequest, SearchResponse
from kg.search.service import SearchService
from kg.settings import Settings
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


def _offline(settings: Settings) -> Settings:
    chunks = {"embedder": "hashing", "embedding_dim": settings.resolve.embedding_dim}
    return settings.model_copy(update={"chunks": settings.chunks.model_copy(update=chunks)})


async def _search(settings: Settings, request: SearchRequest) -> SearchResponse:
    driver = open_async_driver(settings.neo4j)
    try:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        return await service.local_search(request)
    finally:
        await driver.close()


def test_each_chunk_is_labelled_with_its_language(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "ru.md").write_text(
        "# Сервис платежей\n\nСервис платежей пишет события в Kafka и хранит данные в PostgreSQL.\n"
    )
    (tmp_path / "en.md").write_text("# Payments\n\nThe payments service writes to Kafka.\n")
    with KnowledgeGraph(_offline(settings)) as graph:
        graph.ingest(tmp_path, graph="metadata")
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document) "
        "RETURN d.path AS path, c.language AS language, labels(c) AS labels",
        database_=settings.neo4j.database,
    )
    found = {r["path"]: (r["language"], sorted(r["labels"])) for r in records}
    assert found == {
        "ru.md": ("ru", ["Chunk", "ChunkRu"]),
        "en.md": ("en", ["Chunk", "ChunkEn"]),
    }


def test_russian_morphology_finds_other_forms_of_a_word(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "payments.md").write_text(
        "# Платежи\n\nВсе платежи проходят через один сервис. Он хранит их в базе данных.\n"
    )
    (tmp_path / "noise.md").write_text(
        "# Доставка\n\nКурьеры развозят заказы по городу. Маршруты строит отдельная система.\n"
    )
    offline = _offline(settings)
    with KnowledgeGraph(offline) as graph:
        graph.ingest(tmp_path, graph="metadata")
        # "платежей" (genitive plural) and "сервисов" meet "платежи" and "сервис" only through
        # the Russian stemmer: neither form occurs in the documents.
        for question in ("история платежей", "список сервисов"):
            hits = graph.search(question, mode="text").chunks
            assert hits, question
            assert hits[0].document_path == "payments.md", question
        # An English analyzer would not stem the Russian words: the English index has no match.
        assert not graph.search("история платежей", mode="text", limit=5).chunks[1:]


def test_reingest_moves_a_chunk_to_its_new_language(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    doc = tmp_path / "note.md"
    doc.write_text("# Note\n\nThe ledger keeps every payment.\n")
    offline = _offline(settings)
    with KnowledgeGraph(offline) as graph:
        graph.ingest(tmp_path, graph="metadata")
        doc.write_text("# Заметка\n\nЖурнал хранит все платежи.\n")
        graph.ingest(tmp_path, graph="metadata")
        assert graph.search("платежей", mode="text").chunks[0].document_path == "note.md"
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Chunk) RETURN labels(c) AS labels", database_=settings.neo4j.database
    )
    assert [sorted(r["labels"]) for r in records] == [["Chunk", "ChunkRu"]]


def test_russian_question_on_the_example_reaches_payments_api_and_postgresql(
    clean_graph: Driver, settings: Settings
) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    request = SearchRequest(
        query="Какую базу данных использует сервис платежей?", mode="graph", depth=2, limit=10
    )
    response = asyncio.run(_search(settings, request))
    top = [e.name for e in response.entities[:5]]
    assert top[0] == "Payments API", top
    assert any(name.startswith("PostgreSQL") for name in top), top
    # The alias "сервис платежей" is stated in a Russian document; the graph carries the
    # question through MENTIONS to the English chunks about Payments API.
    english = [
        c.document_path for c in response.chunks[:5] if not c.document_path.startswith("ru/")
    ]
    assert "services/payments-api.md" in english, [c.document_path for c in response.chunks]


def test_entities_get_a_bounded_label_per_type(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    bounded = settings.model_copy(
        update={"write": settings.write.model_copy(update={"max_type_labels": 3})}
    )
    ingest(bounded, clean_graph, EXAMPLE, triplets=TRIPLETS)
    db = settings.neo4j.database
    records, _, _ = clean_graph.execute_query(
        "MATCH (e:Entity) RETURN e.type AS type, [l IN labels(e) WHERE l <> 'Entity'] AS extra",
        database_=db,
    )
    extra = {label for r in records for label in r["extra"]}
    assert len(extra) == 3  # the bound holds: the example has ten types
    for r in records:
        assert r["extra"] in ([], [r["type"]])  # a type's own label, or none
    granted, _, _ = clean_graph.execute_query(
        "MATCH (m:KgMeta) RETURN m.type_labels AS labels", database_=db
    )
    assert set(granted[0]["labels"]) == extra


def test_migrate_brings_a_model_3_graph_to_languages_and_type_labels(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    db = settings.neo4j.database
    (tmp_path / "ru.md").write_text("# Платежи\n\nВсе платежи проходят через сервис.\n")
    (tmp_path / "en.md").write_text("# Payments\n\nEvery payment goes through one service.\n")
    offline = _offline(settings)
    with KnowledgeGraph(offline) as graph:
        graph.ingest(tmp_path, graph="metadata")
    # Make it look like model 3: no languages, one chunk_text index, no type labels.
    clean_graph.execute_query(
        "MATCH (c:Chunk) REMOVE c:ChunkEn:ChunkRu, c.language "
        "WITH count(*) AS n MATCH (e:Entity) REMOVE e:Topic "
        "WITH count(*) AS n MATCH (m:KgMeta) REMOVE m.type_labels",
        database_=db,
    )
    clean_graph.execute_query(
        "CREATE FULLTEXT INDEX chunk_text IF NOT EXISTS FOR (c:Chunk) ON EACH [c.text, c.title]",
        database_=db,
    )
    stamp(clean_graph, db, 3)
    with KnowledgeGraph(offline) as graph:
        with pytest.raises(GraphModelError, match="kg migrate"):
            graph.check_model()
        report = graph.migrate()
        assert report.from_version == 3
        assert report.chunks_labelled == 2
        assert report.entities_labelled >= 2
        assert graph.search("платежей", mode="text").chunks[0].document_path == "ru.md"
    assert read_model(clean_graph, db).version == MODEL_VERSION
    records, _, _ = clean_graph.execute_query("SHOW FULLTEXT INDEXES YIELD name", database_=db)
    assert "chunk_text" not in {r["name"] for r in records}
    records, _, _ = clean_graph.execute_query(
        "MATCH (e:Entity) RETURN e.name AS name, labels(e) AS labels", database_=db
    )
    assert all("Topic" in r["labels"] for r in records if r["name"] in ("Payments", "Платежи"))


def test_cli_tables_show_russian_questions_and_cyrillic_names(
    clean_graph: Driver, settings: Settings
) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    env = cli_env(settings) | {"COLUMNS": "200"}
    run = [sys.executable, "-m", "cli.main", "search", "--mode", "graph"]
    proc = subprocess.run(
        [*run, "Какую базу данных использует сервис платежей?"],
        cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Payments API" in proc.stdout
    assert "PostgreSQL" in proc.stdout
    proc = subprocess.run(
        [*run, "Кто входит в Команда биллинга?"],
        cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Команда биллинга" in proc.stdout
    assert "Дмитрий Орлов" in proc.stdout


def test_a_longest_russian_question_is_searched_not_refused(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "en.md").write_text("# Payments\n\nEvery payment goes through one service.\n")
    with KnowledgeGraph(_offline(settings)) as graph:
        graph.ingest(tmp_path, graph="metadata")
        # 2,000 characters (the request's limit) whose transliteration is twice as long.
        question = ("щука щавель " * 200)[:2000]
        for mode in ("text", "hybrid"):
            assert graph.search(question, mode=mode).chunks is not None
