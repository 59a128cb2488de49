"""The first search after ``kg serve``, against a warm one, on the bundled example graph.

    .venv/bin/python bench/first_search.py                 # 3 trials, ~2 min
    .venv/bin/python bench/first_search.py --trials 5 --workers 2
    .venv/bin/python bench/first_search.py --warm-up-searches 0     # planning only
    .venv/bin/python bench/first_search.py --keep-server            # Neo4j not restarted

A throwaway local Neo4j gets the example graph (``kg.ingest`` with its triplets file). Each
trial restarts that server (its page cache and query caches start empty, as after a reboot),
starts ``kg serve`` as a user does (bench/load_bench.py's child process, auth off), waits for
``/health``, then times over HTTP: the first ``POST /search/local``, and ``--warm`` more
searches after it. Questions cycle through a fixed list (depths 1-3, graph and hybrid modes),
so the first search is not a repeat of anything. Reported per trial: start-up (process start
to a healthy ``/health``), first search, warm p50 and first / warm; then the medians.
Not part of the test suite.
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

from bench.load_bench import api_process  # noqa: E402 (after the path insert)
from kg.graph.driver import open_driver  # noqa: E402
from kg.graph.schema import apply_schema  # noqa: E402
from kg.localserver import LocalNeo4j, free_port, throwaway_server  # noqa: E402
from kg.settings import Settings  # noqa: E402

EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
QUESTIONS = [
    ("Which database does the Payments API use?", 2, "graph"),
    ("Who owns the Billing Service?", 1, "graph"),
    ("What does Checkout Web depend on?", 3, "graph"),
    ("How did the payments outage start?", 2, "hybrid"),
    ("What runs on k8s-eu-1?", 2, "graph"),
    ("Какую базу данных использует сервис платежей?", 2, "graph"),
    ("What does the Notification Service call?", 2, "hybrid"),
    ("Who works on the Ledger Service?", 1, "graph"),
]


def _body(i: int) -> dict[str, object]:
    query, depth, mode = QUESTIONS[i % len(QUESTIONS)]
    return {"query": query, "depth": depth, "mode": mode, "limit": 10}


def trial(settings: Settings, args: argparse.Namespace) -> tuple[float, float, float]:
    """Start-up ms, first search ms, warm p50 ms, for one fresh `kg serve`."""
    port = free_port()
    warm_up = {"KG_SEARCH__WARM_UP_SEARCHES": str(args.warm_up_searches)}
    t0 = time.perf_counter()
    with api_process(settings, port, args.workers, extra_env=warm_up, settle_s=0.0):
        started = (time.perf_counter() - t0) * 1000
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            times = []
            for i in range(args.warm + 1):
                t1 = time.perf_counter()
                resp = http.post("/search/local", json=_body(i))
                resp.raise_for_status()
                times.append((time.perf_counter() - t1) * 1000)
    return started, times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--warm", type=int, default=24, help="searches after the first")
    parser.add_argument("--workers", type=int, default=1, help="kg serve --workers")
    parser.add_argument(
        "--keep-server", action="store_true", help="no Neo4j restart between trials"
    )
    parser.add_argument(
        "--warm-up-searches", type=int, default=3, help="KG_SEARCH__WARM_UP_SEARCHES (0: off)"
    )
    args = parser.parse_args()
    with throwaway_server(password="kg-bench-password") as settings:
        with open_driver(settings.neo4j) as driver:
            from kg.ingest import ingest

            apply_schema(driver, database=settings.neo4j.database,
                         dimension=settings.resolve.embedding_dim)  # fmt: skip
            ingest(settings, driver, EXAMPLE, triplets=TRIPLETS)
        server = LocalNeo4j(settings)
        rows = []
        print("| trial | start-up | first search | warm p50 | first / warm |")
        print("|---|---|---|---|---|")
        for n in range(1, args.trials + 1):
            if not args.keep_server:
                server.stop()
                server.start()
            started, first, warm = trial(settings, args)
            rows.append((started, first, warm, first / warm))
            print(f"| {n} | {started:.0f} ms | {first:.1f} ms | {warm:.1f} ms | "
                  f"{first / warm:.2f} |", flush=True)  # fmt: skip
        med = [statistics.median(r[i] for r in rows) for i in range(4)]
        print(f"| median | {med[0]:.0f} ms | {med[1]:.1f} ms | {med[2]:.1f} ms | {med[3]:.2f} |")


if __name__ == "__main__":
    main()
