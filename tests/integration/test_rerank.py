"""The optional rerank stage (kg.search.rerank) over real HTTP, and through the real search.

The rerank endpoint is the scripted loopback server of tests/fakererank.py, spoken to through
kg's own client (httpx): no reranking model runs on this machine. The search runs on the real
Neo4j of the test session.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.client import KnowledgeGraph
from kg.search.models import SEARCH_MODES, ChunkHit, RerankOutcome, SearchResponse
from kg.search.rerank import MAX_RESPONSE_BYTES, Reranker
from kg.settings import RerankSettings, Settings
from tests.fakererank import RerankReply, ScriptedReranker

SECRET = "rerank-key-never-shown"


def _chunks(*texts: str) -> list[ChunkHit]:
    return [
        ChunkHit(id=f"c{i}", text=t, document_id=f"d{i}", document_path=f"{i}.md", score=1 - i / 10)
        for i, t in enumerate(texts)
    ]


CHUNKS = _chunks(
    # Past its first 50 characters this one names every word of the question.
    "Couriers deliver orders across the whole city, every day. Where are payments stored in "
    "the ledger?",
    "The ledger keeps payments.",
    "Payments are stored in the ledger database.",
    "Nothing relevant here.",
)
QUERY = "Where are payments stored in the ledger?"


def _rerank(server: ScriptedReranker, **fields: Any) -> tuple[list[ChunkHit], RerankOutcome]:
    settings = RerankSettings(enabled=True, url=server.url, shape=server.shape, **fields)
    return asyncio.run(Reranker(settings).rerank(QUERY, CHUNKS))


@pytest.fixture(params=["cohere", "tei"])
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedReranker]:
    with ScriptedReranker(shape=request.param) as scripted:
        yield scripted


def test_the_endpoint_reorders_the_top_n_and_the_rest_keeps_its_order(
    server: ScriptedReranker,
) -> None:
    chunks, outcome = _rerank(server, top_n=3, api_key=SECRET, model="m", max_doc_chars=50)
    # Words of the question found in each document's first 50 characters: c2 6, c1 3, c0 1
    # (7 uncut); c3 was not sent.
    assert [c.id for c in chunks] == ["c2", "c1", "c0", "c3"]
    assert [c.rerank_score for c in chunks] == [6.0, 3.0, 1.0, None]
    assert [c.score for c in chunks] == [0.8, 0.9, 1.0, 0.7]  # retrieval scores kept
    assert outcome.applied
    assert outcome.reranked == 3
    assert outcome.error is None
    sent = server.requests[0]
    texts = sent["texts"] if server.shape == "tei" else sent["documents"]
    assert texts == [c.text[:50] for c in CHUNKS[:3]]
    assert sent["query"] == QUERY
    assert ("model" in sent) == (server.shape == "cohere")
    assert server.headers[0]["Authorization"] == f"Bearer {SECRET}"


def test_documents_the_endpoint_left_unscored_follow_in_fused_order(
    server: ScriptedReranker,
) -> None:
    if server.shape == "tei":
        server.script(RerankReply(payload=[{"index": 3, "score": 0.2}]))
    else:
        server.script(RerankReply(payload={"results": [{"index": 3, "relevance_score": 0.2}]}))
    chunks, outcome = _rerank(server)
    assert [c.id for c in chunks] == ["c3", "c0", "c1", "c2"]
    assert outcome.applied


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (RerankReply(status=500, payload={"error": "boom"}), "HTTP 500"),
        (RerankReply(status=404, payload={"error": "no such route"}), "HTTP 404"),
        (RerankReply(status=200, raw_body="<html>oops</html>"), "not JSON"),
        (None, "index 9 not in 0..3"),  # in the server's shape, below
        (RerankReply(raw_body="[" + " " * (MAX_RESPONSE_BYTES + 10) + "]"), "response over"),
        (RerankReply(delay_s=2.0), "no answer within 0.5 s"),
    ],
)
def test_a_failing_endpoint_leaves_the_order_and_says_why(
    server: ScriptedReranker, reply: RerankReply | None, reason: str
) -> None:
    if reply is None:  # a score for a document that was never sent
        scores = server.answer({"query": QUERY, "documents": ["a"], "texts": ["a"]})
        items = scores if server.shape == "tei" else scores["results"]
        items[0]["index"] = 9
        reply = RerankReply(payload=scores)
    server.script(reply)
    # only the slow reply meets the short bound: under load, a quick one can take 0.5 s too
    timeout_s = 0.5 if reply.delay_s else 10.0
    chunks, outcome = _rerank(server, api_key=SECRET, timeout_s=timeout_s)
    assert chunks == CHUNKS  # the fused order, untouched
    assert not outcome.applied
    assert outcome.reranked == 4
    assert outcome.error is not None
    assert reason in outcome.error
    assert SECRET not in outcome.error
    assert server.url not in outcome.error


def test_an_endpoint_nobody_listens_on_leaves_the_order() -> None:
    url = f"http://127.0.0.1:{_free_port()}/rerank"
    settings = RerankSettings(enabled=True, url=url, timeout_s=2)
    chunks, outcome = asyncio.run(Reranker(settings).rerank(QUERY, CHUNKS))
    assert chunks == CHUNKS
    assert not outcome.applied
    assert outcome.error == "request failed (ConnectError)"


def test_no_chunks_no_call(server: ScriptedReranker) -> None:
    settings = RerankSettings(enabled=True, url=server.url, shape=server.shape)
    chunks, outcome = asyncio.run(Reranker(settings).rerank(QUERY, []))
    assert chunks == []
    assert outcome == RerankOutcome(applied=False, reranked=0)
    assert server.requests == []


# -- through the real search on the real Neo4j ---------------------------------------------


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    docs = {
        "payments.md": "# Payments\n\nOrders are paid by card; the payment service keeps "
        "every order's receipt.\n",
        "archive.md": "# Archive\n\nOld orders are archived to cold storage after a year; "
        "the archive keeps order history.\n",
        "delivery.md": "# Delivery\n\nCouriers deliver orders across the city; a planner "
        "draws the routes for each order.\n",
    }
    for name, text in docs.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _settings(settings: Settings, **rerank: Any) -> Settings:
    chunks = {"embedder": "hashing", "embedding_dim": settings.resolve.embedding_dim}
    return settings.model_copy(
        update={
            "chunks": settings.chunks.model_copy(update=chunks),
            # A generous query bound: the searches compare orders, not time, on a busy machine.
            "search": settings.search.model_copy(
                update={"rerank": RerankSettings.model_validate(rerank), "query_timeout_s": 60}
            ),
        }
    )


def _prefers_archive(query: str, document: str) -> float:
    """A scripted reranker that is sure the archive answers every question (and ties the rest,
    which then keep their fused order)."""
    return 10.0 if "archive" in document.lower() else 1.0


QUESTION = "Where do orders go?"


def _searches(settings: Settings, corpus: Path | None = None) -> dict[str, SearchResponse]:
    with KnowledgeGraph(settings) as graph:
        if corpus is not None:
            graph.ingest(corpus, graph="metadata")
        return {mode: graph.search(QUESTION, mode=mode, limit=3) for mode in SEARCH_MODES}


def test_rerank_reorders_the_chunks_of_every_local_mode(
    clean_graph: Driver, settings: Settings, corpus: Path
) -> None:
    plain = _searches(_settings(settings), corpus)
    assert all(found.rerank is None for found in plain.values())  # off by default
    assert plain["text"].chunks[0].document_path != "archive.md"
    for shape in ("cohere", "tei"):
        with ScriptedReranker(shape=shape, score=_prefers_archive) as server:
            on = _settings(
                settings, enabled=True, url=server.url, shape=shape, top_n=10, timeout_s=60
            )
            reranked = _searches(on)
            assert len(server.requests) == len(SEARCH_MODES)
        for mode, found in reranked.items():
            before = [c.id for c in plain[mode].chunks]
            assert plain[mode].chunks[-1].document_path == "archive.md", mode
            assert found.rerank is not None, mode
            assert found.rerank.applied, mode
            assert found.rerank.error is None
            # The same three chunks, the archive lifted from last to first.
            assert [c.id for c in found.chunks] == [before[-1], *before[:-1]], (shape, mode)
            scores = [c.rerank_score for c in found.chunks]
            assert scores == [10.0, 1.0, 1.0]


def test_a_failing_endpoint_keeps_the_search_order_and_the_response_says_so(
    clean_graph: Driver, settings: Settings, corpus: Path
) -> None:
    plain = _searches(_settings(settings), corpus)
    with ScriptedReranker() as server:
        server.script(*[RerankReply(status=503) for _ in SEARCH_MODES])
        failed = _searches(_settings(settings, enabled=True, url=server.url, top_n=10))
    for mode, found in failed.items():
        assert [c.id for c in found.chunks] == [c.id for c in plain[mode].chunks], mode
        assert found.chunks, mode
        assert found.rerank is not None
        assert not found.rerank.applied
        assert found.rerank.error == "the endpoint answered HTTP 503"
        assert all(c.rerank_score is None for c in found.chunks)
