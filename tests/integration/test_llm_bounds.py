"""What kg accepts from an LLM endpoint (issue 26, "LLM output size has no bound"): answers are
read up to ``llm.max_response_bytes``, every call asks for at most ``llm.max_output_tokens``,
and the tokens counted in responses and budgets are kg's own measure, not the endpoint's claim.

Over real HTTP (the app on loopback, the real Neo4j); the LLM is the scripted OpenAI-compatible
server of tests/fakellm.py, reached through the real openai and instructor clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from neo4j import Driver
from pydantic import BaseModel

from api.app import create_app
from kg import KnowledgeGraph
from kg.errors import ExtractionError
from kg.llm import LLMEndpoint, ask
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.fakellm import Reply, ScriptedLLM
from tests.integration.test_questions import EXAMPLE, OWNED_IN_2023, TRIPLETS


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


@pytest.fixture(scope="module")
def client(driver: Driver, settings: Settings, llm: ScriptedLLM) -> Iterator[httpx.Client]:
    from tests.conftest import _wipe

    _wipe(driver, settings.neo4j.database)
    with KnowledgeGraph(settings) as graph:
        graph.ingest(EXAMPLE, triplets=TRIPLETS)
    answer = settings.answer.model_validate(
        {"base_url": llm.base_url, "api_key": "test", "model": "scripted", "max_calls": 3}
    )
    configured = api_settings(settings, require_auth=False).model_copy(update={"answer": answer})
    app = create_app(configured, service_factory=verified_once_factory)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http
    _wipe(driver, settings.neo4j.database)


QUESTION = {"question": "Who owned AuthService in 2023?"}


def test_a_huge_answer_fails_the_call_unread(client: httpx.Client, scripted: ScriptedLLM) -> None:
    scripted.script(Reply(payload={"choice": "x" * 5_000_000}))  # past the 2 MB default
    started = time.monotonic()
    resp = client.post("/query", json=QUESTION)
    assert resp.status_code == 502, resp.text
    assert "max_response_bytes" in resp.json()["detail"]
    assert time.monotonic() - started < 10
    assert scripted.calls == 1  # a bounded answer is not re-asked
    assert scripted.requests[0]["max_tokens"] == 4096  # and every call asks for a bounded one


@pytest.mark.parametrize("claimed", [10**30, 20])
def test_claimed_usage_does_not_reach_the_response(
    client: httpx.Client, scripted: ScriptedLLM, claimed: int
) -> None:
    # A valid answer padded to 400 kB: about 100k tokens by kg's measure, whatever is claimed.
    padded = json.dumps(OWNED_IN_2023) + " " * 400_000
    scripted.script(Reply(payload=padded, prompt_tokens=claimed, completion_tokens=claimed))
    resp = client.post("/query", json=QUESTION)
    assert resp.status_code == 200, resp.text
    usage = resp.json()["usage"]
    assert usage["calls"] == 1
    assert 0 < usage["prompt_tokens"] < 100_000  # the prompt is a few kB
    assert 400_000 / 16 <= usage["completion_tokens"] <= 401_000  # within 4x of ~100k


class _Answer(BaseModel):
    answer: str


def test_the_budget_counts_measured_tokens(scripted: ScriptedLLM, settings: Settings) -> None:
    # The first answer is ~50k tokens by kg's measure but claims 20; at least a quarter of the
    # measure counts, which spends a budget of 10k tokens: the invalid answer is not re-asked.
    scripted.script(
        Reply(payload={"wrong": "y" * 200_000}, completion_tokens=20),
        Reply(payload={"answer": "fine"}),
    )
    configured = settings.model_copy(
        update={
            "answer": settings.answer.model_validate(
                {"base_url": scripted.base_url, "api_key": "t", "model": "m",
                 "max_calls": 3, "max_tokens": 10_000}
            )
        }
    )  # fmt: skip
    endpoint = LLMEndpoint.from_settings(configured, "answer")
    import asyncio

    with pytest.raises(ExtractionError, match="budget of 10000 tokens"):
        asyncio.run(ask(endpoint, _Answer, [{"role": "user", "content": "hi"}], context={}))
    assert scripted.calls == 1


def test_max_output_tokens_off_sends_none(scripted: ScriptedLLM, settings: Settings) -> None:
    scripted.script(Reply(payload={"answer": "fine"}))
    configured = settings.model_copy(
        update={
            "llm": settings.llm.model_validate(
                {**settings.llm.model_dump(), "max_output_tokens": "off"}
            ),
            "answer": settings.answer.model_validate(
                {"base_url": scripted.base_url, "api_key": "t", "model": "m"}
            ),
        }
    )
    import asyncio

    endpoint = LLMEndpoint.from_settings(configured, "answer")
    found, _ = asyncio.run(ask(endpoint, _Answer, [{"role": "user", "content": "hi"}], context={}))
    assert found.answer == "fine"
    assert "max_tokens" not in scripted.requests[0]
