"""Search latency on every dev graph, unscoped and scoped, through REST: issue 41's bounds.

    .venv/bin/python bench/search_latency.py                         # every set, ~15 min
    .venv/bin/python bench/search_latency.py --sets musique,docs --rounds 2
    .venv/bin/python bench/search_latency.py --serve-from /tmp/kg-base   # another checkout serves

Each dev set of bench/retrieval_quality.py is ingested as it is there, into the namespace
``dev`` (the graph's only one), in a throwaway local Neo4j; ``kg serve`` (one worker, auth off;
``--serve-from``: another checkout's kg, for a before/after run) answers ``POST /search/local``
(depth 2, limit 20), one request at a time. Every question is asked in every mode, unscoped
and scoped to ``dev``, interleaved question by question so that a busy moment of the machine
falls on all of them alike; one unmeasured round first. Printed per set: each mode's median and
p95 in ms and their ratios to ``text``'s in the same scope, against the bounds (median <= 3x,
p95 <= 6x), and how many questions a scoped search ranked differently from the unscoped one
(scoped to the graph's only namespace it must rank exactly alike). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import retrieval_quality as rq  # noqa: E402 (after the path insert)
from bench.load_bench import api_process, pct  # noqa: E402
from kg.localserver import free_port  # noqa: E402

MODES = ("text", "vector", "graph", "hybrid")
SCOPES: dict[str, list[str] | None] = {"unscoped": None, "scoped": ["dev"]}
MEDIAN_BOUND, P95_BOUND = 3.0, 6.0


def measure(
    port: int, questions: list[str], modes: list[str], rounds: int
) -> tuple[dict[tuple[str, str], list[float]], dict[str, int]]:
    """Milliseconds per (mode, scope), the first round unmeasured; and per mode, how many
    questions the scoped search ranked differently from the unscoped one."""
    times: dict[tuple[str, str], list[float]] = {(m, s): [] for m in modes for s in SCOPES}
    differ: set[tuple[str, str]] = set()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
        for round_ in range(rounds + 1):
            for question in questions:
                for mode in modes:
                    ranked: dict[str, list[str]] = {}
                    for label, namespaces in SCOPES.items():
                        body: dict[str, Any] = {"query": question, "mode": mode, "depth": 2,
                                                "limit": 20, "namespaces": namespaces}  # fmt: skip
                        started = time.perf_counter()
                        resp = http.post("/search/local", json=body)
                        took = (time.perf_counter() - started) * 1000
                        resp.raise_for_status()
                        ranked[label] = [c["id"] for c in resp.json()["chunks"]]
                        if round_ > 0:
                            times[mode, label].append(took)
                    if ranked["scoped"] != ranked["unscoped"]:
                        differ.add((question, mode))
    return times, {mode: sum(1 for _, m in differ if m == mode) for mode in modes}


def report(
    name: str, times: dict[tuple[str, str], list[float]], differ: dict[str, int]
) -> list[str]:
    ranked = ", ".join(f"{mode} {n}" for mode, n in differ.items())
    lines = [f"\n{name}; questions ranked differently when scoped: {ranked}\n",
             "| mode | scope | n | median ms | p95 ms | median / text | p95 / text | within |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for (mode, label), values in times.items():
        base = times.get(("text", label)) or values
        med, p95 = statistics.median(values), pct(values, 0.95)
        r_med, r_p95 = med / statistics.median(base), p95 / pct(base, 0.95)
        ok = "yes" if r_med <= MEDIAN_BOUND and r_p95 <= P95_BOUND else "**no**"
        lines.append(f"| {mode} | {label} | {len(values)} | {med:.1f} | {p95:.1f} | "
                     f"{r_med:.2f}x | {r_p95:.2f}x | {ok} |")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="docs,vue-ru,hotpotqa,musique,xquad")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=2, help="measured passes (2)")
    parser.add_argument("--questions", type=int, default=0, help="first N questions (0: all)")
    parser.add_argument("--musique", type=Path, default=rq.MUSIQUE)
    parser.add_argument("--serve-from", type=Path, default=REPO, help="checkout that serves")
    parser.add_argument("--json", type=Path, help="also write the raw times here")
    args = parser.parse_args()
    limit = args.questions or None
    makers: dict[str, Callable[[], list[rq.DevSet]]] = {
        "hotpotqa": lambda: [rq.hotpotqa(limit)],
        "musique": lambda: [rq.musique(args.musique, limit)],
        "xquad": lambda: rq.xquad(limit)[:1],  # ru->ru+en: the graph with both languages
        "docs": lambda: [rq.docs(limit)],
        "vue-ru": lambda: [rq.vue_ru(limit)],
    }
    chosen = [s.strip() for s in args.sets.split(",") if s.strip()]
    if unknown := set(chosen) - set(makers):
        parser.error(f"--sets: unknown {sorted(unknown)}; choose from {sorted(makers)}")
    modes = [m for m in MODES if m in args.modes.split(",")]
    out: list[str] = []
    raw: dict[str, dict[str, list[float]]] = {}
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as settings:
        for name in chosen:
            for dev in makers[name]():
                rq.wipe(settings)
                print(f"[{dev.name}] {rq.ingest_into('dev', dev, settings)}", flush=True)
                questions = [q.text for q in dev.questions]
                port = free_port()
                env = {"PYTHONPATH": str(args.serve_from.resolve())}
                with api_process(settings, port, 1, extra_env=env, cwd=args.serve_from):
                    times, differ = measure(port, questions, modes, args.rounds)
                out += report(f"{dev.name}, {len(questions)} questions x {args.rounds} rounds",
                              times, differ)  # fmt: skip
                print("\n".join(out[-(len(times) + 3) :]), flush=True)
                raw[dev.name] = {f"{m} {s}": v for (m, s), v in times.items()}
    print(f"\nserved from {args.serve_from}\n" + "\n".join(out))
    if args.json:
        args.json.write_text(json.dumps(raw), encoding="utf-8")


if __name__ == "__main__":
    main()
