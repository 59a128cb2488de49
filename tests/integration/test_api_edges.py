"""The breaks an outside security test found at the API's edges, over real HTTP against the
real Neo4j: caller mistakes that used to be 500/503, auth decided by the bound socket, and
slow clients that held connections forever.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from litestar import Litestar
from neo4j import Driver

from api.app import create_app
from api.serving import uvicorn_options
from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import (
    LiveServer,
    api_settings,
    free_port,
    verified_once_factory,
    wait_until_served,
)
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]
DIM = 256  # the session's embedding dimension (tests/conftest.py)


@pytest.fixture(scope="module")
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


@pytest.fixture(scope="module")
def app(graph: Driver, settings: Settings) -> Litestar:
    """Default API settings: no keys, loopback; short body deadline for the slow-body test."""
    return create_app(
        api_settings(settings, body_timeout_s=1.0), service_factory=verified_once_factory
    )


@pytest.fixture(scope="module")
def client(app: Litestar) -> Iterator[httpx.Client]:
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        yield http


def _rejects(resp: httpx.Response, field: str) -> None:
    assert resp.status_code == 422, resp.text
    assert field in [e["field"] for e in resp.json()["errors"]], resp.text


# -- valid-looking input is a 4xx naming the field, and Neo4j stays trusted ----------------

FAR_AS_OF = ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"]


@pytest.mark.parametrize("as_of", FAR_AS_OF)
def test_as_of_overflowing_utc_is_a_422_naming_as_of(
    app: Litestar, client: httpx.Client, as_of: str
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("/search/local", {"query": "PaymentService", "as_of": as_of}),
        ("/templates/relations_valid_at", {"entity_id": "ent-payments", "as_of": as_of}),
        ("/templates/entity_neighborhood", {"entity_id": "ent-payments", "as_of": as_of}),
        ("/templates/seed_expansion", {"entity_ids": ["ent-payments"], "as_of": as_of}),
        ("/templates/paths_between", {"source_id": "ent-payments", "target_id": "ent-kafka",
                                      "as_of": as_of}),
    ]  # fmt: skip
    for path, body in calls:
        _rejects(client.post(path, json=body), "as_of")
    assert app.state.backend.suspect is False


def test_as_of_with_an_offset_is_compared_as_an_instant(client: httpx.Client) -> None:
    """PaymentService DEPENDS_ON PostgreSQL from the date 2023-01-01 (midnight UTC)."""

    def targets(as_of: str) -> set[str]:
        body = {"entity_id": "ent-payments", "as_of": as_of}
        resp = client.post("/templates/relations_valid_at", json=body)
        assert resp.status_code == 200, resp.text
        return {row["target"] for row in resp.json()["rows"]}

    # 2022-12-31T10:00Z: the day before (read as "the date 2023-01-01" it was 14 h early)
    assert "ent-postgres" not in targets("2023-01-01T00:00:00+14:00")
    # 2023-01-01T02:00Z: on the day
    assert "ent-postgres" in targets("2023-01-01T00:00:00-02:00")
    assert "ent-postgres" in targets("2023-01-01")


@pytest.mark.parametrize(
    "question",
    [
        "認証サービス" * 330,  # 1,980 characters without a space
        "PaymentService " + "数据库" * 600,
        " ".join(["서비스"] * 499),
    ],
)
def test_a_long_cjk_question_is_answered(
    app: Litestar, client: httpx.Client, question: str
) -> None:
    """Over Lucene's 1,024-clause limit it used to be "Neo4j is unavailable" (503)."""
    resp = client.post("/search/local", json={"query": question, "mode": "hybrid"})
    assert resp.status_code == 200, resp.text
    seeds = client.post("/templates/entity_seeds", json={"text": "漢" * 4000, "k": 5})
    assert seeds.status_code == 200, seeds.text
    assert app.state.backend.suspect is False


@pytest.mark.parametrize(
    ("embedding", "reason"),
    [
        ([0.1] * 10, "dimension"),
        ([0.1] * (DIM + 1), "dimension"),
        ([0.0] * DIM, "zero vector"),
        ([1e300] * DIM, "too large"),
    ],
)
def test_unusable_embeddings_are_a_422_naming_embedding(
    app: Litestar, client: httpx.Client, embedding: list[float], reason: str
) -> None:
    for path, body in (
        ("/templates/chunks_by_vector", {"embedding": embedding, "k": 5}),
        ("/templates/entity_seeds", {"embedding": embedding, "text": "x", "k": 5}),
    ):
        resp = client.post(path, json=body)
        _rejects(resp, "embedding")
        assert reason in resp.text
    assert app.state.backend.suspect is False
    ok = client.post("/templates/chunks_by_vector", json={"embedding": [0.1] * DIM, "k": 5})
    assert ok.status_code == 200, ok.text


# -- auth by the socket actually bound ------------------------------------------------------


