"""Hostile input over real HTTP: Cypher in parameters, NUL, 1 MB strings, fuzzed bodies.

Every answer must be a clean 4xx (or a 200 that treated the input as data), within its time
bound, and the graph must be exactly as it was: no node or relationship added or removed.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from neo4j import Driver

from api.app import create_app
from kg.search.models import SEARCH_MODES
from kg.settings import Settings
from tests.apidata import graph_counts, graph_fingerprint, wipe, write_graph
from tests.apiserver import LiveServer, api_settings, verified_once_factory

QUERY_TIMEOUT_S = 2.0
#: A request runs a handful of guarded queries, each bounded by QUERY_TIMEOUT_S.
TIME_BOUND_S = QUERY_TIMEOUT_S * 4 + 2

INJECTIONS = [
    "x'}) DETACH DELETE n //",
    'x"}) DETACH DELETE n //',
    "ent-payments'}) MATCH (n) DETACH DELETE n RETURN 1 //",
    "` DETACH DELETE n //",
    "}) CREATE (:Intruder {at: timestamp()}) //",
    "$entity_id",
    "'; CALL db.clearQueryCaches(); //",
    "1 OR 1=1",
    "*:* OR name:*",  # Lucene, for the fulltext index
    "ent-payments\n}) DETACH DELETE n",
]
NUL = "ent\x00payments"
ONE_MB = "x" * 1_000_000
#: 1 document + 2 chunks + 4 entities + 1 Predicate + 1 KgMeta; 2 PART_OF + 5 MENTIONS
#: + 3 DEPENDS_ON.
GRAPH_SIZE = (9, 10)


@pytest.fixture(scope="module")
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


@pytest.fixture(scope="module")
def hostile_settings(settings: Settings) -> Settings:
    tuned = api_settings(settings, require_auth=False)
    search = tuned.search.model_copy(update={"query_timeout_s": QUERY_TIMEOUT_S})
    return tuned.model_copy(update={"search": search})


@pytest.fixture(scope="module")
def client(graph: Driver, hostile_settings: Settings) -> Iterator[httpx.Client]:
    with (
        LiveServer(create_app(hostile_settings, service_factory=verified_once_factory)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        yield http


@pytest.fixture(scope="module")
def baseline(graph: Driver, settings: Settings) -> list[Any]:
    return graph_fingerprint(graph, settings)


@pytest.fixture
def unchanged(graph: Driver, settings: Settings, baseline: list[Any]) -> Iterator[None]:
    """Asserts after the test that the graph is exactly the one written."""
    yield
    assert graph_fingerprint(graph, settings) == baseline
    assert graph_counts(graph, settings) == GRAPH_SIZE


def timed(send: Any) -> httpx.Response:
    start = time.monotonic()
    resp: httpx.Response = send()
    elapsed = time.monotonic() - start
    assert elapsed < TIME_BOUND_S, f"{elapsed:.1f}s for {resp.request.url}"
    assert resp.status_code < 500, resp.text
    assert resp.headers["content-type"].startswith("application/json"), resp.text[:200]
    assert "Traceback" not in resp.text
    return resp


def test_graph_size_is_known(graph: Driver, settings: Settings) -> None:
    assert graph_counts(graph, settings) == GRAPH_SIZE


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("payload", INJECTIONS)
def test_cypher_in_the_search_query_is_just_text(client: httpx.Client, payload: str) -> None:
    resp = timed(lambda: client.post("/search/local", json={"query": payload}))
    assert resp.status_code == 200, resp.text


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("payload", INJECTIONS)
def test_cypher_in_other_search_fields_is_rejected(client: httpx.Client, payload: str) -> None:
    for body in (
        {"query": "x", "relation_types": [payload]},
        {"query": "x", "as_of": payload},
        {"query": "x", "mode": payload},
        {"query": "x", "depth": payload},
    ):
        resp = timed(lambda body=body: client.post("/search/local", json=body))
        assert resp.status_code == 422, resp.text


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("payload", INJECTIONS)
def test_cypher_in_entity_paths_and_queries(client: httpx.Client, payload: str) -> None:
    path = quote(payload, safe="")
    assert timed(lambda: client.get(f"/entities/{path}")).status_code in (404, 422)
    assert timed(lambda: client.get(f"/entities/{path}/neighborhood")).status_code in (404, 422)
    resp = timed(
        lambda: client.get("/entities/ent-payments/neighborhood", params={"depth": payload})
    )
    assert resp.status_code == 422


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("payload", INJECTIONS)
def test_cypher_in_template_names_and_parameters(client: httpx.Client, payload: str) -> None:
    assert timed(
        lambda: client.post(f"/templates/{quote(payload, safe='')}", json={})
    ).status_code in (
        404,
        422,
    )
    for info in client.get("/templates").json():
        props = info["parameters"].get("properties", {})
        for field in props:
            body = {name: "ent-payments" for name in info["parameters"].get("required", [])}
            body[field] = payload
            resp = timed(
                lambda info=info, body=body: client.post(f"/templates/{info['name']}", json=body)
            )
            assert resp.status_code in (200, 404, 422), resp.text


@pytest.mark.usefixtures("unchanged")
def test_nul_characters_get_a_clean_4xx(client: httpx.Client) -> None:
    resp = timed(lambda: client.post("/search/local", json={"query": NUL}))
    assert resp.status_code == 422
    assert resp.json()["errors"][0]["field"] == "query"
    assert timed(lambda: client.get("/entities/ent%00payments")).status_code in (404, 422)
    resp = timed(lambda: client.post("/search/local", json={"query": "x", "relation_types": [NUL]}))
    assert resp.status_code == 422
    name = next(
        i["name"]
        for i in client.get("/templates").json()
        if i["parameters"].get("required") == ["entity_id"]
    )
    resp = timed(lambda: client.post(f"/templates/{name}", json={"entity_id": NUL}))
    assert resp.status_code == 422
    assert "entity_id" in {e["field"] for e in resp.json()["errors"]}


@pytest.mark.usefixtures("unchanged")
def test_one_megabyte_strings_get_a_clean_4xx(client: httpx.Client) -> None:
    resp = timed(lambda: client.post("/search/local", json={"query": ONE_MB}))
    assert resp.status_code == 422
    assert resp.json()["errors"][0]["field"] == "query"
    resp = timed(
        lambda: client.post("/search/local", json={"query": "x", "relation_types": [ONE_MB]})
    )
    assert resp.status_code == 422
    for info in client.get("/templates").json():
        body = {name: ONE_MB for name in info["parameters"].get("required", [])} or {"x": ONE_MB}
        resp = timed(
            lambda info=info, body=body: client.post(f"/templates/{info['name']}", json=body)
        )
        assert resp.status_code == 422, info["name"]
    # a path of 1 MB: refused by the server before it reaches the handler
    status_line = raw_request(client, b"GET /entities/" + b"x" * 1_000_000 + b" HTTP/1.1")
    assert status_line.split()[1] in (b"400", b"414", b"431"), status_line
    assert timed(lambda: client.get("/entities/" + "x" * 300)).status_code == 422


@pytest.mark.usefixtures("unchanged")
def test_deeply_nested_json_gets_a_clean_4xx(client: httpx.Client) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    for url, content in (
        ("/search/local", '{"query": ' + deep + "}"),
        ("/templates/entity_by_id", '{"entity_id": ' + deep + "}"),
    ):
        resp = timed(
            lambda url=url, content=content: client.post(
                url, content=content, headers={"content-type": "application/json"}
            )
        )
        assert 400 <= resp.status_code < 500


def raw_request(client: httpx.Client, request_line: bytes) -> bytes:
    """Send a request httpx refuses to build (a 1 MB URL); return the status line."""
    url = client.base_url
    with socket.create_connection((url.host, url.port or 80), timeout=30) as sock:
        sock.sendall(request_line + b"\r\nHost: " + url.host.encode() + b"\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0]


# -- property-based -------------------------------------------------------------------------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from([*INJECTIONS, NUL, "ent-payments", "DEPENDS_ON", "2023-01-01"])
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)

search_bodies = st.fixed_dictionaries(
    {"query": st.text(max_size=2100) | st.sampled_from([*INJECTIONS, "PaymentService", NUL])},
    optional={
        "mode": st.sampled_from(SEARCH_MODES) | json_leaf,
        "depth": st.integers(-3, 6) | json_leaf,
        "limit": st.integers(-3, 200) | json_leaf,
        "as_of": st.dates().map(str) | st.datetimes().map(lambda d: d.isoformat()) | json_leaf,
        "relation_types": st.lists(
            st.sampled_from(["DEPENDS_ON", "MENTIONS", "CALLS"]) | st.text(max_size=70), max_size=6
        )
        | json_value,
        "extra": json_value,
    },
)

FUZZ = hsettings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)


@FUZZ
@given(body=search_bodies)
def test_fuzzed_search_bodies(
    client: httpx.Client,
    graph: Driver,
    settings: Settings,
    baseline: list[Any],
    body: dict[str, Any],
) -> None:
    resp = timed(lambda: client.post("/search/local", json=body))
    assert resp.status_code in (200, 422), resp.text
    assert graph_fingerprint(graph, settings) == baseline


@pytest.fixture(scope="module")
def template_fields(client: httpx.Client) -> tuple[list[str], list[str]]:
    infos = client.get("/templates").json()
    names = [i["name"] for i in infos]
    fields = sorted({f for i in infos for f in i["parameters"].get("properties", {})})
    return names, fields


@FUZZ
@given(data=st.data())
def test_fuzzed_template_parameters(
    client: httpx.Client,
    graph: Driver,
    settings: Settings,
    baseline: list[Any],
    template_fields: tuple[list[str], list[str]],
    data: st.DataObject,
) -> None:
    names, fields = template_fields
    name = data.draw(st.sampled_from(names) | st.text(min_size=1, max_size=20), label="name")
    params = data.draw(
        st.dictionaries(st.sampled_from(fields) | st.text(max_size=10), json_value, max_size=6),
        label="params",
    )
    resp = timed(lambda: client.post(f"/templates/{quote(name, safe='')}", json=params))
    assert resp.status_code in (200, 404, 422), resp.text
    assert graph_fingerprint(graph, settings) == baseline
