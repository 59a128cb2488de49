"""Every endpoint over real HTTP (uvicorn on loopback) against the real Neo4j fixture."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg.settings import Settings
from tests.apidata import graph_counts, wipe, write_graph
from tests.apiserver import LiveServer, api_settings, verified_once_factory


@pytest.fixture(scope="module")
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    """The small API graph, written once for the module and wiped after it."""
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


@pytest.fixture(scope="module")
def client(graph: Driver, settings: Settings) -> Iterator[httpx.Client]:
    app = create_app(
        api_settings(settings, require_auth=False), service_factory=verified_once_factory
    )
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        yield http


def _error(resp: httpx.Response, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = resp.json()
    assert set(body) == {"status_code", "error", "detail", "errors"}
    assert body["status_code"] == status
    assert "Traceback" not in resp.text
    return body


def _template_named(client: httpx.Client, *, requires: set[str]) -> str:
    """A template whose required parameters are exactly ``requires``."""
    for info in client.get("/templates").json():
        if set(info["parameters"].get("required", [])) == requires:
            return str(info["name"])
    raise AssertionError(f"no template requires exactly {requires}")


def test_health_reports_neo4j_up(client: httpx.Client) -> None:
    resp = client.get("/health")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok", "neo4j": True}


def test_templates_are_listed_with_parameter_schemas(client: httpx.Client) -> None:
    resp = client.get("/templates")
    assert resp.status_code == 200
    templates = resp.json()
    assert templates
    for info in templates:
        assert info["name"]
        assert info["description"]
        assert isinstance(info["parameters"], dict)
        assert info["row_cap"] >= 1


def test_local_search_returns_entities_relations_and_provenance(client: httpx.Client) -> None:
    resp = client.post("/search/local", json={"query": "PaymentService", "depth": 2})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) == {
        "entities", "relations", "chunks", "template", "took_ms", "translations",
        "translation_error", "rerank",
    }  # fmt: skip
    assert body["translations"] == []  # search.translate is off by default
    assert body["rerank"] is None  # search.rerank is off by default
    ids = {e["id"] for e in body["entities"]}
    assert "ent-payments" in ids
    assert any(r["type"] == "DEPENDS_ON" for r in body["relations"])
    assert {c["id"] for c in body["chunks"]} & {"chunk-1", "chunk-2"}
    assert body["template"]
    assert body["took_ms"] >= 0


def test_local_search_respects_as_of(client: httpx.Client) -> None:
    def kafka_edge(as_of: str) -> bool:
        resp = client.post(
            "/search/local", json={"query": "AuthService", "depth": 1, "as_of": as_of}
        )
        assert resp.status_code == 200, resp.text
        return any(
            r["source"] == "ent-auth" and r["target"] == "ent-kafka"
            for r in resp.json()["relations"]
        )

    assert kafka_edge("2021-06-01")
    assert not kafka_edge("2024-06-01")


def test_local_search_limit_bounds_entities(client: httpx.Client) -> None:
    resp = client.post("/search/local", json={"query": "PaymentService", "limit": 1})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["entities"]) <= 1


def test_get_entity(client: httpx.Client) -> None:
    resp = client.get("/entities/ent-payments")
    assert resp.status_code == 200, resp.text
    assert "PaymentService" in resp.text


def test_unknown_entity_is_404(client: httpx.Client) -> None:
    body = _error(client.get("/entities/no-such-entity"), 404)
    assert body["error"] == "not_found"


def test_neighborhood_depth_bounds_the_expansion(client: httpx.Client) -> None:
    one = client.get("/entities/ent-payments/neighborhood", params={"depth": 1})
    assert one.status_code == 200, one.text
    assert "ent-postgres" in one.text
    assert "ent-kafka" not in one.text
    two = client.get("/entities/ent-payments/neighborhood", params={"depth": 2})
    assert two.status_code == 200, two.text
    assert "ent-kafka" in two.text


def test_neighborhood_of_unknown_entity_is_404(client: httpx.Client) -> None:
    _error(client.get("/entities/no-such-entity/neighborhood"), 404)


@pytest.mark.parametrize("depth", ["0", "4", "-1", "two", "1.5"])
def test_neighborhood_bad_depth_is_422_naming_depth(client: httpx.Client, depth: str) -> None:
    body = _error(client.get("/entities/ent-payments/neighborhood", params={"depth": depth}), 422)
    assert body["error"] == "invalid_parameters"
    assert [e["field"] for e in body["errors"]] == ["depth"]


def test_run_template(client: httpx.Client) -> None:
    name = _template_named(client, requires={"entity_id"})
    resp = client.post(f"/templates/{name}", json={"entity_id": "ent-payments"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["template"] == name
    assert isinstance(body["rows"], list)
    assert isinstance(body["truncated"], bool)


def test_run_template_rejects_bad_parameters_naming_them(client: httpx.Client) -> None:
    name = _template_named(client, requires={"entity_id"})
    body = _error(
        client.post(f"/templates/{name}", json={"entity_id": "ent-payments", "bogus": 1}), 422
    )
    assert "bogus" in {e["field"] for e in body["errors"]}
    body = _error(client.post(f"/templates/{name}", json={}), 422)
    assert "entity_id" in {e["field"] for e in body["errors"]}
    assert all(e["reason"] for e in body["errors"])


def test_run_template_rejects_out_of_range_depth(client: httpx.Client) -> None:
    for info in client.get("/templates").json():
        if "depth" in info["parameters"].get("properties", {}) and info["parameters"].get(
            "required"
        ) == ["entity_id"]:
            body = _error(
                client.post(
                    f"/templates/{info['name']}", json={"entity_id": "ent-payments", "depth": 9}
                ),
                422,
            )
            assert "depth" in {e["field"] for e in body["errors"]}
            return
    pytest.fail("no single-entity template with a depth parameter")


def test_unknown_template_is_404(client: httpx.Client) -> None:
    body = _error(client.post("/templates/drop_everything", json={}), 404)
    assert body["error"] == "not_found"


def test_template_body_must_be_an_object(client: httpx.Client) -> None:
    name = _template_named(client, requires={"entity_id"})
    _error(client.post(f"/templates/{name}", json=["ent-payments"]), 422)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "   "},
        {"query": "x", "depth": 0},
        {"query": "x", "depth": 4},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 10_000},
        {"query": "x", "mode": "everything"},
        {"query": "x", "as_of": "yesterday"},
        {"query": "x", "relation_types": ["DEPENDS ON"]},
        {"query": "x", "extra": True},
        {"query": 7},
    ],
)
def test_bad_search_bodies_are_422_naming_the_field(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    err = _error(client.post("/search/local", json=body), 422)
    assert err["errors"]
    expected = (set(body) - {"query"}) or {"query"}
    assert expected & {e["field"].split(".")[0] for e in err["errors"]}, err


def test_malformed_json_is_400(client: httpx.Client) -> None:
    resp = client.post(
        "/search/local", content=b'{"query": ', headers={"content-type": "application/json"}
    )
    assert _error(resp, 400)["error"] == "bad_request"


def test_body_over_the_limit_is_413(client: httpx.Client, settings: Settings) -> None:
    big = b'{"query": "' + b"x" * (settings.api.max_body_bytes + 10) + b'"}'
    resp = client.post("/search/local", content=big, headers={"content-type": "application/json"})
    body = _error(resp, 413)
    assert str(settings.api.max_body_bytes) in body["detail"]


def test_unknown_route_is_404_and_wrong_method_is_405(client: httpx.Client) -> None:
    assert _error(client.get("/nope"), 404)["error"] == "not_found"
    assert _error(client.get("/search/local"), 405)["error"] == "method_not_allowed"
    assert _error(client.delete("/entities/ent-payments"), 405)["error"] == "method_not_allowed"


def test_openapi_is_served(client: httpx.Client) -> None:
    spec = client.get("/schema/openapi.json")
    assert spec.status_code == 200
    assert "/search/local" in spec.json()["paths"]
    page = client.get("/schema")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert client.get("/schema/swagger").status_code == 200


def test_reads_never_change_the_graph(
    client: httpx.Client, graph: Driver, settings: Settings
) -> None:
    before = graph_counts(graph, settings)
    client.post("/search/local", json={"query": "PaymentService", "depth": 3})
    client.get("/entities/ent-payments/neighborhood", params={"depth": 3})
    assert graph_counts(graph, settings) == before
