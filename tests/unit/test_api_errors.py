"""The one exception -> HTTP mapping, and the app's JSON errors, with a stand-in search service.

The stand-in replaces kg's *search service* (not Neo4j) so each error path is hit exactly;
tests/integration/test_api*.py drive the real service against a real Neo4j.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.exceptions import NotFoundException, ValidationException
from litestar.testing import TestClient
from neo4j.exceptions import AuthError, ClientError, ServiceUnavailable

from api.app import create_app
from api.errors import classify
from api.redact import scrub
from kg.errors import (
    ConfigError,
    NotFoundError,
    QueryRejected,
    QueryTimeout,
    StoreError,
    StoreUnavailable,
)
from kg.search.models import (
    EntityDetail,
    Neighborhood,
    SearchRequest,
    SearchResponse,
    TemplateInfo,
    TemplateResult,
)
from kg.settings import Settings

PASSWORD = "unit-neo4j-password-7f3a"


def _timeout_error() -> ClientError:
    err = ClientError("The transaction has been terminated")
    err._neo4j_code = "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration"  # type: ignore[attr-defined]
    return err


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (QueryRejected("bad", [{"field": "depth", "reason": "no"}]), 422, "invalid_parameters"),
        (NotFoundError("no such entity"), 404, "not_found"),
        (QueryTimeout("slow"), 504, "timeout"),
        (StoreUnavailable("down"), 503, "unavailable"),
        (StoreError("refused"), 503, "unavailable"),
        (ServiceUnavailable("down"), 503, "unavailable"),
        (AuthError("nope"), 503, "unavailable"),
        (ValidationException(extra=[{"key": "limit", "message": "no"}]), 422, "invalid_parameters"),
        (NotFoundException(), 404, "not_found"),
        (ConfigError("oops"), 500, "internal_error"),
        (RuntimeError("boom"), 500, "internal_error"),
    ],
)
def test_classify(exc: Exception, status: int, code: str) -> None:
    body, _ = classify(exc)
    assert (body.status_code, body.error) == (status, code)


def test_classify_names_fields() -> None:
    body, _ = classify(QueryRejected("bad", [{"field": "depth", "reason": "too deep"}]))
    assert [e.model_dump() for e in body.errors] == [{"field": "depth", "reason": "too deep"}]
    body, _ = classify(ValidationException(extra=[{"key": "limit", "message": "too big"}]))
    assert body.errors[0].field == "limit"
    assert "limit" in body.detail


def test_server_side_timeout_maps_to_504() -> None:
    body, _ = classify(_timeout_error())
    assert body.status_code == 504


def test_scrub_removes_secrets_and_uri_userinfo() -> None:
    text = f"bolt://neo4j:{PASSWORD}@db:7687 failed; password={PASSWORD}"
    cleaned = scrub(text, [PASSWORD])
    assert PASSWORD not in cleaned
    assert "neo4j:" not in cleaned


class StandIn:
    """A search service whose answers are chosen per entity id."""

    async def startup(self) -> None:
        return None

    async def local_search(self, req: SearchRequest) -> SearchResponse:
        return SearchResponse(entities=[], relations=[], chunks=[], template="t", took_ms=0.1)

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult:
        if name != "known":
            raise NotFoundError(f"unknown template {name!r}")
        raise QueryRejected("bad", [{"field": "depth", "reason": "must be 1..3"}])

    async def get_entity(self, entity_id: str) -> EntityDetail:
        failures: dict[str, Exception] = {
            "boom": RuntimeError(f"leak {PASSWORD}"),
            "slow": QueryTimeout("slow"),
            "down": ServiceUnavailable(f"bolt://neo4j:{PASSWORD}@db"),
            "timeout": _timeout_error(),
        }
        if entity_id in failures:
            raise failures[entity_id]
        raise NotFoundError(f"no entity {entity_id!r}")

    async def neighborhood(self, entity_id: str, depth: int) -> Neighborhood:
        entity = EntityDetail(id=entity_id, name="n", type="t", degree=depth, mentions=0)
        return Neighborhood(entity=entity, entities=[], relations=[], truncated=False)

    def templates(self) -> list[TemplateInfo]:
        return [TemplateInfo(name="known", description="d", parameters={}, row_cap=1)]

    async def health(self) -> bool:
        return True


@pytest.fixture
def client() -> Iterator[TestClient[Any]]:
    settings = Settings(
        neo4j={"uri": "bolt://127.0.0.1:9", "password": PASSWORD},
        api={"require_auth": False, "max_body_bytes": 4096},
    )
    app = create_app(settings, service_factory=lambda driver, s: StandIn())
    with TestClient(app) as c:
        yield c


def _assert_error(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = resp.json()
    assert body["status_code"] == status
    assert body["error"] == code
    assert "Traceback" not in resp.text
    return body


def test_error_paths_are_json(client: TestClient[Any], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    _assert_error(client.post("/templates/unknown", json={}), 404, "not_found")
    body = _assert_error(client.post("/templates/known", json={}), 422, "invalid_parameters")
    assert body["errors"] == [{"field": "depth", "reason": "must be 1..3"}]
    _assert_error(client.get("/entities/slow"), 504, "timeout")
    _assert_error(client.get("/entities/timeout"), 504, "timeout")
    _assert_error(client.get("/entities/down"), 503, "unavailable")
    boom = _assert_error(client.get("/entities/boom"), 500, "internal_error")
    assert "leak" not in boom["detail"]
    _assert_error(client.get("/entities/x/neighborhood?depth=0"), 422, "invalid_parameters")
    _assert_error(client.get("/no/such/route"), 404, "not_found")
    _assert_error(client.delete("/health"), 405, "method_not_allowed")
    json_type = {"content-type": "application/json"}
    _assert_error(
        client.post("/search/local", content=b"{nope", headers=json_type), 400, "bad_request"
    )
    big = _assert_error(
        client.post("/search/local", content=b"x" * 5000, headers=json_type),
        413,
        "payload_too_large",
    )
    assert "4096" in big["detail"]
    deep = client.post("/search/local", json={"query": "q", "depth": 4})
    body = _assert_error(deep, 422, "invalid_parameters")
    assert body["errors"][0]["field"] == "depth"
    # the 500's detail was logged, scrubbed; the password never reached the log
    assert "unhandled error on GET /entities/boom" in caplog.text
    assert PASSWORD not in caplog.text


def test_a_neo4j_failure_makes_the_backend_probe_until_it_answers(
    client: TestClient[Any],
) -> None:
    backend = client.app.state.backend
    assert backend.ready
    assert not backend.suspect
    assert client.get("/entities/down").status_code == 503
    assert backend.suspect
    assert client.get("/entities/nobody").status_code == 404  # the probe passed
    assert not backend.suspect


def test_config_error_when_auth_required_without_keys() -> None:
    with pytest.raises(ConfigError):
        create_app(Settings(api={"host": "0.0.0.0"}), service_factory=lambda d, s: StandIn())


def test_busy_is_a_503_that_says_so_and_asks_for_a_quick_retry() -> None:
    from kg.errors import Overloaded

    body, headers = classify(Overloaded("kg is busy: 8 queries are running"))
    assert body.status_code == 503
    assert "busy" in body.detail
    assert headers == {"Retry-After": "1"}


def test_server_memory_limit_is_a_422_naming_what_to_lower() -> None:
    from neo4j.exceptions import TransientError

    from kg.errors import translate

    err = TransientError("The allocation of an extra 2 MiB would use more than the limit")
    err._neo4j_code = "Neo.TransientError.General.MemoryPoolOutOfMemoryError"  # type: ignore[attr-defined]
    kg_error = translate(err, "template seed_expansion")
    body, _ = classify(kg_error)
    assert body.status_code == 422
    assert body.errors[0].field == "depth"
