"""kg as an MCP server (the official ``mcp`` SDK): the REST surface's reads, as agent tools.

``kg mcp`` serves stdio; ``kg mcp --http`` serves streamable HTTP under the REST API's key
rules. See docs/agents.md.
"""

from kg_mcp.server import TOOL_NAMES, build_server

__all__ = ["TOOL_NAMES", "build_server"]
