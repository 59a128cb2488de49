"""The MCP server through the official SDK's own client: over stdio and over streamable HTTP.

`kg mcp` runs as a real subprocess against the real Neo4j, on the bundled example corpus; the
`answer` tool's LLM is the scripted OpenAI-compatible server of tests/fakellm.py (the one
stand-in the tests allow), reached through the real openai and instructor clients.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from neo4j import Driver

from kg.settings import Settings
from kg_mcp import TOOL_NAMES
from kg_mcp.server import MAX_RESULT_CHARS
from tests.apiserver import free_port
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM
from tests.mcpserver import mcp_http_server

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
KEY = "mcp-test-key-0123456789"


@pytest.fixture(scope="module")
def corpus(driver: Driver, settings: Settings) -> Iterator[Driver]:
    from tests.conftest import ingested_example

    yield from ingested_example(driver, settings)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    def cite_first_chunk(request: dict[str, Any]) -> Reply:
        user = "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")
        found = re.search(r"\[chunk (\S+)\]", user)
        assert found
        return Reply(
            payload={
                "insufficient_context": False,
                "answer": "Team Platform Security.",
                "citations": [{"chunk_id": found.group(1)}],
                "confidence": 0.8,
            }
        )

    with ScriptedLLM(responder=cite_first_chunk) as server:
        yield server


def _env(settings: Settings, llm: ScriptedLLM, **extra: str) -> dict[str, str]:
    env = cli_env(settings, KG_EXTRACT__BASE_URL=llm.base_url, KG_EXTRACT__MODEL="m", **extra)
    env["KG_SEARCH__QUERY_TIMEOUT_S"] = "60"  # a busy shared CI machine, a cold server
    return env


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    text = result.content[0].text
    assert len(text) <= MAX_RESULT_CHARS + 100
    data: dict[str, Any] = json.loads(text)
    return data


async def _exercise(session: ClientSession) -> dict[str, Any]:
    """List the tools and call each one, as an agent would."""
    await session.initialize()
    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert tool.description
        assert len(tool.description) > 40
        schema = tool.input_schema
        assert schema["type"] == "object"
        for name, prop in (schema.get("properties") or {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    out: dict[str, Any] = {}
    found = _data(await session.call_tool("search", {"query": "Who owns AuthService?"}))
    # POST /search's body for every mode: auto is the router, as in kg search and /answer
    assert found["requested"] == "auto"
    assert found["mode"] in {"text", "vector", "graph", "hybrid"}
    assert found["reason"]
    auth = next(e for e in found["local"]["entities"] if e["name"] == "AuthService")
    out["search"] = found
    explicit = _data(await session.call_tool("search", {"query": "AuthService", "mode": "text"}))
    assert (explicit["requested"], explicit["mode"]) == ("text", "text")
    assert explicit["local"]["chunks"]
    bad_date = await session.call_tool("search", {"query": "AuthService", "as_of": "yesterday"})
    assert bad_date.is_error
    assert bad_date.content[0].text == (
        "invalid arguments for search: as_of is not an ISO 8601 date or date-time."
    )
    assert "Value error" not in bad_date.content[0].text
    entity = _data(await session.call_tool("get_entity", {"entity_id": auth["id"]}))
    assert entity["name"] == "AuthService"
    hood = _data(
        await session.call_tool(
            "neighborhood", {"entity_id": auth["id"], "depth": 1, "as_of": "2023-06-30"}
        )
    )
    owners = {r["target_name"] for r in hood["relations"] if r["type"] == "OWNED_BY"}
    assert owners == {"Team Identity"}
    templates = _data(await session.call_tool("list_templates", {}))
    assert "relations_valid_at" in {t["name"] for t in templates["items"]}
    rows = _data(
        await session.call_tool(
            "run_template",
            {
                "name": "relations_valid_at",
                "parameters": {
                    "entity_id": auth["id"],
                    "as_of": "2024-06-30",
                    "relation_types": ["OWNED_BY"],
                },
            },
        )
    )
    assert {r["target_name"] for r in rows["rows"]} == {"Team Platform Security"}
    answered = _data(await session.call_tool("answer", {"question": "Who owns AuthService?"}))
    assert answered["citations"]
    assert answered["insufficient_context"] is False
    # A caller that asks for progress sees the answer's text as it is written, then the answer.
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    streamed = _data(
        await session.call_tool(
            "answer", {"question": "Who owns AuthService?"}, progress_callback=on_progress
        )
    )
    assert streamed["citations"]
    assert len(progress) > 1
    assert "".join(message or "" for _, message in progress) == streamed["answer"]
    assert [done for done, _ in progress] == sorted({done for done, _ in progress})
    # A caller mistake is a tool error naming the field, not a crash.
    bad = await session.call_tool(
        "run_template", {"name": "relations_valid_at", "parameters": {"entity_id": auth["id"]}}
    )
    assert bad.is_error
    assert "as_of" in bad.content[0].text
    return out


def test_stdio_with_the_sdk_client(corpus: Driver, settings: Settings, llm: ScriptedLLM) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli.main", "mcp"],
        env=_env(settings, llm),
        cwd=str(REPO),
    )

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await _exercise(session)

    asyncio.run(asyncio.wait_for(run(), 300))


@pytest.fixture(scope="module")
def http_server(corpus: Driver, settings: Settings, llm: ScriptedLLM) -> Iterator[str]:
    """`kg mcp --http` with an API key configured, on a free loopback port."""
    port = free_port()
    with mcp_http_server(_env(settings, llm, KG_API__API_KEYS=KEY), port) as url:
        yield url


def test_streamable_http_with_the_sdk_client_and_a_key(http_server: str) -> None:
    async def run() -> None:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
        async with (
            client,
            streamable_http_client(http_server, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await _exercise(session)

    asyncio.run(asyncio.wait_for(run(), 300))


def test_streamable_http_refuses_without_the_key_and_foreign_origins(http_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    no_key = httpx.post(http_server, json=body, headers=headers, timeout=10)
    assert no_key.status_code == 401
    assert no_key.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(
        http_server, json=body, headers={**headers, "Authorization": "Bearer nope"}, timeout=10
    )
    assert wrong.status_code == 401
    foreign = httpx.post(
        http_server,
        json=body,
        headers={**headers, "Authorization": f"Bearer {KEY}", "Origin": "https://evil.example"},
        timeout=10,
    )
    assert foreign.status_code == 403
