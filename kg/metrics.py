"""kg's Prometheus series, fed by the spans of :mod:`kg.observe` (imported only when the API
turns metrics on: ``observe.enable_metrics()``).

One process, or several: ``kg serve --workers N`` sets ``PROMETHEUS_MULTIPROC_DIR`` (an empty
directory) before uvicorn spawns the workers, so every worker writes its values there and a
scrape of any worker reads them all (prometheus-client's multiprocess mode; the gauge sums
live workers only, and a worker that ends is marked dead: see :func:`exposition`).
Every label takes a bounded set of values (route templates, template names, modes, uses,
outcomes): never a path, a question or a client.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Seconds: from a cached read (a millisecond) to a slow LLM call (a minute).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The series, registered once per process in prometheus-client's default registry."""

    # Long on purpose: every series kg exports, with its help text, in one place.
    def __init__(self) -> None:
        self.request_seconds = Histogram(
            "kg_http_request_duration_seconds",
            "HTTP requests served, by route template, method, status and search mode.",
            ["route", "method", "status", "mode"],
            buckets=BUCKETS,
        )
        self.reads = Counter(
            "kg_guarded_reads_total",
            "Guarded template reads, by template and outcome (ok, rejected, timeout, "
            "overloaded, client_busy, unavailable, error).",
            ["template", "outcome"],
        )
        self.read_seconds = Histogram(
            "kg_guarded_read_duration_seconds",
            "Guarded template reads' wall time (admission wait included), by template.",
            ["template"],
            buckets=BUCKETS,
        )
        self.llm_calls = Counter(
            "kg_llm_calls_total",
            "LLM and embeddings-endpoint calls, by use and outcome.",
            ["use", "outcome"],
        )
        self.llm_failures = Counter(
            "kg_llm_failures_total",
            "LLM and embeddings-endpoint calls that failed, by use and outcome.",
            ["use", "outcome"],
        )
        self.llm_tokens = Counter(
            "kg_llm_tokens_total",
            "Tokens of LLM calls as kg counted them, by use and direction (prompt, completion).",
            ["use", "direction"],
        )
        self.llm_seconds = Histogram(
            "kg_llm_call_duration_seconds",
            "LLM calls' wall time, re-asks included, by use.",
            ["use"],
            buckets=BUCKETS,
        )
        self.reranks = Counter(
            "kg_rerank_calls_total", "Rerank endpoint calls, by outcome.", ["outcome"]
        )
        self.documents = Counter(
            "kg_ingest_documents_total", "Documents written (new or changed) by ingests."
        )
        self.chunks = Counter("kg_ingest_chunks_total", "Chunks made by ingests.")
        self.facts = Counter("kg_ingest_facts_total", "Facts (relations) created by ingests.")
        self.admission_waits = Counter(
            "kg_admission_waits_total",
            "Guarded reads that found no free query slot and queued, by cost class.",
            ["cost"],
        )
        self.admission_wait_seconds = Histogram(
            "kg_admission_wait_seconds",
            "How long queued reads waited for a slot, by cost class and outcome.",
            ["cost", "outcome"],
            buckets=BUCKETS,
        )
        self.refusals = Counter(
            "kg_admission_refusals_total",
            "Reads shed after the queue timeout, by cost class and reason "
            "(overloaded, client_busy).",
            ["cost", "reason"],
        )
        self.slots = Gauge(
            "kg_query_slots_in_use",
            "Query slots held now (summed over live workers).",
            multiprocess_mode="livesum",
        )
        self._by_span = {
            "kg.request": self._request,
            "kg.guard.read": self._read,
            "kg.llm.call": self._llm,
            "kg.search.rerank": self._rerank,
            "kg.ingest": self._ingest,
            "kg.admission.wait": self._wait,
        }

    def observe(self, name: str, attrs: Mapping[str, Any], seconds: float) -> None:
        """A span ended: update the series it feeds, if any."""
        record = self._by_span.get(name)
        if record is not None:
            record(attrs, seconds)

    def add(self, name: str, amount: float, labels: Mapping[str, str]) -> None:
        if name == "slots":
            self.slots.inc(amount)

    def _request(self, attrs: Mapping[str, Any], seconds: float) -> None:
        self.request_seconds.labels(
            str(attrs.get("route") or "unmatched"),
            str(attrs.get("method") or ""),
            str(attrs.get("status") or 500),
            str(attrs.get("mode") or "none"),
        ).observe(seconds)

    def _read(self, attrs: Mapping[str, Any], seconds: float) -> None:
        template = str(attrs.get("template", ""))
        self.reads.labels(template, str(attrs["outcome"])).inc()
        self.read_seconds.labels(template).observe(seconds)

    def _llm(self, attrs: Mapping[str, Any], seconds: float) -> None:
        use, outcome = str(attrs.get("use", "")), str(attrs["outcome"])
        self.llm_calls.labels(use, outcome).inc()
        if outcome != "ok":
            self.llm_failures.labels(use, outcome).inc()
        for direction in ("prompt", "completion"):
            tokens = int(attrs.get(f"{direction}_tokens") or 0)
            if tokens:
                self.llm_tokens.labels(use, direction).inc(tokens)
        self.llm_seconds.labels(use).observe(seconds)

    def _rerank(self, attrs: Mapping[str, Any], seconds: float) -> None:
        self.reranks.labels(str(attrs["outcome"])).inc()

    def _ingest(self, attrs: Mapping[str, Any], seconds: float) -> None:
        self.documents.inc(int(attrs.get("documents") or 0))
        self.chunks.inc(int(attrs.get("chunks") or 0))
        self.facts.inc(int(attrs.get("facts") or 0))

    def _wait(self, attrs: Mapping[str, Any], seconds: float) -> None:
        cost, outcome = str(attrs.get("cost", "")), str(attrs["outcome"])
        self.admission_waits.labels(cost).inc()
        self.admission_wait_seconds.labels(cost, outcome).observe(seconds)
        if outcome in ("overloaded", "client_busy"):
            self.refusals.labels(cost, outcome).inc()


