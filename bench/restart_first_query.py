"""The README's library example right after a restart of Neo4j: does the first search succeed?

    .venv/bin/python bench/restart_first_query.py                    # 3 restarts, this checkout
    .venv/bin/python bench/restart_first_query.py --code /tmp/old    # another checkout's kg

A throwaway local Neo4j (a private home, free ports); the README's Python block runs once to
ingest the example, then each trial restarts the server (a cold JVM, empty page cache and query
caches) and runs the block again at once, as a new process with ``--code`` first on its
``PYTHONPATH`` (a ``git archive`` of an older commit compares before and after). Prints each
run's exit code, wall time and the last line of its output or error, then the failures.
Not part of the test suite; the machine's load matters (state it with the figures).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kg.localserver import LocalNeo4j, free_port  # noqa: E402 (after the path insert)
from kg.settings import Settings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--code", type=Path, default=REPO, help="the kg to run (its root)")
    args = parser.parse_args()
    code = args.code.resolve()
    block = re.findall(r"```python\n(.*?)```", (code / "README.md").read_text(), re.S)[0]
    home = Path(tempfile.mkdtemp(prefix="kg-restart-"))
    script = home / "example.py"
    script.write_text(block)
    bolt = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "NEO4J_"))}
    env.update(
        KG_SERVER__HOME=str(home / "neo4j"),
        KG_SERVER__BOLT_PORT=str(bolt),
        KG_SERVER__HTTP_PORT=str(free_port()),
        KG_NEO4J__URI=f"bolt://127.0.0.1:{bolt}",  # an older kg's URI did not follow the port
        KG_SERVER__HEAP="512m",
        KG_SERVER__PAGECACHE="128m",
        PYTHONPATH=str(code),
    )
    server_keys = {k: v for k, v in env.items() if k.startswith("KG_SERVER__")}
    server = LocalNeo4j(
        Settings(server={k.removeprefix("KG_SERVER__").lower(): v for k, v in server_keys.items()})
    )
    failures = 0
    try:
        server.start()
        for trial in range(args.trials + 1):
            started = time.monotonic()
            proc = subprocess.run(
                [sys.executable, str(script)], cwd=code, env=env,
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            took = time.monotonic() - started
            lines = (proc.stdout if proc.returncode == 0 else proc.stderr).strip().splitlines()
            what = "first run (ingest)" if trial == 0 else f"after restart {trial}"
            print(f"{what}: exit {proc.returncode}, {took:.1f} s: {lines[-1] if lines else ''}")
            failures += trial > 0 and proc.returncode != 0
            server.stop()
            server.start()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(f"failed after a restart: {failures} of {args.trials}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
