"""Bearer-key auth over real HTTP: forced on, forced off, and automatic by bind address."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from neo4j import Driver
from pydantic import SecretStr

from api.app import create_app
from kg.errors import ConfigError
from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import LiveServer, api_settings, verified_once_factory

KEYS = ["key-alpha-0d8c", "key-beta-77e1"]
PROTECTED = [
    ("POST", "/search/local", {"query": "PaymentService"}),
    ("GET", "/entities/ent-payments", None),
    ("GET", "/entities/ent-payments/neighborhood", None),
    ("GET", "/templates", None),
    ("POST", "/templates/entity_by_id", {"entity_id": "ent-payments"}),
]
OPEN = ["/health", "/schema", "/schema/openapi.json", "/schema/swagger"]


@pytest.fixture(scope="module", autouse=True)
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


@pytest.fixture(scope="module")
def secured(settings: Settings) -> Iterator[httpx.Client]:
    # host 0.0.0.0 in settings turns auth on automatically; the test server still binds loopback
    auto = api_settings(settings, host="0.0.0.0", api_keys=",".join(KEYS))
    with (
        LiveServer(create_app(auto, service_factory=verified_once_factory)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        yield http


def _send(
    http: httpx.Client, method: str, path: str, body: object, **headers: str
) -> httpx.Response:
    return http.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED)
def test_protected_routes_need_a_valid_key(
    secured: httpx.Client, method: str, path: str, body: object
) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer wrong-key"},
        {"Authorization": f"Basic {KEYS[0]}"},
        {"Authorization": f"Bearer {KEYS[0]}x"},
        {"Authorization": "Bearer"},
    ):
        resp = _send(secured, method, path, body, **headers)
        assert resp.status_code == 401, (headers, resp.text)
        assert resp.headers["www-authenticate"].startswith("Bearer")
        assert resp.json()["error"] == "unauthorized"
        assert KEYS[0] not in resp.text
    for key in KEYS:
        resp = _send(secured, method, path, body, Authorization=f"Bearer {key}")
        assert resp.status_code == 200, resp.text


def test_auth_comes_before_validation(secured: httpx.Client) -> None:
    """An unauthenticated caller learns nothing about parameters."""
    resp = secured.post("/search/local", json={"query": "x", "depth": 99})
    assert resp.status_code == 401


@pytest.mark.parametrize("path", OPEN)
def test_health_and_docs_stay_open(secured: httpx.Client, path: str) -> None:
    resp = secured.get(path)
    assert resp.status_code in (200, 503), resp.text  # health: 503 only if Neo4j is down
    assert resp.status_code == 200 or path == "/health"


def test_auth_forced_off_admits_anyone(settings: Settings) -> None:
    off = api_settings(settings, host="0.0.0.0", require_auth=False)
    with (
        LiveServer(create_app(off, service_factory=verified_once_factory)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert http.get("/templates").status_code == 200


def test_auth_is_off_on_loopback_by_default_and_forced_on(settings: Settings) -> None:
    loopback = api_settings(settings, host="127.0.0.1", require_auth=None)
    forced = api_settings(
        settings, host="127.0.0.1", require_auth=True, api_keys=[SecretStr(KEYS[1])]
    )
    with (
        LiveServer(create_app(loopback, service_factory=verified_once_factory)) as open_server,
        LiveServer(create_app(forced, service_factory=verified_once_factory)) as closed_server,
        httpx.Client(timeout=60) as http,
    ):
        assert http.get(open_server.url + "/templates").status_code == 200
        assert http.get(closed_server.url + "/templates").status_code == 401
        ok = http.get(
            closed_server.url + "/templates", headers={"Authorization": f"Bearer {KEYS[1]}"}
        )
        assert ok.status_code == 200


def test_refuses_to_start_without_keys_when_auth_is_required(settings: Settings) -> None:
    with pytest.raises(ConfigError, match="no API keys"):
        create_app(api_settings(settings, host="0.0.0.0", api_keys=[]))
    with pytest.raises(ConfigError, match="no API keys"):
        create_app(api_settings(settings, require_auth=True, api_keys=[]))
