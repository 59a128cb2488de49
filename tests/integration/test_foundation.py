"""Foundation: schema, read-only transactions, the fixture order, the local server's CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver
from neo4j.exceptions import ClientError

from kg.errors import ServerError
from kg.graph.schema import apply_schema
from kg.localserver import LocalNeo4j, free_port
from kg.settings import Settings
from tests.neo4j_backend import Neo4jTarget

REPO = Path(__file__).resolve().parents[2]


def test_schema_apply_is_idempotent(driver: Driver, settings: Settings) -> None:
    first = apply_schema(driver, database=settings.neo4j.database, dimension=256)
    second = apply_schema(driver, database=settings.neo4j.database, dimension=256)
    assert second.created == []
    assert set(first.created) | set(first.existing) == set(second.existing)
    for name in ("entity_id", "chunk_id", "document_id", "entity_names", "entity_embedding"):
        assert name in second.existing


def test_schema_apply_sends_only_what_is_missing(driver: Driver, settings: Settings) -> None:
    """Every command applies the schema: a complete one costs two SHOWs, and an index that
    went missing (dropped by hand) is created again, the rest left as they are."""
    db = settings.neo4j.database
    apply_schema(driver, database=db, dimension=256)
    driver.execute_query("DROP INDEX document_path IF EXISTS", database_=db)
    sent: list[str] = []
    real = driver.execute_query

    def recording(query: Any, *args: Any, **kwargs: Any) -> Any:  # the real driver, counted
        sent.append(str(query))
        return real(query, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "execute_query", recording)
        again = apply_schema(driver, database=db, dimension=256)
        creates_then = [q for q in sent if q.lstrip().upper().startswith("CREATE")]
        sent.clear()
        complete = apply_schema(driver, database=db, dimension=256)
        creates_now = [q for q in sent if q.lstrip().upper().startswith("CREATE")]
    assert again.created == ["document_path"]
    assert "document_path" not in again.existing
    assert "entity_id" in again.existing
    assert len(creates_then) == 1
    assert "document_path" in creates_then[0]
    assert complete.created == []
    assert creates_now == []


def test_schema_refuses_a_conflicting_vector_dimension(driver: Driver, settings: Settings) -> None:
    from kg.errors import StoreError

    with pytest.raises(StoreError, match="dimension"):
        apply_schema(driver, database=settings.neo4j.database, dimension=64)


def test_server_rejects_a_write_inside_a_read_transaction(
    clean_graph: Driver, settings: Settings
) -> None:
    def write(tx) -> None:  # type: ignore[no-untyped-def]
        tx.run("CREATE (:Intruder {at: timestamp()})").consume()

    with (
        clean_graph.session(database=settings.neo4j.database) as session,
        pytest.raises(ClientError) as excinfo,
    ):
        session.execute_read(write)
    assert "AccessMode" in (excinfo.value.code or "")
    records, _, _ = clean_graph.execute_query("MATCH (n:Intruder) RETURN count(n) AS n")
    assert records[0]["n"] == 0


def test_fixture_picks_neo4j_uri_when_given(neo4j_server: Neo4jTarget, tmp_path: Path) -> None:
    """A nested pytest run with NEO4J_URI set must use that server, not start another."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "def test_probe(neo4j_server, driver):\n"
        "    assert neo4j_server.backend == 'uri'\n"
        f"    assert neo4j_server.uri == {neo4j_server.uri!r}\n"
        "    assert driver.execute_query('RETURN 1 AS one').records[0]['one'] == 1\n"
    )
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    env = dict(os.environ)
    env.update(
        NEO4J_URI=neo4j_server.uri,
        NEO4J_USERNAME=neo4j_server.username,
        NEO4J_PASSWORD=neo4j_server.password,
        PYTHONPATH=str(REPO),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(probe)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def _server_settings(tmp_path: Path, bolt: int, http: int) -> dict[str, str]:
    env = dict(os.environ)
    # kg's own JVM flags here, not the suite's quicker JIT: the default as users run it.
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "KG_SERVER__JAVA_OPTIONS"):
        env.pop(name, None)
    env.update(
        KG_SERVER__HOME=str(tmp_path / "neo4j-home"),
        KG_SERVER__BOLT_PORT=str(bolt),
        KG_SERVER__HTTP_PORT=str(http),
        KG_SERVER__HEAP="512m",
        KG_SERVER__PAGECACHE="128m",
        KG_NEO4J__URI=f"bolt://127.0.0.1:{bolt}",
        KG_NEO4J__PASSWORD="cli-test-password",
    )
    return env


def _kg(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_local_server_start_browser_schema_stop(tmp_path: Path) -> None:
    bolt, http = free_port(), free_port()
    env = _server_settings(tmp_path, bolt, http)
    started = _kg(env, "neo4j", "start")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/browser/", timeout=10) as resp:
            assert resp.status == 200
            assert b"Neo4j Browser" in resp.read()
        status = _kg(env, "neo4j", "status")
        assert status.returncode == 0
        assert "running" in status.stdout
        first = _kg(env, "schema", "apply")
        assert first.returncode == 0, first.stderr
        assert "created" in first.stdout
        assert "entity_id" in first.stdout
        second = _kg(env, "schema", "apply")
        assert second.returncode == 0
        assert "nothing created" in second.stdout
        # Data survives a restart: the home folder is persistent.
        assert _kg(env, "neo4j", "stop").returncode == 0
        assert _kg(env, "neo4j", "start").returncode == 0
        third = _kg(env, "schema", "apply")
        assert "nothing created" in third.stdout
    finally:
        stopped = _kg(env, "neo4j", "stop")
    assert stopped.returncode == 0
    after = _kg(env, "neo4j", "status")
    assert after.returncode == 3
    assert "stopped" in after.stdout
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", bolt)) != 0


def test_start_refuses_a_taken_port(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        settings = Settings(
            server={"home": tmp_path / "h", "bolt_port": port, "http_port": free_port()}
        )
        with pytest.raises(ServerError, match=f"port {port}.*already taken"):
            LocalNeo4j(settings).start()


def test_each_test_process_has_a_server_of_its_own(
    neo4j_server: Neo4jTarget,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    """The suite's isolation under parallel workers: every worker wipes its own graph, so no
    two may share a server. Each records its server where all of them look (the run's common
    temporary folder) and checks that no other worker recorded the same one."""
    if neo4j_server.backend == "uri":  # one server: then the suite runs in one process
        assert getattr(request.config, "workerinput", None) is None
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    shared = tmp_path_factory.getbasetemp().parent / "servers"
    shared.mkdir(exist_ok=True)
    (shared / f"{worker}.uri").write_text(neo4j_server.uri)
    others = {p.stem: p.read_text() for p in shared.glob("*.uri") if p.stem != worker}
    assert neo4j_server.uri not in others.values(), others