def _non_loopback_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    candidates: list[str] = []
    for target in ("10.255.255.255", "192.0.2.1", "203.0.113.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((target, 9))  # UDP connect sends nothing; it picks a route
                candidates.append(str(probe.getsockname()[0]))
            except OSError:
                continue
    with contextlib.suppress(OSError):
        candidates += socket.gethostbyname_ex(socket.gethostname())[2]
    return next((a for a in candidates if not a.startswith(("127.", "0."))), None)


def test_uvicorn_on_all_interfaces_serves_no_one_beyond_loopback_without_keys(
    graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    """`uvicorn --factory api.app:create_app --host 0.0.0.0` with KG_API__HOST unset used to
    serve the network without keys, because auth read the setting, not the socket."""
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect through")
    port = free_port()
    env = cli_env(settings, PYTHONPATH=str(REPO))
    log = tmp_path / "api.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "api.app:create_app",
             "--host", "0.0.0.0", "--port", str(port)],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        wait_until_served(f"http://127.0.0.1:{port}/health", proc)
        remote = f"http://{address}:{port}"
        for _ in range(3):
            resp = httpx.get(remote + "/templates", timeout=30)
            assert resp.status_code == 403, resp.text
            assert "KG_API__API_KEYS" in resp.json()["detail"]
        search = httpx.post(remote + "/search/local", json={"query": "PaymentService"}, timeout=30)
        assert search.status_code == 403
        assert httpx.get(remote + "/health", timeout=30).status_code == 200  # open route
        local = f"http://127.0.0.1:{port}"
        assert httpx.get(local + "/templates", timeout=30).status_code == 200
        rebinding = httpx.get(local + "/templates", headers={"Host": "evil.example"}, timeout=30)
        assert rebinding.status_code == 421
        csrf = httpx.post(
            local + "/search/local",
            content=b'{"query": "PaymentService"}',
            headers={"content-type": "text/plain"},
            timeout=30,
        )
        assert csrf.status_code == 415
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = log.read_text()
    assert text.count("refusing requests") == 1, text  # said once, not per request


# -- slow clients ----------------------------------------------------------------------------


def _trickle(sock: socket.socket, data: bytes, every_s: float, until: float) -> None:
    for byte in data:
        if time.monotonic() > until:
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return
        time.sleep(every_s)


def _closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closed the connection within ``seconds``, and what it sent."""
    sock.settimeout(0.2)
    received = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return True, received
        if not chunk:
            return True, received
        received += chunk
    return False, received


def test_a_body_sent_a_byte_at_a_time_gets_408_and_the_connection_closes(
    client: httpx.Client,
) -> None:
    port = int(str(client.base_url).rsplit(":", 1)[1].strip("/"))
    body = b'{"query": "PaymentService"}' + b" " * 200
    head = (
        b"POST /search/local HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        started = time.monotonic()
        feeder = threading.Thread(
            target=_trickle, args=(sock, body, 0.2, started + 30), daemon=True
        )
        feeder.start()
        closed, received = _closed_within(sock, 10)
    assert closed, "the server kept a trickling body's connection open"
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert time.monotonic() - started < 8
    assert client.get("/health").status_code == 200  # the API serves everyone else


@pytest.fixture
def guarded_server(graph: Driver, settings: Settings) -> Iterator[tuple[int, uvicorn.Server]]:
    """The API under uvicorn with kg serve's bounds: 1 s header deadline, 8 connections."""
    app = create_app(api_settings(settings), service_factory=verified_once_factory)
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, log_level="warning", lifespan="on",
        **uvicorn_options(header_timeout_s=1.0, max_connections=8),
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive(), "the API died during start-up"
        assert time.monotonic() < deadline, "the API did not start"
        time.sleep(0.02)
    yield port, server
    server.should_exit = True
    thread.join(timeout=15)


def test_headers_sent_a_byte_at_a_time_are_cut_off(
    guarded_server: tuple[int, uvicorn.Server],
) -> None:
    port, _ = guarded_server
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as sock:
        started = time.monotonic()
        feeder = threading.Thread(
            target=_trickle, args=(sock, head, 0.1, started + 30), daemon=True
        )
        feeder.start()
        closed, _ = _closed_within(sock, 8)
    assert closed, "the server kept a trickling request head's connection open"
    assert time.monotonic() - started < 5


def test_past_the_connection_cap_slow_clients_make_room_for_whole_requests(
    guarded_server: tuple[int, uvicorn.Server],
) -> None:
    """Eight connections (the cap) sit without a request head: a client that sends a whole
    request still gets its answer, and the connection that waited longest is the one closed."""
    port, _ = guarded_server
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
    try:
        time.sleep(0.3)
        started = time.monotonic()
        resp = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)
        assert resp.status_code == 200
        assert time.monotonic() - started < 0.9  # well before any header deadline
        closed, _ = _closed_within(idle[0], 0.5)
        assert closed, "the longest-waiting connection was not the one closed"
    finally:
        for sock in idle:
            sock.close()


def test_open_files_limit_is_lifted_for_the_connection_cap() -> None:
    import resource

    from api.serving import raise_open_files_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        got = raise_open_files_limit(soft + 16)
        assert got >= min(soft + 16, hard) or hard == soft
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert os.sysconf("SC_OPEN_MAX") > 0
