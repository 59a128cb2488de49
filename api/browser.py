"""Neo4j Browser's style and guide, served to Browser's page: open, cross-origin, no graph data.

Neo4j Browser runs in a web page on Neo4j's HTTP port (e.g. http://127.0.0.1:7474) and fetches
``:style <url>`` and ``:play <url>`` from that page, so these two routes answer any origin
(``Access-Control-Allow-Origin: *``, and the preflight ``:play`` triggers with its
``Pragma``/``Cache-Control`` headers). That is safe because they serve two static files from
the package (``browser/`` in a checkout, ``kg/_browser`` in a wheel) and nothing read from
Neo4j; they need no API key for the same reason, and stay out of the OpenAPI spec, which
describes the graph API. The local server's config points Browser here
(:mod:`kg.localserver.browser`); docs/browser.md says what happens without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from litestar import Controller, Request, Response, route
from litestar.enums import HttpMethod, MediaType
from litestar.exceptions import NotFoundException
from litestar.status_codes import HTTP_204_NO_CONTENT

import kg
from api.auth import PUBLIC

#: The paths the local server's config sends Browser to (kg.LocalNeo4j says them once).
BROWSER_GUIDE_PATH = kg.LocalNeo4j.BROWSER_GUIDE_PATH
BROWSER_STYLE_PATH = kg.LocalNeo4j.BROWSER_STYLE_PATH

GUIDE_FILE = "guide.html"
STYLE_FILE = "style.grass"

#: Headers on every answer: any origin may read these public files; no cookies are involved.
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}

#: The preflight's answer: Browser's ``:play`` sends ``Pragma`` and ``Cache-Control``.
PREFLIGHT_HEADERS = {
    **CORS_HEADERS,
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Access-Control-Allow-Headers": "Cache-Control, Pragma, Content-Type",
    "Access-Control-Max-Age": "600",
}

_OPEN: dict[str, Any] = {PUBLIC: True}
_METHODS = [HttpMethod.GET, HttpMethod.OPTIONS]


def browser_dir() -> Path:
    """The folder holding the style and the guide: in the wheel, else in the checkout."""
    package = Path(kg.__file__).resolve().parent
    wheel, checkout = package / "_browser", package.parent / "browser"
    return wheel if wheel.is_dir() else checkout


async def _asset(name: str, media_type: MediaType) -> Response[bytes]:
    try:
        body = await anyio.Path(browser_dir() / name).read_bytes()
    except FileNotFoundError:
        raise NotFoundException(detail=f"kg's Browser file {name} is not installed") from None
    return Response(body, media_type=media_type, headers=CORS_HEADERS)


class BrowserAssetsController(Controller):
    """``/browser-guide`` (HTML slides for ``:play``) and ``/browser-style.grass`` (GRASS).

    One handler per path answers both GET and the CORS preflight: Litestar adds its own
    OPTIONS handler to a path that has none, which would answer without the CORS headers.
    """

    path = "/"
    include_in_schema = False

    @route(BROWSER_GUIDE_PATH, http_method=_METHODS, opt=_OPEN, include_in_schema=False)
    async def guide(self, request: Request[Any, Any, Any]) -> Response[bytes]:
        if request.method == HttpMethod.OPTIONS:
            return _preflight()
        return await _asset(GUIDE_FILE, MediaType.HTML)

    @route(BROWSER_STYLE_PATH, http_method=_METHODS, opt=_OPEN, include_in_schema=False)
    async def style(self, request: Request[Any, Any, Any]) -> Response[bytes]:
        if request.method == HttpMethod.OPTIONS:
            return _preflight()
        return await _asset(STYLE_FILE, MediaType.TEXT)


def _preflight() -> Response[bytes]:
    return Response(b"", status_code=HTTP_204_NO_CONTENT, headers=PREFLIGHT_HEADERS)
