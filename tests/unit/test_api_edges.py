"""The API's edges without Neo4j: who is served (by the socket, not a setting), Host and
Content-Type checks, busy answers, the /health cache, and log hygiene.

A stand-in replaces kg's *search service* (not Neo4j) so that each rule is hit exactly; the
same rules run over real HTTP against a real Neo4j in tests/integration/test_api_edges.py.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient
from pydantic import SecretStr

from api.app import create_app
from api.auth import AccessPolicy, arrived_on_loopback, host_name, is_json_media_type
from api.logs import RepeatFilter
from kg.errors import ClientBusy, Overloaded, QueryRejected
from kg.redact import RedactFilter, env_secrets, scrub, settings_secrets
from kg.search.models import (
    EntityDetail,
    Neighborhood,
    SearchRequest,
    SearchResponse,
    TemplateInfo,
    TemplateResult,
)
from kg.settings import Settings

KEY = "edge-key-5b1e"
PASSWORD = "edge-neo4j-password-91c4"


class StandIn:
    """A search service that counts health checks and fails on demand."""

    def __init__(self) -> None:
        self.health_calls = 0
        self.fail_with: Exception | None = None

    async def startup(self) -> None:
        return None

    async def local_search(self, req: SearchRequest) -> SearchResponse:
        if self.fail_with is not None:
            raise self.fail_with
        return SearchResponse(entities=[], relations=[], chunks=[], template="t", took_ms=0.1)

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult:
        return TemplateResult(template=name, rows=[], truncated=False, took_ms=0.1)

    async def get_entity(self, entity_id: str) -> EntityDetail:
        return EntityDetail(id=entity_id, name="n", type="t", degree=0, mentions=0)

    async def neighborhood(self, entity_id: str, depth: int) -> Neighborhood:
        entity = EntityDetail(id=entity_id, name="n", type="t", degree=0, mentions=0)
        return Neighborhood(entity=entity, entities=[], relations=[], truncated=False)

    def templates(self) -> list[TemplateInfo]:
        return [TemplateInfo(name="t", description="d", parameters={}, row_cap=1)]

    async def health(self) -> bool:
        self.health_calls += 1
        return True


def _settings(**api: Any) -> Settings:
    return Settings(
        neo4j={"uri": "bolt://127.0.0.1:9", "password": PASSWORD},
        api={"max_body_bytes": 4096, **api},
    )


@pytest.fixture
def stand_in() -> StandIn:
    return StandIn()


def _client(stand_in: StandIn, base_url: str, **api: Any) -> TestClient[Any]:
    app = create_app(_settings(**api), service_factory=lambda driver, s: stand_in)
    return TestClient(app, base_url=base_url)


@pytest.fixture
def loopback(stand_in: StandIn) -> Iterator[TestClient[Any]]:
    """Default settings (no keys), the request arriving on 127.0.0.1."""
    with _client(stand_in, "http://127.0.0.1:8000") as client:
        yield client


# -- who is served: decided by the connection's local address --------------------------------


@pytest.mark.parametrize(
    ("server", "local"),
    [
        (("127.0.0.1", 8000), True),
        (("127.9.9.9", 8000), True),
        (("::1", 8000), True),
        (("::ffff:127.0.0.1", 8000), True),
        (("/run/kg.sock", None), True),  # a Unix socket: this machine only
        (("0.0.0.0", 8000), False),
        (("192.0.2.2", 8000), False),
        (("::", 8000), False),
        (None, False),
        ((), False),
    ],
)
def test_arrived_on_loopback(server: Any, local: bool) -> None:
    assert arrived_on_loopback(server) is local


@pytest.mark.parametrize(
    ("api", "server", "key_required", "refused"),
    [
        ({}, ("127.0.0.1", 1), False, False),  # loopback, no keys: open (Host/CSRF checked)
        ({}, ("192.0.2.2", 1), True, True),  # KG_API__HOST says loopback; the socket does not
        ({"api_keys": [KEY]}, ("192.0.2.2", 1), True, False),
        ({"api_keys": [KEY]}, ("127.0.0.1", 1), True, False),  # keys set: always required
        ({"host": "0.0.0.0", "api_keys": [KEY]}, ("127.0.0.1", 1), True, False),
        ({"require_auth": False}, ("192.0.2.2", 1), False, False),  # explicitly open
        ({"require_auth": True, "api_keys": [KEY]}, ("127.0.0.1", 1), True, False),
    ],
)
def test_access_decision(
    api: dict[str, Any], server: Any, key_required: bool, refused: bool
) -> None:
    access = AccessPolicy.from_settings(_settings(**api).api).decide(server)
    assert access.key_required is key_required
    assert (access.refusal is not None) is refused


def test_a_non_loopback_connection_without_keys_is_refused_whatever_the_host_setting(
    stand_in: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """`uvicorn --factory api.app:create_app --host 0.0.0.0` with KG_API__HOST unset."""
    caplog.set_level(logging.WARNING, logger="kg.api")
    with _client(stand_in, "http://192.0.2.2:8000") as client:
        for _ in range(3):
            resp = client.get("/templates")
            assert resp.status_code == 403, resp.text
            assert resp.json()["error"] == "forbidden"
            assert "KG_API__API_KEYS" in resp.json()["detail"]
        body = client.post("/search/local", json={"query": "x"})
        assert body.status_code == 403
        assert client.get("/health").status_code == 200  # open routes stay open
    refusals = [r for r in caplog.records if "refusing requests" in r.getMessage()]
    assert len(refusals) == 1  # logged once, not per request


def test_keys_configured_are_required_even_on_loopback(stand_in: StandIn) -> None:
    with _client(stand_in, "http://127.0.0.1:8000", api_keys=KEY) as client:
        assert client.get("/templates").status_code == 401
        ok = client.get("/templates", headers={"Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200


# -- auth off on loopback: DNS rebinding and cross-site POSTs ------------------------------


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("localhost:8000", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]:8000", "::1"),
        ("[::1]", "::1"),
        ("evil.example:80", "evil.example"),
        ("[::1]:x", None),
        ("a:b:c", None),
        ("127.0.0.1:80:80", None),
    ],
)
def test_host_name(host: str, name: str | None) -> None:
    assert host_name(host) == name


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8000", "127.0.0.1.nip.io:8000", "localhost.evil:8000", "[::2]"],
)
def test_rebinding_hosts_are_refused_when_auth_is_off(loopback: TestClient[Any], host: str) -> None:
    for path in ("/templates", "/health", "/no/such/route"):
        resp = loopback.get(path, headers={"Host": host})
        assert resp.status_code == 421, (host, path, resp.text)
        assert resp.json()["error"] == "misdirected_request"


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
def test_loopback_hosts_are_served(loopback: TestClient[Any], host: str) -> None:
    assert loopback.get("/templates", headers={"Host": host}).status_code == 200


def test_allowed_hosts_extend_the_loopback_names(stand_in: StandIn) -> None:
    with _client(stand_in, "http://127.0.0.1:8000", allowed_hosts="kg.internal") as client:
        assert client.get("/templates", headers={"Host": "kg.internal:8000"}).status_code == 200
        assert client.get("/templates", headers={"Host": "other.internal"}).status_code == 421


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        None,
    ],
)
def test_json_endpoints_refuse_other_content_types(
    loopback: TestClient[Any], content_type: str | None
) -> None:
    """A web page can POST these to 127.0.0.1 without a CORS preflight (CSRF)."""
    headers = {"content-type": content_type} if content_type else {}
    for path in ("/search/local", "/templates/t"):
        resp = loopback.post(path, content=b'{"query": "x"}', headers=headers)
        assert resp.status_code == 415, (path, content_type, resp.text)
        assert resp.json()["error"] == "unsupported_media_type"


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8"])
def test_json_bodies_are_served(loopback: TestClient[Any], content_type: str) -> None:
    resp = loopback.post(
        "/search/local", content=b'{"query": "x"}', headers={"content-type": content_type}
    )
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("application/json", True),
        ("application/vnd.kg+json", True),
        ("APPLICATION/JSON;charset=utf-8", True),
        ("text/json", False),
        ("application/jsonx", False),
        ("", False),
        (None, False),
    ],
)
def test_is_json_media_type(value: str | None, ok: bool) -> None:
    assert is_json_media_type(value) is ok


# -- busy: per-client 429, overall 503; neither marks Neo4j suspect --------------------------


def test_busy_answers_and_the_backend_stays_trusted(
    stand_in: StandIn, loopback: TestClient[Any]
) -> None:
    backend = loopback.app.state.backend
    stand_in.fail_with = ClientBusy("too many queries from this client")
    resp = loopback.post("/search/local", json={"query": "x"})
    assert resp.status_code == 429
    assert resp.headers["retry-after"] == "1"
    assert resp.json()["error"] == "too_many_requests"
    stand_in.fail_with = Overloaded("kg is busy")
    resp = loopback.post("/search/local", json={"query": "x"})
    assert resp.status_code == 503
    assert resp.headers["retry-after"] == "1"
    stand_in.fail_with = QueryRejected("bad", [{"field": "as_of", "reason": "out of range"}])
    assert loopback.post("/search/local", json={"query": "x"}).status_code == 422
    assert backend.suspect is False


# -- /health: one check per second, whatever the flood -------------------------------------


def test_health_is_cached_for_a_second(stand_in: StandIn, loopback: TestClient[Any]) -> None:
    before = stand_in.health_calls
    for _ in range(50):
        assert loopback.get("/health").status_code == 200
    assert stand_in.health_calls - before <= 2


# -- log hygiene ---------------------------------------------------------------------------


def _record(msg: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("kg.test", logging.ERROR, __file__, 1, msg, args, exc_info)


def test_repeated_log_lines_are_rate_limited() -> None:
    now = [0.0]
    limiter = RepeatFilter(burst=5, window_s=10, clock=lambda: now[0])
    passed = [
        limiter.filter(_record("socket.accept() out of system resource fd=%d", i))
        for i in range(1000)
    ]
    assert sum(passed) == 5
    now[0] = 11.0
    record = _record("socket.accept() out of system resource fd=%d", 7)
    assert limiter.filter(record)
    assert "995 similar lines dropped" in str(record.msg)
    assert limiter.filter(_record("a different line"))


def test_redaction_covers_message_arguments_and_traceback() -> None:
    redact = RedactFilter([PASSWORD])
    try:
        raise RuntimeError(f"connect bolt://neo4j:{PASSWORD}@db:7687 failed")
    except RuntimeError as exc:
        record = _record("password %s in %s", PASSWORD, "bolt://u:p4ss-word@h", exc=exc)
    assert redact.filter(record)
    text = logging.Formatter().format(record)
    assert PASSWORD not in text
    assert "p4ss-word" not in text
    assert "RuntimeError" in text


def test_redaction_keeps_the_arguments_a_formatter_unpacks() -> None:
    """uvicorn's access formatter unpacks ``record.args`` (client, method, path, version,
    status): a record must keep that tuple, scrubbed in place when it holds a secret."""
    redact = RedactFilter([PASSWORD])
    plain = _record('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/health", "1.1", 200)
    assert redact.filter(plain)
    assert plain.args == ("127.0.0.1:5", "GET", "/health", "1.1", 200)
    leaky = _record('%s - "%s %s HTTP/%s" %d', "1.2.3.4:9", "GET", f"/x?k={PASSWORD}", "1.1", 401)
    assert redact.filter(leaky)
    assert isinstance(leaky.args, tuple)
    _client, _method, path, _version, status = leaky.args
    assert (path, status) == ("/x?k=***", 401)
    assert PASSWORD not in logging.Formatter().format(leaky)


def test_uvicorns_access_formatter_formats_a_redacted_record() -> None:
    from uvicorn.logging import AccessFormatter

    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", f"/x?k={PASSWORD}", "1.1", 200), None,
    )  # fmt: skip
    assert RedactFilter([PASSWORD]).filter(record)
    line = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s').format(record)
    assert line == '127.0.0.1:5 - "GET /x?k=*** HTTP/1.1" 200 OK'


def test_redaction_reads_a_lazy_source_on_the_first_record() -> None:
    calls: list[int] = []

    def source() -> list[str]:
        calls.append(1)
        return [PASSWORD]

    redact = RedactFilter(source=source)
    assert calls == []  # nothing read at install time
    record = _record("pw %s", PASSWORD)
    assert redact.filter(record)
    assert PASSWORD not in record.getMessage()
    redact.filter(_record("again"))
    assert calls == [1]


def test_secrets_come_from_settings_uri_and_environment() -> None:
    settings = Settings(
        neo4j={"uri": "bolt://neo4j:in-uri-secret-77@db:7687", "password": PASSWORD},
        api={"api_keys": KEY},
    )
    found = settings_secrets(settings)
    assert {PASSWORD, KEY, "in-uri-secret-77"} <= set(found)
    env = {"KG_NEO4J__URI": "bolt://a:env-uri-secret-1@h", "KG_API__API_KEYS": "k-one,k-two"}
    assert {"env-uri-secret-1", "k-one", "k-two"} <= set(env_secrets(env))
    assert scrub("short pw kg here, kgb stays", ["kg"]) == "short pw *** here, kgb stays"


def test_cli_logging_goes_through_redaction(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.output import setup_logging

    handler = setup_logging("WARNING")
    try:
        redact = next(f for f in handler.filters if isinstance(f, RedactFilter))
        redact.add([PASSWORD])
        logging.getLogger("kg.test").warning("the password is %s", PASSWORD)
        err = capsys.readouterr().err
        assert "the password is ***" in err
        assert PASSWORD not in err
    finally:
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(logging.WARNING)
        sys.stderr.flush()


def test_api_keys_never_reach_logs_even_as_a_wrong_key(
    stand_in: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = _settings(api_keys=[SecretStr(KEY)])
    app = create_app(settings, service_factory=lambda driver, s: stand_in)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        client.get("/templates", headers={"Authorization": f"Bearer {KEY}"})
        client.get("/templates", headers={"Authorization": f"Bearer {KEY}x"})
    assert KEY not in caplog.text
