"""`kg mcp --http` holds the bounds `kg serve` holds: body deadline, session cap and idle
expiry, and the log's repeat limit (issue 26, breaks 5 and 6 and the sessions finding).

A real `kg mcp --http` subprocess on a loopback port, against the session's Neo4j; clients are
raw sockets and httpx, so the test controls exactly how slowly each byte arrives.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from neo4j import Driver

from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import free_port
from tests.clienv import cli_env
from tests.mcpserver import mcp_http_server

REPO = Path(__file__).resolve().parents[2]
BODY_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 6
MAX_SESSIONS = 3
SESSION_IDLE_S = 3.0
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bounds-test", "version": "1"},
    },
}


class Server:
    def __init__(self, url: str, port: int, log: Path) -> None:
        self.url = url
        self.port = port
        self.log = log


@pytest.fixture(scope="module")
def server(
    driver: Driver, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    wipe(driver, settings)
    write_graph(driver, settings)
    port = free_port()
    log = tmp_path_factory.mktemp("mcp-http") / "stderr.log"
    env = cli_env(
        settings,
        PYTHONPATH=str(REPO),
        KG_API__BODY_TIMEOUT_S=str(BODY_TIMEOUT_S),
        KG_API__MAX_CONNECTIONS=str(MAX_CONNECTIONS),
        KG_API__MCP_MAX_SESSIONS=str(MAX_SESSIONS),
        KG_API__MCP_SESSION_IDLE_S=str(SESSION_IDLE_S),
    )
    try:
        with mcp_http_server(env, port, log) as url:
            yield Server(url, port, log)
    finally:
        wipe(driver, settings)


def _slow_body(port: int, stop: threading.Event, outcome: list[tuple[float, bytes]]) -> None:
    """A request head at once, then a 100,000-byte body one byte every 0.3 s."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=BODY_TIMEOUT_S + 6) as sock:
            head = (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n"
            )
            sock.sendall(head.encode())
            sock.settimeout(0.3)
            while not stop.is_set():
                try:
                    sock.sendall(b" ")
                    data = sock.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    data = b""
                outcome.append((time.monotonic() - started, data))
                return
    except OSError:
        outcome.append((time.monotonic() - started, b""))


def test_slow_bodies_are_cut_and_a_whole_request_is_served(server: Server) -> None:
    """The break: 25 connections trickling a body locked every new client out for 35 s."""
    stop = threading.Event()
    outcomes: list[list[tuple[float, bytes]]] = [[] for _ in range(MAX_CONNECTIONS + 2)]
    threads = [
        threading.Thread(target=_slow_body, args=(server.port, stop, out), daemon=True)
        for out in outcomes
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # every slot is now held by a slow body
    try:
        served_after = None
        started = time.monotonic()
        while time.monotonic() - started < BODY_TIMEOUT_S + 4:
            try:
                resp = httpx.post(
                    server.url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers=HEADERS,
                    timeout=2,
                )
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            assert resp.status_code < 500, resp.text
            served_after = time.monotonic() - started
            break
        assert served_after is not None, "a whole request was never served"
        for thread in threads:
            thread.join(BODY_TIMEOUT_S + 6)
    finally:
        stop.set()
    for out in outcomes:
        assert out, "a slow body was still open past the deadline"
        (elapsed, data) = out[0]
        assert elapsed < BODY_TIMEOUT_S + 3
        assert data == b"" or data.startswith(b"HTTP/1.1 408"), data[:200]
    assert any(data.startswith(b"HTTP/1.1 408") for out in outcomes for _, data in out)


def test_sessions_are_capped_and_idle_ones_expire(server: Server) -> None:
    time.sleep(SESSION_IDLE_S + 1)  # sessions of other tests have expired
    with httpx.Client(timeout=10) as http:
        ids = []
        for _ in range(MAX_SESSIONS):
            resp = http.post(server.url, json=INITIALIZE, headers=HEADERS)
            assert resp.status_code == 200, resp.text
            ids.append(resp.headers["mcp-session-id"])
        refused = [http.post(server.url, json=INITIALIZE, headers=HEADERS) for _ in range(30)]
        assert {r.status_code for r in refused} == {503}
        time.sleep(SESSION_IDLE_S + 2)
        again = http.post(server.url, json=INITIALIZE, headers=HEADERS)
        assert again.status_code == 200, again.text
        old = http.post(
            server.url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={**HEADERS, "mcp-session-id": ids[0], "mcp-protocol-version": "2025-06-18"},
        )
        assert old.status_code == 404
    # 30 refusals logged the same warning: the repeat filter let at most a burst through
    time.sleep(0.5)
    refusals = server.log.read_text().count("Refusing to open a new session")
    assert 1 <= refusals <= 6, server.log.read_text()[-3000:]


def test_clients_leaving_mid_body_leave_no_traceback_flood(server: Server) -> None:
    """The break: 2,800 such connections left 617 tracebacks (351 KB) in 25 s."""
    before = server.log.stat().st_size
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    for _ in range(60):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            head = (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                f"Content-Length: {len(body) + 50}\r\n\r\n"
            )
            sock.sendall(head.encode() + body)
            time.sleep(0.02)
    time.sleep(1.0)
    resp = httpx.post(server.url, json=INITIALIZE, headers=HEADERS, timeout=10)
    assert resp.status_code in (200, 503)  # still serving
    added = server.log.read_bytes()[before:].decode(errors="replace")
    assert "Traceback" not in added, added[-3000:]
    assert len(added) < 4000, added[-3000:]
