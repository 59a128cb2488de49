"""The API's documentation pages, rendered once.

Litestar keeps the spec as a dict but encodes it again on every ``GET /schema/openapi.json``
(and Swagger UI's page embeds it too): about 70 KB of JSON per request. An outside test
pipelined 200 such requests on each of 1,000 connections, and the event loop spent its time
encoding. Every page here depends only on the app, so :class:`RenderOnce` keeps the first
rendering's bytes and serves those.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin

if TYPE_CHECKING:
    from litestar import Request
    from litestar.router import Router


class RenderOnce(OpenAPIRenderPlugin):
    """``inner``'s pages, at its paths, rendered on the first request and then reused."""

    def __init__(self, inner: OpenAPIRenderPlugin) -> None:
        super().__init__(
            path=inner.paths, media_type=inner.media_type, favicon=inner.favicon, style=inner.style
        )
        self.inner = inner
        self._rendered: bytes | None = None

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        if self._rendered is None:
            self._rendered = self.inner.render(request, openapi_schema)
        return self._rendered

    def receive_router(self, router: Router) -> None:
        self.inner.receive_router(router)


def render_once(*plugins: OpenAPIRenderPlugin) -> list[OpenAPIRenderPlugin]:
    """``plugins`` and the JSON spec at ``/openapi.json``, each rendered once."""
    wrapped: list[OpenAPIRenderPlugin] = [RenderOnce(p) for p in plugins]
    if not any(p.has_path("/openapi.json") for p in plugins):
        wrapped.append(RenderOnce(JsonRenderPlugin()))
    return wrapped
