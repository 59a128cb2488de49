"""The library surface as the API holds it, plus the lazy start-up that lets the API outlive Neo4j.

The API must start (and answer 503) while Neo4j is down, and recover without a restart when it
comes back. So template verification (``startup()``) is not a precondition of serving: it runs
in the lifespan when Neo4j answers, and otherwise on the first request that finds Neo4j up.
While Neo4j is suspected down, each request first probes it with one round trip, so clients
get their 503 at once rather than after the driver's retry budget.
"""

from __future__ import annotations

import asyncio
import logging
import time

from neo4j import AsyncDriver
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable, SessionExpired

from kg import AsyncKnowledgeGraph, SearchBackend, ServiceFactory, search_service
from kg.errors import Overloaded, StoreError, StoreUnavailable
from kg.redact import scrub, settings_secrets
from kg.settings import Settings

logger = logging.getLogger("kg.api")

#: Upper bound on verifying every template (EXPLAIN) against the server.
STARTUP_TIMEOUT_S = 60.0

#: Exceptions that mean "Neo4j does not answer (or refuses us)"; never shown to clients.
UNREACHABLE: tuple[type[BaseException], ...] = (
    ServiceUnavailable,
    SessionExpired,
    AuthError,
    StoreUnavailable,
    OSError,
)

#: What a failed probe or template verification can raise when Neo4j is the problem.
_STARTUP_FAILURES: tuple[type[BaseException], ...] = (TimeoutError, DriverError, *UNREACHABLE)

#: Neo4j failed us: at start-up the API runs on degraded (503); mid-request, Neo4j becomes suspect.
NEO4J_FAILURES: tuple[type[BaseException], ...] = (StoreError, *UNREACHABLE)

#: How long one /health answer is reused: a flood of probes costs one Bolt round trip a second.
HEALTH_TTL_S = 1.0

#: Server error codes that mean "this statement or its parameters were wrong": the server is up.
_STATEMENT_CODES = ("Neo.ClientError.Statement.", "Neo.ClientError.Procedure.")


def statement_error(exc: BaseException) -> bool:
    """A StoreError caused by the server refusing one statement (not by Neo4j being down)."""
    cause = exc.__cause__
    return (
        isinstance(exc, StoreError)
        and isinstance(cause, Neo4jError)
        and (cause.code or "").startswith(_STATEMENT_CODES)
    )


def means_neo4j_down(exc: BaseException) -> bool:
    """Whether a request's failure should make later requests probe Neo4j first.

    Not when kg shed load itself (busy), and not when the server answered and refused one
    statement: those say nothing about Neo4j being reachable.
    """
    if isinstance(exc, Overloaded) or statement_error(exc):
        return False
    return isinstance(exc, NEO4J_FAILURES)


def default_service_factory(driver: AsyncDriver, settings: Settings) -> SearchBackend:
    """The real search use case, from the library surface (as the surface builds it itself)."""
    return search_service(driver, settings)


__all__ = ["Backend", "ServiceFactory", "default_service_factory", "means_neo4j_down"]


class Backend:
    """Holds the library surface for the app's lifetime; verifies templates once, lazily.

    Routes call the surface (:class:`kg.AsyncKnowledgeGraph`) and nothing below it: the API
    is a front end of the one composition root, not a second one.
    """

    def __init__(self, graph: AsyncKnowledgeGraph, settings: Settings) -> None:
        self.graph = graph
        self.settings = settings
        self.ready = False
        self.suspect = False
        self._lock = asyncio.Lock()
        self._health: tuple[float, bool] | None = None  # (when, answer)
        self._health_lock = asyncio.Lock()

    async def try_startup(self) -> bool:
        """Verify templates if Neo4j answers; log and carry on (degraded) if it does not."""
        try:
            await self.acquire()
        except NEO4J_FAILURES as exc:
            # StoreError covers refused credentials; the message is scrubbed of secrets
            secrets = settings_secrets(self.settings)
            logger.warning(
                "Neo4j is not usable at start-up (%s: %s); serving 503 until it answers",
                type(exc).__name__,
                scrub(str(exc), secrets),
            )
            return False
        return True

    async def acquire(self) -> AsyncKnowledgeGraph:
        """The surface, after its templates were verified against the server.

        Raises StoreUnavailable when Neo4j does not answer, so the request gets a 503.
        """
        if self.suspect:
            await self.probe()
        if self.ready:
            return self.graph
        async with self._lock:
            if not self.ready:
                await self.probe()
                try:
                    await asyncio.wait_for(self.graph.service.startup(), self._startup_timeout())
                except _STARTUP_FAILURES as exc:
                    self.suspect = True
                    if isinstance(exc, StoreUnavailable):
                        raise
                    raise StoreUnavailable("Neo4j does not answer") from exc
                self.ready = True
                logger.info("search templates verified against Neo4j")
        return self.graph

    async def probe(self) -> None:
        """One connectivity check (the service's health), bounded; clears the suspicion."""
        try:
            ok = await asyncio.wait_for(self.graph.health(), self._probe_timeout())
        except _STARTUP_FAILURES as exc:
            self.suspect = True
            raise StoreUnavailable("Neo4j does not answer") from exc
        if not ok:
            self.suspect = True
            raise StoreUnavailable("Neo4j does not answer")
        self.suspect = False

    def mark_unavailable(self) -> None:
        """A request saw Neo4j fail; later requests probe before they wait on the driver, and
        /health checks again rather than repeat an answer from before the failure."""
        self.suspect = True
        self._health = None

    async def health(self) -> bool:
        """Whether Neo4j answers, bounded in time; never raises. One answer serves every
        caller for HEALTH_TTL_S, and concurrent callers share one check."""
        if (cached := self._fresh_health()) is not None:
            return cached
        async with self._health_lock:
            if (cached := self._fresh_health()) is not None:
                return cached
            ok = await self._check_health()
            self._health = (time.monotonic(), ok)
            return ok

    def _fresh_health(self) -> bool | None:
        if self._health is not None and time.monotonic() - self._health[0] < HEALTH_TTL_S:
            return self._health[1]
        return None

    async def _check_health(self) -> bool:
        try:
            await self.probe()
        except Exception as exc:  # health must answer, whatever went wrong
            logger.info("health check: Neo4j not available (%s)", type(exc).__name__)
            return False
        return True

    def _probe_timeout(self) -> float:
        return self.settings.neo4j.connection_timeout_s * 2

    def _startup_timeout(self) -> float:
        # EXPLAIN of every template on a cold server takes seconds; it happens once
        return max(STARTUP_TIMEOUT_S, self.settings.search.query_timeout_s * 4)
