"""The API docs page needs no internet: every file it loads comes from kg itself."""

from __future__ import annotations

import asyncio
import re

import httpx

from api.app import create_app
from kg.settings import Settings

_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")


def _get(paths: list[str]) -> list[httpx.Response]:
    app = create_app(Settings())

    async def fetch() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)  # no lifespan: no Neo4j needed for /schema
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return [await http.get(p) for p in paths]

    return asyncio.run(fetch())


def test_the_docs_pages_reference_no_external_url() -> None:
    for page in _get(["/schema", "/schema/swagger"]):
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
        references = _REFERENCE.findall(page.text)
        assert len(references) >= 3  # the script, the preset, the style sheet (and the icon)
        external = [r for r in references if re.match(r"^(?:[a-z]+:)?//", r, re.IGNORECASE)]
        assert external == []
        assert "cdn" not in page.text.lower()
        assets = _get(references)
        assert [a.status_code for a in assets] == [200] * len(references)
        assert all(len(a.content) > 100 for a in assets)


def test_only_the_listed_assets_are_served() -> None:
    missing, traversal = _get(["/schema/assets/index.html", "/schema/assets/..%2F__init__.py"])
    assert missing.status_code == 404
    assert traversal.status_code == 404
