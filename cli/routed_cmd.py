"""``kg search`` in every mode: through the library's routed search, as ``POST /search``.

``--json`` prints ``RoutedResponse.model_dump_json()``, the body ``POST /search`` returns:
``mode`` (what ran), ``reason`` (why: the router's rule, or ``requested``), and ``local`` or
``global_search``.
"""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.local_search import print_local
from cli.output import inert, labelled, run_and_print, validated
from kg import (
    AsyncKnowledgeGraph,
    GlobalSearchResponse,
    QueryRejected,
    RoutedRequest,
    RoutedResponse,
    Settings,
)

console = Console()
err_console = Console(stderr=True)

EXIT_INVALID = 2


def routed(
    query: str,
    mode: str,
    depth: int,
    limit: int,
    as_of: str | None,
    relation_type: list[str] | None,
    json_output: bool,
    namespace: list[str] | None = None,
) -> int:
    """Validate, search through the library surface, print; the exit code."""
    raw = {"query": query, "mode": mode, "depth": depth, "limit": limit, "as_of": as_of,
           "relation_types": relation_type, "namespaces": namespace}  # fmt: skip

    def run() -> RoutedResponse:
        request = validated(RoutedRequest, raw, "search")
        return asyncio.run(_search(Settings(), request))

    return run_and_print(run, json_output=json_output, show=_print, invalid=_rejected)


def _rejected(exc: QueryRejected) -> int:
    return _invalid(exc.errors or [{"field": "request", "reason": str(exc)}])


def _print(response: RoutedResponse) -> None:
    console.print(
        Text.assemble(
            ("mode:", "bold"), " ", inert(response.mode), " ", inert(f"({response.reason})", "dim")
        )
    )
    if response.global_search is not None:
        _print_global(response.global_search)
    elif response.local is not None:
        print_local(response.local)


async def _search(settings: Settings, request: RoutedRequest) -> RoutedResponse:
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        return await graph.routed_search(request)


def _invalid(errors: list[dict[str, str]]) -> int:
    for error in errors:
        field = error["field"]
        if field == "query":
            name = "query"
        elif field.startswith("relation_types"):
            name = "--relation-type"
        elif field.startswith("namespaces"):
            name = "--namespace"
        else:
            name = "--" + field.replace("_", "-")
        err_console.print(labelled(f"invalid {name}:", "bold red", error["reason"]))
    return EXIT_INVALID


def _print_global(response: GlobalSearchResponse) -> None:
    for note in response.notes:
        console.print(inert(note, "yellow"))
    if response.answer:
        console.print(labelled("answer:", "bold", inert(response.answer, lines=True)))
        console.print(inert("cites: " + ", ".join(response.citations), "dim"))
    if response.reports:
        table = Table(title=f"Community reports, level {response.level}", title_justify="left")
        for column in ("score", "rank", "title", "top facts [citations]"):
            table.add_column(column, justify="right" if column in ("score", "rank") else "left")
        for r in response.reports:
            facts = "\n".join(f"{f.summary} [{', '.join(f.citations)}]" for f in r.findings[:3])
            title = f"{r.title}\n{r.id}"
            table.add_row(
                f"{r.score:.3f}",
                f"{r.rank:.1f}",
                inert(title, lines=True),
                inert(facts, lines=True),
            )
        console.print(table)
    calls = f", {response.llm_calls} LLM calls" if response.llm_calls else ""
    console.print(f"[dim]global, {response.took_ms:.0f} ms{calls}[/]")
