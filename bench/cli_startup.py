"""How long the CLI takes to answer: ``kg --help``, ``kg --version``, ``kg neo4j status``.

    git archive <base> | tar -x -C /tmp/kg-base      # a checkout to compare with
    .venv/bin/python bench/cli_startup.py --before /tmp/kg-base          # 7 runs each
    .venv/bin/python bench/cli_startup.py --runs 11 --command "search --help"

Each command runs as a user runs it, a fresh ``python -m cli.main ...`` process, from the
checkout given (``--before``) and from this one, alternating so that machine load hits both
alike; both use this interpreter and its installed packages (``-m`` puts the checkout's own
``cli`` and ``kg`` first on the path). ``kg neo4j status`` looks at an empty server home, so
it reports "stopped" without touching any server. Printed: median and min wall time per
command and checkout, and the ratio of the medians. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("--help", "--version", "neo4j status")


def run(checkout: Path, command: str, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``python -m cli.main <command>`` to its exit, and its CPU
    seconds (user + system: what a busy machine inflates less than wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cli.main", *command.split()],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="A checkout to compare with.")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--command", action="append", help="Instead of the three defaults.")
    args = parser.parse_args()
    commands = args.command or list(COMMANDS)
    checkouts = {"after": REPO}
    if args.before is not None:
        checkouts = {"before": args.before.resolve(), **checkouts}
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "NEO4J_"))}
        env["KG_SERVER__HOME"] = str(Path(home) / "neo4j")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for command in commands:
            for checkout in checkouts.values():
                run(checkout, command, env)  # one unmeasured run: bytecode, the OS file cache
            for _ in range(args.runs):
                for label, checkout in checkouts.items():
                    times.setdefault((label, command), []).append(run(checkout, command, env))
    print(f"{args.runs} runs each, seconds: median wall / min wall / median CPU")
    header = f"{'command':<20}" + "".join(f"{label:>24}" for label in checkouts)
    print(header + ("   after/before wall, CPU" if len(checkouts) == 2 else ""))
    for command in commands:
        row = f"kg {command:<17}"
        medians: list[tuple[float, float]] = []
        for label in checkouts:
            runs = times[(label, command)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            medians.append((statistics.median(walls), statistics.median(cpus)))
            row += f"{medians[-1][0]:>10.3f} / {min(walls):.3f} / {medians[-1][1]:.3f}"
        if len(medians) == 2:
            (wb, cb), (wa, ca) = medians
            row += f"   {wa / wb:.2f}x, {ca / cb:.2f}x"
        print(row)


if __name__ == "__main__":
    main()
