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

#: Every command: where it lives, and its description (the listing in `kg --help` shows the first
#: line without importing the command; a test keeps each equal to the command's own docstring).
COMMANDS: dict[str, tuple[str, str]] = {
    "neo4j": (
        "cli.neo4j_cmd:app",
        "Run a local Neo4j Community server from Maven Central jars (no Docker, no Maven).",
    ),
    "schema": ("cli.schema_cmd:app", "Constraints and indexes."),
    "ingest": (
        "cli.ingest_cmd:ingest",
        "Load, chunk, extract (or import), resolve and write PATH into Neo4j.\n\n"
        "Exit codes: 0 done; 1 error; 2 done, but some chunks failed or the budget stopped "
        "the run (what was done is kept; rerun to retry the rest).",
    ),
    "migrate": (
        "cli.migrate_cmd:migrate",
        "Convert the graph in place to the current graph model (safe to run again).\n\n"
        "Documents are marked for rewriting: run the same `kg ingest` commands afterwards and "
        "each document is written again in the new form. Exit code 0 when the graph is current.",
    ),
    "communities": ("cli.communities_cmd:app", "Communities of entities and their reports."),
    "namespaces": (
        "cli.namespaces_cmd:namespaces",
        "List the namespaces (document sources) with their counts.\n\n"
        "A namespace is the name given to `kg ingest --namespace`, else the ingested folder's "
        "absolute path. `kg search --namespace NAME` keeps a search to it; `kg forget "
        "--namespace NAME` removes it.",
    ),
    "forget": (
        "cli.forget_cmd:forget",
        "Remove a namespace and what only it supported (safe to run again).\n\n"
        "Its documents, chunks, the facts only it supported, and the entities left with no "
        "mention and no fact go; other namespaces keep everything of theirs. Community reports "
        "built from the namespace go too: run `kg communities build` again afterwards.",
    ),
    "search": (
        "cli.search_cmd:search",
        "Answer a question from the graph: entities, relations and the chunks behind them.",
    ),
    "eval": (
        "cli.eval_cmd:evaluate",
        "Score every search mode on your own labelled questions, and say which to use.\n\n"
        'QUESTIONS is a JSONL file, one question a line: {"question": "...", "gold": '
        '["path/of/the/document.md"], "namespace": "optional"}. "gold" names the documents '
        "that answer it, by path (as ingested, or with the ingested folder in front) or id. "
        "Prints hit@1/3/5, recall@5 and MRR by document, and the median and p95 latency, for "
        "each mode; bad lines are reported by number and skipped. Exit code 0 when at least "
        "one question was scored.",
    ),
    "ask": (
        "cli.ask_cmd:ask",
        "Answer a question from the graph, citing the chunks and relations it rests on.\n\n"
        "Uses the LLM of KG_ANSWER__* (unset fields: KG_LLM__*). When the retrieved context "
        "does not answer the question, says so instead of guessing.",
    ),
    "query": (
        "cli.query_cmd:query",
        "Run a question as one of the read-only templates; the LLM never writes Cypher.\n\n"
        "Uses the LLM of KG_ANSWER__* (unset fields: KG_LLM__*). A question no template fits "
        "exits with 2 and the list of templates.",
    ),
    "mcp": (
        "cli.mcp_cmd:mcp",
        "Serve kg as an MCP server: search, answer, get_entity, neighborhood, list_templates, "
        "run_template (docs/agents.md).",
    ),
    "serve": (
        "cli.serve_cmd:serve",
        "Serve the REST API. Auth (bearer keys) is on whenever --host is not loopback.",
    ),
    "example": (
        "cli.example_cmd:example",
        "Build the example graph and search it: the quickest way to see kg work.",
    ),
    "browse": (
        "cli.browse_cmd:browse",
        "Open Neo4j Browser with kg's guide, or print its URL and the guide command.\n\n"
        "Exit code 3 when the local Neo4j is not running.",
    ),
}
for _name, (_path, _help) in COMMANDS.items():
    app.command(_path, name=_name, help=_help)


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
