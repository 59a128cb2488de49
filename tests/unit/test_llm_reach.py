"""A refused LLM endpoint is found before the LLM client loads (kg/llm/reach.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kg.llm.reach import refused
from tests.clienv import clean_env

REPO = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_closed_port_is_refused() -> None:
    error = asyncio.run(refused(f"http://127.0.0.1:{_closed_port()}/v1"))
    assert isinstance(error, ConnectionRefusedError)


def test_a_listening_port_is_not() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert asyncio.run(refused(f"http://127.0.0.1:{server.getsockname()[1]}/v1")) is None


def test_through_a_proxy_or_unparsable_it_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:3128")
    monkeypatch.setenv("no_proxy", "")
    assert asyncio.run(refused(url)) is None  # the proxy answers for it, or says why not
    assert asyncio.run(refused("http://127.0.0.1:notaport/v1")) is None
    assert asyncio.run(refused("unix:///tmp/socket")) is None


def test_a_question_to_a_closed_llm_fails_before_the_client_loads() -> None:
    """``answer`` and ``query`` fail with the client's own message, and neither openai nor
    instructor is imported (that import alone was seconds of `kg ask`'s time to fail)."""
    code = (
        "import asyncio, json, sys\n"
        "from kg import AsyncKnowledgeGraph, ExtractionError, Settings\n"
        "async def main():\n"
        "    out = []\n"
        "    async with AsyncKnowledgeGraph(Settings()) as graph:\n"
        "        for call in (graph.answer, graph.query):\n"
        "            try:\n"
        "                await call('Who owns AuthService?')\n"
        "            except ExtractionError as exc:\n"
        "                out.append(str(exc))\n"
        "    return out\n"
        "errors = asyncio.run(main())\n"
        "print(json.dumps({'errors': errors, 'loaded': [m for m in ('openai', 'instructor')"
        " if m in sys.modules]}))\n"
    )
    env = clean_env()
    port = _closed_port()
    env.update(
        KG_LLM__BASE_URL=f"http://127.0.0.1:{port}/v1",
        KG_NEO4J__URI=f"bolt://127.0.0.1:{_closed_port()}",
        KG_NEO4J__PASSWORD="unused",
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["loaded"] == []
    assert len(result["errors"]) == 2
    for error in result["errors"]:
        assert f"http://127.0.0.1:{port}/v1" in error
        assert "Connect call failed" in error
        assert "KG_LLM__BASE_URL" in error
