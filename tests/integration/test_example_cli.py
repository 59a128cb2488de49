"""`kg example` as a user runs it (a subprocess), against the session's Neo4j: it builds the
graph, answers its question, and leaves the server warm for the next `kg search`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from neo4j import Driver

from kg.settings import Settings
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]


def _kg(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.mark.slow
def test_example_builds_answers_and_warms(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    env = cli_env(settings, PYTHONPATH=str(REPO), COLUMNS="200")
    done = _kg(["example"], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Checkout Web" in done.stdout or "AuthService" in done.stdout, done.stdout
    assert "warm-up skipped" not in done.stdout
    assert "Traceback" not in done.stderr
    found = _kg(["search", "Which database does the Payments API use?", "--json"], env, tmp_path)
    assert found.returncode == 0, found.stderr
    names = {e["name"] for e in json.loads(found.stdout)["local"]["entities"]}
    assert "Payments API" in names
