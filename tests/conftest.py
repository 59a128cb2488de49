"""Shared fixtures: one real Neo4j per test session (see tests/neo4j_backend.py).

The suite ignores the caller's ``KG_*`` variables and ``.env`` file: they are removed (and
``KG_ENV_FILE`` set empty) here, when pytest first
imports this file and before any test builds settings or starts a child process, so a user's
``KG_NEO4J__URI`` or ``KG_SEARCH__DEFAULT_LIMIT`` cannot steer a test (or receive the test
server's password). The test server is chosen only by ``NEO4J_URI``, ``NEO4J_USERNAME``,
``NEO4J_PASSWORD`` and ``NEO4J_DATABASE`` (tests/neo4j_backend.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterator

import pytest
from neo4j import Driver

from kg.graph.driver import open_driver
from kg.graph.schema import apply_schema
from kg.settings import Settings
from tests.neo4j_backend import TEST_JAVA_OPTIONS, Neo4jTarget, neo4j_target

for _name in [name for name in os.environ if name.startswith(("KG_", "OTEL_"))]:
    del os.environ[_name]  # OTEL_*: tracing is on only where a test turns it on (kg.observe)
os.environ["KG_ENV_FILE"] = ""  # nor a developer's .env file (kg.settings._dotenv)
# Every local Neo4j a test starts (in process or through the CLI) runs with the suite's JVM
# options (C1 only, the serial collector: tests/neo4j_backend.py says why).
# tests/integration/test_foundation.py runs `kg neo4j start` with kg's defaults.
os.environ["KG_SERVER__JAVA_OPTIONS"] = json.dumps(TEST_JAVA_OPTIONS)

EMBEDDING_DIM = 256


@pytest.fixture(scope="session")
def neo4j_server(request: pytest.FixtureRequest) -> Iterator[Neo4jTarget]:
    """One server per test process: under pytest-xdist each worker starts its own (local or
    testcontainers), so no two workers ever wipe the same graph. A given ``NEO4J_URI`` is one
    database for everyone, hence refused with more than one worker."""
    workers = getattr(request.config, "workerinput", {}).get("workercount", 1)  # xdist's
    if os.environ.get("NEO4J_URI") and workers > 1:
        pytest.exit(
            "NEO4J_URI names one database, which every test wipes: run the suite in one "
            "process with it (`-p no:xdist`; scripts/test does so when NEO4J_URI is set)",
            returncode=4,
        )
    with neo4j_target() as target:
        yield target


@pytest.fixture(scope="session")
def settings(neo4j_server: Neo4jTarget) -> Settings:
    """Settings pointing at the test server; tests copy and adjust them."""
    return Settings(
        neo4j={
            "uri": neo4j_server.uri,
            "username": neo4j_server.username,
            "password": neo4j_server.password,
            "database": neo4j_server.database,
        },
        resolve={"embedding_dim": EMBEDDING_DIM},
    )


@pytest.fixture(scope="session")
def driver(settings: Settings) -> Iterator[Driver]:
    with open_driver(settings.neo4j) as drv:
        drv.verify_connectivity()
        apply_schema(drv, database=settings.neo4j.database, dimension=EMBEDDING_DIM)
        asyncio.run(_plan_templates(settings))
        yield drv


async def _plan_templates(settings: Settings) -> None:
    """Plan every search template once, as `kg serve` does at start-up: the session's server
    has just started, and a cold server ran the first searches past the 5 s query bound, which
    made whichever test searched first flaky (docs/architecture.md, "The first search after a
    restart"). Tests of timeouts set their own bounds; this only takes planning off them. Best
    effort: on a loaded machine an EXPLAIN itself can pass the server's time bound."""
    from kg.errors import KGError
    from kg.graph.driver import open_async_driver
    from kg.resolve import make_embedder
    from kg.search.service import SearchService

    async with open_async_driver(settings.neo4j) as drv:
        # Best effort: a plan not cached only costs the first search its planning.
        with contextlib.suppress(KGError):
            await SearchService(drv, settings, make_embedder(settings.resolve)).warm_up()


@pytest.fixture
def clean_graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    """An empty graph for the test, emptied again after it (Community has one database)."""
    _wipe(driver, settings.neo4j.database)
    yield driver
    _wipe(driver, settings.neo4j.database)


def ingested_example(driver: Driver, settings: Settings) -> Iterator[Driver]:
    """The bundled example, ingested from its triplets (no LLM), for a module's fixture to
    yield from; the graph is wiped before and after."""
    from pathlib import Path

    from kg import KnowledgeGraph

    example = Path(__file__).resolve().parents[1] / "examples"
    _wipe(driver, settings.neo4j.database)
    with KnowledgeGraph(settings) as graph:
        graph.ingest(example / "platform-docs", triplets=example / "platform-docs.triplets.jsonl")
    yield driver
    _wipe(driver, settings.neo4j.database)


def _wipe(driver: Driver, database: str) -> None:
    # CALL ... IN TRANSACTIONS needs an auto-commit transaction, hence session.run.
    with driver.session(database=database) as session:
        # Relationships first, in batches: a supernode's 100k edges in one DETACH DELETE
        # would exceed the server's transaction memory.
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
