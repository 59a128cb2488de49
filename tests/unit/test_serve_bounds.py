"""Issue 26: the spec rendered once, MCP's body deadline and log hygiene, run_template's
parameter names (no server: ASGI calls in process)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import pytest
from litestar.openapi.plugins import OpenAPIRenderPlugin

from api import logs
from api.app import create_app
from api.auth import AccessPolicy
from kg import AsyncKnowledgeGraph
from kg.redact import RedactFilter
from kg.settings import Settings
from kg_mcp.serve import HttpGuard
from kg_mcp.server import build_server

SCOPE = {
    "type": "http",
    "method": "POST",
    "path": "/mcp",
    "server": ("127.0.0.1", 8001),
    "client": ("127.0.0.1", 50000),
    "headers": [(b"host", b"127.0.0.1:8001")],
}


def test_the_openapi_pages_are_rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The break: every GET /schema/openapi.json encoded the whole spec again."""
    renders: list[str] = []
    real = OpenAPIRenderPlugin.render_json

    def counting(request: Any, openapi_schema: dict[str, Any]) -> bytes:
        renders.append("json")
        return real(request, openapi_schema)

    monkeypatch.setattr(OpenAPIRenderPlugin, "render_json", staticmethod(counting))
    app = create_app(Settings())

    async def fetch() -> list[bytes]:
        transport = httpx.ASGITransport(app=app)  # no lifespan: no Neo4j needed for /schema
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            bodies = []
            for _ in range(5):
                resp = await http.get("/schema/openapi.json")
                assert resp.status_code == 200
                bodies.append(resp.content)
            for path in ("/schema/swagger", "/schema/swagger", "/schema"):
                assert (await http.get(path)).status_code == 200
            return bodies

    bodies = asyncio.run(fetch())
    assert len(set(bodies)) == 1
    assert bodies[0].startswith(b"{")
    assert len(renders) == 2  # the JSON page once, Swagger's page (which embeds it) once


def _guarded(body_timeout_s: float, messages: list[dict[str, Any] | None], max_body: int = 1024):
    """Run HttpGuard over ``messages`` (None: the client stalls); what the app and client got."""
    reached: list[bytes] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        reached.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    queue = list(messages)

    async def receive() -> dict[str, Any]:
        message = queue.pop(0) if queue else None
        if message is None:
            await asyncio.sleep(3600)
        assert message is not None
        return message

    guard = HttpGuard(
        app, AccessPolicy(keys=()), body_timeout_s=body_timeout_s, max_body_bytes=max_body
    )
    started = time.monotonic()
    asyncio.run(guard(dict(SCOPE), receive, send))
    return reached, sent, time.monotonic() - started


def test_mcp_cuts_a_body_that_does_not_arrive_in_time() -> None:
    """The break: `kg mcp --http` read bodies with no deadline; slow clients locked it out."""
    part = {"type": "http.request", "body": b"{", "more_body": True}
    reached, sent, took = _guarded(0.3, [part, part, None])
    assert reached == []
    assert sent[0]["status"] == 408
    assert (b"connection", b"close") in sent[0]["headers"]
    assert took < 2


def test_mcp_drops_a_client_that_leaves_mid_body_before_the_sdk_sees_it() -> None:
    part = {"type": "http.request", "body": b"{", "more_body": True}
    reached, sent, _ = _guarded(5, [part, {"type": "http.disconnect"}])
    assert reached == []
    assert sent == []


def test_mcp_hands_the_sdk_the_whole_body_and_bounds_its_size() -> None:
    parts = [
        {"type": "http.request", "body": b'{"a":', "more_body": True},
        {"type": "http.request", "body": b" 1}", "more_body": False},
    ]
    reached, sent, _ = _guarded(5, parts)
    assert reached == [b'{"a": 1}']
    assert sent[0]["status"] == 200
    big = [{"type": "http.request", "body": b"x" * 600, "more_body": True}] * 2
    reached, sent, _ = _guarded(5, big, max_body=1024)
    assert reached == []
    assert sent[0]["status"] == 413


def test_mcp_http_installs_the_apis_log_hygiene(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The break: kg_mcp had no repeat filter; 2,800 broken connections wrote 351 KB."""
    import kg_mcp.serve

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    secret = "mcp-log-secret-0123456789"
    settings = Settings(neo4j={"password": secret})

    class Stop(Exception):
        pass

    def stop(*_: Any) -> None:
        raise Stop  # the graph is opened after the logs are set up: stop there, no server

    monkeypatch.setattr(kg_mcp.serve, "AsyncKnowledgeGraph", stop)
    with pytest.raises(Stop):
        asyncio.run(kg_mcp.serve.serve_http(settings, "127.0.0.1", 8001))
    (handler,) = root.handlers
    assert any(isinstance(f, logs.RepeatFilter) for f in handler.filters)
    assert any(isinstance(f, RedactFilter) for f in handler.filters)
    log = logging.getLogger("mcp.server.streamable_http")
    for _ in range(50):
        log.error("Error handling POST request for %s", secret)
    err = capsys.readouterr().err
    assert secret not in err
    assert 1 <= err.count("Error handling POST request") <= 5


def test_run_template_with_a_parameter_named_like_its_own_names_the_field() -> None:
    """The break: {"name": ...} in parameters was a TypeError: "Error executing tool"."""
    from mcp.server.mcpserver.exceptions import ToolError

    server = build_server(AsyncKnowledgeGraph(Settings()))  # no I/O until a call reaches it

    async def call() -> Any:
        return await server.call_tool(
            "run_template",
            {"name": "relations_valid_at", "parameters": {"name": "x", "entity_id": "e"}},
        )

    with pytest.raises(ToolError) as refused:
        asyncio.run(call())
    message = str(refused.value)
    assert "invalid parameters for template relations_valid_at: name" in message
    assert "TypeError" not in message
