"""No secret in anything kg prints: a distinctive password, put in KG_NEO4J__URI
(``bolt://user:pass@host``) or KG_NEO4J__PASSWORD, is grepped in the whole stdout and stderr
of the CLI commands (run as subprocesses, as a user runs them) and in the API's logs, against
an unreachable server, a malformed URI and the real server refusing the password.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kg.settings import Settings
from tests.apiserver import free_port
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "Kq7-distinctive-Pw-3e9f"
AT_PASSWORD = "Zz8@leaky-Pw-41c2"  # an '@' inside the password, unescaped
KEY = "api-key-distinctive-88d1"
SECRETS = (PASSWORD, AT_PASSWORD, KEY, "Kq7-distinctive", "leaky-Pw-41c2")


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    env = cli_env(settings, PYTHONPATH=str(REPO), KG_NEO4J__CONNECTION_TIMEOUT_S="1")
    return {**env, **extra}


def _assert_clean(what: str, output: str) -> None:
    for secret in SECRETS:
        assert secret not in output, f"{what} printed a secret:\n{output}"


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def _envs(settings: Settings) -> dict[str, dict[str, str]]:
    closed = f"127.0.0.1:{free_port()}"
    return {
        "password in the URI": _env(
            settings, KG_NEO4J__URI=f"bolt://neo4j:{PASSWORD}@{closed}", KG_API__API_KEYS=KEY
        ),
        "password with @ in the URI": _env(
            settings, KG_NEO4J__URI=f"neo4j://neo4j:{AT_PASSWORD}@{closed}"
        ),
        "unreachable server": _env(
            settings, KG_NEO4J__URI=f"bolt://{closed}", KG_NEO4J__PASSWORD=PASSWORD
        ),
        # Another user name: Neo4j locks a user out after failed logins for a few seconds,
        # and the suite's own `neo4j` user must not be (a test on this worker reads next).
        "refused password": _env(
            settings, KG_NEO4J__USERNAME="kg-refused-user", KG_NEO4J__PASSWORD=PASSWORD
        ),
    }


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAuthService uses PostgreSQL.\n", encoding="utf-8")
    triplets = tmp_path / "t.jsonl"
    triplets.write_text("", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "case",
    ["password in the URI", "password with @ in the URI", "unreachable server", "refused password"],
)
def test_cli_commands_never_print_a_secret(
    settings: Settings, docs: Path, tmp_path: Path, case: str
) -> None:
    env = _envs(settings)[case]
    commands = [
        ["ingest", str(docs), "--triplets", str(tmp_path / "t.jsonl"), "--json"],
        ["search", "Who owns AuthService?"],
        ["search", "Who owns AuthService?", "--json"],
        ["schema", "apply"],
    ]
    for args in commands:
        proc = _run(args, env, tmp_path)
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0, (case, args, output)
        assert "error" in output.lower(), (case, args, output)
        _assert_clean(f"kg {' '.join(args)} ({case})", output)


def _serve(env: dict[str, str], cwd: Path, port: int, command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, cwd=cwd, env={**env, "KG_API__PORT": str(port)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _exercise(port: int, proc: subprocess.Popen[str]) -> None:
    """Start-up, a health probe and searches while Neo4j fails us; then stop."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
            break
        time.sleep(0.3)
    if proc.poll() is None:
        headers = {"Authorization": f"Bearer {KEY}"}
        for _ in range(3):
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(
                    f"http://127.0.0.1:{port}/search/local",
                    json={"query": "AuthService"},
                    headers=headers,
                    timeout=30,
                )
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)
                time.sleep(1.1)  # past the health cache: another real check
        proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    "case",
    ["password in the URI", "password with @ in the URI", "unreachable server", "refused password"],
)
@pytest.mark.parametrize("runner", ["kg serve", "uvicorn --factory"])
def test_api_logs_never_hold_a_secret(
    settings: Settings, tmp_path: Path, case: str, runner: str
) -> None:
    env = {**_envs(settings)[case], "KG_LOG_LEVEL": "DEBUG"}
    port = free_port()
    command = (
        [sys.executable, "-m", "cli.main", "serve"]
        if runner == "kg serve"
        else [sys.executable, "-m", "uvicorn", "--factory", "api.app:create_app",
              "--port", str(port), "--log-level", "debug"]
    )  # fmt: skip
    proc = _serve(env, tmp_path, port, command)
    _exercise(port, proc)
    output = proc.stdout.read() if proc.stdout else ""
    assert output.strip(), "the server said nothing at all"
    _assert_clean(f"{runner} ({case})", output)
