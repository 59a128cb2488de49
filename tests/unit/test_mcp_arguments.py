"""A refused MCP argument is one plain sentence naming the field and its bounds.

Through the SDK's own client against kg's server (in memory): the arguments are refused by
the SDK's validation before any tool body runs, so no Neo4j is reached (the graph is never
opened).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp.client.client import Client

from kg import AsyncKnowledgeGraph, Settings
from kg_mcp.server import build_server


def _call(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    graph = AsyncKnowledgeGraph(Settings(neo4j={"password": "never-used-0123"}))

    async def run() -> tuple[bool, str]:
        async with Client(build_server(graph)) as client:
            result = await client.call_tool(tool, arguments)
            return bool(result.is_error), str(result.content[0].text)

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("tool", "arguments", "sentence"),
    [
        (
            "answer",
            {"question": "Who owns AuthService?", "limit": 500},
            "invalid arguments for answer: limit must be an integer from 1 to 50.",
        ),
        (
            "search",
            {"query": "x", "depth": 9, "limit": 0},
            "invalid arguments for search: depth must be an integer from 1 to 3; "
            "limit must be an integer from 1 to 100.",
        ),
        (
            "search",
            {"query": "x", "mode": "fast"},
            "invalid arguments for search: mode must be one of text, vector, graph, hybrid, "
            "global, auto.",
        ),
        (
            "answer",
            {},
            "invalid arguments for answer: question is required (text of 1 to 2000 characters).",
        ),
        (
            "search",
            {"query": "x", "as_of": "yesterday"},
            "invalid arguments for search: as_of is not an ISO 8601 date or date-time.",
        ),
        (
            "neighborhood",
            {"entity_id": "e1", "as_of": "yesterday"},
            "invalid arguments for neighborhood: as_of is not an ISO 8601 date or date-time.",
        ),
        (
            "get_entity",
            {"entity_id": "x" * 300},
            "invalid arguments for get_entity: entity_id must be text of 1 to 256 characters.",
        ),
    ],
)
def test_refused_arguments_read_as_one_sentence(
    tool: str, arguments: dict[str, Any], sentence: str
) -> None:
    is_error, text = _call(tool, arguments)
    assert is_error
    assert text == sentence
    assert "pydantic" not in text
    assert "validation error" not in text
