"""Search in any mode, ``auto`` by default: the router picks, the chosen search runs.

For ``auto`` the question's phrases are linked to entity names and aliases through the
read-only ``name_links`` template, then :func:`kg.search.router.route` decides. When the router
picks global search and the graph has no community reports yet, graph search runs instead and the
reason says so.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from kg.errors import QueryRejected, only_sent
from kg.llm import LLMCallError, open_llm
from kg.search.global_models import (
    MAX_GLOBAL_LIMIT,
    GlobalSearchRequest,
    RoutedRequest,
    RoutedResponse,
)
from kg.search.models import Mode, SearchRequest, SearchResponse, TemplateResult
from kg.search.router import link_by_names, phrases, route
from kg.search.signals.communities import global_search
from kg.settings import Settings

__all__ = ["RouteChoice", "Searcher", "link", "routed_search"]

ROUTER_PROMPT = """\
Pick how to search a knowledge graph for the question. `global`: the question is about the
corpus as a whole (main themes, overall picture, all of something); `graph`: it is about
named entities and their relations; `vector`: it asks for a specific passage or fact that
names no entity. Give a one-sentence reason.
"""


class RouteChoice(BaseModel):
    """The optional LLM classifier's answer."""

    mode: Literal["vector", "graph", "global"]
    reason: str = Field(min_length=1, max_length=300)


class Searcher(Protocol):
    """What routed search needs: guarded template runs and local search."""

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult: ...

    async def local_search(self, request: SearchRequest) -> SearchResponse: ...


async def link(searcher: Searcher, question: str) -> list[str]:
    """Entities (canonical names) whose name or an alias occurs in the question as words."""
    grams = phrases(question)  # bounded: every phrase fits the template
    if not grams:
        return []
    try:
        result = await searcher.run_template("name_links", {"phrases": grams})
    except QueryRejected as exc:
        raise only_sent(exc, RoutedRequest.model_fields, "routed search") from exc
    canonical: dict[str, str] = {}
    for row in result.rows:
        for form in [row["name"], *row.get("aliases", [])]:
            canonical.setdefault(str(form), str(row["name"]))
    return sorted({canonical[f] for f in link_by_names(question, canonical)})


async def routed_search(
    searcher: Searcher, settings: Settings, request: RoutedRequest
) -> RoutedResponse:
    """Run ``request`` in its mode; ``auto`` asks the router first."""
    linked: list[str] = []
    mode: Mode
    if request.mode == "auto":
        linked = await link(searcher, request.query)
        decision = route(
            request.query,
            linked=linked,
            relation_filter=bool(request.relation_types),
            as_of=request.as_of is not None,
        )
        mode, reason = decision.mode, decision.reason
        if settings.communities.router_llm:
            choice = await _llm_route(settings, request.query, linked)
            if choice is not None:
                mode, reason = choice.mode, f"LLM classifier: {choice.reason}"
    else:
        mode, reason = request.mode, "requested"
    if mode == "global":
        found = await global_search(
            searcher,
            settings,
            GlobalSearchRequest(
                query=request.query,
                level=request.level,
                limit=min(request.limit, MAX_GLOBAL_LIMIT),
            ),
        )
        if found.reports or request.mode == "global":
            return RoutedResponse(
                requested=request.mode,
                mode="global",
                reason=reason,
                linked=linked,
                global_search=found,
            )
        mode, reason = "graph", f"{reason}; no community reports yet, so graph search ran"
    local = SearchRequest.model_validate(
        {
            "query": request.query,
            "mode": mode,
            "depth": request.depth,
            "limit": request.limit,
            "as_of": request.as_of,
            "relation_types": request.relation_types,
        }
    )
    return RoutedResponse(
        requested=request.mode,
        mode=local.mode,
        reason=reason,
        linked=linked,
        local=await searcher.local_search(local),
    )


async def _llm_route(settings: Settings, query: str, linked: list[str]) -> RouteChoice | None:
    """One bounded call (at most one re-ask); None lets the rules decide."""
    names = ", ".join(linked[:20]) or "none"
    messages = [
        {"role": "system", "content": ROUTER_PROMPT},
        {"role": "user", "content": "Question: {{ q }}\nEntities it names: {{ names }}"},
    ]
    try:
        async with open_llm(settings, "router") as client:
            reply = await client.create(
                RouteChoice,
                messages,
                reask=1,
                context={"q": query, "names": names},
                temperature=0,
            )
            return reply.value
    except LLMCallError:
        return None
