"""``kg forget --namespace N``: remove one namespace (document source) from the graph."""

from __future__ import annotations

import json as jsonlib
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console


def forget(
    *,
    namespace: Annotated[str, Parameter(name="--namespace")],
    json: Annotated[bool, Parameter(help="Print the report as one JSON object.")] = False,
) -> int:
    """Remove a namespace and what only it supported (safe to run again).

    Its documents, chunks, the facts only it supported, and the entities left with no mention
    and no fact go; other namespaces keep everything of theirs. Community reports built from
    the namespace go too: run `kg communities build` again afterwards.

    Parameters
    ----------
    namespace
        The `kg ingest --namespace` name, or the ingested folder's absolute path, as
        `kg namespaces` lists it.
    json
        Print the report as one JSON object.
    """
    from cli.output import inert
    from kg import KnowledgeGraph

    console = Console(stderr=json)
    with KnowledgeGraph() as graph:
        report = graph.forget(namespace)
    if json:
        print(jsonlib.dumps(report.to_dict(), sort_keys=True))  # noqa: T201 - the output
    else:
        console.print(
            inert(  # the namespace is the user's own text
                f"forgot {report.namespace!r}: {report.documents} documents, {report.chunks} "
                f"chunks, {report.facts_removed} facts ({report.facts_kept} shared facts kept), "
                f"{report.entities_removed} entities, {report.communities_removed} community "
                f"reports, {report.predicates_removed} predicates no fact uses any more"
            )
        )
    return 0
