"""The ``kg`` command. Commands are registered lazily so ``kg --help`` starts fast."""

from __future__ import annotations

import logging
import sys

from cyclopts import App
from rich.console import Console

from kg.errors import KGError

app = App(
    name="kg",
    help="Turn folders of documents into a temporal knowledge graph in Neo4j; search it safely.",
)
app.command("cli.neo4j_cmd:app", name="neo4j")
app.command("cli.schema_cmd:app", name="schema")
app.command("cli.ingest_cmd:ingest", name="ingest")
app.command("cli.search_cmd:search", name="search")
app.command("cli.serve_cmd:serve", name="serve")
app.command("cli.example_cmd:example", name="example")


def main() -> None:
    """Console entry point: kg errors become one clear line and exit code 1, never a traceback."""
    # kg reports failed chunks itself (summary, exit code 2); instructor would also log each
    # failed HTTP attempt at ERROR, even ones a retry then fixed.
    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    try:
        result = app(result_action="return_value")
    except KGError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        Console(stderr=True).print("[yellow]interrupted[/]")
        sys.exit(130)
    if isinstance(result, int) and not isinstance(result, bool):
        sys.exit(result)


if __name__ == "__main__":
    main()
