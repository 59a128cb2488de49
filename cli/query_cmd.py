"""``kg query "question"``: the question as one named template, chosen by the LLM.

Prints the template and the parameters it ran with (reusable with ``POST /templates/{name}``)
and its rows; ``--json`` prints exactly the body ``POST /query`` returns.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console

from cli.output import run_and_print
from kg import AsyncKnowledgeGraph, QueryRejected, Settings
from kg.nlquery import QueryResponse

console = Console()
err_console = Console(stderr=True)

EXIT_INVALID = 2
_SHOWN_ROWS = 50


def query(
    question: str,
    /,
    *,
    json_output: Annotated[bool, Parameter(name="--json", negative=())] = False,
) -> int:
    """Run a question as one of the read-only templates; the LLM never writes Cypher.

    Uses the LLM of KG_ANSWER__* (unset fields: KG_EXTRACT__*). A question no template fits
    exits with 2 and the list of templates.

    Parameters
    ----------
    question
        The question, in plain words (e.g. "Who owned AuthService in 2023?").
    json_output
        Print the response as JSON (the REST endpoint's body).
    """
    return run_and_print(
        lambda: asyncio.run(_query(Settings(), question)),
        json_output=json_output,
        show=_print,
        invalid=_rejected,
    )


def _rejected(exc: QueryRejected) -> int:
    err_console.print(f"[bold red]rejected:[/] {exc}", highlight=False)
    for error in exc.errors:
        err_console.print(f"  {error['field']}: {error['reason']}", highlight=False)
    return EXIT_INVALID


async def _query(settings: Settings, question: str) -> QueryResponse:
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        return await graph.query(question)


def _print(response: QueryResponse) -> None:
    console.print(f"[bold]{response.template}[/] {json.dumps(response.parameters)}")
    for entity in response.entities:
        console.print(
            f"  {entity.parameter}: {entity.given!r} -> {entity.name} ({entity.id})",
            highlight=False,
        )
    rows = response.result.rows
    if not rows:
        console.print("no rows")
    for row in rows[:_SHOWN_ROWS]:
        console.print(json.dumps(row, default=str, ensure_ascii=False), highlight=False)
    more = f", {len(rows) - _SHOWN_ROWS} more (--json)" if len(rows) > _SHOWN_ROWS else ""
    console.print(
        f"[dim]{len(rows)} row(s){more}, {response.usage.calls} LLM call(s), "
        f"{response.usage.total_tokens} tokens, {response.took_ms:.0f} ms[/]"
    )
