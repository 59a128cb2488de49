"""Traces and metrics against the real server: the span tree of a search (over REST, the
caller's traceparent continued) and of an ingest, through the real OpenTelemetry SDK and its
in-memory exporter; GET /metrics counted after real requests, refused to a scoped key."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from neo4j import Driver
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from kg import KnowledgeGraph, observe
from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]

ADMIN_KEY = "observability-admin-key-0123456789"
SCOPED_KEY = "observability-scoped-key-0123456789"
QUESTION = "Which database stores the PaymentService ledgers?"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


@pytest.fixture(scope="module")
def api(graph: Driver, settings: Settings) -> Iterator[httpx.Client]:
    keys = json.dumps([ADMIN_KEY, {"key": SCOPED_KEY, "namespaces": ["alpha"]}])
    app = create_app(api_settings(settings, api_keys=keys), service_factory=verified_once_factory)
    with (
        LiveServer(app) as server,
        httpx.Client(
            base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
        ) as http,
    ):
        yield http


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observe.configure(tracer_provider=provider)
    try:
        yield exporter
    finally:
        observe.configure(environ={})  # tracing off again for the rest of this process


def _named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _finished_with(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    """The finished spans once one is ``name``: the request span ends after its response's
    last byte is sent, so the client can read the answer a moment before it ends."""
    deadline = time.monotonic() + 10
    while not _named(found := exporter.get_finished_spans(), name):
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return list(found)


def _parent(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


def _values(spans: Sequence[ReadableSpan]) -> list[str]:
    return [str(v) for s in spans for v in (s.attributes or {}).values()]


def test_the_span_tree_of_a_search_continues_the_callers_trace(
    api: httpx.Client, spans: InMemorySpanExporter, settings: Settings
) -> None:
    answer = api.post(
        "/search/local",
        json={"query": QUESTION, "mode": "hybrid", "depth": 2},
        headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
    )
    assert answer.status_code == 200, answer.text
    found = _finished_with(spans, "kg.request")
    (request,) = _named(found, "kg.request")
    assert f"{request.context.trace_id:032x}" == TRACE_ID
    assert request.parent is not None
    assert f"{request.parent.span_id:016x}" == PARENT_ID
    assert request.attributes is not None
    assert request.attributes["http.route"] == "/search/local"
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["kg.mode"] == "hybrid"
    (search,) = _named(found, "kg.search")
    assert _parent(search, found) is request
    assert search.attributes is not None
    assert search.attributes["kg.mode"] == "hybrid"
    signals = _named(found, "kg.search.signal")
    assert {s.attributes["kg.signal"] for s in signals if s.attributes} == {
        "text",
        "vector",
        "graph",
    }
    assert all(_parent(s, found) is search for s in signals)
    (fusion,) = _named(found, "kg.search.fusion")
    assert _parent(fusion, found) is search
    reads = _named(found, "kg.guard.read")
    assert reads
    for read in reads:
        attrs = read.attributes or {}
        assert set(attrs) >= {"kg.template", "kg.rows", "kg.ms", "kg.outcome"}
        assert attrs["kg.outcome"] == "ok"
        # each read belongs to this request's tree, under a signal or the search itself
        ancestor = _parent(read, found)
        while ancestor is not None and ancestor is not search:
            ancestor = _parent(ancestor, found)
        assert ancestor is search
    # every signal read something through the guard
    assert {_parent(r, found).name for r in reads} >= {"kg.search.signal"}  # type: ignore[union-attr]
    assert all(s.context.trace_id == request.context.trace_id for s in found)
    values = " ".join(_values(found))
    assert "PaymentService" not in values
    assert "ledgers" not in values
    assert settings.neo4j.password is not None
    assert settings.neo4j.password.get_secret_value() not in values
    assert ADMIN_KEY not in values


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_real_requests(api: httpx.Client) -> None:
    before = _samples(api.get("/metrics").text)
    for _ in range(2):
        answer = api.post("/search/local", json={"query": QUESTION, "mode": "text"})
        assert answer.status_code == 200, answer.text
    assert api.post("/search/local", json={"query": QUESTION, "mode": "hybrid"}).status_code == 200
    refused = api.post("/templates/entity_neighborhood", json={"entity_id": "x", "depth": 9})
    assert refused.status_code == 422, refused.text
    scrape = api.get("/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    after = _samples(scrape.text)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    request = "kg_http_request_duration_seconds_count"
    route = {"route": "/search/local", "method": "POST", "status": "200"}
    assert grew(request, **route, mode="text") == 2
    assert grew(request, **route, mode="hybrid") == 1
    assert (
        grew(
            request,
            route="/templates/{name}",
            method="POST",
            status="422",
            mode="none",
        )
        == 1
    )
    assert grew("kg_guarded_reads_total", template="entity_neighborhood", outcome="rejected") == 1
    assert grew("kg_guarded_reads_total", template="chunks_by_text", outcome="ok") >= 3
    assert _value(after, "kg_query_slots_in_use") == 0


def test_a_scoped_key_may_not_read_the_deployments_metrics(api: httpx.Client) -> None:
    answer = api.get("/metrics", headers={"Authorization": f"Bearer {SCOPED_KEY}"})
    assert answer.status_code == 403
    assert "whole deployment" in answer.json()["detail"]
    assert api.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_console_traces_of_kg_search(graph: Driver, settings: Settings, tmp_path: Path) -> None:
    """`OTEL_TRACES_EXPORTER=console kg search ...` prints its spans (to stderr: stdout keeps
    `--json` one document), with none of the question's words or the password in them."""
    env = cli_env(settings, PYTHONPATH=str(REPO), OTEL_TRACES_EXPORTER="console")
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", QUESTION, "--mode", "text", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)
    names = re.findall(r'"name": "(kg\.[a-z.]+)"', run.stderr)
    assert {"kg.search", "kg.search.signal", "kg.guard.read"} <= set(names), run.stderr
    assert '"service.name": "kg"' in run.stderr
    assert "ledgers" not in run.stderr
    assert settings.neo4j.password.get_secret_value() not in run.stderr


