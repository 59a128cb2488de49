"""kg: folders of documents into a temporal knowledge graph in Neo4j, searched safely.

::

    from kg import KnowledgeGraph

    with KnowledgeGraph() as graph:
        graph.ingest("docs/")
        print(graph.search("Who owns AuthService?").entities)

This package root is the public surface: the twins, the models in their signatures, the errors
and the few helpers the front ends (CLI, API, MCP) use. Everything below it is private; the
front ends import only from here, :mod:`kg.settings`, :mod:`kg.errors`, :mod:`kg.redact` and
:mod:`kg.observe`
(``tests/unit/test_layers.py``). Errors are :class:`KGError` and its subclasses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kg.answer.cited import AnswerDelta, AnswerRequest, AnswerResponse
    from kg.answer.nlquery import QueryRequest, QueryResponse
    from kg.bulk import BulkSummary, bulk_ingest
    from kg.client import (
        MODEL_VERSION,
        AsyncKnowledgeGraph,
        IngestOptions,
        KnowledgeGraph,
        ServiceFactory,
        schema_statements,
        search_service,
    )
    from kg.communities.build import CommunityBuildSummary
    from kg.cypher.admission import current_client
    from kg.errors import (
        ConfigError,
        ExtractionError,
        GraphModelError,
        KGError,
        NotFoundError,
        QueryRejected,
        QueryTimeout,
        ScopeDenied,
        StoreError,
        StoreUnavailable,
    )
    from kg.evaluate import EvalMode, EvalQuestion, EvalReport, ModeScore, SkippedLine
    from kg.graph.migrate import MigrationReport
    from kg.graph.namespaces import ForgetReport
    from kg.graph.schema import SchemaReport
    from kg.ingest import IngestSummary, Progress
    from kg.instants import AsOf
    from kg.localserver import LocalNeo4j, ServerStatus, local_server
    from kg.modes import AnswerMode, Mode
    from kg.resolve.vectors import Embedder
    from kg.scope import bound_namespaces
    from kg.search.global_models import (
        GlobalSearchRequest,
        GlobalSearchResponse,
        RoutedRequest,
        RoutedResponse,
    )
    from kg.search.models import (
        MAX_DEPTH,
        MAX_LIMIT,
        MAX_QUERY_CHARS,
        MIN_DEPTH,
        EntityDetail,
        NamespaceInfo,
        Neighborhood,
        SearchBackend,
        SearchRequest,
        SearchResponse,
        TemplateInfo,
        TemplateResult,
    )
    from kg.settings import Settings


def _homes(module: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), module)


# Where each public name lives: imported on first use, so `kg --help` and stage-only imports
# stay fast (the surface pulls in the driver and the stages; openai, instructor, faiss and
# graspologic load only when a call needs them).
_HOME = {
    **_homes("kg.client", "AsyncKnowledgeGraph IngestOptions KnowledgeGraph MODEL_VERSION "
             "ServiceFactory schema_statements search_service"),
    **_homes("kg.cypher.admission", "current_client"),
    **_homes("kg.localserver", "LocalNeo4j ServerStatus local_server"),
    **_homes("kg.ingest", "IngestSummary Progress"),
    **_homes("kg.bulk", "BulkSummary bulk_ingest"),
    **_homes("kg.graph.migrate", "MigrationReport"),
    **_homes("kg.evaluate", "EvalMode EvalQuestion EvalReport ModeScore SkippedLine"),
    **_homes("kg.graph.namespaces", "ForgetReport"),
    **_homes("kg.scope", "bound_namespaces"),
    **_homes("kg.graph.schema", "SchemaReport"),
    **_homes("kg.communities.build", "CommunityBuildSummary"),
    **_homes("kg.resolve.vectors", "Embedder"),
    **_homes("kg.instants", "AsOf"),
    **_homes("kg.modes", "AnswerMode Mode"),
    **_homes("kg.settings", "Settings"),
    **_homes("kg.errors", "ConfigError ExtractionError GraphModelError KGError NotFoundError "
             "QueryRejected QueryTimeout ScopeDenied StoreError StoreUnavailable"),
    **_homes("kg.search.models", "EntityDetail MAX_DEPTH MAX_LIMIT MAX_QUERY_CHARS MIN_DEPTH "
             "NamespaceInfo Neighborhood SearchBackend SearchRequest SearchResponse "
             "TemplateInfo TemplateResult"),
    **_homes("kg.search.global_models", "GlobalSearchRequest GlobalSearchResponse "
             "RoutedRequest RoutedResponse"),
    **_homes("kg.answer.cited", "AnswerDelta AnswerRequest AnswerResponse"),
    **_homes("kg.answer.nlquery", "QueryRequest QueryResponse"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'kg' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "MAX_DEPTH",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MIN_DEPTH",
    "MODEL_VERSION",
    "AnswerDelta",
    "AnswerMode",
    "AnswerRequest",
    "AnswerResponse",
    "AsOf",
    "AsyncKnowledgeGraph",
    "BulkSummary",
    "CommunityBuildSummary",
    "ConfigError",
    "Embedder",
    "EntityDetail",
    "EvalMode",
    "EvalQuestion",
    "EvalReport",
    "ExtractionError",
    "ForgetReport",
    "GlobalSearchRequest",
    "GlobalSearchResponse",
    "GraphModelError",
    "IngestOptions",
    "IngestSummary",
    "KGError",
    "KnowledgeGraph",
    "LocalNeo4j",
    "MigrationReport",
    "Mode",
    "ModeScore",
    "NamespaceInfo",
    "Neighborhood",
    "NotFoundError",
    "Progress",
    "QueryRejected",
    "QueryRequest",
    "QueryResponse",
    "QueryTimeout",
    "RoutedRequest",
    "RoutedResponse",
    "SchemaReport",
    "ScopeDenied",
    "SearchBackend",
    "SearchRequest",
    "SearchResponse",
    "ServerStatus",
    "ServiceFactory",
    "Settings",
    "SkippedLine",
    "StoreError",
    "StoreUnavailable",
    "TemplateInfo",
    "TemplateResult",
    "bound_namespaces",
    "bulk_ingest",
    "current_client",
    "local_server",
    "schema_statements",
    "search_service",
]
