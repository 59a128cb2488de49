"""docs/api.md documents every route the app serves, and no route it does not serve.

A route is documented by a heading naming it in backticks, e.g. "### `POST /search`" (one
heading may name several: "### `GET /browser-guide`, `OPTIONS /browser-guide`"). The routes
come from the app itself, built as ``kg serve`` builds it (no Neo4j: the driver opens in the
lifespan), so a new controller, docs page or Browser file fails here until the page says what
it does. Litestar's own ``OPTIONS`` handler on every path is described once, not per route.
"""

from __future__ import annotations

import re
from pathlib import Path

from api.app import create_app
from kg.settings import Settings

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"

#: "`POST /search`" in a heading; a documented query string (`?depth=N`) is not part of it.
_ROUTE = re.compile(r"`(GET|POST|PUT|PATCH|DELETE|OPTIONS|HEAD) (/[^`?\s]*)[^`]*`")
#: Litestar's typed path parameters, ``{entity_id:str}``, as the docs write them: ``{entity_id}``
_PARAM_TYPE = re.compile(r"\{(\w+):\w+\}")


def served_routes() -> set[tuple[str, str]]:
    app = create_app(Settings.model_construct())  # defaults only, as api/export.py builds it
    routes: set[tuple[str, str]] = set()
    for route in app.routes:
        path = _PARAM_TYPE.sub(r"{\1}", route.path)
        for handler in getattr(route, "route_handlers", []):
            if handler.handler_name == "options_handler":  # Litestar's, added to every path
                continue
            routes.update((str(method), path) for method in handler.http_methods)
    return routes


def documented_routes(text: str) -> list[tuple[str, str]]:
    """Routes named in headings, in the page's order."""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith("#"):
            found.extend((m.group(1), m.group(2)) for m in _ROUTE.finditer(line))
    return found


def test_every_route_has_a_heading_in_api_md() -> None:
    served = served_routes()
    documented = documented_routes(API_MD.read_text(encoding="utf-8"))
    missing = sorted(served - set(documented))
    stale = sorted(set(documented) - served)
    assert not missing, f"routes docs/api.md has no heading for: {missing}"
    assert not stale, f"docs/api.md documents routes the app does not serve: {stale}"
    assert len(documented) == len(set(documented)), "a route documented twice"


def test_the_routed_and_global_search_come_first() -> None:
    documented = documented_routes(API_MD.read_text(encoding="utf-8"))
    assert documented[:2] == [("POST", "/search"), ("POST", "/search/global")]


def test_the_parser_reads_headings_only() -> None:
    text = (
        "## `POST /search`\ntext naming `GET /nowhere`\n"
        "### `GET /entities/{entity_id}/neighborhood?depth=N`, `OPTIONS /x`\n"
    )
    assert documented_routes(text) == [
        ("POST", "/search"),
        ("GET", "/entities/{entity_id}/neighborhood"),
        ("OPTIONS", "/x"),
    ]
    assert ("GET", "/entities/{entity_id}") in served_routes()
