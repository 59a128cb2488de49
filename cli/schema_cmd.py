"""``kg schema apply``: constraints and indexes from schema/*.cypher, idempotently."""

from __future__ import annotations

from cyclopts import App
from rich.console import Console

app = App(name="schema", help="Constraints and indexes.")
console = Console()


@app.command
def apply() -> int:
    """Create missing constraints and indexes; report what was created."""
    from kg import KnowledgeGraph

    with KnowledgeGraph() as graph:
        report = graph.apply_schema()
    if report.created:
        console.print(f"created {len(report.created)}: " + ", ".join(report.created))
    else:
        console.print(f"schema up to date ({report.statements} statements, nothing created)")
    return 0


@app.command
def show() -> int:
    """Print the statements that ``apply`` runs."""
    from kg import Settings, schema_statements

    for statement in schema_statements(Settings()):
        console.print(statement + ";", highlight=False, markup=False)
    return 0
