"""Slow clients against the API: N connections trickling request heads, /health probed.

Each slow client opens a connection and sends a request head one byte every 0.5 s, reopening
when the server closes it; meanwhile /health is probed twice a second from a fresh
connection. Reports how many probes were answered, the slowest probe, and how much the API
logged. Loopback only; bounded by --seconds. Neo4j is not needed (the API points at a closed
port, so /health answers 503 at once: what is measured is whether the API answers at all).

    .venv/bin/python bench/slow_clients.py --server kg-serve --clients 1100
    .venv/bin/python bench/slow_clients.py --server uvicorn --clients 1100 --nofile 1024
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _slow_client(port: int, stop: float, counts: dict[str, int], lock: threading.Lock) -> None:
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 500
    while time.monotonic() < stop:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            time.sleep(0.2)
            continue
        with lock:
            counts["opened"] += 1
        with sock:
            for byte in head:
                if time.monotonic() > stop:
                    break
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    with lock:
                        counts["cut"] += 1
                    break
                time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--server", choices=["kg-serve", "uvicorn"], default="kg-serve")
    parser.add_argument("--clients", type=int, default=1100)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--nofile", type=int, default=0, help="the API's open-files limit")
    args = parser.parse_args()

    port = _free_port()
    env = {
        **os.environ,
        "KG_NEO4J__URI": f"bolt://127.0.0.1:{_free_port()}",
        "KG_NEO4J__PASSWORD": "bench",
        "KG_API__PORT": str(port),
        "PYTHONPATH": str(REPO),
    }
    if args.server == "kg-serve":
        cmd = [sys.executable, "-m", "cli.main", "serve"]
    else:
        cmd = [sys.executable, "-m", "uvicorn", "--factory", "api.app:create_app",
               "--port", str(port)]  # fmt: skip

    def limit_files() -> None:
        if args.nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))

    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "api.log"
        with log_path.open("w") as log:
            api = subprocess.Popen(
                cmd, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=limit_files,
            )  # fmt: skip
        try:
            for _ in range(150):
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                time.sleep(0.2)
            stop = time.monotonic() + args.seconds
            counts = {"opened": 0, "cut": 0}
            lock = threading.Lock()
            for _ in range(args.clients):
                threading.Thread(
                    target=_slow_client, args=(port, stop, counts, lock), daemon=True
                ).start()
            answered = failed = 0
            worst = 0.0
            while time.monotonic() < stop:
                started = time.monotonic()
                try:
                    httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
                    answered += 1
                except httpx.HTTPError:
                    failed += 1
                worst = max(worst, time.monotonic() - started)
                time.sleep(0.5)
        finally:
            api.terminate()
            api.wait(timeout=30)
        text = log_path.read_text(errors="replace")
    print(
        f"{args.server}: {args.clients} slow clients for {args.seconds:g}s; "
        f"connections opened {counts['opened']}, cut by the server {counts['cut']}; "
        f"/health answered {answered} of {answered + failed}, slowest {worst:.2f}s; "
        f"log {len(text.encode())} bytes, 'Too many open files' {text.count('Too many open files')}"
    )


if __name__ == "__main__":
    main()
