"""One client at a time: a graph search against ``/health``, issue 41 item 3's second bound.

    .venv/bin/python bench/request_overhead.py                 # example graph, ~1 min
    .venv/bin/python bench/request_overhead.py --requests 500 --workers 2
    .venv/bin/python bench/request_overhead.py --serve-from /tmp/kg-base   # another checkout

The example graph in a throwaway local Neo4j, ``kg serve`` (auth off), one client: after a
warm-up, ``GET /health`` and ``POST /search/local`` (graph mode, depth 2, limit 20, the load
bench's questions about the graph's entities) alternate, one request at a time. Printed: each
one's p50 and p95 in ms and the ratio of the p95s (bound: the search's p95 at most 10x
/health's: what a request pays beyond its own work is the server's framing). /health answers
from a one-second cache, so its time is the framing alone. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.load_bench import api_process, load_graph, make_bodies, neo4j_settings, pct  # noqa: E402
from kg.localserver import free_port  # noqa: E402

BOUND = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="measured, of each kind")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1, help="kg serve --workers")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--serve-from", type=Path, default=REPO, help="checkout that serves")
    args = parser.parse_args()
    # what load_bench's helpers read from its own arguments
    args.local, args.reuse, args.graph, args.scale, args.seed = True, False, "example", 1.0, 7
    args.heap, args.pagecache, args.modes = "1g", "512m", "graph"
    with neo4j_settings(args) as settings:
        names = load_graph(settings, args)
        bodies = [{**b, "depth": args.depth, "mode": "graph"} for b in make_bodies(names, args)]
        port = free_port()
        times: dict[str, list[float]] = {"health": [], "search": []}
        with (
            api_process(
                settings,
                port,
                args.workers,
                extra_env={"PYTHONPATH": str(args.serve_from.resolve())},
                cwd=args.serve_from,
            ),
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http,
        ):
            for i in range(args.warmup + args.requests):
                for kind in ("health", "search"):
                    started = time.perf_counter()
                    if kind == "health":
                        resp = http.get("/health")
                    else:
                        resp = http.post("/search/local", json=bodies[i % len(bodies)])
                    took = (time.perf_counter() - started) * 1000
                    resp.raise_for_status()
                    if i >= args.warmup:
                        times[kind].append(took)
    p95 = {kind: pct(values, 0.95) for kind, values in times.items()}
    for kind, values in times.items():
        print(f"{kind:7s} n={len(values)} p50 {statistics.median(values):.2f} ms  "
              f"p95 {p95[kind]:.2f} ms")  # fmt: skip
    ratio = p95["search"] / p95["health"]
    verdict = "within" if ratio <= BOUND else "NOT within"
    print(f"search p95 / health p95: {ratio:.1f}x ({verdict} the bound of {BOUND:.0f}x)")


if __name__ == "__main__":
    main()
