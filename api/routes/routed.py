"""POST /search (every mode, the router by default) and POST /search/global."""

from __future__ import annotations

from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from api.routes._docs import SECURED, errors
from kg import (
    AsyncKnowledgeGraph,
    GlobalSearchRequest,
    GlobalSearchResponse,
    RoutedRequest,
    RoutedResponse,
)


class RoutedSearchController(Controller):
    path = "/search"
    tags = ["search"]  # noqa: RUF012  (Litestar reads these as class attributes)
    security = SECURED

    @post(
        "/",
        operation_id="search",
        summary="Search in any mode (auto by default)",
        description=(
            "`mode=auto` (the default) lets the router pick text, hybrid, graph or global search "
            "from the question (entities it names, aggregation words, a relation filter or "
            "as_of); `mode` in the response is what ran and `reason` says why. `local` holds "
            "a local result (the body of /search/local), `global_search` a global one."
        ),
        status_code=200,
        responses=errors(408, 413, 415, 422, 429, 504),
    )
    async def search(
        self,
        data: JSONBody[RoutedRequest],
        graph: NamedDependency[AsyncKnowledgeGraph],
    ) -> RoutedResponse:
        return await graph.routed_search(data)

    @post(
        "/global",
        operation_id="globalSearch",
        summary="Global search over community reports",
        description=(
            "Questions about the whole corpus: the community reports of `level` (from `kg "
            "communities build`) ranked for the question, each with its top facts and their "
            "relation and chunk ids. With KG_COMMUNITIES__GLOBAL_ANSWER=llm they are "
            "map-reduced into an answer with citations, within a per-request call and token "
            "budget."
        ),
        status_code=200,
        responses=errors(408, 413, 415, 422, 429, 504),
    )
    async def global_search(
        self,
        data: JSONBody[GlobalSearchRequest],
        graph: NamedDependency[AsyncKnowledgeGraph],
    ) -> GlobalSearchResponse:
        return await graph.global_search_request(data)
