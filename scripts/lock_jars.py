"""Write neo4j-server/jars.lock from neo4j-server/pom.xml with Maven (run after a version bump).

.venv/bin/python scripts/lock_jars.py [--check]

Maven resolves the pom into a temporary folder; the lock records every jar's coordinates, size
and sha256. `kg neo4j start` then fetches exactly those files and needs no Maven.
``--check`` compares instead of writing (exit code 1 when the lock is stale).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kg.localserver.jars import lock_from_maven, render_lock  # noqa: E402
from kg.settings import BROWSER_VERSION, NEO4J_VERSION  # noqa: E402

POM = REPO / "neo4j-server" / "pom.xml"
LOCK = REPO / "neo4j-server" / "jars.lock"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    lock = lock_from_maven(POM, neo4j_version=NEO4J_VERSION, browser_version=BROWSER_VERSION)
    text = render_lock(lock)
    if args.check:
        current = LOCK.read_text(encoding="utf-8") if LOCK.exists() else ""
        if current != text:
            print(f"{LOCK} is stale: run .venv/bin/python scripts/lock_jars.py", file=sys.stderr)
            return 1
        print(f"{LOCK} is current ({len(lock.jars)} jars)")
        return 0
    LOCK.write_text(text, encoding="utf-8")
    print(f"wrote {LOCK}: {len(lock.jars)} jars, {lock.total_bytes / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
