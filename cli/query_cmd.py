"""``kg query "question"``: the question as one named template, chosen by the LLM.

Prints the template and the parameters it ran with (reusable with ``POST /templates/{name}``)
and its rows; ``--json`` prints exactly the body ``POST /query`` returns.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

from cyclopts import Parameter
from rich.console import Console
from rich.text import Text

from cli.output import inert, labelled, run_and_print

if TYPE_CHECKING:  # the rest loads when the command runs: `kg query --help` stays fast
    from kg import QueryRejected, QueryResponse, Settings

console = Console()
err_console = Console(stderr=True)

EXIT_INVALID = 2
_SHOWN_ROWS = 50


def query(
    question: str,
    /,
    *,
    namespace: Annotated[
        list[str] | None, Parameter(name="--namespace", consume_multiple=False)
    ] = None,
    json_output: Annotated[bool, Parameter(name="--json", negative=())] = False,
) -> int:
    """Run a question as one of the read-only templates; the LLM never writes Cypher.

    Uses the LLM of KG_ANSWER__* (unset fields: KG_LLM__*). A question no template fits
    exits with 2 and the list of templates.

    Parameters
    ----------
    question
        The question, in plain words (e.g. "Who owned AuthService in 2023?").
    namespace
        Only this namespace (a `kg ingest --namespace` name, or an ingested folder's absolute
        path; `kg namespaces` lists them); repeat for several.
    json_output
        Print the response as JSON (the REST endpoint's body).
    """
    from kg import Settings

    return run_and_print(
        lambda: asyncio.run(_query(Settings(), question, namespace)),
        json_output=json_output,
        show=_print,
        invalid=_rejected,
    )


def _rejected(exc: QueryRejected) -> int:
    err_console.print(labelled("rejected:", "bold red", exc))
    for error in exc.errors:
        err_console.print(Text.assemble("  ", inert(f"{error['field']}: {error['reason']}")))
    return EXIT_INVALID


async def _query(settings: Settings, question: str, namespaces: list[str] | None) -> QueryResponse:
    from kg import AsyncKnowledgeGraph

    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        return await graph.query(question, namespaces=namespaces)


def _print(response: QueryResponse) -> None:
    parameters = json.dumps(response.parameters, ensure_ascii=False)
    console.print(Text.assemble(inert(response.template, "bold"), " ", inert(parameters)))
    for entity in response.entities:
        given = f"{entity.given!r} -> {entity.name} ({entity.id})"
        console.print(Text.assemble("  ", inert(f"{entity.parameter}: {given}")))
    rows = response.result.rows
    if not rows:
        console.print("no rows")
    for row in rows[:_SHOWN_ROWS]:
        console.print(inert(json.dumps(row, default=str, ensure_ascii=False)))
    more = f", {len(rows) - _SHOWN_ROWS} more (--json)" if len(rows) > _SHOWN_ROWS else ""
    console.print(
        f"[dim]{len(rows)} row(s){more}, {response.usage.calls} LLM call(s), "
        f"{response.usage.total_tokens} tokens, {response.took_ms:.0f} ms[/]"
    )
