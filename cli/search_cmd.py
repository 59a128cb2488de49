"""``kg search "question"``: guarded local search from the terminal.

``--json`` prints exactly what REST returns for the same request: with a local mode (text,
vector, graph, hybrid) the body of ``POST /search/local`` (``SearchResponse``); with ``auto``
(the default) or ``global`` the body of ``POST /search`` (``RoutedResponse``: the mode that
ran, why, and its result).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from cyclopts import Parameter
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from cli.output import inert, labelled
from kg import (
    AsyncKnowledgeGraph,
    Mode,
    QueryRejected,
    SearchRequest,
    SearchResponse,
    Settings,
)
from kg.errors import validation_errors

console = Console()
err_console = Console(stderr=True)

EXIT_INVALID = 2


def search(
    query: str,
    /,
    *,
    mode: Mode = "auto",
    depth: int = 2,
    limit: int = 20,
    as_of: str | None = None,
    relation_type: Annotated[
        list[str] | None, Parameter(name="--relation-type", consume_multiple=False)
    ] = None,
    json_output: Annotated[bool, Parameter(name="--json", negative=())] = False,
) -> int:
    """Answer a question from the graph: entities, relations and the chunks behind them.

    Parameters
    ----------
    query
        The question, in plain words.
    mode
        auto (default): the router picks text, hybrid, graph or global and says why; global:
        community reports ranked for the question (docs/communities.md).
        text: chunks by words (BM25); vector: chunks by meaning; graph: entities, relations
        and the chunks linked to them; hybrid: the three fused (docs/search.md).
    depth
        Hops to expand from the matched entities, 1..3.
    limit
        Most entities, relations and chunks to return (each).
    as_of
        Count only relations valid at this date or datetime (ISO 8601); default now.
    relation_type
        Only expand through this relationship type; repeat for several.
    json_output
        Print the response as JSON (the REST endpoint's body).
    """
    if mode in ("global", "auto"):
        from cli.routed_cmd import routed  # global search and the router

        return routed(query, mode, depth, limit, as_of, relation_type, json_output)
    raw = {
        "query": query,
        "mode": mode,
        "depth": depth,
        "limit": limit,
        "as_of": as_of,
        "relation_types": relation_type,
    }
    try:
        request = SearchRequest.model_validate(raw)
    except ValidationError as exc:
        return _invalid(validation_errors(exc))
    settings = Settings()
    try:
        response = asyncio.run(_search(settings, request))
    except QueryRejected as exc:
        return _invalid(exc.errors or [{"field": "request", "reason": str(exc)}])
    if json_output:
        print(response.model_dump_json())  # noqa: T201 - the machine-readable output
    else:
        _print(response)
    return 0


async def _search(settings: Settings, request: SearchRequest) -> SearchResponse:
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        return await graph.search_request(request)


def _invalid(errors: list[dict[str, str]]) -> int:
    for error in errors:
        name = "--relation-type" if error["field"].startswith("relation_types") else None
        name = name or "--" + error["field"].replace("_", "-")
        if error["field"] == "query":
            name = "query"
        err_console.print(labelled(f"invalid {name}:", "bold red", error["reason"]))
    return EXIT_INVALID


def _print(response: SearchResponse) -> None:
    if not (response.entities or response.relations or response.chunks):
        console.print("nothing found")
        return
    if response.entities:
        table = Table(title="Entities", title_justify="left")
        for column in ("score", "hops", "name", "type", "id"):
            table.add_column(column, justify="right" if column in ("score", "hops") else "left")
        for e in response.entities:
            table.add_row(f"{e.score:.3f}", str(e.hops), inert(e.name), inert(e.type), inert(e.id))
        console.print(table)
    if response.relations:
        table = Table(title="Relations", title_justify="left")
        for column in ("score", "hops", "source", "type", "target", "valid"):
            table.add_column(column, justify="right" if column in ("score", "hops") else "left")
        for r in response.relations:
            valid = f"{(r.valid_from or '')[:10]}..{(r.valid_to or '')[:10]}"
            table.add_row(
                f"{r.score:.3f}",
                str(r.hops),
                inert(r.source_name),
                inert(r.type),
                inert(r.target_name),
                inert(valid),
            )
        console.print(table)
    if response.chunks:
        table = Table(title="Sources", title_justify="left")
        for column in ("score", "document", "text"):
            table.add_column(column, justify="right" if column == "score" else "left")
        for c in response.chunks:
            text = " ".join(c.text.split())
            table.add_row(f"{c.score:.3f}", inert(c.document_path), inert(text[:160]))
        console.print(table)
    console.print(inert(f"{response.template}, {response.took_ms:.0f} ms", "dim"))
