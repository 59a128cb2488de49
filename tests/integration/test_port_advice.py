"""One place decides where the local server listens and where kg connects, as a user meets it.

Another process holds the port; `kg example` refuses with one fix; the test applies that fix
literally (the `export` line it prints) and runs the same command again: it works, on the
local server it started, at the address every kg command now connects to.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kg.localserver.process import free_port
from tests.clienv import clean_env

REPO = Path(__file__).resolve().parents[2]


def _kg(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def _user_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """A user's shell: none of the caller's KG_/NEO4J_ variables, a private server home."""
    env = clean_env()
    env.update(
        KG_SERVER__HOME=str(tmp_path / "home"),
        KG_SERVER__HEAP="512m",
        KG_SERVER__PAGECACHE="128m",
        COLUMNS="200",
        **settings,
    )
    return env


def _apply(advice: str, env: dict[str, str]) -> dict[str, str]:
    """What `export A=1 B=2` does to a shell's environment."""
    found = re.search(r"`export ([^`]+)`", " ".join(advice.split()))
    assert found, advice
    updated = dict(env)
    for assignment in shlex.split(found.group(1)):
        name, _, value = assignment.partition("=")
        updated[name] = value
    return updated


@pytest.mark.slow
def test_the_port_collision_fix_works_when_followed_literally(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        # The user spelled out the local server's own address: kg example starts it anyway.
        env = _user_env(
            tmp_path,
            KG_SERVER__BOLT_PORT=str(taken),
            KG_SERVER__HTTP_PORT=str(free_port()),
            KG_NEO4J__URI=f"bolt://127.0.0.1:{taken}",
        )
        refused = _kg(env, "example")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        advice = refused.stderr
        assert f"port {taken}" in advice
        fixed = _apply(advice, env)
        assert fixed["KG_SERVER__BOLT_PORT"] != str(taken)
        assert fixed["KG_NEO4J__URI"] == f"bolt://127.0.0.1:{fixed['KG_SERVER__BOLT_PORT']}"
        try:
            done = _kg(fixed, "example")
            assert done.returncode == 0, done.stdout + done.stderr
            assert f"Bolt bolt://127.0.0.1:{fixed['KG_SERVER__BOLT_PORT']}" in done.stdout
            assert "AuthService" in done.stdout
            # Every other command follows the port too, with no URI: drop it and search.
            without_uri = {k: v for k, v in fixed.items() if k != "KG_NEO4J__URI"}
            found = _kg(without_uri, "search", "Who owns AuthService?", "--json")
            assert found.returncode == 0, found.stderr
            assert "AuthService" in found.stdout
        finally:
            _kg(fixed, "neo4j", "stop")


def test_without_a_uri_the_fix_moves_only_the_port(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        env = _user_env(
            tmp_path, KG_SERVER__BOLT_PORT=str(taken), KG_SERVER__HTTP_PORT=str(free_port())
        )
        refused = _kg(env, "neo4j", "start")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        fixed = _apply(refused.stderr, env)
        assert "KG_NEO4J__URI" not in fixed  # unset, it follows the port
        new = fixed["KG_SERVER__BOLT_PORT"]
        assert new != str(taken)
        uri = subprocess.run(
            [sys.executable, "-c", "from kg.settings import Settings; print(Settings().neo4j.uri)"],
            env=fixed, cwd=tmp_path, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert uri.stdout.strip() == f"bolt://127.0.0.1:{new}"
