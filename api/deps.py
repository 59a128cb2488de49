"""Dependency providers: handlers receive a ready service, never the app state."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from litestar.datastructures import State

from api.backend import NEO4J_FAILURES, Backend, SearchBackend


def backend_from(state: State) -> Backend:
    backend: Backend = state.backend
    return backend


async def provide_service(state: State) -> AsyncGenerator[SearchBackend, None]:
    """The service with its templates verified; StoreUnavailable (503) while Neo4j is down.

    A generator so that a Neo4j failure inside the handler marks the backend suspect.
    """
    backend = backend_from(state)
    service = await backend.acquire()
    try:
        yield service
    except NEO4J_FAILURES:
        backend.mark_unavailable()
        raise


async def provide_backend(state: State) -> Backend:
    """The holder itself, for /health, which must answer whether or not Neo4j does."""
    return backend_from(state)
