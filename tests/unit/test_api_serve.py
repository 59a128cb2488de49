"""``kg serve``: flags over settings, refusal without keys, and what it prints."""

from __future__ import annotations

import os
from typing import Any

import pytest
import uvicorn

from api.serving import GuardedH11Protocol, worker_share
from cli import serve_cmd
from cli.main import app
from kg.errors import ConfigError
from kg.settings import Settings


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake_run(asgi_app: Any, **kwargs: Any) -> None:
        calls.append({"app": asgi_app, **kwargs})

    monkeypatch.setattr(uvicorn, "run", fake_run)  # cli.serve_cmd imports it when it runs
    for var in ("KG_API__HOST", "KG_API__PORT", "KG_API__API_KEYS", "KG_API__REQUIRE_AUTH"):
        monkeypatch.delenv(var, raising=False)
    return calls


def test_serve_uses_flags_and_prints_where(
    uvicorn_calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert app(["serve", "--port", "8123"], result_action="return_value") == 0
    (call,) = uvicorn_calls
    assert (call["host"], call["port"]) == ("127.0.0.1", 8123)
    out = capsys.readouterr().out
    assert "http://127.0.0.1:8123" in out
    assert "/schema" in out
    assert "auth off" in out


def test_serve_refuses_public_bind_without_keys(uvicorn_calls: list[dict[str, Any]]) -> None:
    with pytest.raises(ConfigError, match="no API keys"):
        app(["serve", "--host", "0.0.0.0"], result_action="return_value")
    assert uvicorn_calls == []


def test_serve_public_bind_with_keys_turns_auth_on(
    uvicorn_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KG_API__API_KEYS", "k1")
    assert app(["serve", "--host", "0.0.0.0"], result_action="return_value") == 0
    assert uvicorn_calls[0]["host"] == "0.0.0.0"
    out = capsys.readouterr().out
    assert "auth on" in out
    assert "k1" not in out


# -- several workers -------------------------------------------------------------------------


def test_serve_with_workers_hands_uvicorn_an_import_string_and_the_flags_by_environment(
    uvicorn_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for var in ("KG_API__HOST", "KG_API__PORT", "KG_API__WORKERS"):
        monkeypatch.setenv(var, "placeholder-restored-after-the-test")
        monkeypatch.delenv(var)
    monkeypatch.setenv("KG_SEARCH__MAX_CONCURRENT_QUERIES", "12")  # 3 heavy slots: 1 each
    assert app(["serve", "--port", "8124", "--workers", "3"], result_action="return_value") == 0
    (call,) = uvicorn_calls
    assert call["app"] == serve_cmd.WORKER_APP == "cli.serve_cmd:worker_app"
    assert (call["factory"], call["workers"]) == (True, 3)
    assert call["http"] == "api.serving:GuardedH11Protocol"
    # spawned workers read their settings from the environment kg serve leaves them
    assert os.environ["KG_API__PORT"] == "8124"
    assert os.environ["KG_API__WORKERS"] == "3"
    assert Settings().api.workers == 3
    assert "3 workers" in capsys.readouterr().out


def test_one_worker_runs_the_app_in_this_process(uvicorn_calls: list[dict[str, Any]]) -> None:
    assert app(["serve", "--port", "8125"], result_action="return_value") == 0
    (call,) = uvicorn_calls
    assert not isinstance(call["app"], str)
    assert "workers" not in call


def test_worker_share_divides_the_per_process_bounds_rounding_down() -> None:
    settings = Settings(
        search={"max_concurrent_queries": 12},
        api={"max_connections": 1000, "max_queries_per_client": 5},
    )
    share = worker_share(settings, 3)
    assert share.search.max_concurrent_queries == 4
    assert share.api.max_connections == 333
    assert share.api.max_queries_per_client == 1
    # the heavy share comes from the whole: a quarter of 12 is 3, one per worker
    assert share.api.heavy_query_slots == 1
    assert share.api.heavy_slots(share.search.max_concurrent_queries) == 1
    assert worker_share(settings, 1) is settings


@pytest.mark.parametrize("workers", [2, 3, 4, 5, 7, 8, 16, 64])
@pytest.mark.parametrize(
    ("slots", "per_client", "heavy", "connections"),
    [(8, None, None, 1000), (64, None, None, 1000), (64, 16, 8, 64), (200, 150, 70, 5000)],
)
def test_workers_together_never_exceed_the_settings(
    workers: int, slots: int, per_client: int | None, heavy: int | None, connections: int
) -> None:
    """The break: every share rounded up to 1, so `--workers 8` held 8 heavy slots of 2."""
    settings = Settings(
        search={"max_concurrent_queries": slots},
        api={
            "max_queries_per_client": per_client,
            "heavy_query_slots": heavy,
            "max_connections": connections,
        },
    )
    whole = settings.api
    totals = {
        "KG_SEARCH__MAX_CONCURRENT_QUERIES": slots,
        "KG_API__MAX_QUERIES_PER_CLIENT": whole.query_slots_per_client(slots),
        "KG_API__HEAVY_QUERY_SLOTS": whole.heavy_slots(slots),
        "KG_API__MAX_CONNECTIONS": connections,
    }
    if min(totals.values()) < workers:
        with pytest.raises(ConfigError) as refused:
            worker_share(settings, workers)
        for name, total in totals.items():
            assert (f"{name}={total}" in str(refused.value)) == (total < workers)
        assert f"at least {workers}, or serve with at most {min(totals.values())} " in str(
            refused.value
        )
        return
    share = worker_share(settings, workers)
    each = share.search.max_concurrent_queries
    assert each * workers <= slots
    assert (
        share.api.query_slots_per_client(each) * workers <= totals["KG_API__MAX_QUERIES_PER_CLIENT"]
    )
    assert share.api.heavy_slots(each) * workers <= totals["KG_API__HEAVY_QUERY_SLOTS"]
    assert share.api.max_connections * workers <= connections
    assert min(each, share.api.heavy_slots(each), share.api.max_connections) >= 1


def test_a_worker_count_that_cannot_be_split_is_refused_naming_the_setting(
    uvicorn_calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("KG_API__HOST", "KG_API__PORT", "KG_API__WORKERS"):  # restored after the test
        monkeypatch.setenv(var, "placeholder-restored-after-the-test")
        monkeypatch.delenv(var)
    # defaults: 8 query slots, a quarter of them (2) for heavy queries
    with pytest.raises(
        ConfigError, match=r"KG_API__HEAVY_QUERY_SLOTS=2 \(a quarter.*at least 8"
    ) as refused:
        app(["serve", "--workers", "8"], result_action="return_value")
    assert "at most 2 workers" in str(refused.value)
    with pytest.raises(ConfigError, match="KG_API__HEAVY_QUERY_SLOTS=2"):
        app(["serve", "--workers", "3"], result_action="return_value")
    assert uvicorn_calls == []
    assert app(["serve", "--workers", "2"], result_action="return_value") == 0


def test_a_worker_builds_its_app_with_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    import api.app

    for var, value in {
        "KG_API__WORKERS": "2",
        "KG_SEARCH__MAX_CONCURRENT_QUERIES": "10",
        "KG_API__MAX_CONNECTIONS": "100",
        "KG_API__HEADER_TIMEOUT_S": "7",
    }.items():
        monkeypatch.setenv(var, value)  # fmt: skip
    for var in ("KG_API__API_KEYS", "KG_API__REQUIRE_AUTH", "KG_API__HOST"):
        monkeypatch.delenv(var, raising=False)
    for attr in ("max_connections", "header_timeout_s"):  # restored after the test
        monkeypatch.setattr(GuardedH11Protocol, attr, getattr(GuardedH11Protocol, attr))
    built: list[Settings] = []
    real_create_app = api.app.create_app

    def recording_create_app(settings: Settings) -> Any:
        built.append(settings)
        return real_create_app(settings)

    monkeypatch.setattr(api.app, "create_app", recording_create_app)
    serve_cmd.worker_app()
    (settings,) = built
    assert settings.search.max_concurrent_queries == 5
    assert settings.api.max_connections == 50
    assert (GuardedH11Protocol.max_connections, GuardedH11Protocol.header_timeout_s) == (50, 7.0)