def test_an_mcp_tool_call_is_one_span_over_the_search(
    graph: Driver, settings: Settings, spans: InMemorySpanExporter
) -> None:
    import asyncio

    from kg import AsyncKnowledgeGraph
    from kg_mcp.server import build_server

    async def call() -> None:
        async with AsyncKnowledgeGraph(settings) as kg_graph:
            await build_server(kg_graph).call_tool("search", {"query": QUESTION, "mode": "text"})

    asyncio.run(call())
    found = spans.get_finished_spans()
    (tool,) = _named(found, "kg.mcp.tool")
    assert tool.parent is None
    assert (tool.attributes or {})["kg.tool"] == "search"
    assert (tool.attributes or {})["kg.outcome"] == "ok"
    (routed,) = _named(found, "kg.search.routed")
    assert _parent(routed, found) is tool
    (search,) = _named(found, "kg.search")
    assert (search.attributes or {})["kg.mode"] == "text"
    assert "ledgers" not in " ".join(_values(found))


def test_the_span_tree_of_an_ingest(
    clean_graph: Driver, settings: Settings, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    (tmp_path / "payments.md").write_text(
        "# Payments\n\nPaymentService stores ledgers in PostgreSQL.\n"
    )
    chunks = {"embedder": "hashing", "embedding_dim": settings.resolve.embedding_dim}
    offline = settings.model_copy(update={"chunks": settings.chunks.model_copy(update=chunks)})
    with KnowledgeGraph(offline) as kg_graph:
        summary = kg_graph.ingest(tmp_path, graph="metadata")
    found = spans.get_finished_spans()
    (run,) = _named(found, "kg.ingest")
    assert run.parent is None
    attrs: dict[str, Any] = dict(run.attributes or {})
    assert attrs["kg.documents"] == 1
    assert attrs["kg.chunks"] == summary.chunks >= 1
    assert attrs["kg.graph"] == "metadata"
    assert attrs["kg.outcome"] == "ok"
    stages = _named(found, "kg.ingest.stage")
    names = [s.attributes["kg.stage"] for s in stages if s.attributes]
    assert {"load", "chunk", "write"} <= set(names)
    assert all(_parent(s, found) is run for s in stages)
    values = " ".join(_values(found))
    assert "ledgers" not in values
    assert settings.neo4j.password is not None
    assert settings.neo4j.password.get_secret_value() not in values
