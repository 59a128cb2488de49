"""One local search taken apart: where its milliseconds go, template by template.

    .venv/bin/python bench/search_bench.py --scale 0.2 --uri bolt://127.0.0.1:17687 --reuse --no-pg
    .venv/bin/python bench/search_profile.py --scale 0.2 --uri bolt://127.0.0.1:17687

Runs against a database that bench/search_bench.py loaded (same ``--scale`` and ``--seed``:
the questions name its entities). For ``--queries`` questions per depth it records every
guarded query a ``SearchService.local_search`` makes, then replays each one outside the
service to split it into:

- ``server``: the summary's ``result_available_after`` + ``result_consumed_after`` (Neo4j's
  own clock: planning when the plan is not cached, execution, streaming);
- ``client``: the replay's wall time minus ``server`` (Bolt round trip, PackStream decoding in
  Python, record building);
- ``db hits``: the sum over the template's PROFILE plan;
- ``plan cold / warm``: ``result_available_after`` of the first run after
  ``db.clearQueryCaches()`` and of the run after it.

The Python steps (embedding, ranking, PageRank, the response models and their JSON) are timed
in place by wrapping the functions the search signals call. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, LiteralString

from neo4j import READ_ACCESS, AsyncDriver

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kg.search.signals.graph as graph_signal
import kg.search.signals.vector as vector_signal
from bench.search_bench import entity_names
from kg.graph.driver import open_async_driver
from kg.resolve import make_embedder
from kg.search.models import SearchRequest
from kg.search.service import SearchService
from kg.settings import Settings


class Recorder:
    """Wall times of named steps, and the guarded calls a search made."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)
        self.calls: list[tuple[str, dict[str, Any], int]] = []

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.times[name].append((time.perf_counter() - t0) * 1000)

        return wrapper


def _profile_hits(plan: Mapping[str, Any]) -> int:
    return int(plan.get("dbHits", 0)) + sum(_profile_hits(c) for c in plan.get("children", []))


async def _replay(
    driver: AsyncDriver, db: str, text: LiteralString, params: dict[str, Any]
) -> tuple[float, float, int]:
    """(wall ms, server ms, rows) of one auto-commit READ run, as the guard runs it."""
    t0 = time.perf_counter()
    async with driver.session(database=db, default_access_mode=READ_ACCESS) as session:
        result = await session.run(text, params)
        rows = [record async for record in result]
        summary = await result.consume()
    wall = (time.perf_counter() - t0) * 1000
    server = float(summary.result_available_after or 0) + float(summary.result_consumed_after or 0)
    return wall, server, len(rows)


async def _db_hits(
    driver: AsyncDriver, db: str, text: LiteralString, params: dict[str, Any]
) -> int:
    async with driver.session(database=db, default_access_mode=READ_ACCESS) as session:
        result = await session.run("PROFILE " + text, params)
        summary = await result.consume()
    return _profile_hits(summary.profile or {})


async def _plan_times(
    driver: AsyncDriver, db: str, text: LiteralString, params: dict[str, Any]
) -> tuple[float, float]:
    """result_available_after of a cold (caches cleared) and then a warm run."""
    await driver.execute_query("CALL db.clearQueryCaches()", database_=db)
    times = []
    for _ in range(2):
        async with driver.session(database=db, default_access_mode=READ_ACCESS) as session:
            result = await session.run(text, params)
            summary = await result.consume()
        times.append(float(summary.result_available_after or 0))
    return times[0], times[1]


def _install(recorder: Recorder) -> None:
    """Time the Python steps the signals call (module-level names, looked up per call)."""
    for module, names in (
        (graph_signal, ("embed", "rank_expansion", "personalized_pagerank", "graph_chunks")),
        (vector_signal, ("embed",)),
    ):
        for name in names:
            setattr(module, name, recorder.timed(name, getattr(module, name)))


