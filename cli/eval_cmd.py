"""``kg eval QUESTIONS.jsonl``: how well each search mode finds a user's own labelled answers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from cyclopts import Parameter

EvalModeName = Literal["text", "vector", "graph", "hybrid", "auto"]


def evaluate(
    questions: Path,
    /,
    *,
    mode: Annotated[
        list[EvalModeName] | None, Parameter(name="--mode", consume_multiple=False)
    ] = None,
    depth: int = 2,
    limit: int = 10,
    json_output: Annotated[bool, Parameter(name="--json", negative=())] = False,
) -> int:
    """Score every search mode on your own labelled questions, and say which to use.

    QUESTIONS is a JSONL file, one question a line:
    {"question": "...", "gold": ["path/of/the/document.md"], "namespace": "optional"}.
    "gold" names the documents that answer it, by path (as ingested, or with the ingested
    folder in front) or id. Prints hit@1/3/5, recall@5 and MRR by document, and the median
    and p95 latency, for each mode; bad lines are reported by number and skipped.
    Exit code 0 when at least one question was scored.

    Parameters
    ----------
    questions
        The JSONL file of labelled questions.
    mode
        A mode to score (text, vector, graph, hybrid, auto); repeat for several. Default: all.
    depth
        Hops to expand from the matched entities, 1..3.
    limit
        Chunks each search returns (at least 5: hit@5 and recall@5 need them).
    json_output
        Print the report as one JSON object.
    """
    from rich.console import Console
    from rich.table import Table

    from cli.output import inert
    from kg import KnowledgeGraph

    err = Console(stderr=True, highlight=False)
    with KnowledgeGraph() as graph:
        graph.check_model()
        report = graph.evaluate(questions, modes=mode, depth=depth, limit=limit)
    if json_output:
        print(report.model_dump_json())  # noqa: T201 - the output
        return 0
    for line in report.skipped:
        err.print(f"[yellow]skipped[/] line {line.line}: {inert(line.reason)}")
    table = Table(
        title=f"Search on {report.questions} questions (by document)", title_justify="left"
    )
    for column in ("mode", "hit@1", "hit@3", "hit@5", "recall@5", "MRR", "median ms", "p95 ms"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for s in report.modes:
        name = s.mode + (f" ({s.errors} failed)" if s.errors else "")
        table.add_row(
            name,
            *(f"{v:.2f}" for v in (s.hit_at_1, s.hit_at_3, s.hit_at_5, s.recall_at_5, s.mrr)),
            f"{s.median_ms:.1f}",
            f"{s.p95_ms:.1f}",
        )
    console = Console(highlight=False)
    console.print(table)
    if report.recommended is not None:
        console.print(f"use: {report.reason}")
    return 0
