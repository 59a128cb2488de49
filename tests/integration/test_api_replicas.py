"""Stateless API replicas: two ``kg serve`` processes on their own ports, reading one Neo4j
through a routing URI (``neo4j://``), answer the same question with the same result.

Nothing a replica keeps between requests (caches of names, passages and facts, the relation
types) changes an answer: each is read from the graph and read again when the graph's counts
move, so any replica behind a proxy may take any request (docs/scaling.md).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from neo4j import Driver

from kg import KnowledgeGraph
from kg.settings import Settings
from tests.apidata import wipe
from tests.apiserver import free_port, wait_until_served
from tests.clienv import cli_env
from tests.neo4j_backend import Neo4jTarget, routing_uri

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
BODIES = [
    {"query": "Who owns AuthService?", "mode": "graph", "depth": 2, "limit": 10},
    {"query": "How do payments reach the ledger?", "mode": "hybrid", "limit": 10},
    {"query": "incident postmortem", "mode": "text", "limit": 5},
]


def _routing_uri(settings: Settings, target: Neo4jTarget) -> str:
    if target.backend == "testcontainers":
        return settings.neo4j.uri  # a port-mapped container cannot be routed to (test_routing)
    return routing_uri(settings.neo4j.uri)


@pytest.fixture(scope="module")
def example_graph(driver: Driver, settings: Settings) -> Iterator[None]:
    wipe(driver, settings)
    with KnowledgeGraph(settings) as graph:
        assert graph.ingest(EXAMPLE, graph="metadata").documents_new == 14
    yield
    wipe(driver, settings)


@pytest.fixture(scope="module")
def replicas(
    example_graph: None, settings: Settings, neo4j_server: Neo4jTarget, tmp_path_factory: Any
) -> Iterator[list[str]]:
    env = cli_env(settings, PYTHONPATH=str(REPO))
    env["KG_NEO4J__URI"] = _routing_uri(settings, neo4j_server)
    procs: list[subprocess.Popen[str]] = []
    urls: list[str] = []
    logs = tmp_path_factory.mktemp("replicas")
    try:
        for i in range(2):
            port = free_port()
            command = [sys.executable, "-m", "cli.main", "serve", "--port", str(port)]
            with (logs / f"serve-{i}.log").open("w") as log:
                proc = subprocess.Popen(
                    command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
                )
            procs.append(proc)
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(urls, procs, strict=True):
            wait_until_served(url + "/health", proc, timeout_s=180, status=200)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _stable(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without its timing."""
    return {key: value for key, value in answer.items() if key != "took_ms"}


@pytest.mark.parametrize("body", BODIES, ids=[b["mode"] for b in BODIES])
def test_two_replicas_give_the_same_answer(replicas: list[str], body: dict[str, Any]) -> None:
    answers = []
    for url in replicas:
        response = httpx.post(url + "/search/local", json=body, timeout=60)
        assert response.status_code == 200, response.text
        answers.append(_stable(response.json()))
    first, second = answers
    assert first["chunks"], f"{body['query']!r} found nothing: the comparison would be empty"
    assert first == second


def test_replicas_agree_whichever_answers_first(replicas: list[str]) -> None:
    """Asked in the other order (the second replica first), still the same answers."""
    body = BODIES[0]
    later = [
        _stable(httpx.post(url + "/search/local", json=body, timeout=60).json())
        for url in reversed(replicas)
    ]
    assert later[0] == later[1]