async def profile(settings: Settings, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    names = entity_names(args.scale)
    db = settings.neo4j.database
    driver = open_async_driver(settings.neo4j)
    recorder = Recorder()
    _install(recorder)
    try:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        t0 = time.perf_counter()
        await service.startup()
        print(f"startup (checks + EXPLAIN of every template): "
              f"{(time.perf_counter() - t0) * 1000:.0f} ms")  # fmt: skip
        guard_run = service.guard.run

        async def recording_run(name: str, params: Any) -> Any:
            t0 = time.perf_counter()
            result = await guard_run(name, params)
            recorder.times[f"guard:{name}"].append((time.perf_counter() - t0) * 1000)
            recorder.calls.append((name, dict(params), len(result.rows)))
            return result

        service.guard.run = recording_run  # type: ignore[method-assign]
        for depth in args.depths:
            questions = [
                f"what does the {rng.choice(names)} depend on?"
                for _ in range(args.queries + args.warmup)
            ]
            for q in questions[: args.warmup]:
                await service.local_search(SearchRequest(query=q, depth=depth))
            recorder.times.clear()
            recorder.calls.clear()
            totals, builds, dumps = [], [], []
            for q in questions[args.warmup :]:
                t0 = time.perf_counter()
                response = await service.local_search(SearchRequest(query=q, depth=depth))
                totals.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                copy = type(response).model_validate(response.model_dump())
                builds.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                copy.model_dump_json()
                dumps.append((time.perf_counter() - t0) * 1000)
            calls = list(recorder.calls)
            steps = {k: list(v) for k, v in recorder.times.items()}
            await _report(driver, db, service, depth, args.queries, totals, builds, dumps,
                          steps, calls)  # fmt: skip
    finally:
        await driver.close()


async def _report(
    driver: AsyncDriver,
    db: str,
    service: SearchService,
    depth: int,
    n: int,
    totals: list[float],
    builds: list[float],
    dumps: list[float],
    steps: dict[str, list[float]],
    calls: list[tuple[str, dict[str, Any], int]],
) -> None:
    med = statistics.median
    print(f"\n## depth {depth}: {n} searches, end to end p50 {med(totals):.1f} ms, "
          f"p95 {sorted(totals)[round(0.95 * (len(totals) - 1))]:.1f} ms; "
          f"{len(calls) / n:.1f} guarded queries per search")  # fmt: skip
    by_template: dict[str, list[tuple[dict[str, Any], int]]] = defaultdict(list)
    for name, params, rows in calls:
        by_template[name].append((params, rows))
    print("| template | calls/search | guard wall p50 | replay wall p50 | server p50 | "
          "client (wall - server) p50 | rows p50 | db hits p50 | plan cold / warm |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, runs in by_template.items():
        walls, servers, hits = [], [], []
        for params, _ in runs[:40]:
            prepared = service.guard.prepare(name, params)
            cypher = prepared.cypher_params()
            wall, server, _ = await _replay(driver, db, prepared.text, cypher)
            walls.append(wall)
            servers.append(server)
        for params, _ in runs[:10]:
            prepared = service.guard.prepare(name, params)
            hits.append(await _db_hits(driver, db, prepared.text, prepared.cypher_params()))
        prepared = service.guard.prepare(name, runs[0][0])
        cold, warm = await _plan_times(driver, db, prepared.text, prepared.cypher_params())
        print(f"| {name} | {len(runs) / n:.1f} | {med(steps[f'guard:{name}']):.2f} ms | "
              f"{med(walls):.2f} ms | {med(servers):.1f} ms | "
              f"{med(w - s for w, s in zip(walls, servers, strict=True)):.2f} ms | "
              f"{med(r for _, r in runs):.0f} | {med(hits):.0f} | {cold:.0f} / {warm:.0f} ms |")  # fmt: skip
    print("\n| Python step | calls/search | p50 per call | total per search (mean) |")
    print("|---|---|---|---|")
    for name in ("_embed", "rank_expansion", "personalized_pagerank", "graph_chunks"):
        values = steps.get(name, [])
        if values:
            print(f"| {name} | {len(values) / n:.1f} | {med(values):.2f} ms | "
                  f"{sum(values) / n:.2f} ms |")  # fmt: skip
    print(f"| SearchResponse validate (model_validate of its dump) | 1 | {med(builds):.2f} ms | |")
    print(f"| SearchResponse JSON (model_dump_json) | 1 | {med(dumps):.2f} ms | |")


async def cold_start(settings: Settings, args: argparse.Namespace) -> None:
    """First search after start-up vs a warm one, with and without the plan warm-up."""
    rng = random.Random(args.seed + 1)
    names = entity_names(args.scale)
    db = settings.neo4j.database
    print("\n## first search after start-up (server plan cache cleared before each)")
    print("| start-up | start-up time | first search | warm search p50 | first / warm |")
    print("|---|---|---|---|---|")
    for warm_up in (False, True, False, True):
        driver = open_async_driver(settings.neo4j)
        try:
            await driver.execute_query("CALL db.clearQueryCaches()", database_=db)
            service = SearchService(driver, settings, make_embedder(settings.resolve))
            t0 = time.perf_counter()
            if warm_up:
                await service.startup()
            else:  # what startup() did before the warm-up
                await service.check_model()
                await service.guard.verify_read_only()
            started = (time.perf_counter() - t0) * 1000
            times = []
            for _ in range(11):
                q = f"what does the {rng.choice(names)} depend on?"
                t0 = time.perf_counter()
                await service.local_search(SearchRequest(query=q, depth=2))
                times.append((time.perf_counter() - t0) * 1000)
        finally:
            await driver.close()
        warm = statistics.median(times[1:])
        label = "EXPLAIN + warm-up" if warm_up else "EXPLAIN only"
        print(f"| {label} | {started:.0f} ms | {times[0]:.0f} ms | {warm:.1f} ms | "
              f"{times[0] / warm:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=50, help="per depth")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--uri", default=None, help="the database search_bench.py loaded")
    parser.add_argument(
        "--cold", action="store_true", help="measure the first search after start-up instead"
    )
    args = parser.parse_args()
    uri = args.uri or os.environ.get("NEO4J_URI")
    if not uri:
        raise SystemExit("--uri (or NEO4J_URI): a database bench/search_bench.py loaded")
    settings = Settings(neo4j={"uri": uri})
    if args.cold:
        asyncio.run(cold_start(settings, args))
    else:
        asyncio.run(profile(settings, args))


if __name__ == "__main__":
    main()
