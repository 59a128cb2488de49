"""kg_mcp's HTTP guard (key, Host and Origin rules of the REST API) and its size bound."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import SecretStr

from api.auth import AccessPolicy
from kg_mcp.serve import HttpGuard
from kg_mcp.server import bounded

LOOPBACK = ("127.0.0.1", 8001)
PUBLIC = ("10.1.2.3", 8001)


def _call(policy: AccessPolicy, server: tuple[str, int], headers: dict[str, str]) -> int:
    reached: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "server": server,
        "client": ("127.0.0.1", 50000),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(HttpGuard(app, policy)(scope, receive, send))
    status = int(sent[0]["status"])
    assert bool(reached) == (status == 200)
    return status


def test_keyless_loopback_checks_host_and_origin() -> None:
    policy = AccessPolicy(keys=())
    assert _call(policy, LOOPBACK, {"host": "127.0.0.1:8001"}) == 200
    assert (
        _call(policy, LOOPBACK, {"host": "localhost:8001", "origin": "http://localhost:3000"})
        == 200
    )
    assert _call(policy, LOOPBACK, {"host": "evil.example:8001"}) == 421  # DNS rebinding
    assert (
        _call(policy, LOOPBACK, {"host": "127.0.0.1:8001", "origin": "https://evil.example"}) == 403
    )


def test_beyond_loopback_without_keys_nobody_is_served() -> None:
    assert _call(AccessPolicy(keys=()), PUBLIC, {"host": "kg.internal"}) == 403


def test_keys_are_required_once_configured() -> None:
    policy = AccessPolicy(keys=(SecretStr("k-123"),), allowed_hosts=frozenset({"kg.internal"}))
    assert _call(policy, PUBLIC, {"host": "kg.internal"}) == 401
    assert _call(policy, PUBLIC, {"host": "kg.internal", "authorization": "Bearer nope"}) == 401
    ok = {"host": "kg.internal", "authorization": "Bearer k-123"}
    assert _call(policy, PUBLIC, ok) == 200
    assert _call(policy, LOOPBACK, {"authorization": "Bearer k-123"}) == 200
    assert _call(policy, PUBLIC, {**ok, "origin": "https://kg.internal"}) == 200
    assert _call(policy, PUBLIC, {**ok, "origin": "https://evil.example"}) == 403


def test_results_are_bounded_in_size() -> None:
    rows = [{"text": "x" * 1000, "n": i} for i in range(500)]
    out = bounded({"template": "t", "rows": rows, "truncated": False}, limit=20_000)
    assert len(json.dumps(out)) <= 20_000
    assert out["truncated_for_size"] is True
    assert 0 < len(out["rows"]) < 500
    assert out["rows"][0] == rows[0]  # the best-ranked rows are kept
    small = {"rows": [1, 2, 3]}
    assert bounded(small) == {"rows": [1, 2, 3]}
