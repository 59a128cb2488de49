"""Every guarded read asks for READ routing and waits for the graph's write bookmarks.

On a ``neo4j://`` URI the access mode of a session is its routing: READ goes to a secondary or
a follower, WRITE to the leader. The guard opens its sessions with one configuration
(:meth:`Guard.session_config`); here every template text, and every start-up EXPLAIN, is run
through a real driver whose routing server is a closed loopback port, and each session it
opened is checked. No Neo4j answers: the read fails after the session is configured, which is
all this test needs. (tests/integration/test_routing.py runs the same reads through ``neo4j://``
against the real server.)
"""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from neo4j import READ_ACCESS, GraphDatabase

from kg.cypher.guard import Guard
from kg.cypher.templates import REGISTRY
from kg.errors import StoreUnavailable
from kg.graph.driver import open_async_driver
from kg.settings import Settings
from tests.apiserver import free_port

REPO = Path(__file__).resolve().parents[2]


def _closed_settings() -> Settings:
    # A free port nobody listens on: connections are refused at once.
    uri = f"neo4j://127.0.0.1:{free_port()}"
    return Settings(neo4j={"uri": uri, "password": "x", "connection_timeout_s": 2.0})


def _recorded_sessions(run: Any) -> tuple[list[dict[str, Any]], Any]:
    settings = _closed_settings()
    # the write chain as an ingest leaves it (a bookmark is opaque to the client)
    bookmarks = GraphDatabase.bookmark_manager(initial_bookmarks=["FB:written-by-an-ingest"])
    opened: list[dict[str, Any]] = []

    async def main() -> None:
        driver = open_async_driver(settings.neo4j)
        real_session = driver.session

        def recording_session(**config: Any) -> Any:
            opened.append(config)
            return real_session(**config)

        driver.session = recording_session  # type: ignore[method-assign]
        try:
            await run(Guard(driver, settings, bookmarks=bookmarks))
        finally:
            await driver.close()

    asyncio.run(main())
    return opened, bookmarks


def test_every_template_text_is_read_in_a_read_session_after_the_graphs_writes() -> None:
    texts = [
        (template, variant, text)
        for template in REGISTRY
        for variant, text in template.texts.items()
    ]

    async def run(guard: Guard) -> None:
        for template, _, text in texts:
            # nothing answers on the closed port: the session itself must be valid
            with pytest.raises(StoreUnavailable):
                await guard._read(
                    template.name, text, {}, 1, packed=template.packed, temporal=template.temporal
                )

    opened, bookmarks = _recorded_sessions(run)
    assert len(opened) == len(texts)
    for config in opened:
        assert config["default_access_mode"] == READ_ACCESS
        # waits for the writes' bookmarks; records nothing of its own into the chain
        assert config["bookmarks"].raw_values == {"FB:written-by-an-ingest"}
        assert "bookmark_manager" not in config
        assert config["database"] == "neo4j"
    assert bookmarks.get_bookmarks() == {"FB:written-by-an-ingest"}


def test_start_up_explains_run_in_read_sessions_too() -> None:
    async def run(guard: Guard) -> None:
        # EXPLAIN runs in managed transactions, which the driver retries: the sessions are
        # opened (and recorded) at once, the retries are cut short.
        with pytest.raises((StoreUnavailable, TimeoutError)):
            async with asyncio.timeout(1.0):
                await guard.verify_read_only()

    opened, _ = _recorded_sessions(run)
    assert opened
    for config in opened:
        assert config["default_access_mode"] == READ_ACCESS
        assert config["bookmarks"].raw_values == {"FB:written-by-an-ingest"}


def test_a_guard_without_a_write_chain_reads_without_bookmarks() -> None:
    guard = Guard(None, Settings())  # type: ignore[arg-type]
    config = guard.session_config()
    assert config["default_access_mode"] == READ_ACCESS
    assert "bookmarks" not in config
    assert "bookmark_manager" not in config


def _calls(path: Path, attribute: str) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == attribute
    ]


def test_the_guard_opens_sessions_only_through_its_one_configuration() -> None:
    calls = _calls(REPO / "kg" / "cypher" / "guard.py", "session")
    assert calls
    for call in calls:
        assert not call.args, ast.unparse(call)
        assert [k.arg for k in call.keywords] == [None], ast.unparse(call)  # **session_config()
        assert ast.unparse(call.keywords[0].value) == "self.session_config()"


def _call_text(source: str, start: int) -> str:
    """The text of the call whose ``(`` is at ``start``, through its matching ``)``."""
    depth = 0
    for i in range(start, len(source)):
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        if depth == 0:
            return source[start : i + 1]
    raise AssertionError("unbalanced call")


def test_every_async_read_outside_the_guard_asks_for_read_routing() -> None:
    """The search side's other reads (the model check) run ``execute_query`` on the async
    driver: each names READ routing and a bookmark manager (seeded from the write chain).
    (Text, not ``ast``: CPython 3.11's ``ast.parse`` trips over pytest's recursion depth.)"""
    found = 0
    for path in sorted((REPO / "kg").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for match in re.finditer(r"await [\w.]+\.execute_query(?=\()", source):
            found += 1
            call = _call_text(source, match.end())
            where = f"{path.relative_to(REPO)}: {call[:60]}"
            assert "routing_=RoutingControl.READ" in call, where
            assert "bookmark_manager_=" in call, where
    assert found >= 2
