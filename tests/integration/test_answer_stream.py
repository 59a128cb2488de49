"""Answers that stream (issue 43 item 3): ``POST /answer`` with ``"stream": true``, the twins'
``answer_stream`` and ``kg ask --stream``, on the bundled example corpus.

The LLM is the scripted OpenAI-compatible server of tests/fakellm.py, streaming server-sent
chat-completion chunks to the real openai and instructor clients; Neo4j is real.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg import AnswerDelta, AnswerResponse, AsyncKnowledgeGraph, KnowledgeGraph
from kg.errors import ExtractionError
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM
from tests.integration.test_questions import REPO, _first_chunk

TIMEOUT_S = 1.5  # the answer endpoint's deadline here: a stream that never ends is cut by it
QUESTION = {"question": "Who owns AuthService?", "mode": "graph", "stream": True}
ANSWER_TEXT = "Team Platform Security owns AuthService since 2024-03-01."


def _answer_settings(settings: Settings, llm: ScriptedLLM) -> Settings:
    answer = settings.answer.model_validate(
        {"base_url": llm.base_url, "api_key": "test", "model": "scripted", "max_calls": 3,
         "timeout_s": TIMEOUT_S}
    )  # fmt: skip
    return settings.model_copy(update={"answer": answer})


@pytest.fixture(scope="module")
def corpus(driver: Driver, settings: Settings) -> Iterator[Driver]:
    from tests.conftest import ingested_example

    yield from ingested_example(driver, settings)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def scripted(llm: ScriptedLLM) -> Iterator[ScriptedLLM]:
    llm.reset()
    llm.responder = None
    yield llm
    llm.reset()
    llm.responder = None


@pytest.fixture(scope="module")
def client(corpus: Driver, settings: Settings, llm: ScriptedLLM) -> Iterator[httpx.Client]:
    configured = api_settings(_answer_settings(settings, llm), require_auth=False)
    app = create_app(configured, service_factory=verified_once_factory)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


def _citing(**stream: Any) -> Any:
    """A responder citing the prompt's first chunk, streamed with ``stream``'s Reply fields."""

    def reply(request: dict[str, Any]) -> Reply:
        payload = {
            "insufficient_context": False,
            "answer": ANSWER_TEXT,
            "citations": [{"chunk_id": _first_chunk(request)}],
            "confidence": 0.8,
        }
        return Reply(payload=payload, **stream)

    return reply


def _events(resp: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """The server-sent events of a response: (event, data) in order."""
    out = []
    for block in resp.text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "event" in fields:
            out.append((fields["event"], json.loads(fields.get("data", "null"))))
    return out


def test_rest_streams_the_text_then_the_validated_answer(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    scripted.responder = _citing(prompt_tokens=1234, completion_tokens=77)
    resp = client.post("/answer", json=QUESTION)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = _events(resp)
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "answer"
    assert set(kinds[:-1]) == {"delta"}
    assert len(kinds) > 3  # the text came in pieces, as the LLM wrote it
    final = events[-1][1]
    assert "".join(data["text"] for _, data in events[:-1]) == final["answer"] == ANSWER_TEXT
    context_chunks = {c["id"] for c in final["context"]["chunks"]}
    assert final["citations"]
    assert final["citations"][0]["chunk_id"] in context_chunks
    assert final["mode"] == "graph"
    # the tokens are the stream's final usage chunk (plausible, so believed), one call
    assert final["usage"] == {"calls": 1, "prompt_tokens": 1234, "completion_tokens": 77}
    [request] = scripted.requests
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}


def test_an_invented_citation_ends_the_stream_with_an_error_and_no_answer(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    invented = {
        "insufficient_context": False,
        "answer": "Team Identity owns it, says a chunk that is not there.",
        "citations": [{"chunk_id": "chk_invented000000"}],
        "confidence": 0.9,
    }
    scripted.responder = lambda _: Reply(payload=invented)
    resp = client.post("/answer", json=QUESTION)
    assert resp.status_code == 200, resp.text
    events = _events(resp)
    kinds = [kind for kind, _ in events]
    assert "answer" not in kinds
    assert kinds[-1] == "error"
    assert set(kinds[:-1]) == {"delta"}
    error = events[-1][1]
    assert error["status"] == 502
    assert error["error"] == "llm_failed"
    assert "not in the context" in error["detail"]
    assert scripted.calls == 1  # never re-asked mid-stream


def test_an_answer_past_its_bound_is_cut_mid_stream(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    long = {"insufficient_context": False, "answer": "w" * 50_000, "citations": [],
            "confidence": 0.5}  # fmt: skip
    scripted.responder = lambda _: Reply(payload=long, chunk_chars=1000, chunk_delay_s=0.01)
    resp = client.post("/answer", json=QUESTION)
    events = _events(resp)
    assert events[-1][0] == "error"
    assert "longer than 4000 characters" in events[-1][1]["detail"]
    assert sum(len(data["text"]) for kind, data in events if kind == "delta") <= 4000
    assert scripted.stream_cut.wait(5)  # not read to its end


@pytest.mark.parametrize(
    ("stream", "named"),
    [
        ({"stream_forever": True, "chunk_delay_s": 0.05}, "timeout"),
        ({"stream_forever": True, "padding": 64_000}, "max_response_bytes"),
    ],
    ids=["forever", "too-many-bytes"],
)
def test_a_stream_past_its_bounds_is_cut_with_todays_error(
    client: httpx.Client, scripted: ScriptedLLM, stream: dict[str, Any], named: str
) -> None:
    scripted.responder = _citing(**stream)
    started = time.monotonic()
    resp = client.post("/answer", json=QUESTION)
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert resp.status_code == 200, resp.text
    kind, error = _events(resp)[-1]
    assert kind == "error"
    assert error["status"] == 502
    assert named in error["detail"]
    assert scripted.stream_cut.wait(5)  # kg closed the connection; it read no further
    # the same failure before the first event is today's plain JSON error
    scripted.reset()
    scripted.responder = lambda _: Reply(payload="{", **stream)
    resp = client.post("/answer", json=QUESTION)
    assert resp.status_code == 502, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    assert named in resp.json()["detail"]


def test_errors_before_the_stream_are_plain_json(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    resp = client.post("/answer", json={**QUESTION, "depth": 7})
    assert resp.status_code == 422, resp.text
    assert resp.json()["errors"][0]["field"].startswith("depth")
    scripted.responder = lambda _: Reply(status=503)
    resp = client.post("/answer", json=QUESTION)
    assert resp.status_code == 502, resp.text
    assert resp.json()["error"] == "llm_failed"
    assert "HTTP 503" in resp.json()["detail"]


def test_a_client_that_goes_away_stops_the_llm_call(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    scripted.responder = _citing(chunk_chars=2, chunk_delay_s=0.05, stream_forever=True)
    with client.stream("POST", "/answer", json=QUESTION) as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            if line == "event: delta":
                break  # the answer has started: the client leaves mid-stream
    assert scripted.stream_cut.wait(5), "the server kept reading from the LLM"
    assert scripted.streams_cut == 1


# -- the library ------------------------------------------------------------------------------


def test_both_twins_stream_then_answer(
    corpus: Driver, settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.responder = _citing()
    configured = _answer_settings(settings, scripted)
    with KnowledgeGraph(configured) as graph:
        events = list(graph.answer_stream("Who owns AuthService?", mode="graph"))
    *deltas, final = events
    assert deltas
    assert all(isinstance(d, AnswerDelta) for d in deltas)
    assert isinstance(final, AnswerResponse)
    assert "".join(d.text for d in deltas) == final.answer == ANSWER_TEXT
    assert final.usage.calls == 1

    async def run() -> list[AnswerDelta | AnswerResponse]:
        async with AsyncKnowledgeGraph(configured) as graph:
            return [e async for e in graph.answer_stream("Who owns AuthService?", mode="graph")]

    *deltas, final = asyncio.run(run())
    assert isinstance(final, AnswerResponse)
    assert "".join(d.text for d in deltas if isinstance(d, AnswerDelta)) == final.answer
    # an invalid answer raises after its text, as the non-streaming answer's error
    scripted.responder = lambda _: Reply(
        payload={"insufficient_context": False, "answer": "Guess.", "citations": [],
                 "confidence": 1.0}
    )  # fmt: skip
    with KnowledgeGraph(configured) as graph:
        stream = graph.answer_stream("Who owns AuthService?", mode="graph")
        seen: list[object] = []
        with pytest.raises(ExtractionError, match="no valid answer in 1 attempt"):
            seen.extend(stream)
    assert seen
    assert all(isinstance(event, AnswerDelta) for event in seen)


def test_the_sync_twin_closed_early_closes_the_llm_connection(
    corpus: Driver, settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.responder = _citing(chunk_chars=2, chunk_delay_s=0.05, stream_forever=True)
    with KnowledgeGraph(_answer_settings(settings, scripted)) as graph:
        stream = graph.answer_stream("Who owns AuthService?", mode="graph")
        assert isinstance(next(stream), AnswerDelta)
        stream.close()  # type: ignore[attr-defined]
        assert scripted.stream_cut.wait(5)


# -- kg ask -----------------------------------------------------------------------------------


def test_kg_ask_streams_the_answer(
    corpus: Driver, settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.responder = _citing()
    env = cli_env(settings, KG_EXTRACT__BASE_URL=scripted.base_url, KG_EXTRACT__MODEL="m")
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", "Who owns AuthService?", "--mode", "graph",
         "--stream"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ANSWER_TEXT in done.stdout
    assert "[1] " in done.stdout  # the cited source, after the text
    assert "1 LLM call(s)" in done.stdout
    assert scripted.requests[-1]["stream"] is True
