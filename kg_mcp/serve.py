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

A key bound to namespaces (``KG_API__API_KEYS=key::ns1|ns2``) keeps every tool to them, as
over REST (:func:`kg.bound_namespaces`). The SDK runs a session's tools in the task that
opened the session, so a session belongs to the key that opened it: a request presenting
another key with that session's id is answered 404 (no such session for this key).

It also holds the bounds ``kg serve`` has: the whole request body within
``KG_API__BODY_TIMEOUT_S`` (else ``408`` and the connection closes; a client that goes away
mid-body is dropped without reaching the SDK), the header deadline, connection cap and send
deadline of api/serving.py, open sessions capped (``KG_API__MCP_MAX_SESSIONS``) and idle ones
closed (``KG_API__MCP_SESSION_IDLE_S``), and the API's log hygiene (api/logs.py: secrets
scrubbed, repeated lines rate-limited).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from api import logs
from api.auth import (
    WWW_AUTHENTICATE,
    AccessPolicy,
    bearer_token,
    check_auth_config,
    is_loopback,
    key_matches,
)
from api.serving import uvicorn_options
from kg import AsyncKnowledgeGraph, Settings, bound_namespaces, current_client, observe
from kg.redact import settings_secrets
from kg_mcp.server import build_server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
#: Session owners remembered (the oldest forgotten first; the SDK caps open sessions lower).
MAX_OWNED_SESSIONS = 100_000
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
    """Key, Host and Origin checks and the body deadline in front of the SDK's HTTP app."""

    def __init__(
        self,
        app: ASGIApp,
        policy: AccessPolicy,
        *,
        body_timeout_s: float = 10.0,
        max_body_bytes: int = 2 * 1024 * 1024,
    ) -> None:
        self.app = app
        self.policy = policy
        self.body_timeout_s = body_timeout_s
        self.max_body_bytes = max_body_bytes
        # session id -> the client (key digest or address) that opened it; oldest first
        self._owners: dict[str, str] = {}

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
        replay = await self._whole_body(receive, send)
        if replay is None:
            return
        forwarded = [
            bytes(value).decode("latin-1")
            for key, value in scope.get("headers") or []
            if key.lower() == b"x-forwarded-for"
        ]
        client = self.policy.client_id(access, authorization, scope.get("client"), forwarded)
        session = _header(scope, SESSION_HEADER.encode())
        if session is not None and self._owners.get(session, client) != client:
            await _refuse(send, 404, "no such session for this key")
            return
        namespaces = self.policy.namespaces_of(authorization)
        token_var = current_client.set(client)
        try:
            # A scoped key's tools keep to its namespaces (kg/scope.py), as over REST.
            with bound_namespaces(namespaces):
                await self.app(scope, replay, self._owning(send, client))
        finally:
            current_client.reset(token_var)

    def _owning(self, send: Send, client: str) -> Send:
        """``send`` that records the client as the owner of a session the response opens."""

        async def owning(message: Message) -> None:
            if message.get("type") == "http.response.start":
                for key, value in message.get("headers") or []:
                    if bytes(key).lower() == SESSION_HEADER.encode():
                        self._owners.setdefault(bytes(value).decode("latin-1"), client)
                        while len(self._owners) > MAX_OWNED_SESSIONS:
                            self._owners.pop(next(iter(self._owners)))
            await send(message)

        return owning

    async def _whole_body(self, receive: Receive, send: Send) -> Receive | None:
        """Read the whole body within the deadline; ``receive`` replaying it, or None when the
        request was answered (408, 413) or the client went away mid-body.

        The SDK reads bodies with no deadline, and logs a traceback for every client that
        leaves halfway; neither reaches it now.
        """
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.body_timeout_s
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                await _refuse(
                    send,
                    408,
                    f"the request body did not arrive within {self.body_timeout_s:g}s",
                    {"Connection": "close"},
                )
                return None
            if message.get("type") != "http.request":
                return None  # http.disconnect: nobody to answer
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.max_body_bytes:
                await _refuse(
                    send,
                    413,
                    f"the request body is larger than {self.max_body_bytes} bytes",
                    {"Connection": "close"},
                )
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [
            {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        ]

        async def replay() -> Message:
            if pending:
                return pending.pop()
            return await receive()  # after the body: only a disconnect can come

        return replay


def http_app(graph: AsyncKnowledgeGraph, settings: Settings) -> HttpGuard:
    """The guarded streamable HTTP app (serve it with its lifespan on) at ``/mcp``."""
    server = build_server(graph)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        # Host and Origin are checked by HttpGuard, which knows the key rules.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.api.max_body_bytes,
        host=settings.api.host,
        session_idle_timeout=settings.api.mcp_session_idle_s,
        max_sessions=settings.api.mcp_max_sessions,
    )
    return HttpGuard(
        app,
        AccessPolicy.from_settings(settings.api),
        body_timeout_s=settings.api.body_timeout_s,
        max_body_bytes=settings.api.max_body_bytes,
    )


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
    # kg serve's log hygiene: secrets scrubbed, a flood of one kind of line rate-limited
    logs.install(settings_secrets(settings), fmt=settings.log_format)
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        config = uvicorn.Config(
            observe.asgi(http_app(graph, settings), "mcp"),  # a span per request
            host=host,
            port=port,
            log_config=None,
            log_level=settings.log_level.lower(),
            lifespan="on",
            # kg serve's bounds: header and send deadlines, a cap that evicts the slowest
            **uvicorn_options(
                settings.api.header_timeout_s,
                settings.api.max_connections,
                settings.api.send_timeout_s,
            ),
        )
        await uvicorn.Server(config).serve()
