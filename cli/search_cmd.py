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
from rich.console import Console

from cli.local_search import print_local, run_local
from cli.output import labelled, run_and_print, validated
from kg import Mode, QueryRejected, SearchRequest, SearchResponse, Settings

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

    def run() -> SearchResponse:
        request = validated(SearchRequest, raw, "search")
        return asyncio.run(run_local(Settings(), request))

    return run_and_print(run, json_output=json_output, show=print_local, invalid=_rejected)


def _rejected(exc: QueryRejected) -> int:
    return _invalid(exc.errors or [{"field": "request", "reason": str(exc)}])


def _invalid(errors: list[dict[str, str]]) -> int:
    for error in errors:
        name = "--relation-type" if error["field"].startswith("relation_types") else None
        name = name or "--" + error["field"].replace("_", "-")
        if error["field"] == "query":
            name = "query"
        err_console.print(labelled(f"invalid {name}:", "bold red", error["reason"]))
    return EXIT_INVALID
