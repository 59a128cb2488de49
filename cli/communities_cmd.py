"""``kg communities build``: hierarchical Leiden over the entity graph, with reports."""

from __future__ import annotations

from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console

app = App(name="communities", help="Communities of entities and their reports.")


@app.command
def build(
    *,
    dry_run: Annotated[
        bool, Parameter(help="Cluster and estimate LLM calls and tokens; write nothing.")
    ] = False,
    json: Annotated[bool, Parameter(help="Print the summary as one JSON object.")] = False,
) -> int:
    """Recompute the communities of the whole graph and their reports.

    Reports are extractive unless KG_COMMUNITIES__REPORTS=llm; LLM reports are cached, so a
    rebuild of an unchanged graph makes no LLM call. Exit code 0 when done.
    """
    from cli.output import inert
    from kg import KnowledgeGraph

    console = Console(stderr=json)
    with KnowledgeGraph() as graph:
        summary = graph.build_communities(dry_run=dry_run)
    if json:
        print(summary.model_dump_json())  # noqa: T201 - the output
        return 0
    levels = ", ".join(f"level {k}: {v}" for k, v in summary.per_level.items()) or "none"
    console.print(
        f"{summary.communities} communities ({levels}) over {summary.entities} entities and "
        f"{summary.pairs} related pairs"
    )
    if dry_run:
        console.print(
            f"dry run: {summary.estimated_calls} LLM calls, ~{summary.estimated_tokens} tokens "
            f"({summary.reports_cached} reports cached); nothing written"
        )
        return 0
    console.print(
        f"reports: {summary.reports_llm} by LLM ({summary.reports_cached} cached), "
        f"{summary.reports_extractive} extractive, {summary.reports_failed} failed; "
        f"{summary.llm_calls} calls, {summary.llm_tokens} tokens; "
        f"{summary.deleted} old communities removed"
    )
    if summary.report_error:  # failed reports fell back to extractive ones: say why
        console.print(inert(f"first report failure: {summary.report_error}", "yellow"))
    if summary.stopped_by_budget:
        console.print(inert(f"budget reached: {summary.budget_reason}", "yellow"))
    console.print("timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in summary.timings.items()))
    return 0
