"""Neo4j Browser as a person sees it: headless Debian Chromium driven by Playwright.

The module starts its own local Neo4j (its neo4j.conf must point Browser at this module's API
port), ingests the bundled example and serves kg's API over real HTTP. The browser test opens
Browser the way ``kg browse`` does, connects with the server's credentials, plays kg's guide,
runs the README's query and checks the canvas: nodes drawn, captioned by name (not id), in
kg's colours, RELATED edges captioned by their predicate. It saves a screenshot of the result
frame; ``scripts/browser-screenshot`` runs it to regenerate the one in docs/browser.md.

Chromium comes from Debian (``apt-get install chromium``; .ci/run does it), never from
Playwright's own download, which cannot work here.
"""

from __future__ import annotations

import html
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from neo4j import Driver, RoutingControl

from api.app import create_app
from api.browser import GUIDE_FILE, STYLE_FILE, browser_dir
from cli.browse_cmd import browse, browser_launch_url
from kg import KnowledgeGraph
from kg.graph.driver import open_driver
from kg.localserver import BROWSER_GUIDE_PATH, BROWSER_STYLE_PATH, LocalNeo4j, free_port
from kg.settings import ApiSettings, Settings
from tests.apiserver import LiveServer, verified_once_factory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
README_QUERY = "MATCH p = (:Entity {name: 'Checkout Web'})-[*1..3]->() RETURN p"
CYRILLIC_QUERY = "MATCH (e:Entity) WHERE e.name STARTS WITH 'Команда' RETURN e"
#: Where to save the screenshot besides the test's tmp dir (scripts/browser-screenshot sets it).
SCREENSHOT_ENV = "KG_BROWSER_SCREENSHOT"
TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Stack:
    settings: Settings
    password: str
    browser_url: str
    bolt_uri: str
    api_url: str
    driver: Driver


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    home = Path(tempfile.mkdtemp(prefix="kg-browser-"))
    password = secrets.token_urlsafe(16)
    bolt, http = free_port(), free_port()
    base = Settings(
        neo4j={"uri": f"bolt://127.0.0.1:{bolt}", "password": password},
        server={"home": home, "bolt_port": bolt, "http_port": http,
                "heap": "768m", "pagecache": "256m"},
    )  # fmt: skip
    # LiveServer picks its port now; Neo4j's config must name it.
    live = LiveServer(create_app(base, service_factory=verified_once_factory))
    api = base.api.model_copy(update={"port": live.port})
    settings = base.model_copy(update={"api": api})
    server = LocalNeo4j(settings)
    try:
        status = server.start()
        with KnowledgeGraph(settings) as graph:
            graph.ingest(
                EXAMPLES / "platform-docs", triplets=EXAMPLES / "platform-docs.triplets.jsonl"
            )
        with live, open_driver(settings.neo4j) as driver:
            yield Stack(settings, password, status.browser_url, status.bolt_uri, live.url, driver)
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is needed: apt-get install chromium (.ci/run does it)")
    return path


