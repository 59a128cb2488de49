"""The README's library example as a user runs it: copied from README.md, run as a script.

It prints the answer its question asks for (AuthService's current owner), and it does so right
after a restart of Neo4j too: the first search of a process on a cold server plans each
template under ``search.plan_timeout_s``, not the 5 s query bound (kg/cypher/guard.py).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from neo4j import Driver

from kg.localserver import LocalNeo4j
from kg.localserver.process import free_port
from kg.settings import Settings
from tests.clienv import clean_env, cli_env

REPO = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The README's one Python block, as written there."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert len(blocks) == 1, "the README has one library example"
    return str(blocks[0])


def run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def owners(out: str) -> list[str]:
    printed = ast.literal_eval(out.strip().splitlines()[-1])
    assert isinstance(printed, list)
    return [str(x) for x in printed]


def test_the_library_example_prints_the_owner(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    done = run(script, cli_env(settings))
    assert done.returncode == 0, done.stderr
    assert owners(done.stdout) == ["Team Platform Security"]


@pytest.mark.slow
def test_the_library_example_right_after_a_restart(tmp_path: Path) -> None:
    """Reproduces the cold-server timeout: restart Neo4j, run the example at once."""
    home = tmp_path / "home"
    env = clean_env()
    env.update(
        KG_SERVER__HOME=str(home),
        KG_SERVER__BOLT_PORT=str(free_port()),
        KG_SERVER__HTTP_PORT=str(free_port()),
        KG_SERVER__HEAP="512m",
        KG_SERVER__PAGECACHE="128m",
    )
    server = LocalNeo4j(
        Settings(
            server={k.removeprefix("KG_SERVER__").lower(): v for k, v in env.items()
                    if k.startswith("KG_SERVER__")}
        )
    )  # fmt: skip
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    try:
        server.start()
        first = run(script, env)
        assert first.returncode == 0, first.stderr
        server.stop()
        server.start()
        again = run(script, env)  # documents unchanged: the search is the first read
        assert again.returncode == 0, again.stderr
        assert "QueryTimeout" not in again.stderr
        assert owners(again.stdout) == ["Team Platform Security"]
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
