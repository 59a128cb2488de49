"""``kg mcp``: kg's tools for MCP clients (stdio by default, streamable HTTP with --http)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from cyclopts import Parameter
from rich.console import Console

err_console = Console(stderr=True)  # stdout is the MCP channel in stdio mode


def mcp(
    *,
    http: Annotated[bool, Parameter(negative=())] = False,
    host: Annotated[
        str | None, Parameter(help="--http bind address (default KG_API__HOST).")
    ] = None,
    port: Annotated[int, Parameter(help="--http port.")] = 8001,
) -> int:
    """Serve kg as an MCP server: search, answer, get_entity, neighborhood, list_templates,
    run_template (docs/agents.md).

    Parameters
    ----------
    http
        Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; the REST API's key
        rules apply (keys required beyond loopback; KG_API__API_KEYS).
    host
        Bind address for --http.
    port
        Port for --http.
    """
    from kg.settings import Settings
    from kg_mcp.serve import MCP_PATH, serve_http, serve_stdio

    settings = Settings()
    if not http:
        asyncio.run(serve_stdio(settings))
        return 0
    bind = host or settings.api.host
    shown = f"[{bind}]" if ":" in bind else bind
    err_console.print(f"kg MCP (streamable HTTP) on http://{shown}:{port}{MCP_PATH}")
    asyncio.run(serve_http(settings, bind, port))
    return 0
