"""kg: folders of documents into a temporal knowledge graph in Neo4j, searched safely.

::

    from kg import KnowledgeGraph

    with KnowledgeGraph() as graph:
        graph.ingest("docs/")
        print(graph.search("Who owns AuthService?").entities)

Errors are :class:`KGError` and its subclasses (see :mod:`kg.errors`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kg.client import AsyncKnowledgeGraph, IngestOptions, KnowledgeGraph, local_server
    from kg.errors import (
        ConfigError,
        ExtractionError,
        GraphModelError,
        KGError,
        NotFoundError,
        QueryRejected,
        QueryTimeout,
        StoreError,
        StoreUnavailable,
    )
    from kg.ingest import IngestSummary
    from kg.localserver import LocalNeo4j, ServerStatus
    from kg.search.models import (
        EntityDetail,
        Neighborhood,
        SearchRequest,
        SearchResponse,
        TemplateInfo,
        TemplateResult,
    )
    from kg.settings import Settings

# Where each public name lives: imported on first use, so `kg --help` and stage-only imports
# stay fast (the surface pulls in the driver, the LLM client and FAISS).
_HOME = {
    "AsyncKnowledgeGraph": "kg.client",
    "IngestOptions": "kg.client",
    "KnowledgeGraph": "kg.client",
    "local_server": "kg.client",
    "IngestSummary": "kg.ingest",
    "LocalNeo4j": "kg.localserver",
    "ServerStatus": "kg.localserver",
    "Settings": "kg.settings",
    **dict.fromkeys(
        ["ConfigError", "ExtractionError", "GraphModelError", "KGError", "NotFoundError",
         "QueryRejected", "QueryTimeout", "StoreError", "StoreUnavailable"],
        "kg.errors",
    ),
    **dict.fromkeys(
        ["EntityDetail", "Neighborhood", "SearchRequest", "SearchResponse", "TemplateInfo",
         "TemplateResult"],
        "kg.search.models",
    ),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'kg' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "AsyncKnowledgeGraph",
    "ConfigError",
    "EntityDetail",
    "ExtractionError",
    "GraphModelError",
    "IngestOptions",
    "IngestSummary",
    "KGError",
    "KnowledgeGraph",
    "LocalNeo4j",
    "Neighborhood",
    "NotFoundError",
    "QueryRejected",
    "QueryTimeout",
    "SearchRequest",
    "SearchResponse",
    "ServerStatus",
    "Settings",
    "StoreError",
    "StoreUnavailable",
    "TemplateInfo",
    "TemplateResult",
    "local_server",
]
