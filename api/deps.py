"""Dependency providers: handlers receive the ready library surface, never the app state."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from litestar.datastructures import State

from api.backend import Backend, means_neo4j_down
from kg import AsyncKnowledgeGraph


def backend_from(state: State) -> Backend:
    backend: Backend = state.backend
    return backend


async def provide_graph(state: State) -> AsyncGenerator[AsyncKnowledgeGraph, None]:
    """The surface with its templates verified; StoreUnavailable (503) while Neo4j is down.

    A generator so that a Neo4j failure inside the handler marks the backend suspect (a
    caller's mistake, a refused statement or kg being busy never does).
    """
    backend = backend_from(state)
    graph = await backend.acquire()
    try:
        yield graph
    except Exception as exc:
        if means_neo4j_down(exc):
            backend.mark_unavailable()
        raise


async def provide_backend(state: State) -> Backend:
    """The holder itself, for /health, which must answer whether or not Neo4j does."""
    return backend_from(state)
