"""``kg serve``: flags over settings, refusal without keys, and what it prints."""

from __future__ import annotations

from typing import Any

import pytest

from cli import serve_cmd
from cli.main import app
from kg.errors import ConfigError


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake_run(asgi_app: Any, **kwargs: Any) -> None:
        calls.append({"app": asgi_app, **kwargs})

    monkeypatch.setattr(serve_cmd.uvicorn, "run", fake_run)
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
