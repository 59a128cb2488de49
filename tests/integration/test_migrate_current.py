"""`kg migrate` on a graph that is already current: one query, and it says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from neo4j import Driver

from kg.graph.meta import MODEL_VERSION, ensure_current
from kg.graph.migrate import already_current
from kg.resolve import make_embedder
from kg.resolve.embed import embedder_identity, make_chunk_embedder
from kg.settings import Settings
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]


class CountingDriver:
    """The real driver, counting what goes to the server (queries and sessions)."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self.calls: list[str] = []

    def execute_query(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("execute_query")
        return self._driver.execute_query(query, *args, **kwargs)

    def session(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("session")
        return self._driver.session(*args, **kwargs)


def _identities(settings: Settings) -> dict[str, str]:
    return {
        "entity": embedder_identity(make_embedder(settings.resolve)),
        "chunk": embedder_identity(make_chunk_embedder(settings.chunks)),
    }


def test_a_current_graph_is_recognised_in_one_query(
    clean_graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    identities = _identities(settings)
    counting = CountingDriver(clean_graph)
    assert already_current(counting, db, identities) is None  # type: ignore[arg-type]
    assert counting.calls == ["execute_query"]  # an empty graph: the full migrate stamps it

    ensure_current(clean_graph, db, embedders=identities)
    counting.calls.clear()
    report = already_current(counting, db, identities)  # type: ignore[arg-type]
    assert report is not None
    assert (report.from_version, report.notes) == (MODEL_VERSION, ["nothing to do"])
    assert counting.calls == ["execute_query"]

    other = {**identities, "chunk": "another-embedder/256"}
    assert already_current(clean_graph, db, other) is None  # vectors to re-embed: full path


def test_kg_migrate_on_a_current_graph_does_nothing(
    clean_graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    ensure_current(clean_graph, db, embedders=_identities(settings))
    before = clean_graph.execute_query(
        "MATCH (m:KgMeta {id: 'kg'}) RETURN m.updated_at AS at", database_=db
    ).records[0]["at"]
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "migrate", "--json"],
        cwd=REPO,
        env=cli_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["notes"] == ["nothing to do"]
    assert report["from_version"] == report["to_version"] == MODEL_VERSION
    after = clean_graph.execute_query(
        "MATCH (m:KgMeta {id: 'kg'}) RETURN m.updated_at AS at", database_=db
    ).records[0]["at"]
    assert after == before  # not even the stamp was rewritten
