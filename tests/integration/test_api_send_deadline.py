"""Issue 26, break 11: clients that pipeline requests and never read the answers.

About 1,000 clients pipelined 200 x ``GET /schema/openapi.json`` each with a 1 KB receive
window and never read; ``/health`` timed out for 30-40 s. Here the API runs under uvicorn with
``kg serve``'s protocol (api/serving.py) at a small scale: as many such clients as the
connection cap, and ``/health`` must still answer at once; the stalled connections are closed
by the send deadline.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from neo4j import Driver

from api.app import create_app
from api.serving import uvicorn_options
from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import api_settings, free_port, verified_once_factory

MAX_CONNECTIONS = 8
SEND_TIMEOUT_S = 4.0


@pytest.fixture(scope="module")
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


@pytest.fixture
def server(graph: Driver, settings: Settings) -> Iterator[tuple[int, uvicorn.Server]]:
    app = create_app(api_settings(settings), service_factory=verified_once_factory)
    port = free_port()
    options = uvicorn_options(
        header_timeout_s=10.0, max_connections=MAX_CONNECTIONS, send_timeout_s=SEND_TIMEOUT_S
    )
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, log_level="warning", lifespan="on",
        **options,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 180  # start-up EXPLAINs every template; slow on a busy box
    while not server.started:
        assert thread.is_alive(), "the API died during start-up"
        assert time.monotonic() < deadline, "the API did not start"
        time.sleep(0.02)
    yield port, server
    server.should_exit = True
    thread.join(timeout=15)


def _never_reads(port: int, requests: int) -> socket.socket:
    """A connection with a 1 KB receive window that pipelines ``requests`` spec fetches."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.connect(("127.0.0.1", port))
    one = b"GET /schema/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    sock.setblocking(False)
    with contextlib.suppress(BlockingIOError):
        sock.send(one * requests)  # as much as the kernel takes; the rest is never sent
    return sock


def _open(server: uvicorn.Server) -> int:
    return len(server.server_state.connections)


def _stalled(server: uvicorn.Server) -> int:
    """Connections whose send buffer is full (the protocol is waiting for the peer to read)."""
    return sum(
        getattr(c, "_stalled_since", None) is not None for c in server.server_state.connections
    )


def test_clients_that_never_read_cannot_keep_health_from_answering(
    server: tuple[int, uvicorn.Server],
) -> None:
    port, uv = server
    stalled = [_never_reads(port, 200) for _ in range(MAX_CONNECTIONS)]
    try:
        # let every connection fill its buffers and stall on writing (before the fix, the
        # connections stalled and stayed: the server's buffers fill all the same)
        deadline = time.monotonic() + 20
        while _stalled(uv) < MAX_CONNECTIONS and time.monotonic() < deadline:
            time.sleep(0.05)
        resp = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)
        assert resp.status_code == 200, resp.text
        # and the send deadline closes every stalled connection
        deadline = time.monotonic() + SEND_TIMEOUT_S + 5
        while _open(uv) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _open(uv) == 0, f"{_open(uv)} connections still open past the send deadline"
    finally:
        for sock in stalled:
            sock.close()
    # the server serves normally afterwards
    for _ in range(3):
        assert httpx.get(f"http://127.0.0.1:{port}/schema/openapi.json", timeout=10).is_success
