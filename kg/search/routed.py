"""Search in any mode, ``auto`` by default: the router picks, the chosen search runs.

For ``auto`` the question's phrases that could name anything (the search service's linking
filter) are linked to entity names and aliases through the read-only ``name_links`` template,
then :func:`kg.search.router.route` decides
(:func:`decide`; answers use the same decision, so ``auto`` means one thing everywhere). When
the router picks global search and the graph has no community reports yet, hybrid search runs
instead and the reason says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import Field

from kg.basemodel import Model
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

__all__ = ["Decision", "RouteChoice", "Searcher", "decide", "link", "routed_search"]

ROUTER_PROMPT = """\
Pick how to search a knowledge graph for the question. `global`: the question is about the
corpus as a whole (main themes, overall picture, all of something); `graph`: it is only about
relations between named entities; `text`: it quotes exact words to find; `hybrid`: anything
else, including how-to and "what is" questions and questions about named entities (text,
vector and graph search fused). Give a one-sentence reason.
"""


class RouteChoice(Model):
    """The optional LLM classifier's answer."""

    mode: Literal["text", "vector", "graph", "hybrid", "global"]
    reason: str = Field(min_length=1, max_length=300)


@dataclass(frozen=True)
class Decision:
    """What ``auto`` runs for one question, why, and the entities the question names."""

    mode: Literal["text", "vector", "graph", "hybrid", "global"]
    reason: str
    linked: list[str]


class Searcher(Protocol):
    """What routed search needs: guarded template runs and local search."""

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult: ...

    async def local_search(self, request: SearchRequest) -> SearchResponse: ...


async def link(searcher: Searcher, question: str) -> list[str]:
    """Entities (canonical names) whose name or an alias occurs in the question as words."""
    grams = phrases(question)  # bounded: every phrase fits the template
    # The search service knows which phrases could name anything (kg.search.names): on the
    # MuSiQue graph ~3 of ~44 a question, and asking about the rest was ~9 ms of `auto`.
    narrow = getattr(searcher, "naming_phrases", None)
    if narrow is not None and grams:
        grams = await narrow(grams)
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


async def decide(
    searcher: Searcher,
    settings: Settings,
    query: str,
    *,
    relation_filter: bool = False,
    as_of: bool = False,
) -> Decision:
    """The router's choice for ``query`` (the rules, or the optional LLM classifier). A how-to
    or "what is" question stays on hybrid and the classifier is not asked: it needs text hits."""
    linked = await link(searcher, query)
    decision = route(query, linked=linked, relation_filter=relation_filter, as_of=as_of)
    if settings.communities.router_llm and not decision.keeps_text:
        choice = await _llm_route(settings, query, linked)
        if choice is not None:
            return Decision(choice.mode, f"LLM classifier: {choice.reason}", linked)
    return Decision(decision.mode, decision.reason, linked)


async def routed_search(
    searcher: Searcher, settings: Settings, request: RoutedRequest
) -> RoutedResponse:
    """Run ``request`` in its mode; ``auto`` asks the router first."""
    linked: list[str] = []
    mode: Mode
    if request.mode == "auto":
        decision = await decide(
            searcher,
            settings,
            request.query,
            relation_filter=bool(request.relation_types),
            as_of=request.as_of is not None,
        )
        mode, reason, linked = decision.mode, decision.reason, decision.linked
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
        mode, reason = "hybrid", f"{reason}; no community reports yet, so hybrid search ran"
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
