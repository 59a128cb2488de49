"""PostgreSQL peer for bench/search_bench.py: a throwaway cluster and a recursive-CTE expansion.

The cluster lives under a temporary directory on a free loopback port, run as the
``postgres`` user when the bench runs as root (initdb refuses root). Nothing here is product
code; kg never talks to PostgreSQL.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE UNLOGGED TABLE entity (id text PRIMARY KEY, name text NOT NULL, type text NOT NULL);
CREATE UNLOGGED TABLE adj (
    node text NOT NULL, nbr text NOT NULL, rel_type text NOT NULL, weight real NOT NULL,
    valid_from date, valid_to date
);
"""
INDEXES = """
CREATE INDEX adj_node_weight ON adj (node, weight DESC);
ANALYZE entity; ANALYZE adj;
"""

# Breadth-first expansion, both directions (adj holds each relation twice), the same
# per-node fanout as the Neo4j template (LATERAL ... LIMIT), validity at as_of. A recursive
# CTE cannot cap a hop's frontier (no LIMIT or aggregate per iteration), so it has none.
EXPAND = """
WITH RECURSIVE walk(node, hop) AS (
    SELECT s, 0 FROM unnest(%(seeds)s::text[]) AS s
  UNION
    SELECT n.nbr, w.hop + 1
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT a.nbr FROM adj a
        WHERE a.node = w.node
          AND (a.valid_from IS NULL OR a.valid_from <= %(as_of)s)
          AND (a.valid_to IS NULL OR a.valid_to > %(as_of)s)
        ORDER BY a.weight DESC
        LIMIT %(fanout)s
    ) n
    WHERE w.hop < %(depth)s - 1
),
frontier AS (SELECT node, min(hop) AS hop FROM walk GROUP BY node)
SELECT f.node AS src, e.nbr, e.rel_type, e.weight, f.hop + 1 AS hop
FROM frontier f
CROSS JOIN LATERAL (
    SELECT a.nbr, a.rel_type, a.weight FROM adj a
    WHERE a.node = f.node
      AND (a.valid_from IS NULL OR a.valid_from <= %(as_of)s)
      AND (a.valid_to IS NULL OR a.valid_to > %(as_of)s)
    ORDER BY a.weight DESC
    LIMIT %(fanout)s
) e
ORDER BY hop, e.weight DESC
LIMIT %(limit)s
"""


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    return Path(initdb).parent


@dataclass(frozen=True)
class PgCluster:
    dsn: str
    data: Path


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def throwaway_cluster(port: int) -> Iterator[PgCluster]:
    """initdb + pg_ctl start on 127.0.0.1:port; stopped and deleted afterwards."""
    bin_dir = _bin_dir()
    root = Path(tempfile.mkdtemp(prefix="kg-bench-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ]
        ),
        check=True,
        capture_output=True,
    )
    opts = (
        f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root} "
        "-c shared_buffers=1GB -c work_mem=64MB -c fsync=off -c synchronous_commit=off "
        "-c max_wal_size=4GB -c jit=off"
    )
    subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                opts,
                "-l",
                str(root / "log"),
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield PgCluster(dsn=f"host=127.0.0.1 port={port} user=postgres dbname=postgres", data=data)
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def load(
    dsn: str,
    entities: Sequence[tuple[str, str, str]],
    relations: Sequence[tuple[str, str, str, float, date | None, date | None]],
) -> None:
    """COPY the same graph in: each relation twice in adj, once per direction."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS entity, adj")
        conn.execute(SCHEMA)
        with conn.cursor() as cur:
            with cur.copy("COPY entity (id, name, type) FROM STDIN") as copy:
                for row in entities:
                    copy.write_row(row)
            with cur.copy(
                "COPY adj (node, nbr, rel_type, weight, valid_from, valid_to) FROM STDIN"
            ) as copy:
                for s, t, typ, w, vf, vt in relations:
                    copy.write_row((s, t, typ, w, vf, vt))
                    copy.write_row((t, s, typ, w, vf, vt))
        conn.execute(INDEXES)


def expand(conn: Any, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(EXPAND, params)
        return list(cur.fetchall())
