"""``kg ask "question"``: an answer from the graph's retrieved context, with citations.

``--json`` prints exactly the body ``POST /answer`` returns. On a terminal (or with
``--stream``) the answer is printed as the LLM writes it, then its sources.
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
    from kg import AnswerRequest, AnswerResponse, AsyncKnowledgeGraph, QueryRejected, Settings

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
    stream: Annotated[bool | None, Parameter(name="--stream", negative="--no-stream")] = None,
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
    stream
        Print the answer as the LLM writes it (default: on a terminal, without --json); its
        citations are checked at the end, and never re-asked.
    """
    from kg import Settings

    raw = {"question": question, "mode": mode, "depth": depth, "as_of": as_of, "limit": limit,
           "namespaces": namespace}  # fmt: skip
    streamed = (not json_output and console.is_terminal) if stream is None else stream
    return run_and_print(
        lambda: asyncio.run(_ask(Settings(), raw, streamed=streamed and not json_output)),
        json_output=json_output,
        show=_print_sources if streamed else _print,
        invalid=_invalid,
    )


async def _ask(settings: Settings, raw: dict[str, object], *, streamed: bool) -> AnswerResponse:
    from kg import AnswerRequest, AsyncKnowledgeGraph

    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.check_model()
        request = validated(AnswerRequest, raw, "ask")
        if streamed:
            return await _streamed(graph, request)
        return await graph.answer_request(request)


async def _streamed(graph: AsyncKnowledgeGraph, request: AnswerRequest) -> AnswerResponse:
    """Print the answer's text as it comes; the response, for its sources."""
    from kg import AnswerDelta

    printed = False
    try:
        async for event in graph.answer_stream_request(request):
            if isinstance(event, AnswerDelta):
                console.print(inert(event.text, "bold", lines=True), end="", soft_wrap=True)
                printed = True
                continue
            if not printed:  # no LLM call (nothing retrieved): the whole answer at once
                style = "yellow" if event.insufficient_context else "bold"
                console.print(inert(event.answer, style, lines=True), end="")
            return event
    finally:
        console.print()  # the text's line ends, before the sources or an error
    raise RuntimeError("the answer stream ended without an answer")  # not reached


def _invalid(exc: QueryRejected) -> int:
    for error in exc.errors or [{"field": "question", "reason": str(exc)}]:
        field = error["field"]
        name = field if field == "question" else "--" + field.replace("_", "-")
        err_console.print(labelled(f"invalid {name}:", "bold red", error["reason"]))
    return EXIT_INVALID


def _print(response: AnswerResponse) -> None:
    style = "yellow" if response.insufficient_context else "bold"
    console.print(inert(response.answer, style, lines=True))
    _print_sources(response)


def _print_sources(response: AnswerResponse) -> None:
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
