"""``kg migrate``: convert a graph written by an older kg to the current graph model."""

from __future__ import annotations

import json as jsonlib
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console


def migrate(
    *,
    check: Annotated[bool, Parameter(help="Only say which model the graph has.")] = False,
    json: Annotated[bool, Parameter(help="Print the report as one JSON object.")] = False,
) -> int:
    """Convert the graph in place to the current graph model (safe to run again).

    Documents are marked for rewriting: run the same `kg ingest` commands afterwards and each
    document is written again in the new form. Exit code 0 when the graph is current.
    """
    from cli.output import inert
    from kg import MODEL_VERSION, KnowledgeGraph

    console = Console(stderr=json)
    with KnowledgeGraph() as graph:
        if check:
            found = graph.migrate(check=True).from_version
            console.print(f"graph model: {found or 'empty'}; this kg writes model {MODEL_VERSION}")
            return 0 if found in (None, MODEL_VERSION) else 2
        report = graph.migrate()
    if json:
        print(jsonlib.dumps(report.to_dict(), sort_keys=True))  # noqa: T201 - the output
    else:
        console.print(
            inert(  # the notes may name relationship types found in the graph
                f"graph model {report.from_version or 'empty'} -> {report.to_version}: "
                f"{report.predicates} predicates catalogued, {report.relations_retyped} relations "
                f"moved to another type, {report.documents_reset} documents to re-ingest, "
                f"{report.documents_recorded} given an extraction record"
                + (f" ({'; '.join(report.notes)})" if report.notes else "")
            )
        )
    return 0
