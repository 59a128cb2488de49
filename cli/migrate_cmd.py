"""``kg migrate``: convert a graph written by an older kg to the current graph model."""

from __future__ import annotations

import json as jsonlib
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console

from kg.graph.driver import open_driver, verify
from kg.graph.meta import MODEL_VERSION, read_model
from kg.graph.migrate import migrate as run_migrate
from kg.graph.schema import apply_schema
from kg.ingest import make_writer
from kg.settings import Settings


def migrate(
    *,
    check: Annotated[bool, Parameter(help="Only say which model the graph has.")] = False,
    json: Annotated[bool, Parameter(help="Print the report as one JSON object.")] = False,
) -> int:
    """Convert the graph in place to the current graph model (safe to run again).

    Documents are marked for rewriting: run the same `kg ingest` commands afterwards and each
    document is written again in the new form. Exit code 0 when the graph is current.
    """
    settings = Settings()
    console = Console(stderr=json)
    with open_driver(settings.neo4j) as driver:
        verify(driver, settings.neo4j)
        database = settings.neo4j.database
        if check:
            found = read_model(driver, database).effective
            console.print(f"graph model: {found or 'empty'}; this kg writes model {MODEL_VERSION}")
            return 0 if found in (None, MODEL_VERSION) else 2
        apply_schema(
            driver,
            database=database,
            dimension=settings.resolve.embedding_dim,
            folder=settings.schema_dir,
        )
        report = run_migrate(driver, database, make_writer(settings, driver))
    if json:
        print(jsonlib.dumps(report.to_dict(), sort_keys=True))  # noqa: T201 - the output
    else:
        console.print(
            f"graph model {report.from_version or 'empty'} -> {report.to_version}: "
            f"{report.predicates} predicates catalogued, {report.relations_retyped} relations "
            f"moved to RELATED, {report.documents_reset} documents to re-ingest"
            + (f" ({'; '.join(report.notes)})" if report.notes else "")
        )
    return 0
