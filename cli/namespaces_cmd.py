"""``kg namespaces``: the namespaces (document sources) the graph holds, with their counts."""

from __future__ import annotations

import asyncio
import json as jsonlib
from typing import TYPE_CHECKING, Annotated

from cyclopts import Parameter

if TYPE_CHECKING:
    from kg import NamespaceInfo


def namespaces(
    *,
    json: Annotated[bool, Parameter(help="Print the list as JSON (GET /namespaces's body).")] = (
        False
    ),
) -> int:
    """List the namespaces (document sources) with their counts.

    A namespace is the name given to `kg ingest --namespace`, else the ingested folder's
    absolute path. `kg search --namespace NAME` keeps a search to it; `kg forget --namespace
    NAME` removes it.

    Parameters
    ----------
    json
        Print the list as JSON (GET /namespaces's body).
    """
    from rich.console import Console
    from rich.table import Table

    from cli.output import inert

    found = asyncio.run(_namespaces())
    if json:
        print(jsonlib.dumps([n.model_dump() for n in found]))  # noqa: T201 - the output
        return 0
    console = Console()
    if not found:
        console.print("no namespaces: the graph holds no documents")
        return 0
    table = Table(title="Namespaces", title_justify="left")
    for column in ("namespace", "documents", "chunks", "facts", "entities"):
        table.add_column(column, justify="left" if column == "namespace" else "right")
    for n in found:
        table.add_row(
            inert(n.namespace),
            str(n.documents),
            str(n.chunks),
            str(n.facts),
            str(n.entities),
        )
    console.print(table)
    return 0


async def _namespaces() -> list[NamespaceInfo]:
    """On the async twin, as `kg search` reads: one driver and one connection, no portal
    thread (the sync twin opens its write driver too)."""
    from kg import AsyncKnowledgeGraph

    async with AsyncKnowledgeGraph() as graph:
        await graph.check_model()
        return await graph.namespaces()
