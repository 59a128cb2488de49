"""GET /namespaces: the namespaces (document sources) with what each holds."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency

from api.routes._docs import SECURED, errors
from kg import AsyncKnowledgeGraph, NamespaceInfo


class NamespaceController(Controller):
    path = "/namespaces"
    tags = ["namespaces"]  # noqa: RUF012
    security = SECURED

    @get(
        "/",
        operation_id="listNamespaces",
        summary="List namespaces",
        description="Every namespace (a `kg ingest --namespace` name, or an ingested folder's "
        "absolute path) with its document, chunk, fact and entity counts; a scoped key sees "
        "its own namespaces only.",
        responses=errors(429, 504),
    )
    async def list_namespaces(
        self, graph: NamedDependency[AsyncKnowledgeGraph]
    ) -> list[NamespaceInfo]:
        return await graph.namespaces()
