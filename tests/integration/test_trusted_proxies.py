"""Per-client caps behind a reverse proxy, over real HTTP against the real Neo4j, on loopback.

One client holds its only query slot with a read that runs until the query timeout; then a
request forwarded for *another* client must run at once when the peer is a trusted proxy
(``KG_API__TRUSTED_PROXIES``), and is that same client, so refused with 429, when it is not:
the server believes ``X-Forwarded-For`` only from a listed proxy. Every address is loopback:
the proxy is 127.0.0.1, the untrusted peer connects from 127.0.0.2, and the forwarded
clients are 127.0.0.5 and 127.0.0.6.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from litestar import Litestar
from neo4j import AsyncDriver, Driver

from api.app import create_app
from kg.cypher.templates import REGISTRY
from kg.resolve import make_embedder
from kg.search.service import SearchService
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings
from tests.burn import burn_template

REG = REGISTRY.with_templates(burn_template("slow"))
QUERY_TIMEOUT_S = 4.0  # the slow read holds its slot this long: past the two cheap asks at 1.5 s
QUEUE_TIMEOUT_S = 1.0
HOLDER, OTHER = "127.0.0.5", "127.0.0.6"


def _app(settings: Settings, trusted: list[str]) -> Litestar:
    tuned = settings.model_copy(
        update={
            "search": settings.search.model_copy(
                update={
                    "max_concurrent_queries": 4,
                    "query_timeout_s": QUERY_TIMEOUT_S,
                    "queue_timeout_s": QUEUE_TIMEOUT_S,
                }
            )
        }
    )
    tuned = api_settings(tuned, max_queries_per_client=1, trusted_proxies=trusted)

    def factory(driver: AsyncDriver, s: Settings) -> SearchService:
        return SearchService(driver, s, make_embedder(s.resolve), registry=REG)

    return create_app(tuned, service_factory=factory)


@pytest.fixture(scope="module")
def behind_trusted(driver: Driver, settings: Settings) -> Iterator[str]:
    with LiveServer(_app(settings, ["127.0.0.1/32"])) as server:
        _started(server.url)
        yield server.url


@pytest.fixture(scope="module")
def trusting_none(driver: Driver, settings: Settings) -> Iterator[str]:
    with LiveServer(_app(settings, [])) as server:
        _started(server.url)
        yield server.url


def _started(url: str) -> None:
    """The API verifies its templates on the first request: done before the timed part."""
    assert _post(url, "/templates/entity_by_id", {"entity_id": "nobody"}, "", "127.0.0.1") == 200


def _post(url: str, path: str, body: dict[str, Any], forwarded: str, source: str) -> int:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(base_url=url, transport=transport, timeout=QUERY_TIMEOUT_S + 10) as http:
        answer = http.post(path, json=body, headers={"X-Forwarded-For": forwarded})
        return answer.status_code


def _while_holder_busy(url: str, source: str) -> tuple[int, int, int]:
    """(the holder's slow read, another forwarded client's cheap read, the holder's second
    read): statuses, with the holder's slot held while the other two are asked."""
    held: list[int] = []
    slow = threading.Thread(
        target=lambda: held.append(_post(url, "/templates/slow", {}, HOLDER, source))
    )
    slow.start()
    time.sleep(1.5)  # the slow read holds the holder's one slot
    cheap = {"entity_id": "nobody"}
    started = time.monotonic()
    other = _post(url, "/templates/entity_by_id", cheap, OTHER, source)
    took = time.monotonic() - started
    again = _post(url, "/templates/entity_by_id", cheap, HOLDER, source)
    slow.join()
    assert took < QUERY_TIMEOUT_S, f"the other client waited {took:.1f}s"
    return held[0], other, again


def test_a_trusted_proxy_forwards_distinct_clients(behind_trusted: str) -> None:
    slow, other, again = _while_holder_busy(behind_trusted, "127.0.0.1")
    assert slow == 504  # ran until the query timeout
    assert other == 200  # another client: its own slot, at once
    assert again == 429  # the holder is at its cap


def test_an_untrusted_peer_is_one_client_whatever_it_forwards(behind_trusted: str) -> None:
    slow, other, _ = _while_holder_busy(behind_trusted, "127.0.0.2")
    assert slow == 504
    assert other == 429  # same peer, same client: the header was not believed


def test_no_trusted_proxies_means_no_forwarded_header_is_read(trusting_none: str) -> None:
    slow, other, _ = _while_holder_busy(trusting_none, "127.0.0.1")
    assert slow == 504
    assert other == 429
