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
CREATE UNLOGGED TABLE entity (
    id text PRIMARY KEY, name text NOT NULL, type text NOT NULL, degree integer NOT NULL DEFAULT 0
);
CREATE UNLOGGED TABLE rel (
    rid integer PRIMARY KEY, src text NOT NULL, dst text NOT NULL, rel_type text NOT NULL,
    weight real NOT NULL, valid_from date, valid_to date
);
CREATE UNLOGGED TABLE adj (
    node text NOT NULL, nbr text NOT NULL, rid integer NOT NULL, rel_type text NOT NULL,
    weight real NOT NULL, valid_from date, valid_to date
);
CREATE UNLOGGED TABLE mention (node text NOT NULL);
"""
INDEXES = """
CREATE INDEX adj_node_weight ON adj (node, weight DESC);
-- Neo4j's degree of an entity: its relations and the chunks that mention it.
UPDATE entity e SET degree = d.n FROM (
    SELECT node, count(*) AS n FROM (
        SELECT node FROM adj UNION ALL SELECT node FROM mention
    ) x GROUP BY node
) d WHERE d.node = e.id;
ANALYZE entity; ANALYZE rel; ANALYZE adj;
"""

# The old peer: breadth-first expansion as one recursive CTE, both directions (adj holds each
# relation twice), the same per-node fanout (LATERAL ... LIMIT) and validity at as_of. A
# recursive CTE cannot cap a hop's frontier (no LIMIT or aggregate per iteration) nor stop
# early, so it has neither, and it returns 5 scalar columns: not like for like.
EXPAND_CTE = """
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

# The like-for-like peer: kg's seed_expansion step for step (kg/cypher/render.py). Per hop:
# the seeds in the order given; stop when the relations found fill the limit; past the first hop, skip frontier nodes whose
# degree is above hub_degree (Neo4j reads a node's degree from its store, here a column);
# each frontier node's heaviest valid relations
# (at most fanout; here an index range scan, where Neo4j reads the node's whole chain); the
# first frontier_cap unseen neighbours, in frontier order then weight, are the next frontier.
# Each relation at its first hop; ordered by hop, then weight; the same columns as the template.
# ROWS 300: at the default estimate (1000) the planner hashes all of rel instead of probing it.
EXPAND_FUNCTION = """
CREATE OR REPLACE FUNCTION kg_expand(
    seeds text[], depth int, as_of date, fanout int, frontier_cap int, lim int, hub_degree int
) RETURNS TABLE (rid integer, hop integer) LANGUAGE plpgsql STABLE ROWS 300 AS $$
DECLARE
    frontier text[];
    seen text[];
    rels integer[];
    reached text[];
    all_rids integer[] := '{}';
    all_hops integer[] := '{}';
    found integer;
BEGIN
    SELECT array_agg(q.id ORDER BY q.ord) INTO frontier FROM (
        SELECT e.id, min(s.ord) AS ord
        FROM unnest(seeds) WITH ORDINALITY AS s(id, ord) JOIN entity e ON e.id = s.id
        GROUP BY e.id
    ) q;
    seen := frontier;
    FOR h IN 1..depth LOOP
        EXIT WHEN frontier IS NULL;
        SELECT count(DISTINCT x) INTO found FROM unnest(all_rids) AS x;
        EXIT WHEN found >= lim;
        WITH picked AS (
            SELECT p.rid, p.nbr,
                   row_number() OVER (ORDER BY f.ord, p.weight DESC) AS rn
            FROM unnest(frontier) WITH ORDINALITY AS f(node, ord)
            JOIN entity fe ON fe.id = f.node
                AND (h = 1 OR hub_degree IS NULL OR fe.degree <= hub_degree)
            CROSS JOIN LATERAL (
                SELECT a.rid, a.nbr, a.weight FROM adj a
                WHERE a.node = f.node
                  AND (a.valid_from IS NULL OR a.valid_from <= as_of)
                  AND (a.valid_to IS NULL OR a.valid_to > as_of)
                ORDER BY a.weight DESC
                LIMIT fanout
            ) p
        )
        SELECT (SELECT array_agg(picked.rid) FROM picked),
               CASE WHEN h < depth THEN (
                   SELECT array_agg(q.nbr ORDER BY q.first) FROM (
                       SELECT picked.nbr, min(picked.rn) AS first FROM picked
                       WHERE NOT picked.nbr = ANY(seen)
                       GROUP BY picked.nbr ORDER BY first LIMIT frontier_cap
                   ) q
               ) END
        INTO rels, reached;
        all_rids := all_rids || coalesce(rels, '{}');
        all_hops := all_hops || array_fill(h, ARRAY[coalesce(cardinality(rels), 0)]);
        seen := seen || coalesce(reached, '{}');
        frontier := reached;
    END LOOP;
    RETURN QUERY
        SELECT x.rid, min(x.hop)::integer FROM unnest(all_rids, all_hops) AS x(rid, hop)
        GROUP BY x.rid;
END;
$$;
"""

EXPAND = """
SELECT r.rel_type AS type, s.id, s.name, s.type, t.id, t.name, t.type,
       r.weight, r.valid_from, r.valid_to, x.hop
FROM kg_expand(%(seeds)s::text[], %(depth)s, %(as_of)s, %(fanout)s, %(frontier_cap)s,
               %(limit)s, %(hub_degree)s) x
JOIN rel r ON r.rid = x.rid
JOIN entity s ON s.id = r.src
JOIN entity t ON t.id = r.dst
ORDER BY x.hop, r.weight DESC
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
    *,
    mentions: Sequence[str] = (),
) -> None:
    """COPY the same graph in: each relation twice in adj, once per direction; ``mentions``
    (an entity id per chunk mention) count in an entity's degree, as in Neo4j."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS entity, rel, adj, mention")
        conn.execute(SCHEMA)
        with conn.cursor() as cur:
            with cur.copy("COPY entity (id, name, type) FROM STDIN") as copy:
                for row in entities:
                    copy.write_row(row)
            with cur.copy(
                "COPY rel (rid, src, dst, rel_type, weight, valid_from, valid_to) FROM STDIN"
            ) as copy:
                for rid, (s, t, typ, w, vf, vt) in enumerate(relations):
                    copy.write_row((rid, s, t, typ, w, vf, vt))
            with cur.copy(
                "COPY adj (node, nbr, rid, rel_type, weight, valid_from, valid_to) FROM STDIN"
            ) as copy:
                for rid, (s, t, typ, w, vf, vt) in enumerate(relations):
                    copy.write_row((s, t, rid, typ, w, vf, vt))
                    copy.write_row((t, s, rid, typ, w, vf, vt))
            with cur.copy("COPY mention (node) FROM STDIN") as copy:
                for node in mentions:
                    copy.write_row((node,))
        conn.execute(INDEXES)
        conn.execute(EXPAND_FUNCTION)


def expand(conn: Any, params: dict[str, Any], *, cte: bool = False) -> list[tuple[Any, ...]]:
    """The like-for-like expansion (``cte``: the old recursive CTE) as rows."""
    with conn.cursor() as cur:
        cur.execute(EXPAND_CTE if cte else EXPAND, params)
        return list(cur.fetchall())
