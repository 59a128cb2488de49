"""The ``kg`` command. Commands are registered lazily so ``kg --help`` starts fast."""

from __future__ import annotations

import logging
import os
import sys

from cyclopts import App
from rich.console import Console

import kg
from cli.output import print_crash, print_error, setup_logging
from kg.errors import KGError, exit_code

app = App(
    name="kg",
    version=kg.__version__,
    help="Turn folders of documents into a temporal knowledge graph in Neo4j; search it safely.",
)
app.command("cli.neo4j_cmd:app", name="neo4j")
app.command("cli.schema_cmd:app", name="schema")
app.command("cli.ingest_cmd:ingest", name="ingest")
app.command("cli.migrate_cmd:migrate", name="migrate")
app.command("cli.communities_cmd:app", name="communities")
app.command("cli.search_cmd:search", name="search")
app.command("cli.ask_cmd:ask", name="ask")
app.command("cli.query_cmd:query", name="query")
app.command("cli.mcp_cmd:mcp", name="mcp")
app.command("cli.serve_cmd:serve", name="serve")
app.command("cli.example_cmd:example", name="example")
app.command("cli.browse_cmd:browse", name="browse")


def main() -> None:
    """Console entry point: kg errors become one clear line and an exit code, never a traceback.

    Exit codes (one table, ``kg.errors.EXIT_CODES``): 0 done; 1 error; 2 invalid input or
    configuration (and, for ``kg ingest``, done with failed chunks); 3 Neo4j unavailable;
    4 not found; 5 timed out.

    Every exit is scrubbed of secrets (cli/output.py), and everything kg creates is private
    to the user who runs it (umask 077: the .kg/ state, caches, the local server's files).
    """
    os.umask(0o077)
    setup_logging()
    # kg reports failed chunks itself (summary, exit code 2); instructor would also log each
    # failed HTTP attempt at ERROR, even ones a retry then fixed.
    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    try:
        result = app(result_action="return_value")
    except KGError as exc:
        print_error(str(exc))
        sys.exit(exit_code(exc))
    except KeyboardInterrupt:
        Console(stderr=True).print("[yellow]interrupted[/]")
        sys.exit(130)
    except Exception as exc:
        from neo4j.exceptions import DriverError, Neo4jError  # lazily: `kg --help` stays fast

        if isinstance(exc, Neo4jError | DriverError):  # the driver's own, e.g. a malformed URI
            print_error(f"Neo4j: {type(exc).__name__}: {exc}")
        else:  # a bug: its traceback, scrubbed
            print_crash(exc)
        sys.exit(1)
    if isinstance(result, int) and not isinstance(result, bool):
        sys.exit(result)


if __name__ == "__main__":
    main()
