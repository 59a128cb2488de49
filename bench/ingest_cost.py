"""What an import costs in two checkouts of kg: MuSiQue's triplets, before and after a change.

    .venv/bin/python bench/ingest_cost.py --before /tmp/kg-before        # 1 run each
    .venv/bin/python bench/ingest_cost.py --before /tmp/kg-before --repeats 2

``--before`` is another checkout of kg (for example ``git archive main | tar -x -C
/tmp/kg-before``); ``--after`` defaults to this one. On one throwaway local Neo4j (or ``--uri``,
loopback only), each run wipes the database and imports ../shared/data/musique-dev/corpus.jsonl
(1,890 passages, ~17k GPT-3.5 triplets) with that checkout's own ``kg ingest EMPTY_DIR
--triplets corpus.jsonl --json`` in a child process, the two checkouts alternating (before,
after, after, before, ...) so a busy moment of the shared machine falls on both. Prints each
run's wall clock, its stage times (``timings`` of the summary) and what it wrote, then the
medians side by side with the ratio after/before. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from neo4j import GraphDatabase  # noqa: E402

from kg.settings import Settings  # noqa: E402

MUSIQUE = REPO.parent / "shared" / "data" / "musique-dev" / "corpus.jsonl"
STAGES = ("load", "chunk", "extract", "resolve", "write")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@contextmanager
def neo4j(args: argparse.Namespace) -> Iterator[Settings]:
    if args.uri:
        if urlsplit(args.uri).hostname not in LOOPBACK:
            raise SystemExit("refusing a non-loopback Neo4j: each run wipes the database")
        yield Settings(neo4j={"uri": args.uri, "password": args.password})
        return
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        yield s


def wipe(settings: Settings) -> None:
    """Everything goes, in batches (a hub's edges in one transaction would not fit)."""
    auth = (settings.neo4j.username, settings.neo4j.password.get_secret_value())
    with (
        GraphDatabase.driver(settings.neo4j.uri, auth=auth) as driver,
        driver.session(database=settings.neo4j.database) as session,
    ):
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
        session.run("MATCH (n) CALL (n) { DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def count(settings: Settings, label: str) -> int:
    auth = (settings.neo4j.username, settings.neo4j.password.get_secret_value())
    with GraphDatabase.driver(settings.neo4j.uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (n) WHERE $label IN labels(n) RETURN count(n) AS n",
            label=label,
            database_=settings.neo4j.database,
        )
    return int(records[0]["n"])


def run(settings: Settings, checkout: Path, corpus: Path) -> dict[str, Any]:
    """One import by ``checkout``'s kg into the wiped database: wall seconds and its summary."""
    wipe(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "KG_"))}
    env.update(
        PYTHONPATH=str(checkout),
        KG_NEO4J__URI=settings.neo4j.uri,
        KG_NEO4J__USERNAME=settings.neo4j.username,
        KG_NEO4J__PASSWORD=settings.neo4j.password.get_secret_value(),
        KG_NEO4J__DATABASE=settings.neo4j.database,
        KG_LOG_LEVEL="WARNING",
    )
    with tempfile.TemporaryDirectory() as empty:
        cmd = [sys.executable, "-m", "cli.main", "ingest", empty, "--triplets", str(corpus),
               "--json"]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kg ingest failed in {checkout}:\n{done.stderr[-2000:]}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall": wall, "summary": summary, "facts": count(settings, "Fact")}


def median(runs: list[dict[str, Any]], stage: str | None) -> float:
    values = [r["wall"] if stage is None else r["summary"]["timings"][stage] for r in runs]
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout measured first")
    parser.add_argument("--after", type=Path, default=REPO, help="checkout measured second")
    parser.add_argument("--corpus", type=Path, default=MUSIQUE)
    parser.add_argument("--repeats", type=int, default=1, help="runs per checkout")
    parser.add_argument("--uri", help="a loopback Neo4j to use (wiped!), else a throwaway one")
    parser.add_argument("--password", default="")
    args = parser.parse_args()
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with neo4j(args) as settings:
        for i in range(args.repeats):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for label in order:
                result = run(settings, checkouts[label], args.corpus)
                runs[label].append(result)
                s = result["summary"]
                stages = " ".join(f"{k} {s['timings'][k]:.1f}" for k in STAGES)
                print(f"{label}: wall {result['wall']:.1f} s ({stages}); {s['chunks']} chunks, "
                      f"{s['entities_created']} entities, {s['relations_created']} relations, "
                      f"{result['facts']} facts", flush=True)  # fmt: skip
    print(f"\nmedians over {args.repeats} run(s) each; before = {checkouts['before']}, "
          f"after = {checkouts['after']}\n")  # fmt: skip
    print("| seconds | before | after | after/before |")
    print("|---|---|---|---|")
    for stage in (None, *STAGES):
        b, a = median(runs["before"], stage), median(runs["after"], stage)
        ratio = f"{a / b:.2f}x" if b > 0 else "-"
        print(f"| {stage or 'wall clock'} | {b:.1f} | {a:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
