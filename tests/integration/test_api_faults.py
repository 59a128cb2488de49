"""Faults over real HTTP: Neo4j down at start, Neo4j back later, refused credentials, a query
that runs past its time bound. The API must answer clean JSON (503/504), recover without a
restart, and never show a Neo4j credential in a response or a log line."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from types import MappingProxyType
from urllib.parse import urlsplit

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg.cypher.params import NoParams
from kg.cypher.templates import REGISTRY, Template
from kg.resolve import make_embedder
from kg.search.service import SearchService
from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import LiveServer, TcpForwarder, api_settings, free_port

SLOW_CYPHER = "UNWIND range(1, 4000000000) AS x WITH x WHERE x < 0 RETURN count(x) AS n"


def _neo4j_at(settings: Settings, uri: str, **neo4j: object) -> Settings:
    moved = settings.neo4j.model_validate(
        {**settings.neo4j.model_dump(), "uri": uri, "connection_timeout_s": 2.0, **neo4j}
    )
    return api_settings(settings, require_auth=False).model_copy(update={"neo4j": moved})


def _unavailable(resp: httpx.Response) -> None:
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["error"] == "unavailable"
    assert "Traceback" not in resp.text


@pytest.fixture
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


def test_neo4j_down_at_start_serves_503s(settings: Settings) -> None:
    down = _neo4j_at(settings, f"bolt://127.0.0.1:{free_port()}")
    with LiveServer(create_app(down)) as server, httpx.Client(base_url=server.url) as http:
        health = http.get("/health")
        assert health.status_code == 503
        assert health.json() == {"status": "unavailable", "neo4j": False}
        _unavailable(http.post("/search/local", json={"query": "PaymentService"}))
        _unavailable(http.get("/entities/ent-payments"))
        _unavailable(http.get("/templates"))
        _unavailable(http.post("/templates/entity_by_id", json={"entity_id": "x"}))
        # no driver retries while Neo4j is down: the 503 comes at once
        started = time.monotonic()
        _unavailable(http.get("/entities/ent-payments/neighborhood"))
        assert time.monotonic() - started < 2


def test_recovers_when_neo4j_comes_back_without_a_restart(
    graph: Driver, settings: Settings
) -> None:
    target = urlsplit(settings.neo4j.uri)
    proxy = TcpForwarder(target.hostname or "127.0.0.1", target.port or 7687)
    flaky = _neo4j_at(settings, f"bolt://127.0.0.1:{proxy.port}")
    try:
        with (
            LiveServer(create_app(flaky)) as server,
            httpx.Client(base_url=server.url, timeout=60) as http,
        ):
            assert http.get("/health").status_code == 503
            _unavailable(http.post("/search/local", json={"query": "PaymentService"}))

            proxy.open()  # Neo4j "comes back"
            deadline = time.monotonic() + 30
            while http.get("/health").status_code != 200:
                assert time.monotonic() < deadline, "API did not notice Neo4j coming back"
                time.sleep(0.2)
            resp = http.post("/search/local", json={"query": "PaymentService"})
            assert resp.status_code == 200, resp.text
            assert "ent-payments" in resp.text

            proxy.close()  # and goes away again mid-life
            _unavailable(http.get("/entities/ent-payments"))
            assert http.get("/health").status_code == 503

            proxy.open()
            deadline = time.monotonic() + 30
            while (resp := http.get("/entities/ent-payments")).status_code != 200:
                assert time.monotonic() < deadline, resp.text
                time.sleep(0.2)
    finally:
        proxy.close()


def test_refused_credentials_never_leak(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # A user that does not exist: failing auth for "neo4j" itself would lock that account.
    secret = "Wrong-Secret-5c1d9e"
    refused = _neo4j_at(settings, settings.neo4j.uri, username="kg-intruder", password=secret)
    real_password = settings.neo4j.password.get_secret_value()
    caplog.set_level(logging.DEBUG)
    bodies = []
    with LiveServer(create_app(refused)) as server, httpx.Client(base_url=server.url) as http:
        for send in (
            lambda: http.get("/health"),
            lambda: http.post("/search/local", json={"query": "PaymentService"}),
            lambda: http.get("/entities/ent-payments"),
            lambda: http.get("/entities/ent-payments/neighborhood"),
            lambda: http.get("/templates"),
        ):
            resp = send()
            assert resp.status_code == 503, resp.text
            bodies.append(resp.text + str(resp.headers))
    seen = "\n".join(bodies) + caplog.text
    assert caplog.records, "expected the failure to be logged"
    assert secret not in seen
    assert real_password not in seen


def test_query_past_its_time_bound_is_504(graph: Driver, settings: Settings) -> None:
    timed = api_settings(settings, require_auth=False)
    timed = timed.model_copy(
        update={"search": timed.search.model_copy(update={"query_timeout_s": 0.5})}
    )
    slow = Template(
        name="slow_count",
        description="Deliberately slow (tests only).",
        params=NoParams,
        texts=MappingProxyType({"default": SLOW_CYPHER}),
        row_cap=1,
    )
    registry = REGISTRY.with_templates(slow)

    def factory(driver, s):  # type: ignore[no-untyped-def]
        return SearchService(driver, s, make_embedder(s.resolve), registry=registry)

    app = create_app(timed, service_factory=factory)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        started = time.monotonic()
        resp = http.post("/templates/slow_count", json={})
        elapsed = time.monotonic() - started
        assert resp.status_code == 504, resp.text
        body = resp.json()
        assert body["error"] == "timeout"
        assert "time bound" in body["detail"]
        assert elapsed < 10
        # the API is fine afterwards
        assert http.get("/entities/ent-payments").status_code == 200
