"""What a start of `kg serve` (and every `kg` command's schema step) costs the server, side by side.

    .venv/bin/python bench/startup_checks.py            # ~1 min: a throwaway local Neo4j

A throwaway local server (the suite's JVM flags with ``--suite``), the example graph ingested,
then, alternating, ``--rounds`` times each:

- **start-up's read-only check**, the way kg does it (every template text EXPLAINed with its
  parameters null, or with a warm-up call's parameters) against the way it did before session
  13 (texts without a warm-up call EXPLAINed with no parameters, which Neo4j plans every time
  and never caches), then the whole ``SearchService.startup()`` as `kg serve` runs it;
- **the schema step**: ``apply_schema`` (only the missing statements) against sending every
  ``CREATE ... IF NOT EXISTS`` statement as before.

Each is timed on the wall and in the server's CPU (/proc/<pid>/stat). The first round is the
server's first sight of the texts and is reported apart; the medians are of the later rounds,
which are what a restart of `kg serve` on the same server pays. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.load_bench import cpu_seconds  # noqa: E402
from bench.server_start import SUITE_FLAGS  # noqa: E402
from kg import AsyncKnowledgeGraph, KnowledgeGraph  # noqa: E402
from kg.graph.driver import open_driver  # noqa: E402
from kg.graph.schema import apply_schema, read_statements  # noqa: E402
from kg.localserver import LocalNeo4j, throwaway_server  # noqa: E402
from kg.search import startup  # noqa: E402
from kg.settings import Settings  # noqa: E402


async def read_only_check(settings: Settings, old_way: bool) -> None:
    """The check start-up makes, kg's way or the pre-session-13 way."""
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.verify()
        service = graph.service
        samples: dict[str, dict[str, Any]] = {}
        for name, params in startup.warm_up_calls(
            settings.search, settings.resolve.embedding_dim, settings.chunks.embedding_dim
        ):
            prepared = service.guard.prepare(name, params)
            samples.setdefault(prepared.text, prepared.cypher_params())
        if not old_way:
            await service.guard.verify_read_only(samples)
            return
        for template in service.guard.registry:
            for text in template.texts.values():
                await service.guard._explain(text, samples.get(text))


async def whole_startup(settings: Settings) -> None:
    async with AsyncKnowledgeGraph(settings) as graph:
        await graph.startup()


def schema_step(settings: Settings, old_way: bool) -> None:
    with open_driver(settings.neo4j) as driver:
        if not old_way:
            apply_schema(driver, database=settings.neo4j.database,
                         dimension=settings.resolve.embedding_dim)  # fmt: skip
            return
        for statement in read_statements():
            driver.execute_query(
                statement,  # type: ignore[arg-type]  # trusted project files, as in kg
                {"dimension": settings.resolve.embedding_dim,
                 "chunk_dimension": settings.chunks.embedding_dim},
                database_=settings.neo4j.database,
            )  # fmt: skip


def measure(pid: int, work: Callable[[], Awaitable[None] | None]) -> tuple[float, float]:
    """(wall ms, server CPU ms) of one call."""
    cpu, started = cpu_seconds(pid), time.perf_counter()
    result = work()
    if result is not None:
        asyncio.run(result)  # type: ignore[arg-type]
    return (time.perf_counter() - started) * 1000, (cpu_seconds(pid) - cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds after the first (5)")
    parser.add_argument("--suite", action="store_true", help="the test suite's JVM flags")
    args = parser.parse_args()
    flags = SUITE_FLAGS if args.suite else ()
    with throwaway_server(heap="768m", pagecache="256m", java_options=flags) as settings:
        with KnowledgeGraph(settings) as graph:
            graph.ingest(REPO / "examples" / "platform-docs",
                         triplets=REPO / "examples" / "platform-docs.triplets.jsonl")  # fmt: skip
        status = LocalNeo4j(settings).status()
        if status.pid is None:
            raise SystemExit("the throwaway server has no pid to read its CPU from")
        pid = status.pid
        check_before, check_kg = (
            "read-only check, before (no parameters)",
            "read-only check, kg (nulls)",
        )
        schema_before, schema_kg = (
            "schema step, before (every statement)",
            "schema step, kg (what is missing)",
        )
        cases: dict[str, Callable[[], Awaitable[None] | None]] = {
            check_before: lambda: read_only_check(settings, True),
            check_kg: lambda: read_only_check(settings, False),
            "SearchService.startup(), kg": lambda: whole_startup(settings),
            schema_before: lambda: schema_step(settings, True),
            schema_kg: lambda: schema_step(settings, False),
        }
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.rounds + 1):
            for name, work in cases.items():
                runs[name].append(measure(pid, work))
    print(f"{'what':42s} {'first: wall / server CPU ms':>28s} {'then, median':>22s}")
    medians = {}
    for name, values in runs.items():
        first, later = values[0], values[1:]
        wall = statistics.median(v[0] for v in later)
        cpu = statistics.median(v[1] for v in later)
        medians[name] = (wall, cpu)
        print(f"{name:42s} {first[0]:12.0f} / {first[1]:8.0f}   {wall:10.1f} / {cpu:8.1f}")
    for what, before_key, kg_key in (("read-only check", check_before, check_kg),
                                     ("schema step", schema_before, schema_kg)):  # fmt: skip
        before, ours = medians[before_key], medians[kg_key]
        print(f"{what}: kg / before, wall {ours[0] / before[0]:.2f}x, "
              f"server CPU {ours[1] / max(before[1], 1e-9):.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
