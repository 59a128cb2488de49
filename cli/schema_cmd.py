"""``kg schema apply``: constraints and indexes from schema/*.cypher, idempotently."""

from __future__ import annotations

from cyclopts import App
from rich.console import Console

from kg.graph.driver import open_driver, verify
from kg.graph.schema import apply_schema, read_statements
from kg.settings import Settings

app = App(name="schema", help="Constraints and indexes.")
console = Console()


@app.command
def apply() -> int:
    """Create missing constraints and indexes; report what was created."""
    settings = Settings()
    with open_driver(settings.neo4j) as driver:
        verify(driver, settings.neo4j)
        report = apply_schema(
            driver,
            database=settings.neo4j.database,
            dimension=settings.resolve.embedding_dim,
            folder=settings.schema_dir,
        )
    if report.created:
        console.print(f"created {len(report.created)}: " + ", ".join(report.created))
    else:
        console.print(f"schema up to date ({report.statements} statements, nothing created)")
    return 0


@app.command
def show() -> int:
    """Print the statements that ``apply`` runs."""
    for statement in read_statements(Settings().schema_dir):
        console.print(statement + ";", highlight=False, markup=False)
    return 0
