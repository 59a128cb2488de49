"""Driver construction: the one place that turns settings into a Neo4j driver."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any, LiteralString
from urllib.parse import urlsplit

from neo4j import AsyncDriver, AsyncGraphDatabase, Driver, GraphDatabase
from neo4j.exceptions import AuthError, ServiceUnavailable

from kg.errors import StoreError, StoreUnavailable
from kg.graph import nodelay
from kg.redact import public_url
from kg.settings import Neo4jSettings

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Seconds a command's start-up check waits for a Bolt server to answer its handshake.
ANSWER_WITHIN_S = 3.0
#: Bolt's magic preamble and four version proposals (5.0-5.4, 4.4): any server answers it.
_HANDSHAKE = bytes.fromhex("6060b01700040405000004040000000000000000")


def _options(settings: Neo4jSettings) -> dict[str, Any]:
    """The same bounds for sync and async drivers: connect, acquire and retry in seconds."""
    return {
        "auth": (settings.username, settings.password.get_secret_value()),
        "connection_timeout": settings.connection_timeout_s,
        "connection_acquisition_timeout": settings.connection_timeout_s * 2,
        "max_transaction_retry_time": settings.retry_s,
        "notifications_min_severity": "OFF",
    }


def open_driver(settings: Neo4jSettings) -> Driver:
    """A sync driver; the caller closes it."""
    return GraphDatabase.driver(settings.uri, **_options(settings))


def open_async_driver(settings: Neo4jSettings) -> AsyncDriver:
    """An async driver; the caller closes it. Its sockets disable Nagle (kg.graph.nodelay)."""
    nodelay.apply()
    return AsyncGraphDatabase.driver(settings.uri, **_options(settings))


def _is_local_server(uri: str, local_bolt_port: int | None) -> bool:
    """Whether ``uri`` names the local server's Bolt port on loopback (``kg neo4j start``)."""
    if local_bolt_port is None:
        return False
    try:
        parts = urlsplit(uri)
        port = parts.port or 7687
    except ValueError:
        return False
    return parts.hostname in _LOOPBACK and port == local_bolt_port


def unreachable(settings: Neo4jSettings, local_bolt_port: int | None = None) -> StoreUnavailable:
    """Neo4j does not answer at all: one line with the URI tried and the fix."""
    uri = public_url(settings.uri)
    if _is_local_server(settings.uri, local_bolt_port):
        fix = "start the local server with `kg neo4j start`"
    else:
        fix = "check that it runs, or set KG_NEO4J__URI (or NEO4J_URI) to a Neo4j that does"
    return StoreUnavailable(f"Neo4j does not answer at {uri}: {fix}")


def _refused(settings: Neo4jSettings) -> StoreError:
    return StoreError(
        f"Neo4j at {public_url(settings.uri)} refused the credentials for user "
        f"{settings.username!r}: set KG_NEO4J__PASSWORD (or NEO4J_PASSWORD)"
    )


@contextlib.contextmanager
def _driver_quiet() -> Iterator[None]:
    """The driver logs its own failure ("Unable to retrieve routing information") before it
    raises; kg reports that failure in one line of its own, so the check runs without it."""
    logger = logging.getLogger("neo4j")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def answers(uri: str, timeout_s: float = ANSWER_WITHIN_S) -> bool:
    """Whether a Bolt server answers the handshake at ``uri`` within ``timeout_s``.

    A port that accepts connections but never speaks Bolt (a hung server, another program)
    held the driver's own check for its connection timeout, twice over (12 s). Encrypted
    schemes handshake inside TLS, and an unparsable URI is the driver's to refuse: both count
    as answering here, and the driver's check decides."""
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port or 7687
    except ValueError:
        return True
    if parts.scheme not in ("bolt", "neo4j") or not host:
        return True
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(_HANDSHAKE)
            return len(sock.recv(4)) == 4
    except OSError:  # refused, unreachable, unresolvable, or silent past the timeout
        return False


def verify(driver: Driver, settings: Neo4jSettings, *, local_bolt_port: int | None = None) -> None:
    """Raise a clear kg error when Neo4j does not answer or refuses the credentials.

    A Bolt handshake of its own (:func:`answers`) bounds the wait for a server that is not
    there to :data:`ANSWER_WITHIN_S`; the driver's connectivity check then makes one
    connection and retries nothing, so nothing is retried or warned about before kg's one
    line."""
    if not answers(settings.uri):
        raise unreachable(settings, local_bolt_port)
    try:
        with _driver_quiet():
            driver.verify_connectivity()
    except AuthError as exc:
        raise _refused(settings) from exc
    except (ServiceUnavailable, OSError) as exc:
        raise unreachable(settings, local_bolt_port) from exc


async def verify_async(
    driver: AsyncDriver, settings: Neo4jSettings, *, local_bolt_port: int | None = None
) -> None:
    """:func:`verify` for the async driver (the read path of the CLI and the MCP server)."""
    if not await asyncio.to_thread(answers, settings.uri):
        raise unreachable(settings, local_bolt_port)
    try:
        with _driver_quiet():
            await driver.verify_connectivity()
    except AuthError as exc:
        raise _refused(settings) from exc
    except (ServiceUnavailable, OSError) as exc:
        raise unreachable(settings, local_bolt_port) from exc


def repeat_batches(
    driver: Driver, database: str, query: LiteralString, counted: str, /, **params: Any
) -> int:
    """Run a batched statement (``... LIMIT n`` then a write) until its ``counted`` column
    says it did nothing; the total it counted. Each batch is its own transaction."""
    total = 0
    while True:
        records, _, _ = driver.execute_query(query, params, database_=database)
        done = int(records[0][counted]) if records else 0
        total += done
        if not done:
            return total
