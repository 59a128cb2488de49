"""A Russian question over an English corpus with an LLM configured: the question is translated
through instructor (search.translate), cached, and counted; and the multilingual-embeddings
recipe (an OpenAI-compatible /v1/embeddings serving bge-m3 or multilingual-e5).

The LLM and the embeddings model are the scripted OpenAI-compatible server on loopback
(tests/fakellm.py), spoken to through the real openai and instructor clients: no machine here
can reach a real one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.client import KnowledgeGraph
from kg.settings import Settings
from tests.fakellm import Reply, ScriptedLLM

QUESTION = "Где хранятся транзакции?"
TRANSLATION = {
    "translations": [
        {
            "language": "en",
            "text": "Where are the transactions stored?",
            "entities": ["Payments API"],
        }
    ]
}


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "payments.md").write_text(
        "# Payments API\n\nThe Payments API stores every transaction in PostgreSQL 16.\n"
    )
    (tmp_path / "delivery.md").write_text(
        "# Delivery\n\nCouriers deliver orders across the city; a planner draws the routes.\n"
    )
    return tmp_path


def _settings(settings: Settings, llm: ScriptedLLM, **search: Any) -> Settings:
    chunks = {"embedder": "hashing", "embedding_dim": settings.resolve.embedding_dim}
    answer = {"base_url": llm.base_url, "api_key": "test", "model": "scripted", "max_calls": 2}
    return settings.model_copy(
        update={
            "chunks": settings.chunks.model_copy(update=chunks),
            "answer": settings.answer.model_validate(answer),
            "search": settings.search.model_copy(update={"translate": True, **search}),
        }
    )


def _user_message(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def test_russian_question_reaches_english_text_through_the_translation(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> None:
    llm.responder = lambda request: Reply(payload=TRANSLATION)
    with KnowledgeGraph(_settings(settings, llm)) as graph:
        graph.ingest(corpus, graph="metadata")
        found = graph.search(QUESTION, mode="text")
        assert found.chunks[0].document_path == "payments.md"
        assert [t.text for t in found.translations] == ["Where are the transactions stored?"]
        assert found.translation_error is None
        # Asked for English only: the corpus has no Russian chunk.
        assert "English (en)" in _user_message(llm.requests[0])
        assert "Russian" not in _user_message(llm.requests[0]).split("Question:")[0]
        # Graph mode links the translated name: Payments API is a seed.
        linked = graph.search(QUESTION, mode="graph")
        assert linked.entities[0].name == "Payments API"
        # The second and third asks were served from the cache.
        assert llm.calls == 1
    # Without translation no LLM is asked: the question's English gloss (kg.glossary:
    # хранятся -> storage, транзакции -> transactions) is the offline bridge.
    offline = _settings(settings, llm).model_copy(
        update={"search": settings.search.model_copy(update={"translate": False})}
    )
    with KnowledgeGraph(offline) as graph:
        plain = graph.search(QUESTION, mode="text")
        assert plain.chunks[0].document_path == "payments.md"
        assert plain.translations == []
    assert llm.calls == 1


def test_no_translation_when_the_corpus_is_in_the_question_language(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> None:
    llm.responder = lambda request: Reply(payload=TRANSLATION)
    with KnowledgeGraph(_settings(settings, llm)) as graph:
        graph.ingest(corpus, graph="metadata")
        found = graph.search("Where are transactions stored?", mode="text")
    assert found.chunks[0].document_path == "payments.md"
    assert found.translations == []
    assert llm.calls == 0


def test_a_failing_translator_is_reported_and_the_search_still_runs(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> None:
    llm.responder = lambda request: Reply(status=500)
    with KnowledgeGraph(_settings(settings, llm)) as graph:
        graph.ingest(corpus, graph="metadata")
        found = graph.search(QUESTION, mode="hybrid")
    assert found.translations == []
    assert found.translation_error is not None
    assert "HTTP 500" in found.translation_error


def test_translation_spends_from_the_request_budget(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> None:
    # Never valid (a language kg does not index): instructor re-asks until the budget of 2
    # calls (answer.max_calls) is spent, then the search runs untranslated.
    bad = {"translations": [{"language": "de", "text": "Wo werden Transaktionen gespeichert?"}]}
    llm.responder = lambda request: Reply(payload=bad)
    with KnowledgeGraph(_settings(settings, llm)) as graph:
        graph.ingest(corpus, graph="metadata")
        found = graph.search(QUESTION, mode="text")
    assert llm.calls == 2
    assert found.translation_error is not None
    assert "budget of 2 LLM calls" in found.translation_error


# A scripted multilingual embeddings model: each dimension is a concept, whatever the language.
CONCEPTS = (
    ("payment", "transaction", "платеж", "транзакц"),
    ("courier", "deliver", "route", "курьер", "доставк", "маршрут"),
)


def _multilingual(text: str, dim: int) -> list[float]:
    folded = text.casefold()
    vec = [0.01] * dim
    for i, stems in enumerate(CONCEPTS):
        vec[i] += sum(folded.count(s) for s in stems)
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


def test_multilingual_embeddings_endpoint_recipe(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> None:
    # docs/search.md, "Languages": KG_CHUNKS__EMBEDDER=openai with an OpenAI-compatible
    # /v1/embeddings (Ollama or TEI serving bge-m3) puts questions and passages of both
    # languages in one space; no translation needed.
    llm.embed = _multilingual
    chunks = {
        "embedder": "openai",
        "embed_base_url": llm.base_url,
        "embed_model": "bge-m3",
        "embedding_dim": settings.resolve.embedding_dim,
    }
    configured = settings.model_copy(update={"chunks": settings.chunks.model_copy(update=chunks)})
    with KnowledgeGraph(configured) as graph:
        graph.ingest(corpus, graph="metadata")
        found = graph.search("Как курьеры строят маршруты доставки?", mode="vector")
    assert found.chunks[0].document_path == "delivery.md"
    embedded = [
        json.dumps(r.get("input"), ensure_ascii=False)
        for r in llm.requests
        if r["_path"].endswith("/embeddings")
    ]
    assert any("маршруты" in text for text in embedded)  # the question went to the endpoint
    assert any("Couriers" in text for text in embedded)  # and so did the passages
    assert all(r.get("model") == "bge-m3" for r in llm.requests)
    assert llm.calls == 0
