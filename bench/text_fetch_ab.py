"""The fulltext reads of round 5's twelfth session against those before it, in process.

    .venv/bin/python bench/text_fetch_ab.py                 # MuSiQue dev, ~2 min
    .venv/bin/python bench/text_fetch_ab.py --set docs

Session 12 made every fulltext read ask its index for as many hits scoped or not and break
equal scores by id (docs/search.md, "Scopes"), so that a search scoped to the graph's only
namespace ranks as the unscoped one. What that costs: the set of bench/retrieval_quality.py is
ingested into a throwaway local Neo4j and one ``SearchService`` answers it in process, with
``chunks_by_text``'s texts and fetch of commit bb385b4 (``before``: the index asked for ``k``
hits unscoped, no tie-break) and today's (``now``) alternating, four rounds, `text` and
`hybrid`, unscoped. Printed: each way's median ms per mode and the ratio. The ``before`` way
is a bench-only swap of the template's texts in this process. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import retrieval_quality as rq
from kg.cypher import REGISTRY
from kg.cypher import params as template_params
from kg.graph.driver import open_async_driver
from kg.localserver import throwaway_server
from kg.search.models import SearchRequest

BEFORE = "bb385b4"  # the commit before the change, whose chunks_by_text texts are "before"


def before_texts() -> dict[str, str]:
    """``chunks_by_text``'s texts at BEFORE (kg/cypher/render.py, read from git)."""
    source = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parents[1]), "show",
         f"{BEFORE}:kg/cypher/render.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    names: dict[str, Any] = {}
    exec(compile(source, "render_before", "exec"), names)
    return {"default": names["CHUNKS_BY_TEXT"], "ranked": names["CHUNKS_BY_TEXT_RANKED"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="musique", help="musique, docs, vue-ru or hotpotqa")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    dev = (
        rq.musique(rq.MUSIQUE, None)
        if args.set == "musique"
        else getattr(rq, args.set.replace("-", "_"))(None)
    )
    template = REGISTRY.get("chunks_by_text")
    texts = {"now": dict(template.texts), "before": before_texts()}
    text_fetch = template_params.TemplateParams.text_fetch
    way = {"name": "now"}

    def fetch(self: template_params.TemplateParams, k: int) -> int:
        return self.fetch(k) if way["name"] == "before" else text_fetch(self, k)

    template_params.TemplateParams.text_fetch = fetch  # type: ignore[method-assign]

    def use(name: str) -> None:
        way["name"] = name
        object.__setattr__(template, "texts", texts[name])

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as settings:
        print(rq.ingest_into("dev", dev, settings), flush=True)

        async def run() -> dict[tuple[str, str], list[float]]:
            times: dict[tuple[str, str], list[float]] = {}
            async with open_async_driver(settings.neo4j) as driver:
                service = rq.search_service(driver, settings)
                await service.startup()
                questions = [q.text for q in dev.questions][:60]
                for rnd in range(args.rounds + 1):  # the first round warms both ways
                    for name in ("before", "now"):
                        use(name)
                        for mode in ("text", "hybrid"):
                            for q in questions:
                                started = time.perf_counter()
                                await service.local_search(
                                    SearchRequest(query=q, mode=mode, limit=10)
                                )
                                if rnd:
                                    times.setdefault((name, mode), []).append(
                                        (time.perf_counter() - started) * 1000
                                    )
            return times

        times = asyncio.run(run())
    for mode in ("text", "hybrid"):
        before = statistics.median(times["before", mode])
        now = statistics.median(times["now", mode])
        print(f"{args.set} {mode}: before {before:.2f} ms, now {now:.2f} ms, now/before "
              f"{now / before:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
