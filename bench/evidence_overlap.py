"""`hybrid` with the evidence read beside the text read, against it read after fusion, in process.

    .venv/bin/python bench/evidence_overlap.py                 # MuSiQue dev, ~2 min
    .venv/bin/python bench/evidence_overlap.py --set docs

The set of bench/retrieval_quality.py is ingested into the namespace ``dev`` of a throwaway
local Neo4j and one ``SearchService`` answers it in process. Two ways of reading the evidence
alternate, four rounds each, every question in ``text`` and ``hybrid``, unscoped and scoped:

- ``after``: what kg did until round 5's eleventh session: the text signal ranks ids only
  (``texted`` 0) and the texts of the shown chunks and the entities' details are read once,
  after fusion;
- ``beside``: the default: ``graph_evidence`` starts as soon as the in-memory signals are done
  while the text read runs, and the text read brings the texts of its first chunks.

Printed: each way's median ms per mode and scope, the ratio of `hybrid` to `text`, and the
evidence reads of each way (beside: how many started early, how many were left after fusion). The "after" way is made by switching the early read
off in this process (a bench-only patch of two private methods). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import retrieval_quality as rq  # noqa: E402 (after the path insert)
from kg import scope  # noqa: E402
from kg.graph.driver import open_async_driver  # noqa: E402
from kg.localserver import throwaway_server  # noqa: E402
from kg.resolve import make_embedder  # noqa: E402
from kg.search.models import ChunkHit, SearchRequest  # noqa: E402
from kg.search.service import SearchService  # noqa: E402
from kg.search.signals.text import TextSignal  # noqa: E402

BESIDE = {"on": True}
READS: Counter[str] = Counter()


def _patch() -> None:
    """The "after" way on demand: no early read, a text read without texts."""
    early = SearchService._early_evidence
    read = SearchService._read_evidence
    text_chunks = TextSignal._text_chunks

    def maybe_early(self: SearchService, *args: Any) -> Any:
        started = early(self, *args) if BESIDE["on"] else None
        READS["beside, early"] += started is not None
        return started

    async def counted(self: SearchService, chunk_ids: list[str], entity_ids: list[str]) -> Any:
        READS["beside, all" if BESIDE["on"] else "after, all"] += 1
        return await read(self, chunk_ids, entity_ids)

    async def chunks(
        self: TextSignal,
        query: str,
        k: int,
        texts: Any = None,
        *,
        texted: int | None = None,
        shares: Any = None,
    ) -> tuple[list[ChunkHit], dict[str, ChunkHit]]:
        if texted is not None and not BESIDE["on"]:
            texted = 0
        return await text_chunks(self, query, k, texts, texted=texted, shares=shares)

    SearchService._early_evidence = maybe_early  # type: ignore[method-assign]
    SearchService._read_evidence = counted  # type: ignore[method-assign]
    TextSignal._text_chunks = chunks  # type: ignore[method-assign]


async def _measure(
    settings: Any, questions: list[str], rounds: int
) -> dict[tuple[str, ...], list[float]]:
    times: dict[tuple[str, ...], list[float]] = {}
    async with open_async_driver(settings.neo4j) as driver:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        await service.startup()
        for question in questions * 3:  # kept structures read, plans and JIT warm
            await service.local_search(SearchRequest(query=question, mode="hybrid", limit=20))
        READS.clear()
        for _ in range(rounds):
            for way in ("after", "beside"):
                BESIDE["on"] = way == "beside"
                for mode in ("text", "hybrid"):
                    for label, namespaces in (("unscoped", None), ("scoped", ["dev"])):
                        taken = times.setdefault((way, mode, label), [])
                        for question in questions:
                            request = SearchRequest(
                                query=question, mode=mode, limit=20, namespaces=namespaces
                            )
                            started = time.perf_counter()
                            with scope.scoped(namespaces):
                                await service.local_search(request)
                            taken.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="musique", choices=("musique", "docs", "hotpotqa"))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--questions", type=int, default=60, help="first N questions")
    args = parser.parse_args()
    dev = rq.musique(rq.MUSIQUE, None) if args.set == "musique" else getattr(rq, args.set)(None)
    questions = [q.text for q in dev.questions][: args.questions]
    _patch()
    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as settings:
        print(f"[{args.set}] {rq.ingest_into('dev', dev, settings)}")
        times = asyncio.run(_measure(settings, questions, args.rounds))
    print(f"\n{args.set}, {len(questions)} questions x {args.rounds} rounds, in process\n")
    print("| way | scope | text ms | hybrid ms | hybrid / text |")
    print("|---|---|---|---|---|")
    for way in ("after", "beside"):
        for label in ("unscoped", "scoped"):
            text = statistics.median(times[way, "text", label])
            hybrid = statistics.median(times[way, "hybrid", label])
            print(f"| {way} | {label} | {text:.2f} | {hybrid:.2f} | {hybrid / text:.2f}x |")
    searches = 2 * args.rounds * len(questions)
    after_fusion = READS["beside, all"] - READS["beside, early"]
    print(
        f"\n{searches} hybrid searches a way; evidence reads: after {READS['after, all']}; "
        f"beside {READS['beside, early']} early and {after_fusion} after fusion"
    )


if __name__ == "__main__":
    main()
