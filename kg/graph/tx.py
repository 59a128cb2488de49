"""One managed write transaction on the driver's shared bookmark chain.

``execute_write`` retries transient failures (deadlocks, leader switches, lost connections:
``TransientError``, ``ServiceUnavailable``, ``SessionExpired``) with backoff; the session uses
the bookmark manager of ``execute_query`` so later reads see the write (docs/architecture.md,
"Read-your-writes").
"""

from __future__ import annotations

from typing import Any, LiteralString

from neo4j import Driver, ManagedTransaction


def write(driver: Driver, database: str, query: LiteralString, params: dict[str, Any]) -> list[Any]:
    """Run ``query`` in a retried write transaction; its records as dicts."""

    def work(tx: ManagedTransaction) -> list[Any]:
        return [r.data() for r in tx.run(query, params)]

    with driver.session(
        database=database, bookmark_manager=driver.execute_query_bookmark_manager
    ) as session:
        return session.execute_write(work)
