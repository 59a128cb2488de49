"""Served as Litestar and uvicorn users deploy it: ``uvicorn --factory api.app:create_app``.

kg's redaction filter sits on uvicorn's access handler too (api/logs.py); it once set
``record.args`` to None, and uvicorn's access formatter, which unpacks them, logged
``--- Logging error ---`` with a traceback for every request.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from kg.settings import Settings
from tests.apiserver import free_port
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]


def _wait_for(url: str, proc: subprocess.Popen[str], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout_s}s")


def test_plain_uvicorn_factory_logs_requests_cleanly(settings: Settings) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable, "-m", "uvicorn", "--factory", "api.app:create_app",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=cli_env(settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(base + "/health", proc)
        for path in ("/health", "/templates", "/no-such-route"):
            httpx.get(base + path, timeout=60)
        time.sleep(0.5)  # the access lines are written after the responses
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    logs = out + err
    assert '"GET /templates HTTP/1.1" 200' in logs  # uvicorn's access log did run
    assert '"GET /no-such-route HTTP/1.1" 404' in logs
    assert "Logging error" not in logs
    assert "Traceback" not in logs
