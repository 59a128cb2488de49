"""What an import costs in two checkouts of kg: MuSiQue's triplets, before and after a change.

    .venv/bin/python bench/ingest_cost.py --before /tmp/kg-before        # 1 run each
    .venv/bin/python bench/ingest_cost.py --before /tmp/kg-before --repeats 2

``--before`` is another checkout of kg (for example ``git archive main | tar -x -C
/tmp/kg-before``); ``--after`` defaults to this one. On one throwaway local Neo4j (or ``--uri``,
loopback only), each run wipes the database and imports ../shared/data/musique-dev/corpus.jsonl
(1,890 passages, ~17k GPT-3.5 triplets) with that checkout's own ``kg ingest EMPTY_DIR
--triplets corpus.jsonl --json`` in a child process, the two checkouts alternating (before,
after, after, before, ...) so a busy moment of the shared machine falls on both. Prints each
run's wall clock, its CPU seconds (the kg process's plus the Neo4j server's: on a shared machine
the steadier figure), its stage times (``timings`` of the summary) and what it wrote, then the
medians side by side with the ratio after/before. ``--migrate``: then, on a graph the before
checkout imported, times the after checkout's ``kg migrate --json`` (a graph-model step such
as 4 -> 5, facts, on the whole corpus). Not part of the test suite.
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

# ../shared beside the main checkout; a worktree under /work/wt/ finds it one more level up.
MUSIQUE = next(
    (p / "shared/data/musique-dev/corpus.jsonl" for p in REPO.parents
     if (p / "shared/data/musique-dev/corpus.jsonl").is_file()),
    REPO.parent / "shared/data/musique-dev/corpus.jsonl",
)  # fmt: skip
STAGES = ("load", "chunk", "extract", "resolve", "write")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


SERVER_PID: list[int] = []  # the throwaway server's process, whose CPU time is counted


@contextmanager
def neo4j(args: argparse.Namespace) -> Iterator[Settings]:
    if args.uri:
        if urlsplit(args.uri).hostname not in LOOPBACK:
            raise SystemExit("refusing a non-loopback Neo4j: each run wipes the database")
        yield Settings(neo4j={"uri": args.uri, "password": args.password})
        return
    from kg.localserver import LocalNeo4j, throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        pid = LocalNeo4j(s).status().pid
        SERVER_PID[:] = [pid] if pid is not None else []
        yield s


def cpu_seconds() -> float:
    """User + system CPU seconds of finished child processes and of the Neo4j server so far."""
    own = os.times()
    total = own.children_user + own.children_system
    for pid in SERVER_PID:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


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


def kg(settings: Settings, checkout: Path, *args: str) -> tuple[float, float, dict[str, Any]]:
    """``checkout``'s ``kg ARGS --json`` in a child process: wall and CPU seconds, its JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "KG_"))}
    env.update(
        PYTHONPATH=str(checkout),
        KG_NEO4J__URI=settings.neo4j.uri,
        KG_NEO4J__USERNAME=settings.neo4j.username,
        KG_NEO4J__PASSWORD=settings.neo4j.password.get_secret_value(),
        KG_NEO4J__DATABASE=settings.neo4j.database,
        KG_LOG_LEVEL="WARNING",
    )
    cmd = [sys.executable, "-m", "cli.main", *args, "--json"]
    cpu, started = cpu_seconds(), time.perf_counter()
    done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    if done.returncode != 0:
        raise SystemExit(f"kg {args[0]} failed in {checkout}:\n{done.stderr[-2000:]}")
    return wall, cpu, json.loads(done.stdout.strip().splitlines()[-1])


def run(settings: Settings, checkout: Path, corpus: Path) -> dict[str, Any]:
    """One import by ``checkout``'s kg into the wiped database: wall seconds and its summary."""
    wipe(settings)
    with tempfile.TemporaryDirectory() as empty:
        wall, cpu, summary = kg(settings, checkout, "ingest", empty, "--triplets", str(corpus))
    facts = count(settings, "Fact")
    return {"wall": wall, "cpu": cpu, "summary": summary, "facts": facts,
            "finished": time.monotonic()}  # fmt: skip


def runs_last(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The run made last (the graph the database holds now)."""
    done = [r for label in runs for r in runs[label]]
    return max(done, key=lambda r: r["finished"]) if done else None


def median(runs: list[dict[str, Any]], stage: str) -> float:
    values = [r[stage] if stage in ("wall", "cpu") else r["summary"]["timings"][stage]
              for r in runs]  # fmt: skip
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout measured first")
    parser.add_argument("--after", type=Path, default=REPO, help="checkout measured second")
    parser.add_argument("--corpus", type=Path, default=MUSIQUE)
    parser.add_argument("--repeats", type=int, default=1, help="runs per checkout (0: none)")
    parser.add_argument("--migrate", action="store_true", help="then time after's kg migrate")
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
                print(f"{label}: wall {result['wall']:.1f} s, cpu {result['cpu']:.1f} s "
                      f"({stages}); {s['chunks']} chunks, "
                      f"{s['entities_created']} entities, {s['relations_created']} relations, "
                      f"{result['facts']} facts", flush=True)  # fmt: skip
        if args.migrate:
            if not runs["before"] or runs["before"][-1] is not runs_last(runs):
                run(settings, checkouts["before"], args.corpus)
            wall, cpu, report = kg(settings, checkouts["after"], "migrate")
            print(f"migrate by after, on before's graph: wall {wall:.1f} s, cpu {cpu:.1f} s; "
                  f"{json.dumps(report, sort_keys=True)}; {count(settings, 'Fact')} facts")  # fmt: skip
    if not args.repeats:
        return
    print(f"\nmedians over {args.repeats} run(s) each; before = {checkouts['before']}, "
          f"after = {checkouts['after']}\n")  # fmt: skip
    print("| seconds | before | after | after/before |")
    print("|---|---|---|---|")
    names = {"wall": "wall clock", "cpu": "CPU (kg + Neo4j)"}
    for stage in ("wall", "cpu", *STAGES):
        b, a = median(runs["before"], stage), median(runs["after"], stage)
        ratio = f"{a / b:.2f}x" if b > 0 else "-"
        print(f"| {names.get(stage, stage)} | {b:.1f} | {a:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
