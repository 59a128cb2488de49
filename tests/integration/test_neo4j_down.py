"""No Neo4j answers as a command starts: one line naming the URI and the fix, no retries.

A closed port on loopback stands for a stopped server. Before, `kg search` retried its first
read for about 20 s with four "Transaction failed and will be retried" warnings, and never
said to run `kg neo4j start`.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kg.graph.driver import answers
from kg.settings import Settings
from tests.apiserver import free_port
from tests.clienv import clean_env

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"

COMMANDS = {
    "search": ["search", "Who owns AuthService?"],
    "search --mode text": ["search", "AuthService", "--mode", "text"],
    "ask": ["ask", "Who owns AuthService?"],
    "ingest": ["ingest", str(EXAMPLE), "--dry-run"],
    "migrate": ["migrate"],
}


def _run(args: list[str], uri: str, bolt_port: int, home: Path) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    env.update(
        KG_NEO4J__URI=uri,
        KG_NEO4J__PASSWORD="not-used-0123",
        KG_SERVER__BOLT_PORT=str(bolt_port),
        KG_SERVER__HOME=str(home),
        KG_LLM__BASE_URL="http://127.0.0.1:9/v1",  # never reached: Neo4j fails first
    )
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_stopped_local_server_is_named_with_its_fix(name: str, tmp_path: Path) -> None:
    port = free_port()  # free: nothing listens there
    done = _run(COMMANDS[name], f"bolt://127.0.0.1:{port}", port, tmp_path / "neo4j")
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    text = " ".join(" ".join(lines).split())
    assert text == (
        f"error: Neo4j does not answer at bolt://127.0.0.1:{port}: start the local server "
        "with `kg neo4j start`"
    )
    assert "retried" not in done.stderr


def test_another_neo4j_that_does_not_answer_is_not_told_to_start_the_local_one(
    tmp_path: Path,
) -> None:
    port, local = free_port(), free_port()
    done = _run(COMMANDS["search"], f"neo4j://localhost:{port}", local, tmp_path / "neo4j")
    assert done.returncode == 3, done.stderr
    text = " ".join(done.stderr.split())
    assert text.startswith(f"error: Neo4j does not answer at neo4j://localhost:{port}:")  # alone
    assert "kg neo4j start" not in text
    assert "KG_NEO4J__URI" in text
    assert "retried" not in done.stderr


def test_a_port_that_never_speaks_bolt_fails_within_seconds(tmp_path: Path) -> None:
    """A listener that accepts and stays silent (a hung server, another program) held the
    driver's check for 12 s; kg's own handshake gives up after 3."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = int(silent.getsockname()[1])
        started = time.monotonic()
        done = _run(COMMANDS["search"], f"bolt://127.0.0.1:{port}", port, tmp_path / "neo4j")
        took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    text = " ".join(done.stderr.split())
    assert text == (
        f"error: Neo4j does not answer at bolt://127.0.0.1:{port}: start the local server "
        "with `kg neo4j start`"
    )
    # 3 s of handshake plus the interpreter's start on a loaded machine
    assert took < 10, took


def test_a_real_server_answers_the_handshake(settings: Settings) -> None:
    assert answers(settings.neo4j.uri)
