"""The outermost layer of the API, before routing: Host check, body deadline, client identity.

It wraps Litestar's own handler (``app.asgi_handler``), so it sees every HTTP request,
unknown routes included:

- **Host check** (DNS rebinding): a request that needs no key (loopback, auth off) must name
  loopback in ``Host``, else ``421``.
- **Body deadline**: the whole body must arrive within ``KG_API__BODY_TIMEOUT_S`` of the
  request's start; a client trickling it a byte at a time gets ``408`` and the connection is
  closed, instead of holding a connection and a task forever.
- **Client identity**: sets :data:`kg.cypher.admission.current_client` (the API key's digest,
  else the client address: ``X-Forwarded-For``'s when the peer is one of
  ``KG_API__TRUSTED_PROXIES``, see api/auth.py) for the request, so admission control can
  share query slots fairly.
- **Scope**: binds the request to the namespaces of the key it presents
  (:func:`kg.bound_namespaces`; ``KG_API__API_KEYS=key::ns1|ns2``), so every read the request
  makes keeps to them and a request for another namespace is refused (403 naming it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from litestar.exceptions import HTTPException
from litestar.status_codes import HTTP_408_REQUEST_TIMEOUT

from api.auth import AccessPolicy
from kg import bound_namespaces, current_client

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MISDIRECTED = 421


class BodyTimeout(HTTPException):
    """The client did not send its whole body in time."""

    status_code = HTTP_408_REQUEST_TIMEOUT


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _headers(scope: Scope, name: bytes) -> list[str]:
    """Every value of a header that may repeat, in order."""
    return [
        bytes(value).decode("latin-1")
        for key, value in scope.get("headers") or ()
        if key.lower() == name
    ]


async def send_error(send: Send, status: int, error: str, detail: str) -> None:
    """An error body of the API's one shape, sent without Litestar (before routing)."""
    body = json.dumps(
        {"status_code": status, "error": error, "detail": detail, "errors": []}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class EdgeMiddleware:
    """See the module docstring. ``app`` is Litestar's exception-handling ASGI handler."""

    def __init__(self, app: ASGIApp, policy: AccessPolicy, *, body_timeout_s: float) -> None:
        self.app = app
        self.policy = policy
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        access = self.policy.decide(scope.get("server"))
        if not access.key_required and access.local:
            host = _header(scope, b"host")
            if not self.policy.host_allowed(host):
                await send_error(
                    send,
                    MISDIRECTED,
                    "misdirected_request",
                    f"Host {(host or '')[:100]!r} is not this server's loopback name; use "
                    "http://127.0.0.1 or http://localhost (or add it to KG_API__ALLOWED_HOSTS)",
                )
                return
        client = self.policy.client_id(
            access,
            _header(scope, b"authorization"),
            scope.get("client"),
            _headers(scope, b"x-forwarded-for"),
        )
        namespaces = self.policy.namespaces_of(_header(scope, b"authorization"))
        token = current_client.set(client)
        try:
            with bound_namespaces(namespaces):
                await self.app(scope, self._bounded(receive), send)
        finally:
            current_client.reset(token)

    def _bounded(self, receive: Receive) -> Receive:
        """``receive`` that raises BodyTimeout once the body deadline has passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        body_done = False

        async def bounded() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()  # after the body: only a disconnect can come
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise BodyTimeout(
                    detail=f"the request body did not arrive within {self.body_timeout_s:g}s",
                    headers={"Connection": "close"},
                ) from None
            if message.get("type") != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        return bounded
