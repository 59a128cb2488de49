"""How long the CLI takes to answer, command by command, against the bounds of issue 38.

    .venv/bin/python bench/cli_startup.py                      # every bound, 7 runs each
    .venv/bin/python bench/cli_startup.py --runs 11 --only help
    git archive <base> | tar -x -C /tmp/kg-base                # a checkout to compare with
    .venv/bin/python bench/cli_startup.py --before /tmp/kg-base

Each command runs as a user runs it, a fresh ``python -m cli.main ...`` process; with
``--before``, from that checkout and from this one, alternating so that machine load hits both
alike (both use this interpreter and its installed packages; ``-m`` puts the checkout's own
``cli`` and ``kg`` first on the path). Groups (``--only``):

- ``help``: ``kg --help``, ``kg --version`` and every subcommand's ``--help`` (bound 0.3 s);
- ``local``: ``kg neo4j status`` on an empty server home, so "stopped" (bound 0.4 s);
- ``graph``: ``kg namespaces`` (0.6 s) and ``kg search --mode text`` (0.6 s) on the example
  graph, loaded once into a throwaway local Neo4j this script starts and stops;
- ``closed``: commands that must fail against a closed port, with their message, within 1.5 s:
  ``kg namespaces`` with Neo4j's port closed, ``kg ask`` and ``kg query`` with the LLM's.

Printed: median and min wall time and median CPU per command and checkout, the bound, and
whether the median is within it. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SUBCOMMANDS = ("neo4j", "schema", "ingest", "migrate", "communities", "namespaces", "forget",
               "search", "eval", "ask", "query", "mcp", "serve", "example", "browse")  # fmt: skip
QUESTION = "Who owns AuthService?"


@dataclass
class Case:
    group: str
    args: list[str]
    bound_s: float
    env: dict[str, str] = field(default_factory=dict)
    expect: str = ""  # a piece of the output (stdout + stderr) that shows it did its work

    @property
    def label(self) -> str:
        return "kg " + " ".join(a if len(a) < 24 else a[:21] + "..." for a in self.args)


def run(checkout: Path, case: Case, env: dict[str, str]) -> tuple[float, float, str]:
    """Seconds from spawning ``python -m cli.main <args>`` to its exit, its CPU seconds (user
    + system: what a busy machine inflates less than wall time), and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", *case.args],
        cwd=checkout,
        env={**env, **case.env},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, proc.stdout + proc.stderr


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def example_graph() -> Iterator[dict[str, str]]:
    """A throwaway local Neo4j holding the example graph; the variables that reach it."""
    from kg import KnowledgeGraph
    from kg.localserver import throwaway_server

    with throwaway_server(heap="512m", pagecache="128m") as settings:
        with KnowledgeGraph(settings) as graph:
            graph.ingest(
                REPO / "examples" / "platform-docs",
                triplets=REPO / "examples" / "platform-docs.triplets.jsonl",
            )
            # A server that has run before, as a user's has: the JVM compiles the reads of
            # its first few hundred queries, and that CPU would fall on the first measured
            # commands (two cores: the command and the compiler share them).
            for _ in range(100):
                graph.search(QUESTION, mode="text")
                graph.namespaces()
        time.sleep(2)
        yield {
            "KG_NEO4J__URI": settings.neo4j.uri,
            "KG_NEO4J__PASSWORD": settings.neo4j.password.get_secret_value(),
        }


def cases(groups: set[str], graph_env: dict[str, str]) -> list[Case]:
    found: list[Case] = []
    if "help" in groups:
        found += [Case("help", ["--help"], 0.3, expect="ingest"),
                  Case("help", ["--version"], 0.3, expect=".")]  # fmt: skip
        found += [Case("help", [name, "--help"], 0.3, expect="Usage") for name in SUBCOMMANDS]
    if "local" in groups:
        found.append(Case("local", ["neo4j", "status"], 0.4, expect="stopped"))
    if "graph" in groups:
        found += [
            Case("graph", ["namespaces"], 0.6, graph_env, expect="platform-docs"),
            Case("graph", ["search", QUESTION, "--mode", "text"], 0.6, graph_env, "AuthService"),
        ]
    if "closed" in groups:
        neo4j = {"KG_NEO4J__URI": f"bolt://127.0.0.1:{closed_port()}",
                 "KG_NEO4J__PASSWORD": "unused"}  # fmt: skip
        llm = {**graph_env, "KG_LLM__BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
        found += [
            Case("closed", ["namespaces"], 1.5, neo4j, expect="does not answer"),
            Case("closed", ["ask", QUESTION], 1.5, llm, expect="127.0.0.1"),
            Case("closed", ["query", QUESTION], 1.5, llm, expect="127.0.0.1"),
        ]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="A checkout to compare with.")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", action="append", choices=("help", "local", "graph", "closed"),
                        help="Only these groups (repeatable; default: all).")  # fmt: skip
    args = parser.parse_args()
    groups = set(args.only or ("help", "local", "graph", "closed"))
    checkouts = {"after": REPO}
    if args.before is not None:
        checkouts = {"before": args.before.resolve(), **checkouts}
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "NEO4J_"))}
        env.update(KG_SERVER__HOME=str(Path(home) / "neo4j"), KG_ENV_FILE="", COLUMNS="100")
        with contextlib.ExitStack() as stack:
            wanted = groups & {"graph", "closed"}
            graph_env = stack.enter_context(example_graph()) if wanted else {}
            measured = measure(cases(groups, graph_env), checkouts, env, args.runs)
    report(measured, checkouts, args.runs)


Timings = dict[tuple[str, str], list[tuple[float, float]]]


def measure(
    found: list[Case], checkouts: dict[str, Path], env: dict[str, str], runs: int
) -> list[tuple[Case, Timings]]:
    measured: list[tuple[Case, Timings]] = []
    for case in found:
        times: Timings = {}
        for label, checkout in checkouts.items():
            _, _, out = run(checkout, case, env)  # unmeasured: bytecode, the OS file cache
            if case.expect not in out:
                raise SystemExit(f"{case.label} ({label}) did not do its work:\n{out[-2000:]}")
        for _ in range(runs):
            for label, checkout in checkouts.items():
                wall, cpu, _ = run(checkout, case, env)
                times.setdefault((label, case.label), []).append((wall, cpu))
        measured.append((case, times))
    return measured


def report(measured: list[tuple[Case, Timings]], checkouts: dict[str, Path], runs: int) -> None:
    print(f"{runs} runs each, seconds: median wall / min wall / median CPU; bound on the median")
    header = f"{'command':<34}" + "".join(f"{label:>26}" for label in checkouts)
    print(
        header + f"{'bound':>8}  within" + ("   after/before wall" if len(checkouts) == 2 else "")
    )
    failed = 0
    for case, times in measured:
        row = f"{case.label:<34}"
        medians: list[float] = []
        for label in checkouts:
            runs_ = times[(label, case.label)]
            walls, cpus = [w for w, _ in runs_], [c for _, c in runs_]
            medians.append(statistics.median(walls))
            row += f"{medians[-1]:>10.3f} / {min(walls):.3f} / {statistics.median(cpus):.3f}"
        ok = medians[-1] <= case.bound_s
        failed += not ok
        row += f"{case.bound_s:>8.1f}  {'yes' if ok else 'NO'}"
        if len(medians) == 2:
            row += f"   {medians[1] / medians[0]:.2f}x"
        print(row)
    print(f"{len(measured) - failed} of {len(measured)} within their bound")


if __name__ == "__main__":
    main()