_INSTANCE: Metrics | None = None


def metrics() -> Metrics:
    """This process's series (registered on first use)."""
    global _INSTANCE
    if _INSTANCE is None:
        _INSTANCE = Metrics()
    return _INSTANCE


_LIVE_FILE = re.compile(r"^gauge_live\w*?_(\d+)\.db$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def mark_dead_workers(directory: str) -> list[int]:
    """Mark every worker whose live-gauge file is left but whose process is gone: a worker
    that was killed never ran its own shutdown. Returns their pids."""
    from prometheus_client import multiprocess

    dead: list[int] = []
    for path in Path(directory).glob("gauge_live*_*.db"):
        match = _LIVE_FILE.match(path.name)
        if match is not None and int(match.group(1)) not in dead:
            pid = int(match.group(1))
            if not _alive(pid):
                dead.append(pid)
    for pid in dead:
        multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
    return dead


def worker_exiting() -> None:
    """This worker stops serving: its live gauges leave the sum (multiprocess mode only)."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        from prometheus_client import multiprocess

        with contextlib.suppress(OSError):
            multiprocess.mark_process_dead(os.getpid(), directory)  # type: ignore[no-untyped-call]


def exposition() -> tuple[bytes, str]:
    """The text a scrape reads, and its content type: this process's series, or with
    ``PROMETHEUS_MULTIPROC_DIR`` set, every worker's of this ``kg serve``."""
    metrics()
    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    from prometheus_client import multiprocess

    mark_dead_workers(directory)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return generate_latest(registry), CONTENT_TYPE_LATEST


def prepare_multiprocess(directory: str) -> None:
    """For the parent of the workers, before any is spawned: ``directory`` exists and holds
    no earlier run's values; the workers inherit it through the environment."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    for stale in path.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(path)
