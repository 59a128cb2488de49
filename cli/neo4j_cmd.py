"""``kg neo4j start | stop | status``: the local Neo4j server that needs no Docker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclopts import App
from rich.console import Console

from cli.output import inert

if TYPE_CHECKING:
    from kg import LocalNeo4j

app = App(
    name="neo4j",
    help="Run a local Neo4j Community server from Maven Central jars (no Docker, no Maven).",
)
console = Console()


def _server() -> LocalNeo4j:
    """The local server of the settings (imported here: `kg neo4j --help` needs neither)."""
    from kg import local_server
    from kg.settings import Settings

    return local_server(Settings())


@app.command
def start() -> int:
    """Start Neo4j (fetches its jars once), wait until Bolt and HTTP answer."""
    server = _server()
    server.ensure_jars()  # the first run fetches ~150 MB of jars, with a progress bar
    with console.status("starting Neo4j..."):
        status = server.start()
    console.print(f"Neo4j {status.describe()}")
    console.print(f"Open Neo4j Browser at [link={status.browser_url}]{status.browser_url}[/link]")
    return 0


@app.command
def stop() -> int:
    """Stop the local server cleanly."""
    server = _server()
    console.print("Neo4j stopped" if server.stop() else "Neo4j was not running")
    return 0


@app.command
def status() -> int:
    """Say whether the local server runs and answers. Exit code 3 when stopped."""
    state = _server().status()
    console.print(f"Neo4j {state.describe()}")
    return 0 if state.running else 3


@app.command
def logs(lines: int = 40) -> int:
    """Print the tail of the server's logs.

    Parameters
    ----------
    lines
        How many of the last lines to print.
    """
    console.print(inert(_server().log_tail(lines), lines=True))
    return 0
