"""Local search as every command shows it: run through the library surface, print as tables.

``kg search`` (local modes), the router's local branch (cli/routed_cmd.py) and ``kg example``
all use it, so neither command imports the other.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cli.output import inert
from kg import AsyncKnowledgeGraph, SearchRequest, SearchResponse, Settings

console = Console()


async def run_local(settings: Settings, request: SearchRequest) -> SearchResponse:
    """One local search on a graph opened for it (the model version checked first)."""
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        return await graph.search_request(request)


def print_local(response: SearchResponse) -> None:
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
