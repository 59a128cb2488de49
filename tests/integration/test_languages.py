"""Russian and mixed-language corpora: each chunk in its language's index, morphology that works,
and bridges from a Russian question to English-named entities (docs/search.md, "Languages")."""

from __future__ import annotations

import asyncio
from pathlib import Path

from neo4j import Driver

from kg.client import KnowledgeGraph
from kg.graph.driver import open_async_driver
from kg.ingest import ingest
from kg.resolve import make_embedder
from kg.search import SearchService
from kg.search_models import SearchRequest, SearchResponse
from kg.settings import Settings

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
