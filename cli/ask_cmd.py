"""``kg ask "question"``: an answer from the graph's retrieved context, with citations.

``--json`` prints exactly the body ``POST /answer`` returns.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

from cyclopts import Parameter
from rich.console import Console
from rich.text import Text

from cli.output import inert, labelled, run_and_print, validated
from kg import AnswerMode

if TYPE_CHECKING:  # the rest loads when the command runs: `kg ask --help` stays fast
    from kg import AnswerResponse, QueryRejected, Settings

console = Console()
err_console = Console(stderr=True)

EXIT_INVALID = 2


def ask(
    question: str,
    /,
    *,
    mode: AnswerMode = "auto",
    depth: int = 2,
    as_of: str | None = None,
    limit: int = 10,
    namespace: Annotated[
        list[str] | None, Parameter(name="--namespace", consume_multiple=False)
    ] = None,
    json_output: Annotated[bool, Parameter(name="--json", negative=())] = False,
) -> int:
    """Answer a question from the graph, citing the chunks and relations it rests on.

    Uses the LLM of KG_ANSWER__* (unset fields: KG_LLM__*). When the retrieved context
    does not answer the question, says so instead of guessing.

    Parameters
    ----------
    question
        The question, in plain words.
    mode
        Retrieval mode; auto lets the router pick, as kg search does (docs/search.md).
    depth
        Hops to expand from the matched entities, 1..3.
    limit
        Most chunks and relations of context (each).
    as_of
        Answer as of this date or datetime (ISO 8601).
    namespace
        Only this namespace (a `kg ingest --namespace` name, or an ingested folder's absolute
        path; `kg namespaces` lists them); repeat for several.
    json_output
        Print the response as JSON (the REST endpoint's body).
    """
    from kg import Settings

    raw = {"question": question, "mode": mode, "depth": depth, "as_of": as_of, "limit": limit,
           "namespaces": namespace}  # fmt: skip
    return run_and_print(
        lambda: asyncio.run(_ask(Settings(), raw)),
        json_output=json_output,
        show=_print,
        invalid=_invalid,
    )


async def _ask(settings: Settings, raw: dict[str, object]) -> AnswerResponse:
    from kg import AnswerRequest, AsyncKnowledgeGraph

    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        return await graph.answer_request(validated(AnswerRequest, raw, "ask"))


def _invalid(exc: QueryRejected) -> int:
    for error in exc.errors or [{"field": "question", "reason": str(exc)}]:
        field = error["field"]
        name = field if field == "question" else "--" + field.replace("_", "-")
        err_console.print(labelled(f"invalid {name}:", "bold red", error["reason"]))
    return EXIT_INVALID


def _print(response: AnswerResponse) -> None:
    style = "yellow" if response.insufficient_context else "bold"
    console.print(inert(response.answer, style, lines=True))
    chunks = {c.id: c for c in response.context.chunks}
    relations = {r.id: r for r in response.context.relations}
    for n, cite in enumerate(response.citations, 1):
        if cite.chunk_id is not None and cite.chunk_id in chunks:
            where = f"{chunks[cite.chunk_id].document_path} ({cite.chunk_id})"
        elif cite.relation_id is not None and cite.relation_id in relations:
            rel = relations[cite.relation_id]
            where = f"{rel.source_name} {rel.type} {rel.target_name}"
        else:
            where = cite.chunk_id or cite.relation_id or ""
        quote = f' "{cite.quote}"' if cite.quote else ""
        console.print(Text.assemble(f"  [{n}] ", inert(f"{where}{quote}")))
    usage = response.usage
    console.print(
        f"[dim]{response.mode}, confidence {response.confidence:.2f}, {usage.calls} LLM "
        f"call(s), {usage.total_tokens} tokens, {response.took_ms:.0f} ms[/]"
    )
