"""Who a keyless request is, behind a reverse proxy: the socket's peer, unless that peer is a
trusted proxy (``KG_API__TRUSTED_PROXIES``); then the rightmost ``X-Forwarded-For`` hop that
is not itself a trusted proxy. Over real HTTP: tests/integration/test_trusted_proxies.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from api.auth import Access, AccessPolicy
from api.middleware import EdgeMiddleware
from kg import current_client
from kg.settings import ApiSettings, Settings
from kg_mcp.serve import HttpGuard

OPEN = Access(key_required=False, local=True)


def _policy(*proxies: str) -> AccessPolicy:
    return AccessPolicy.from_settings(ApiSettings(trusted_proxies=list(proxies)))


@pytest.mark.parametrize(
    ("proxies", "peer", "forwarded", "client"),
    [
        # nothing trusted (the default): the header is never read
        ((), "127.0.0.1", ["127.0.0.5"], "127.0.0.1"),
        # a trusted peer: the hop it reports
        (("127.0.0.1",), "127.0.0.1", ["127.0.0.5"], "127.0.0.5"),
        (("127.0.0.0/30",), "127.0.0.2", ["127.0.0.9"], "127.0.0.9"),
        # an untrusted peer: its header is its own claim
        (("127.0.0.1",), "127.0.0.2", ["127.0.0.5"], "127.0.0.2"),
        # what the client wrote to the left is ignored: the rightmost untrusted hop counts
        (("127.0.0.1",), "127.0.0.1", ["127.0.0.66, 127.0.0.5"], "127.0.0.5"),
        # chained proxies: trusted hops are skipped
        (("127.0.0.1", "127.0.1.0/24"), "127.0.0.1", ["127.0.0.5, 127.0.1.7"], "127.0.0.5"),
        # repeated headers are one list, in order
        (("127.0.0.1",), "127.0.0.1", ["127.0.0.66", "127.0.0.5"], "127.0.0.5"),
        # every hop trusted: the farthest one
        (("127.0.0.0/8",), "127.0.0.1", ["127.0.0.5, 127.0.0.6"], "127.0.0.5"),
        # no header from a trusted proxy: the proxy
        (("127.0.0.1",), "127.0.0.1", [], "127.0.0.1"),
        # a malformed hop stops the walk at the proxy that reported it
        (("127.0.0.1",), "127.0.0.1", ["127.0.0.5, not-an-ip"], "127.0.0.1"),
        (("127.0.0.1", "127.0.1.0/24"), "127.0.0.1", ["junk, 127.0.1.7"], "127.0.1.7"),
        # IPv6 and mapped forms
        (("::1",), "::1", ["[::2]"], "::2"),
        (("127.0.0.1",), "::ffff:127.0.0.1", ["127.0.0.5"], "127.0.0.5"),
        # an IPv6 zone id names the proxy's interface, not a client: malformed (issue 39)
        (("127.0.0.1",), "127.0.0.1", ["fe80::1%eth0"], "127.0.0.1"),
        (("127.0.0.1",), "127.0.0.1", ["[fe80::1%25eth0]"], "127.0.0.1"),
        (("127.0.0.1",), "127.0.0.1", ["127.0.0.5, fe80::1%1"], "127.0.0.1"),
        (("127.0.0.1",), "127.0.0.1", ["fe80::1"], "fe80::1"),
    ],
)
def test_client_address(
    proxies: tuple[str, ...], peer: str, forwarded: list[str], client: str
) -> None:
    assert _policy(*proxies).client_address(peer, forwarded) == client


def test_client_id_uses_the_forwarded_address_only_for_keyless_requests() -> None:
    policy = _policy("127.0.0.1")
    assert policy.client_id(OPEN, None, ("127.0.0.1", 5000), ["127.0.0.5"]) == "addr:127.0.0.5"
    keyed = AccessPolicy(keys=(SecretStr("k"),), trusted_proxies=policy.trusted_proxies)
    access = Access(key_required=True, local=False)
    identity = keyed.client_id(access, "Bearer k", ("127.0.0.1", 5000), ["127.0.0.5"])
    assert identity.startswith("key:")


def test_the_setting_reads_a_comma_list_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_API__TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8")
    assert Settings().api.trusted_proxies == ["127.0.0.1", "10.0.0.0/8"]
    monkeypatch.setenv("KG_API__TRUSTED_PROXIES", '["::1"]')
    assert Settings().api.trusted_proxies == ["::1"]
    monkeypatch.delenv("KG_API__TRUSTED_PROXIES")
    assert Settings().api.trusted_proxies == []


def test_a_bad_entry_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match=r"proxy\.example"):
        ApiSettings(trusted_proxies=["proxy.example"])


def _identity_seen(surface: str, policy: AccessPolicy, forwarded: list[str]) -> str | None:
    """The client identity admission control sees for one request through a surface's edge."""
    seen: list[str | None] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(current_client.get())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def send(message: Any) -> None:
        return None

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    headers = [(b"host", b"127.0.0.1:8000")] + [
        (b"x-forwarded-for", value.encode()) for value in forwarded
    ]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "headers": headers,
    }
    edge: Any = (
        HttpGuard(app, policy)
        if surface == "mcp"
        else EdgeMiddleware(app, policy, body_timeout_s=5.0)
    )
    asyncio.run(edge(scope, receive, send))
    return seen[0]


@pytest.mark.parametrize("surface", ["api", "mcp"])
def test_both_surfaces_count_the_forwarded_client_only_from_a_trusted_proxy(
    surface: str,
) -> None:
    forwarded = ["127.0.0.66", "127.0.0.5"]  # repeated headers: the last hop is the client
    assert _identity_seen(surface, _policy("127.0.0.1"), forwarded) == "addr:127.0.0.5"
    assert _identity_seen(surface, _policy(), forwarded) == "addr:127.0.0.1"
