"""Write throughput: kg's GraphWriter vs the raw-driver ceiling vs a per-row writer.

All write the same relations between the same pre-created entities, on the same server, in one
run; each starts from a graph with no relationships. Prints relations/second and ratios.

- ceiling: the raw driver, one bare `UNWIND $rows ... MERGE (a)-[r:T {key}]->(b) SET r += props`
  per batch, shipping the same properties ours writes (no grouping, folding or temporal logic);
- bare: the same with ids only and no properties (a lower bound on work, for reference);
- per-row: one MERGE statement and transaction per relation, same properties (how hand-written
  writers do it).

    .venv/bin/python bench/write_bench.py --relations 100000 --batch-sizes 500,1000,2000,5000

Targets a Neo4j from NEO4J_URI / KG_NEO4J__* settings, or starts a throwaway local server on free
ports when --local is given.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import date
from typing import Any

from neo4j import Driver

from kg.graph.driver import open_driver
from kg.graph.schema import apply_schema
from kg.graph.writer import EntityRow, GraphWriter, RelationRow
from kg.settings import Settings

TYPES = ["DEPENDS_ON", "CALLS", "OWNED_BY", "STORES_DATA_IN", "PUBLISHES_TO", "RUNS_ON"]

CEILING = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source})
MATCH (b:Entity {id: row.target})
MERGE (a)-[r:RELATED {key: row.props.key}]->(b)
SET r += row.props
"""

BARE = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source})
MATCH (b:Entity {id: row.target})
MERGE (a)-[:RELATED]->(b)
"""

PER_ROW = """
MATCH (a:Entity {id: $source})
MATCH (b:Entity {id: $target})
MERGE (a)-[r:RELATED {key: $props.key}]->(b)
SET r += $props
"""


def make_relations(n: int, entities: int, seed: int = 7) -> list[RelationRow]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rng.randrange(entities), rng.randrange(entities)
        if a == b:
            b = (b + 1) % entities
        rows.append(
            RelationRow(
                source=f"e{a}",
                target=f"e{b}",
                type=TYPES[i % len(TYPES)],
                description=f"fact {i}",
                weight=round(rng.random(), 3),
                valid_from=date(2020 + i % 5, 1 + i % 12, 1) if i % 3 == 0 else None,
                chunk_ids=(f"c{i % 5000}",),
            )
        )
    return rows


def wipe_relationships(driver: Driver, database: str) -> None:
    with driver.session(database=database) as session:
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 50000 ROWS"
        ).consume()


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(driver: Driver, database: str, n: int, batch: int, per_row_n: int) -> dict[str, float]:
    entities = max(1000, n // 5)
    rels = make_relations(n, entities)
    writer = GraphWriter(driver, database, batch_size=batch, single_valued=frozenset())
    with driver.session(database=database) as session:
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 20000 ROWS"
        ).consume()
    writer.upsert_entities([EntityRow(f"e{i}", f"Entity {i}", "Thing") for i in range(entities)])

    raw_rows = [
        {
            "source": r.source,
            "target": r.target,
            "props": {
                "key": r.key,
                "description": r.description,
                "weight": r.weight,
                "validFrom": r.valid_from,
                "validTo": r.valid_to,
                "chunk_ids": list(r.chunk_ids),
            },
        }
        for r in rels
    ]
    bare_rows = [{"source": r.source, "target": r.target} for r in rels]

    def raw(query: str, rows: list[dict[str, Any]]) -> None:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            with driver.session(database=database) as session:
                session.execute_write(lambda tx, c=chunk: tx.run(query, rows=c).consume())

    def ceiling() -> None:
        raw(CEILING, raw_rows)

    def bare() -> None:
        raw(BARE, bare_rows)

    def ours() -> None:
        writer.upsert_relations(rels)

    def per_row() -> None:
        with driver.session(database=database) as session:
            for row in raw_rows[:per_row_n]:
                session.execute_write(
                    lambda tx, row=row: tx.run(
                        PER_ROW, source=row["source"], target=row["target"], props=row["props"]
                    ).consume()
                )

    results: dict[str, float] = {}
    wipe_relationships(driver, database)
    results["ceiling"] = n / timed(ceiling)
    wipe_relationships(driver, database)
    results["bare"] = n / timed(bare)
    wipe_relationships(driver, database)
    results["ours"] = n / timed(ours)
    wipe_relationships(driver, database)
    results["per_row"] = per_row_n / timed(per_row)
    wipe_relationships(driver, database)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--relations", type=int, default=100_000)
    parser.add_argument("--per-row", type=int, default=3000, help="rows for the per-row writer")
    parser.add_argument("--batch-sizes", default="1000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--local", action="store_true", help="start a throwaway local server")
    args = parser.parse_args()

    with ExitStack() as stack:
        settings = Settings()
        if args.local:
            from kg.localserver import throwaway_server

            settings = stack.enter_context(
                throwaway_server(password="bench-password", heap="2g", pagecache="1g")
            )
        driver = stack.enter_context(open_driver(settings.neo4j))
        db = settings.neo4j.database
        apply_schema(driver, database=db, dimension=settings.resolve.embedding_dim)
        print(f"{args.relations} relations, per-row writer on {args.per_row} rows")
        run(driver, db, min(args.relations, 5000), 1000, 100)  # warm-up: plans, JIT, caches
        header = ("batch", "ceiling r/s", "bare r/s", "ours r/s", "per-row r/s",
                  "ours/ceiling", "ours/bare", "ours/per-row")  # fmt: skip
        print(" ".join(f"{h:>13}" for h in header))
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            runs = [
                run(driver, db, args.relations, batch, args.per_row) for _ in range(args.repeats)
            ]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            ratio_c = statistics.median(r["ours"] / r["ceiling"] for r in runs)
            ratio_b = statistics.median(r["ours"] / r["bare"] for r in runs)
            ratio_p = statistics.median(r["ours"] / r["per_row"] for r in runs)
            cells = [f"{batch}", f"{med['ceiling']:.0f}", f"{med['bare']:.0f}", f"{med['ours']:.0f}",
                     f"{med['per_row']:.0f}", f"{ratio_c:.2f}", f"{ratio_b:.2f}", f"{ratio_p:.1f}"]  # fmt: skip
            print(" ".join(f"{c:>13}" for c in cells))


if __name__ == "__main__":
    main()
