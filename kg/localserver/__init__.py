"""A local Neo4j Community server without Docker: jars from Maven Central, run with ``java -cp``.

Why: tests and the local default need a real Neo4j on machines with no Docker engine, and Python
should be the only prerequisite. The jars listed in ``neo4j-server/jars.lock`` (``org.neo4j:neo4j``
with Bolt and HTTP, and ``org.neo4j.client:neo4j-browser``) are fetched and checked by
:mod:`kg.localserver.jars` into a cache outside the repository (Maven only when the lock is
missing); :mod:`kg.localserver.java` picks the Java. The server's data lives in a project-local
folder (``settings.server.home``, mode 0700) that survives restarts.

Secrets: on first start the server gets a random password (unless one is configured), kept in
``<home>/password`` with mode 0600; it reaches Neo4j's admin tool through a 0600 picocli
``@argfile``, never on a command line (:mod:`kg.localserver.password`). The HTTP port answers
cross-origin requests only for its own origin (:mod:`kg.localserver.config`).

Browser: the config makes Neo4j Browser load kg's style from kg's API on connect and allows
kg's guide to be played from it (:mod:`kg.localserver.browser`; docs/browser.md).

This is a tool beside the stages, not part of the graph store (:mod:`kg.graph`). Front ends
reach it only through :func:`kg.local_server`.
"""

from kg.localserver.browser import (
    BROWSER_GUIDE_PATH,
    BROWSER_STYLE_PATH,
    browser_config,
    kg_api_url,
)
from kg.localserver.process import free_port
from kg.localserver.server import LocalNeo4j, ServerStatus, throwaway_server
from kg.settings import Settings


def local_server(settings: Settings | None = None) -> LocalNeo4j:
    """The local Neo4j server's lifecycle (start, stop, status, logs) for ``kg neo4j``."""
    return LocalNeo4j(settings if settings is not None else Settings())


__all__ = [
    "BROWSER_GUIDE_PATH",
    "BROWSER_STYLE_PATH",
    "LocalNeo4j",
    "ServerStatus",
    "browser_config",
    "free_port",
    "kg_api_url",
    "local_server",
    "throwaway_server",
]
