"""Running the MCP server: stdio (the default), or streamable HTTP behind the REST key rules.

Over HTTP, every request passes :class:`HttpGuard` before the SDK sees it, with the rules of
the REST API (api/auth.py), decided per request from the socket it arrived on:

- a key is required when keys are configured, when the bind address is not loopback, and for
  every request that did not arrive on a loopback address; without configured keys such a
  request is refused (403), never served. Keys: ``Authorization: Bearer <key>``, compared in
  constant time (401 otherwise);
- ``Host`` must name loopback (or ``KG_API__ALLOWED_HOSTS``) when no key is required (421:
  DNS rebinding), and an ``Origin`` header, when sent, must be such a name too (403), as the
  MCP transport specification asks of servers.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from api.auth import (
    WWW_AUTHENTICATE,
    AccessPolicy,
    bearer_token,
    check_auth_config,
    is_loopback,
    key_matches,
)
from api.serving import uvicorn_options
from kg import AsyncKnowledgeGraph, Settings, current_client
from kg_mcp.server import build_server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
DEFAULT_PORT = 8001


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _refuse(
    send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"status_code": status, "detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class HttpGuard:
    """Key, Host and Origin checks in front of the SDK's streamable HTTP app."""

    def __init__(self, app: ASGIApp, policy: AccessPolicy) -> None:
        self.app = app
        self.policy = policy

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True  # not a browser (or same-origin without the header)
        host = urlsplit(origin.strip()).hostname
        return host is not None and (is_loopback(host) or host in self.policy.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        access = self.policy.decide(scope.get("server"))
        if access.refusal is not None:
            await _refuse(send, 403, access.refusal)
            return
        if not access.key_required and access.local:
            host = _header(scope, b"host")
            if not self.policy.host_allowed(host):
                await _refuse(send, 421, f"Host {(host or '')[:100]!r} is not a loopback name")
                return
        if not self.origin_allowed(_header(scope, b"origin")):
            await _refuse(send, 403, "Origin not allowed: only loopback or KG_API__ALLOWED_HOSTS")
            return
        authorization = _header(scope, b"authorization")
        if access.key_required:
            token = bearer_token(authorization)
            if token is None or not key_matches(token, self.policy.keys):
                await _refuse(
                    send,
                    401,
                    "a valid API key is required: send 'Authorization: Bearer <key>'",
                    {"WWW-Authenticate": WWW_AUTHENTICATE},
                )
                return
        client = self.policy.client_id(access, authorization, scope.get("client"))
        token_var = current_client.set(client)
        try:
            await self.app(scope, receive, send)
        finally:
            current_client.reset(token_var)


def http_app(graph: AsyncKnowledgeGraph, settings: Settings) -> HttpGuard:
    """The guarded streamable HTTP app (serve it with its lifespan on) at ``/mcp``."""
    server = build_server(graph)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        # Host and Origin are checked by HttpGuard, which knows the key rules.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.api.max_body_bytes,
        host=settings.api.host,
    )
    return HttpGuard(app, AccessPolicy.from_settings(settings.api))


async def serve_stdio(settings: Settings) -> None:
    """MCP over stdin/stdout until the client closes it."""
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        await build_server(graph).run_stdio_async()


async def serve_http(settings: Settings, host: str, port: int) -> None:
    """MCP over streamable HTTP at ``http://host:port/mcp``; ConfigError when keys are needed
    (a non-loopback host) but none are configured."""
    api = settings.api.model_validate({**settings.api.model_dump(), "host": host, "port": port})
    settings = settings.model_copy(update={"api": api})
    check_auth_config(settings.api)
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        config = uvicorn.Config(
            http_app(graph, settings),
            host=host,
            port=port,
            log_config=None,
            log_level=settings.log_level.lower(),
            lifespan="on",
            # kg serve's bounds: header deadline, connection cap that evicts the slowest
            **uvicorn_options(settings.api.header_timeout_s, settings.api.max_connections),
        )
        await uvicorn.Server(config).serve()
