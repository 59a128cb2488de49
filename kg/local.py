"""The local Neo4j server as front ends see it: its lifecycle and where Browser finds kg's style.

A thin re-export so that ``cli/`` and ``api/`` never import the ``kg.graph`` stage directly
(tests/unit/test_layers.py); :func:`kg.client.local_server` builds the server from settings.
"""

from kg.graph.server import (
    BROWSER_GUIDE_PATH,
    BROWSER_STYLE_PATH,
    LocalNeo4j,
    ServerStatus,
    kg_api_url,
)

__all__ = ["BROWSER_GUIDE_PATH", "BROWSER_STYLE_PATH", "LocalNeo4j", "ServerStatus", "kg_api_url"]
