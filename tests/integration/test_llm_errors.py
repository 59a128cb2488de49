"""An LLM that fails names the endpoint tried and the settings to change, on every surface.

`kg ask` (a subprocess), `POST /answer` (502 `llm_failed`, over real HTTP) and the MCP `answer`
tool (through the SDK's client) on the bundled example; Neo4j is real. The endpoints are a
closed loopback port (no LLM running) and the scripted server of tests/fakellm.py refusing
the key. No secret may appear: not the key, not userinfo or a query in the URL.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp.client.client import Client
from neo4j import Driver

from api.app import create_app
from kg import AsyncKnowledgeGraph
from kg.settings import Settings
from kg_mcp.server import build_server
from tests.apiserver import LiveServer, api_settings, free_port, verified_once_factory
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
KEY = "sk-test-secret-key-0123456789"
QUESTION = "Who owns AuthService?"


@pytest.fixture(scope="module")
def corpus(driver: Driver, settings: Settings) -> Iterator[Driver]:
    from tests.conftest import ingested_example

    yield from ingested_example(driver, settings)


@pytest.fixture(scope="module")
def dead() -> tuple[str, str]:
    """A base URL where no LLM listens (with secrets riding in it), and how it must be named."""
    port = free_port()
    public = f"http://127.0.0.1:{port}/v1"
    return f"http://user:pw-in-url-77@127.0.0.1:{port}/v1?api-key=q-secret-88", public


def _with_answer(settings: Settings, base_url: str) -> Settings:
    answer = settings.answer.model_validate(
        {"base_url": base_url, "api_key": KEY, "model": "no-such-model", "max_calls": 2}
    )
    # a busy shared machine and a cold server: generous bounds, so only the LLM can fail
    neo4j = settings.neo4j.model_copy(update={"connection_timeout_s": 30.0})
    search = settings.search.model_copy(update={"query_timeout_s": 60.0})
    return api_settings(settings, require_auth=False).model_copy(
        update={"answer": answer, "neo4j": neo4j, "search": search}
    )


def _no_secrets(text: str) -> None:
    for secret in (KEY, "pw-in-url-77", "q-secret-88"):
        assert secret not in text


def test_rest_answer_names_the_endpoint_and_the_settings(
    corpus: Driver, settings: Settings, dead: tuple[str, str]
) -> None:
    url, public = dead
    app = create_app(_with_answer(settings, url), service_factory=verified_once_factory)
    with (
        LiveServer(app, start_timeout_s=300) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        resp = http.post("/answer", json={"question": QUESTION, "mode": "text"})
    assert resp.status_code == 502, resp.text
    body = resp.json()
    assert body["error"] == "llm_failed"
    detail = body["detail"]
    assert f"the LLM endpoint {public} (model no-such-model) failed: no connection" in detail
    assert "KG_ANSWER__BASE_URL or KG_LLM__BASE_URL" in detail
    _no_secrets(resp.text)


def test_kg_ask_names_the_endpoint_and_the_settings(
    corpus: Driver, settings: Settings, dead: tuple[str, str]
) -> None:
    url, public = dead
    env = cli_env(
        settings,
        KG_LLM__BASE_URL=url,
        KG_LLM__API_KEY=KEY,
        KG_LLM__MODEL="no-such-model",
        KG_SEARCH__QUERY_TIMEOUT_S="60",
    )
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", QUESTION, "--mode", "text"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    text = " ".join(done.stderr.split())
    assert text.startswith(f"error: the LLM endpoint {public} (model no-such-model) failed:")
    assert "KG_ANSWER__BASE_URL or KG_LLM__BASE_URL" in text
    assert "Traceback" not in done.stderr
    _no_secrets(done.stdout + done.stderr)


def test_mcp_answer_names_the_endpoint_and_the_key_setting(
    corpus: Driver, settings: Settings
) -> None:
    with ScriptedLLM(responder=lambda _request: Reply(status=401)) as llm:

        async def call() -> tuple[bool, str]:
            async with (
                AsyncKnowledgeGraph(_with_answer(settings, llm.base_url)) as graph,
                Client(build_server(graph)) as client,
            ):
                result = await client.call_tool("answer", {"question": QUESTION, "mode": "text"})
                return bool(result.is_error), str(result.content[0].text)

        is_error, text = asyncio.run(call())
    assert is_error
    assert f"the LLM endpoint {llm.base_url} (model no-such-model) failed: HTTP 401" in text
    assert "check the key (KG_ANSWER__API_KEY or KG_LLM__API_KEY)" in text
    _no_secrets(text)
