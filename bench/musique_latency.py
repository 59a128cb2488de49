"""Latency on an LLM-extracted graph: the MuSiQue dev corpus, every mode, through REST.

    .venv/bin/python bench/musique_latency.py                          # ~5 min: import + 3 rounds
    .venv/bin/python bench/musique_latency.py --uri bolt://127.0.0.1:7687 --password pw --reuse
    .venv/bin/python bench/musique_latency.py --uri ... --reuse --serve-from /tmp/old-checkout

The synthetic graph of bench/search_bench.py has few mentions per chunk and clean names; a
graph that an LLM extracted from real text has many mentions per chunk and noisy, high-degree
names (docs/benchmarks.md, "Latency on an LLM-extracted graph"). This imports
../shared/data/musique-dev (1,890 passages with their GPT-3.5 triplets, ``kg ingest EMPTY_DIR
--triplets corpus.jsonl``) into a throwaway local Neo4j (or uses ``--uri``; ``--reuse``: the
database already holds it, nothing is wiped or imported), starts ``kg serve`` on a free
loopback port (auth off; ``--serve-from``: another checkout's kg, for a before/after run), and
asks its 50 questions ``--rounds`` times through ``POST /search/local`` (depth 2, limit 20),
one request at a time, the modes interleaved question by question so that a busy moment of
the machine falls on all of them alike. After one unmeasured round, it prints each mode's
median and p95 and their ratios to ``text``'s. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.load_bench import LOOPBACK, api_process, pct  # noqa: E402 (after the path insert)
from kg.client import KnowledgeGraph  # noqa: E402
from kg.localserver import free_port  # noqa: E402
from kg.settings import Settings  # noqa: E402

MUSIQUE = REPO.parent / "shared" / "data" / "musique-dev"
MODES = ("text", "vector", "graph", "hybrid")


@contextmanager
def neo4j(args: argparse.Namespace) -> Iterator[Settings]:
    if args.uri:
        host = urlsplit(args.uri).hostname or ""
        if host not in LOOPBACK:
            raise SystemExit(f"refusing a non-loopback Neo4j ({host})")
        yield Settings(neo4j={"uri": args.uri, "password": args.password})
        return
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        yield s


def load(settings: Settings, folder: Path) -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as empty, KnowledgeGraph(settings) as graph:
        s = graph.ingest(empty, triplets=folder / "corpus.jsonl")
    print(f"imported {s.chunks} chunks, {s.entities_created} entities, "
          f"{s.relations_created} relations in {time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip


def measure(
    port: int, questions: list[str], modes: list[str], rounds: int, timeout: float
) -> dict[str, list[float]]:
    """Milliseconds per request and mode; the first round is a warm-up, not counted."""
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as http:
        for round_ in range(rounds + 1):
            for question in questions:
                for mode in modes:
                    body = {"query": question, "mode": mode, "depth": 2, "limit": 20}
                    started = time.perf_counter()
                    resp = http.post("/search/local", json=body)
                    took = (time.perf_counter() - started) * 1000
                    resp.raise_for_status()
                    if round_ > 0:
                        times[mode].append(took)
    return times


def report(times: dict[str, list[float]]) -> str:
    text_med = statistics.median(times["text"]) if times.get("text") else None
    text_p95 = pct(times["text"], 0.95) if times.get("text") else None
    lines = ["| mode | requests | median ms | p95 ms | median / text | p95 / text |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for mode, values in times.items():
        med, p95 = statistics.median(values), pct(values, 0.95)
        ratio = f"{med / text_med:.1f}x" if text_med else "-"
        ratio95 = f"{p95 / text_p95:.1f}x" if text_p95 else "-"
        lines.append(f"| {mode} | {len(values)} | {med:.1f} | {p95:.1f} | {ratio} | {ratio95} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--musique", type=Path, default=MUSIQUE, help="the musique-dev folder")
    parser.add_argument("--uri", help="a loopback Neo4j to use instead of a throwaway one")
    parser.add_argument("--password", default="", help="its password (with --uri)")
    parser.add_argument("--reuse", action="store_true", help="the database holds the corpus")
    parser.add_argument("--serve-from", type=Path, default=REPO, help="checkout that serves")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=3, help="measured passes (3)")
    parser.add_argument("--questions", type=int, default=0, help="first N questions (0: all)")
    parser.add_argument("--request-timeout", type=float, default=60.0)
    parser.add_argument("--json", type=Path, help="also write the raw times here")
    args = parser.parse_args()
    if args.uri and not args.reuse:
        raise SystemExit("with --uri pass --reuse: this script only wipes throwaway servers")
    lines = (args.musique / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [str(json.loads(line)["question"]) for line in lines]
    questions = questions[: args.questions] if args.questions else questions
    modes = args.modes.split(",")
    with neo4j(args) as settings:
        if not args.reuse:
            load(settings, args.musique)
        port = free_port()
        env = {"PYTHONPATH": str(args.serve_from.resolve())}
        with api_process(settings, port, 1, extra_env=env, cwd=args.serve_from):
            times = measure(port, questions, modes, args.rounds, args.request_timeout)
    print(f"\nMuSiQue dev, {len(questions)} questions x {args.rounds} rounds, one client, "
          f"served from {args.serve_from}:\n")  # fmt: skip
    print(report(times))
    if args.json:
        args.json.write_text(json.dumps(times), encoding="utf-8")


if __name__ == "__main__":
    main()
