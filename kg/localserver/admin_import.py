"""``neo4j-admin database import full`` on the local server's home, with its own jars.

The admin tool's classes (``org.neo4j.cli.AdminTool`` with the import tool) are in the jars
the server runs on (neo4j-server/jars.lock), so the import needs nothing else. It runs only
while the server is stopped: on Community the import replaces the ``neo4j`` database's files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kg.errors import ServerError
from kg.localserver.java import find_java
from kg.localserver.password import ADMIN_TOOL
from kg.localserver.process import tail_text
from kg.localserver.server import LocalNeo4j


def import_command(java: str, lib: Path, database: str, options: list[str]) -> list[str]:
    """The ``java -cp`` line of ``neo4j-admin database import full <database>``."""
    return [
        java, "-Dfile.encoding=UTF-8", "-cp", f"{lib}/*", ADMIN_TOOL,
        "database", "import", "full", "--overwrite-destination=true", *options, database,
    ]  # fmt: skip


def run_import(server: LocalNeo4j, database: str, options: list[str], report: Path) -> str:
    """Import into ``database`` of the (stopped) local server; returns the tool's output.

    Raises ServerError with the tool's last lines when it fails, or when the server runs.
    """
    if server.status().running:
        raise ServerError("the local Neo4j is running: stop it before an import")
    java = str(find_java().java)
    lib = server.ensure_jars()
    env = dict(os.environ)
    env["NEO4J_HOME"] = str(server.home)
    env["NEO4J_CONF"] = str(server.home / "conf")
    cmd = import_command(java, lib, database, [*options, f"--report-file={report}"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)  # noqa: S603
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        detail = tail_text(output.splitlines(), 30)
        raise ServerError(f"neo4j-admin database import failed (exit {proc.returncode}):\n{detail}")
    return output
