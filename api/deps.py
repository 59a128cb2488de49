"""Dependency providers: handlers receive a ready service, never the app state."""

from __future__ import annotations

from litestar.datastructures import State

from api.backend import Backend, SearchBackend


def backend_from(state: State) -> Backend:
    backend: Backend = state.backend
    return backend


async def provide_service(state: State) -> SearchBackend:
    """The service with its templates verified; StoreUnavailable (503) while Neo4j is down."""
    return await backend_from(state).acquire()


async def provide_backend(state: State) -> Backend:
    """The holder itself, for /health, which must answer whether or not Neo4j does."""
    return backend_from(state)
