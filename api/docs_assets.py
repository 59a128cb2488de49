"""The API docs page (``/schema``) works offline: Swagger UI's files are served by kg itself.

Litestar's render plugins load their viewers from CDNs (jsdelivr, unpkg), so the page was
blank on a machine without internet, and told a CDN about every visit. The Swagger UI
distribution comes from the ``openapi-ui-bundles`` package instead, and this controller serves
the few files the page loads, under ``/schema/assets/``, from a fixed list (no path from the
request reaches the file system). Like the pages under ``/schema`` they need no key: they hold
no graph data.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from litestar import Controller, Response, get
from litestar.exceptions import NotFoundException
from litestar.openapi.plugins import SwaggerRenderPlugin

from api.auth import PUBLIC

ASSETS_PATH = "/schema/assets"

#: The files the page loads, and how each is served.
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}

_CACHE = {"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"}


def swagger_dir() -> Path:
    """Where the installed Swagger UI distribution is (openapi-ui-bundles)."""
    from openapi_ui_bundles import swagger_ui

    return Path(swagger_ui.static_path)


def offline_swagger(path: str | list[str] = "/swagger") -> SwaggerRenderPlugin:
    """Swagger UI with every file from :data:`ASSETS_PATH`: no CDN, no external request."""
    return SwaggerRenderPlugin(
        path=path,
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
    )


class DocsAssetsController(Controller):
    """``/schema/assets/<name>`` for the names in :data:`ASSETS` only."""

    path = ASSETS_PATH
    include_in_schema = False

    @get("/{name:str}", opt={PUBLIC: True}, include_in_schema=False)
    async def asset(self, name: str) -> Response[bytes]:
        media_type = ASSETS.get(name)
        if media_type is None:
            raise NotFoundException(detail="no such docs asset")
        body = await anyio.Path(swagger_dir() / name).read_bytes()
        return Response(body, media_type=media_type, headers=_CACHE)
