"""`kg mcp --http` in a subprocess on a loopback port, for tests that speak to it over HTTP."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def mcp_http_server(env: Mapping[str, str], port: int) -> Iterator[str]:
    """Start it with ``env``, wait until it answers (at most 120 s), yield its /mcp URL, stop
    it. A server that exits or never answers fails with its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "mcp", "--http", "--port", str(port)],
        env=dict(env),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
