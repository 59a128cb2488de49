"""Where a graph search's milliseconds go: each guarded read replayed alone, wall and Neo4j CPU.

    .venv/bin/python bench/template_cost.py        # ~2 min, the example graph

Loads the example graph into a throwaway local Neo4j, runs graph searches (the load bench's
questions, depths 1-3) recording every guarded read, then replays each template's recorded
calls ten times in a row, one at a time, reading the server process's CPU time from /proc
before and after; beside them whole `text` searches. Three repetitions: the first include the
JVM's compilation, quote the last. Not part of the test suite.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.load_bench import QUESTIONS, cpu_seconds, neo4j_pid  # noqa: E402 (after the path)
from kg import KnowledgeGraph  # noqa: E402
from kg.graph.driver import open_async_driver  # noqa: E402
from kg.localserver import throwaway_server  # noqa: E402
from kg.resolve import make_embedder  # noqa: E402
from kg.search.models import SearchRequest  # noqa: E402
from kg.search.service import SearchService  # noqa: E402
from kg.settings import Settings  # noqa: E402


async def measure(settings: Settings, pid: int) -> None:
    async with open_async_driver(settings.neo4j) as driver:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        await service.startup()
        reads: dict[str, list[Any]] = defaultdict(list)
        guarded = service.guard.run

        async def recorded(name: str, params: Any) -> Any:
            reads[name].append(params)
            return await guarded(name, params)

        service.guard.run = recorded  # type: ignore[method-assign]
        questions = [q.format(a="AuthService", b="PostgreSQL") for q in QUESTIONS]
        for question in questions * 3:
            for depth in (1, 2, 3):
                request = SearchRequest(query=question, mode="graph", depth=depth, limit=20)
                await service.local_search(request)
        service.guard.run = guarded  # type: ignore[method-assign]
        texts = [SearchRequest(query=q, mode="text", limit=20) for q in questions]
        for repetition in range(1, 4):
            cpu = cpu_seconds(pid)
            await asyncio.sleep(3)
            print(f"repetition {repetition}: idle Neo4j {(cpu_seconds(pid) - cpu) / 3:.3f} cores")
            started, cpu = time.perf_counter(), cpu_seconds(pid)
            for _ in range(20):
                for request in texts:
                    await service.local_search(request)
            n = 20 * len(texts)
            print(f"  text search: wall {1000 * (time.perf_counter() - started) / n:.2f} ms, "
                  f"Neo4j CPU {1000 * (cpu_seconds(pid) - cpu) / n:.2f} ms")  # fmt: skip
            for name, calls in reads.items():
                started, cpu = time.perf_counter(), cpu_seconds(pid)
                for _ in range(10):
                    for params in calls:
                        await guarded(name, params)
                n = 10 * len(calls)
                print(f"  {name} ({len(calls)} calls): wall "
                      f"{1000 * (time.perf_counter() - started) / n:.2f} ms, "
                      f"Neo4j CPU {1000 * (cpu_seconds(pid) - cpu) / n:.2f} ms")  # fmt: skip


def main() -> None:
    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        with KnowledgeGraph(s) as graph:
            graph.ingest(
                REPO / "examples" / "platform-docs",
                triplets=REPO / "examples" / "platform-docs.triplets.jsonl",
            )
        pid = neo4j_pid(s)
        if pid is None:
            raise SystemExit("cannot find the Neo4j process")
        asyncio.run(measure(s, pid))


if __name__ == "__main__":
    main()
