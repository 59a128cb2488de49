"""Auth decisions and key checks, without a server."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from api.auth import auth_required, bearer_token, check_auth_config, is_loopback, key_matches
from kg.errors import ConfigError
from kg.settings import ApiSettings


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("api.example.com", False),
    ],
)
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_auth_is_auto_by_host_and_forced_by_setting() -> None:
    assert auth_required(ApiSettings(host="127.0.0.1")) is False
    assert auth_required(ApiSettings(host="0.0.0.0")) is True
    assert auth_required(ApiSettings(host="0.0.0.0", require_auth=False)) is False
    assert auth_required(ApiSettings(host="127.0.0.1", require_auth=True)) is True


def test_refuses_required_auth_without_keys() -> None:
    with pytest.raises(ConfigError, match="KG_API__API_KEYS"):
        check_auth_config(ApiSettings(host="0.0.0.0"))
    with pytest.raises(ConfigError, match="REQUIRE_AUTH"):
        check_auth_config(ApiSettings(require_auth=True, api_keys=[SecretStr("")]))
    assert check_auth_config(ApiSettings(host="0.0.0.0", api_keys=[SecretStr("k")])) is True


def test_keys_come_from_a_comma_separated_env_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from kg.settings import Settings

    monkeypatch.setenv("KG_API__API_KEYS", "alpha, beta")
    keys = [k.get_secret_value() for k in Settings().api.api_keys]
    assert keys == ["alpha", "beta"]


def test_keys_may_be_bound_to_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """``key::ns1|ns2`` in the comma form, objects in the JSON form; a plain key is unscoped."""
    from api.auth import AccessPolicy
    from kg.settings import Settings

    monkeypatch.setenv("KG_API__API_KEYS", "team-a::handbook|/srv/docs/a, admin")
    api = Settings().api
    assert [(k.get_secret_value(), k.namespaces) for k in api.api_keys] == [
        ("team-a", ("handbook", "/srv/docs/a")),
        ("admin", None),
    ]
    monkeypatch.setenv("KG_API__API_KEYS", '[{"key": "team-b", "namespaces": ["a,b|c"]}, "plain"]')
    api = Settings().api
    assert [(k.get_secret_value(), k.namespaces) for k in api.api_keys] == [
        ("team-b", ("a,b|c",)),
        ("plain", None),
    ]
    policy = AccessPolicy.from_settings(api)
    assert policy.namespaces_of("Bearer team-b") == ("a,b|c",)
    assert policy.namespaces_of("Bearer plain") is None
    assert policy.namespaces_of("Bearer wrong") is None
    assert policy.namespaces_of(None) is None
    for bad in ("k::", "k::|", '[{"key": "k", "namespaces": []}]'):
        monkeypatch.setenv("KG_API__API_KEYS", bad)
        with pytest.raises(ValueError, match="namespace"):
            Settings()


def test_key_matches_any_configured_key_only() -> None:
    keys = [SecretStr("alpha"), SecretStr("beta"), SecretStr("")]
    assert key_matches("alpha", keys)
    assert key_matches("beta", keys)
    assert not key_matches("", keys)  # an empty configured key never admits anyone
    assert not key_matches("alph", keys)
    assert not key_matches("alpha ", keys)
    assert not key_matches("gamma", [])


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer   abc  ", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer    ", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_token_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token