def _read(driver: Driver, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(
        query, params, routing_=RoutingControl.READ, database_="neo4j"
    )
    return [r.data() for r in records]


def _guide_queries() -> list[tuple[str, str]]:
    """(slide title, query) for every runnable query in the guide, as Browser would run it."""
    text = (browser_dir() / GUIDE_FILE).read_text(encoding="utf-8")
    found = []
    for slide in re.findall(r"<slide.*?</slide>", text, flags=re.S):
        title = html.unescape(re.search(r"<h3>(.*?)</h3>", slide, flags=re.S)[1])  # type: ignore[index]
        for query in re.findall(r'<pre class="runnable">(.*?)</pre>', slide, flags=re.S):
            found.append((title, html.unescape(query).strip()))
    return found


def _has_rule(selector: str) -> bool:
    text = (browser_dir() / STYLE_FILE).read_text(encoding="utf-8")
    return re.search(r"(?m)^" + re.escape(selector) + r"\s*\{", text) is not None


def _grass_colour(selector: str) -> str:
    text = (browser_dir() / STYLE_FILE).read_text(encoding="utf-8")
    body = re.search(re.escape(selector) + r"\s*\{(.*?)\}", text, flags=re.S)
    assert body is not None, selector
    colour = re.search(r"(?m)^\s*color:\s*(#[0-9A-Fa-f]{6});", body[1])
    assert colour is not None, selector
    return colour[1].upper()


# -- the routes Browser fetches ------------------------------------------------------------


def test_style_and_guide_are_served_cross_origin_without_a_key(stack: Stack) -> None:
    origin = {"Origin": stack.browser_url.rsplit("/browser/", 1)[0]}
    with httpx.Client(base_url=stack.api_url, timeout=10) as client:
        style = client.get(BROWSER_STYLE_PATH, headers=origin)
        guide = client.get(BROWSER_GUIDE_PATH, headers=origin)
        # :play sends Pragma and Cache-Control, so Browser asks first.
        preflight = client.options(
            BROWSER_GUIDE_PATH,
            headers={
                **origin,
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "pragma,cache-control",
            },
        )
    assert style.status_code == 200
    assert style.text == (browser_dir() / STYLE_FILE).read_text(encoding="utf-8")
    assert guide.status_code == 200
    assert guide.headers["content-type"].startswith("text/html")
    for response in (style, guide, preflight):
        assert response.headers["access-control-allow-origin"] == "*"
    assert preflight.status_code == 204
    allowed = preflight.headers["access-control-allow-headers"].lower()
    assert "pragma" in allowed
    assert "cache-control" in allowed


def test_style_and_guide_need_no_key_when_the_api_does(stack: Stack) -> None:
    api = ApiSettings.model_validate(
        {**stack.settings.api.model_dump(), "api_keys": ["k-browser-test"]}
    )
    keyed = create_app(
        stack.settings.model_copy(update={"api": api}), service_factory=verified_once_factory
    )
    with LiveServer(keyed) as live:
        assert httpx.get(live.url + "/templates", timeout=10).status_code == 401
        for path in (BROWSER_STYLE_PATH, BROWSER_GUIDE_PATH):
            assert httpx.get(live.url + path, timeout=10).status_code == 200, path


def test_every_guide_query_finds_its_own_subject(stack: Stack) -> None:
    queries = _guide_queries()
    assert len(queries) >= 8
    community = [query for title, query in queries if title == "Communities"]
    assert community
    for title, query in queries:
        rows = _read(stack.driver, query)
        if title == "Communities":
            assert rows == [], "no communities before `kg communities build`"
        else:
            assert rows, f"{title!r}: no rows on the example graph:\n{query}"
    # Once they exist, the communities' queries find them (extractive reports: no LLM).
    try:
        with KnowledgeGraph(stack.settings) as graph:
            graph.build_communities()
        for query in community:
            assert _read(stack.driver, query), f"no rows once communities exist:\n{query}"
    finally:  # the browser test draws the README query, which would reach them
        stack.driver.execute_query("MATCH (c:Community) DETACH DELETE c", database_="neo4j")


def test_kg_browse_prints_url_connection_and_guide(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith(("KG_", "NEO4J_")) or name in ("DISPLAY", "WAYLAND_DISPLAY"):
            monkeypatch.delenv(name)
    server, api = stack.settings.server, stack.settings.api
    monkeypatch.setenv("KG_SERVER__HOME", str(server.home))
    monkeypatch.setenv("KG_SERVER__BOLT_PORT", str(server.bolt_port))
    monkeypatch.setenv("KG_SERVER__HTTP_PORT", str(server.http_port))
    monkeypatch.setenv("KG_API__PORT", str(api.port))
    monkeypatch.setenv("KG_NEO4J__PASSWORD", stack.password)
    assert browse() == 0
    out = capsys.readouterr().out
    assert stack.browser_url in out
    assert f":play {stack.api_url}{BROWSER_GUIDE_PATH}" in out
    assert stack.bolt_uri in out
    assert "does not answer" not in out
    assert stack.password not in out


# -- the browser -------------------------------------------------------------------------


@pytest.mark.slow
def test_browser_shows_the_styled_example(stack: Stack, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    expected = _read(
        stack.driver,
        "MATCH p = (:Entity {name: 'Checkout Web'})-[*1..3]->() UNWIND nodes(p) AS n "
        "RETURN DISTINCT n.id AS id, n.name AS name, n.type AS type, labels(n) AS labels",
    )
    names = {row["name"] for row in expected}
    cyrillic = {
        row["name"]
        for row in _read(
            stack.driver,
            "MATCH (e:Entity) WHERE e.name STARTS WITH 'Команда' RETURN e.name AS name",
        )
    }
    # The fill each entity should get: its type's colour when it carries the type's label and
    # the style has a rule for it, else the Entity colour.
    fills: dict[str, set[str]] = {}
    for row in expected:
        colour = _grass_colour("node.Entity")
        if row["type"] in row["labels"] and _has_rule(f"node.{row['type']}"):
            colour = _grass_colour(f"node.{row['type']}")
        fills.setdefault(row["name"], set()).add(colour)
    ids = {row["id"] for row in expected}
    related = {
        row["predicate"]
        for row in _read(
            stack.driver,
            "MATCH (:Entity {name: 'Checkout Web'})-[*0..2]->()-[r:RELATED]->() "
            "RETURN DISTINCT r.predicate AS predicate",
        )
    }
    assert related, "the README query should reach long-tail (RELATED) facts"
    guide_url = stack.api_url + BROWSER_GUIDE_PATH

    started = time.monotonic()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=2)
            page.set_default_timeout(TIMEOUT_MS)
            # As `kg browse` opens it: the connection filled in, `:play <guide>` in the editor.
            page.goto(browser_launch_url(stack.browser_url, stack.bolt_uri, guide_url))
            address = page.locator('input[data-testid="boltaddress"]')
            address.wait_for()
            page.select_option('[data-testid="bolt-scheme-select"]', "bolt://")
            address.fill(stack.bolt_uri.removeprefix("bolt://"))
            page.fill('input[data-testid="username"]', "neo4j")
            page.fill('input[data-testid="password"]', stack.password)
            page.click('button[data-testid="connect"]')

            # The post-connect command loaded kg's style from the API, without an error.
            style_frame = page.locator(
                '[data-testid="frame"]', has=page.locator("text=:style")
            ).first
            style_frame.locator("text=node.Entity").wait_for()
            assert "Error" not in style_frame.inner_text()

            # kg's guide plays from the API (allowlisted host, CORS preflight).
            page.click('[data-testid="editor-Run"]')
            page.locator("h3", has_text="kg: the knowledge graph in Neo4j Browser").wait_for()

            # The README query, drawn on the canvas.
            page.click("#monaco-main-editor")
            page.keyboard.insert_text(README_QUERY)
            page.click('[data-testid="editor-Run"]')
            frame = page.locator('[data-testid="frame"]', has=page.locator("svg g.node")).first
            frame.wait_for()
            _wait_until_still(page)

            nodes = page.eval_on_selector_all(
                "svg g.node",
                """els => els.map(e => ({
                    caption: Array.from(e.querySelectorAll('text.caption'))
                                  .map(t => t.textContent.trim()).join(' '),
                    fill: e.querySelector('circle.b-outline').getAttribute('fill')}))""",
            )
            edges = page.eval_on_selector_all(
                "svg g.relationship text", "els => els.map(e => e.textContent.trim())"
            )
            shot = tmp_path / "browser-example.png"
            frame.screenshot(path=str(shot))

            page.click("#monaco-main-editor")
            page.keyboard.insert_text(CYRILLIC_QUERY)
            page.click('[data-testid="editor-Run"]')
            cyrillic_frame = page.locator(
                '[data-testid="frame"]', has=page.locator("text=Команда").first
            ).first
            cyrillic_frame.locator("svg g.node").first.wait_for()
            cyrillic_captions = [
                " ".join(caption.split())
                for caption in cyrillic_frame.locator("svg g.node").evaluate_all(
                    """els => els.map(e => Array.from(e.querySelectorAll('text.caption'))
                                           .map(t => t.textContent.trim()).join(' '))"""
                )
            ]
        finally:
            chromium.close()
    elapsed = time.monotonic() - started

    captions = [" ".join(n["caption"].split()) for n in nodes]
    assert len(nodes) == len(ids), captions
    assert "Checkout Web" in captions
    for caption in captions:
        assert caption not in ids, f"{caption!r} is an id"
        assert not caption.isdigit(), f"{caption!r} is Neo4j's internal id"
        stem = caption.removesuffix("…")
        assert any(
            name == caption or (caption.endswith("…") and name.startswith(stem)) for name in names
        ), f"caption {caption!r} is not an entity's name"
    for node, caption in zip(nodes, captions, strict=True):
        wanted = {c for name, cs in fills.items() if name.startswith(caption.removesuffix("…"))
                  for c in cs}  # fmt: skip
        assert node["fill"].upper() in wanted, (caption, node["fill"], wanted)
    assert len({n["fill"].upper() for n in nodes}) >= 3, "entities are coloured by type"
    # Cyrillic names are drawn as they are written.
    assert cyrillic, "the example has Russian-named entities"
    assert set(cyrillic_captions) & cyrillic, cyrillic_captions
    assert "RELATED" not in edges, "RELATED edges are captioned by their predicate"
    assert related & set(edges), (related, edges)
    assert shot.stat().st_size > 20_000
    if os.environ.get(SCREENSHOT_ENV):
        target = Path(os.environ[SCREENSHOT_ENV])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
    assert elapsed < 60, f"the browser part took {elapsed:.0f}s (budget: a minute)"


def _wait_until_still(page: Any, timeout_s: float = 15.0) -> None:
    """Wait for the force layout to settle, so captions are final and the screenshot sharp."""
    script = "els => els.map(e => e.getAttribute('transform')).join('|')"
    previous = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = page.eval_on_selector_all("svg g.node", script)
        if current == previous:
            return
        previous = current
        page.wait_for_timeout(500)
