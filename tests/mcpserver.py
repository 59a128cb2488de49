"""`kg mcp --http` in a subprocess on a loopback port, for tests that speak to it over HTTP."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def mcp_http_server(env: Mapping[str, str], port: int, log: Path | None = None) -> Iterator[str]:
    """Start it with ``env``, wait until it answers (at most 120 s), yield its /mcp URL, stop
    it. A server that exits or never answers fails with its stderr. ``log``: write its stderr
    there (for a test that reads the server's log), else keep it in a temporary file."""
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "stderr.log"
        with log.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cli.main", "mcp", "--http", "--port", str(port)],
                env=dict(env),
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=err,
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
                        raise RuntimeError(log.read_text()) from None
                    time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)
