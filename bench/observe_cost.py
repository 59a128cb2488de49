"""What observability costs per search: the search latency benchmark's graph and questions,
searched with tracing off, on with a no-op exporter, on with the console exporter, and with
the API's Prometheus metrics on (as `kg serve` runs), in interleaved rounds.

    .venv/bin/python bench/observe_cost.py --scale 0.2 --rounds 6 --queries 60

Each round runs every configuration once, in a rotating order, over the same questions
(``--queries`` of them, after ``--warmup``); a configuration's figure is the median of its
round medians, and ``off`` runs twice per round (``off`` and ``off-again``), so the spread
between two identical configurations is printed beside the differences. Neo4j: as
bench/search_bench.py (a fresh local server unless ``--uri``). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.search_bench import _entity_count, _wipe, generate, load_neo4j, neo4j_settings
from kg import observe
from kg.graph.driver import open_async_driver, open_driver
from kg.resolve import make_embedder
from kg.search.models import SearchRequest
from kg.search.service import SearchService
from kg.settings import Settings


def _discarding() -> Any:
    """A tracer provider whose exporter drops every span (the SDK's whole cost, no I/O),
    batched as an OTLP deployment would run it."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Discard(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    return provider


def _console() -> Any:
    """The console exporter as ``OTEL_TRACES_EXPORTER=console`` sets it up, writing to
    /dev/null (the formatting and the write, not a terminal's speed)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider()
    sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the run
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sink)))
    return provider


def _off() -> None:
    observe.disable_metrics()
    observe.configure(environ={})


def configurations() -> dict[str, Callable[[], None]]:
    noop, console = _discarding(), _console()

    def traced(provider: Any) -> Callable[[], None]:
        def on() -> None:
            observe.disable_metrics()
            observe.configure(tracer_provider=provider)

        return on

    def metrics() -> None:
        observe.configure(environ={})
        observe.enable_metrics()

    return {
        "off": _off,
        "off-again": _off,
        "traces, no-op exporter": traced(noop),
        "traces, console": traced(console),
        "metrics (kg serve)": metrics,
    }


async def measure(settings: Settings, questions: list[str], args: argparse.Namespace) -> None:
    configs = configurations()
    driver = open_async_driver(settings.neo4j)
    rounds: dict[str, list[float]] = {name: [] for name in configs}
    try:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        await service.startup()
        request = [SearchRequest(query=q, depth=args.depth, mode=args.mode) for q in questions]
        for req in request[: args.warmup]:
            await service.local_search(req)
        names = list(configs)
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                configs[name]()
                times = []
                for req in request:
                    t0 = time.perf_counter()
                    await service.local_search(req)
                    times.append((time.perf_counter() - t0) * 1000)
                rounds[name].append(statistics.median(times))
            print(f"round {r + 1}: " + ", ".join(
                f"{n} {rounds[n][-1]:.2f}" for n in names), flush=True)  # fmt: skip
        spans = await _spans_per_search(service, request[0])
    finally:
        _off()
        await driver.close()
    base = statistics.median(rounds["off"])
    print()
    print(f"search p50, mode {args.mode}, depth {args.depth}: median of {args.rounds} rounds "
          f"x {len(questions)} questions (min..max of the round medians)")  # fmt: skip
    for name, values in rounds.items():
        mid = statistics.median(values)
        print(f"  {name:<24} {mid:7.2f} ms  ({min(values):.2f}..{max(values):.2f})  "
              f"{(mid - base):+6.2f} ms  {100 * (mid / base - 1):+5.1f}%")  # fmt: skip
    spread = [abs(a - b) for a, b in zip(rounds["off"], rounds["off-again"], strict=True)]
    print(f"  run-to-run spread (|off - off-again| per round): median {statistics.median(spread):.2f}"
          f" ms, max {max(spread):.2f} ms")  # fmt: skip
    print(f"spans per search: {spans}")
    for name, per in _per_span().items():
        print(f"  one span enter+exit, {name:<22} {per:6.2f} us")


async def _spans_per_search(service: SearchService, request: SearchRequest) -> int:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observe.configure(tracer_provider=provider)
    await service.local_search(request)
    _off()
    return len(exporter.get_finished_spans())


def _per_span(n: int = 20_000) -> dict[str, float]:
    """Microseconds per ``with observe.span(...)`` in each configuration (no search)."""
    out: dict[str, float] = {}
    for name, setup in configurations().items():
        if name == "off-again":
            continue
        setup()
        t0 = time.perf_counter()
        for _ in range(n):
            with observe.span("kg.guard.read", template="entity_seeds") as read:
                read.set(rows=3, ms=1.5)
        out[name] = (time.perf_counter() - t0) / n * 1e6
    _off()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.2)
    parser.add_argument("--supernodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--mode", default="graph")
    parser.add_argument("--uri", default=None)
    parser.add_argument("--wipe", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--pagecache", default="1g")
    args = parser.parse_args()
    graph = generate(args.scale, args.supernodes, args.seed)
    rng = random.Random(args.seed)
    questions = [
        f"what does the {rng.choice(graph['entities'])[1]} depend on?" for _ in range(args.queries)
    ]
    with neo4j_settings(args) as settings:
        with open_driver(settings.neo4j) as drv:
            if not (args.reuse and _entity_count(drv, settings) == len(graph["entities"])):
                if args.reuse:
                    _wipe(drv, settings)
                t0 = time.perf_counter()
                load_neo4j(drv, settings, graph)
                print(f"neo4j loaded in {time.perf_counter() - t0:.1f}s", flush=True)
        asyncio.run(measure(settings, questions, args))


if __name__ == "__main__":
    main()
