"""POST /search/local: the endpoint agents call."""

from __future__ import annotations

from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from api.routes._docs import SECURED, errors
from kg import AsyncKnowledgeGraph, SearchRequest, SearchResponse


class SearchController(Controller):
    path = "/search"
    tags = ["search"]  # noqa: RUF012  (Litestar reads these as class attributes)
    security = SECURED

    @post(
        "/local",
        operation_id="localSearch",
        summary="Local graph search",
        description=(
            "Matches the question to entities (vector + fulltext), expands 1..3 hops through a "
            "read-only template, ranks, and returns entities, relations with validity, and the "
            "chunks that support them."
        ),
        status_code=200,
        responses=errors(408, 413, 415, 422, 429, 504),
    )
    async def local_search(
        self, data: JSONBody[SearchRequest], graph: NamedDependency[AsyncKnowledgeGraph]
    ) -> SearchResponse:
        return await graph.search_request(data)
