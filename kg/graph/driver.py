"""Driver construction: the one place that turns settings into a Neo4j driver."""

from __future__ import annotations

from typing import Any

from neo4j import AsyncDriver, AsyncGraphDatabase, Driver, GraphDatabase
from neo4j.exceptions import AuthError, ServiceUnavailable

from kg.errors import StoreError, StoreUnavailable
from kg.settings import Neo4jSettings


def _options(settings: Neo4jSettings) -> dict[str, Any]:
    """The same bounds for sync and async drivers: connect, acquire and retry in seconds."""
    return {
        "auth": (settings.username, settings.password.get_secret_value()),
        "connection_timeout": settings.connection_timeout_s,
        "connection_acquisition_timeout": settings.connection_timeout_s * 2,
        "max_transaction_retry_time": 10.0,
        "notifications_min_severity": "OFF",
    }


def open_driver(settings: Neo4jSettings) -> Driver:
    """A sync driver; the caller closes it."""
    return GraphDatabase.driver(settings.uri, **_options(settings))


def open_async_driver(settings: Neo4jSettings) -> AsyncDriver:
    """An async driver; the caller closes it."""
    return AsyncGraphDatabase.driver(settings.uri, **_options(settings))


def verify(driver: Driver, settings: Neo4jSettings) -> None:
    """Raise a clear kg error when Neo4j does not answer or refuses the credentials."""
    try:
        driver.verify_connectivity()
    except AuthError as exc:
        raise StoreError(
            f"Neo4j at {settings.uri} refused the credentials for user {settings.username!r}"
        ) from exc
    except (ServiceUnavailable, OSError) as exc:
        raise StoreUnavailable(
            f"Neo4j does not answer at {settings.uri}; start it with `kg neo4j start` "
            "or set NEO4J_URI"
        ) from exc
