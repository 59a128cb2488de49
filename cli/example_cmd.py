"""``kg example``: the whole main job on the bundled corpus, with embedded defaults, no LLM.

Starts the local Neo4j as ``kg neo4j start`` does whenever kg connects to it (NEO4J_URI and
KG_NEO4J__URI unset, or naming its own address, ``bolt://127.0.0.1:<KG_SERVER__BOLT_PORT>``),
applies the schema, ingests examples/platform-docs through its triplets file, builds
communities (extractive reports), runs a search and prints where to look at the graph.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import Parameter
from rich.console import Console
from rich.text import Text

from cli.output import inert

if TYPE_CHECKING:  # the rest loads when the command runs: `kg example --help` stays fast
    from kg import Settings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
QUESTION = "What does Checkout Web depend on, and who owns AuthService?"


def example(
    question: Annotated[str, Parameter(help="The question to ask once the graph is built.")] = (
        QUESTION
    ),
) -> int:
    """Build the example graph and search it: the quickest way to see kg work."""
    from cli.ingest_cmd import summary_table
    from cli.local_search import print_local, run_local
    from cli.progress import stage_progress
    from kg import ConfigError, KnowledgeGraph, SearchRequest, Settings, local_server

    console = Console()
    settings = Settings()
    folder, triplets = EXAMPLES / "platform-docs", EXAMPLES / "platform-docs.triplets.jsonl"
    if not triplets.exists():
        raise ConfigError(f"the bundled example is not here: {triplets} (run from a checkout)")
    browser = None
    if settings.uses_local_server:
        server = local_server(settings)
        with console.status("starting the local Neo4j (the first run fetches its jars)..."):
            status = server.start()
        console.print(f"Neo4j {status.describe()}")
        settings.neo4j.uri = status.bolt_uri
        browser = status.browser_url
    with (
        KnowledgeGraph(settings) as graph,
        stage_progress(console) as progress,
    ):
        summary = graph.ingest(folder, triplets=triplets, progress=progress)
        # Extractive reports (no LLM): global search and the Browser have communities to show.
        built = graph.build_communities()
    console.print(summary_table(summary))
    console.print(
        f"{built.communities} communities over {built.entities} entities "
        f'(kg communities build; try kg search "What are the main parts of the platform?")'
    )
    console.print(Text.assemble("\n", ("kg search", "bold"), " ", inert(repr(question))))
    response = asyncio.run(run_local(settings, SearchRequest(query=question, depth=3, limit=10)))
    print_local(response)
    # The server just started: plan every template and run a few searches now, so the user's
    # next `kg search` is not 4x slower than the one after it (docs/benchmarks.md).
    with console.status("warming the server for your next searches..."):
        warmed = asyncio.run(_warm(settings))
    if warmed:
        console.print(inert(f"warm-up skipped: {warmed}", "dim"))
    if browser:
        password_file = settings.neo4j.password_file or settings.server.password_file
        console.print(
            f"\nOpen Neo4j Browser at [bold]{browser}[/] (user neo4j, password from "
            f"KG_NEO4J__PASSWORD, else the file {password_file}) and run: "
            "MATCH p=(:Entity {name:'Checkout Web'})-[*1..3]->() RETURN p"
        )
        console.print("Stop the server with: kg neo4j stop")
    return 0


async def _warm(settings: Settings) -> str | None:
    """Best effort (the example is done; a failure only costs the next search time): the
    error's text, or None."""
    from kg import AsyncKnowledgeGraph, KGError

    try:
        async with AsyncKnowledgeGraph(settings) as graph:
            await graph.startup()
    except KGError as exc:
        return str(exc)
    return None
