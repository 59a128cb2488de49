"""Local server start with and without the JVM class archive (kg/localserver/classes.py).

    .venv/bin/python bench/server_start.py              # 3 starts each way, Neo4j's flags
    .venv/bin/python bench/server_start.py --suite      # the test suite's JVM flags

Each start is a throwaway server (``kg.localserver.throwaway_server``: a new home, free ports)
timed from launch to a server that answers Bolt and HTTP, then stopped; the two ways alternate
so that a busy moment of the machine falls on both. The first start with the archive on records
it when none exists yet (and is reported apart). Prints the medians and their ratio.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg.localserver import throwaway_server

SUITE_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:-UseG1GC", "-XX:+UseSerialGC")


def start_s(archive: bool, flags: tuple[str, ...]) -> float:
    started = time.perf_counter()
    with throwaway_server(heap="512m", pagecache="128m", class_archive=archive, java_options=flags):
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3, help="measured starts each way (3)")
    parser.add_argument("--suite", action="store_true", help="the test suite's JVM flags")
    args = parser.parse_args()
    flags = SUITE_FLAGS if args.suite else ()
    first = start_s(True, flags)  # records the archive if none exists yet
    print(f"first start with the archive on (records it when missing): {first:.2f} s")
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.starts):
        for archive in (False, True):
            times[archive].append(start_s(archive, flags))
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"without the archive: median {off:.2f} s  {[round(t, 2) for t in times[False]]}")
    print(f"with the archive:    median {on:.2f} s  {[round(t, 2) for t in times[True]]}")
    print(f"with / without: {on / off:.2f}x")


if __name__ == "__main__":
    main()
