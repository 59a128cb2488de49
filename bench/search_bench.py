"""Local search latency: guarded Neo4j search at depth 1..3, guard overhead, a PostgreSQL peer.

    .venv/bin/python bench/search_bench.py --scale 1.0          # 100k entities, 500k relations
    .venv/bin/python bench/search_bench.py --scale 0.05 --queries 50   # a quick run

Neo4j: a fresh local server on free ports (kg.localserver.LocalNeo4j) unless ``--uri`` (or
NEO4J_URI) names one; an existing database is wiped only with ``--wipe``. PostgreSQL: a
throwaway cluster (bench/pg_search.py) unless ``--no-pg``. Not part of the test suite.

What is measured, from one run, all on the same random graph (a few supernodes included):
- ``search``: SearchService.local_search end to end (embed, seeds, expansion, evidence).
- ``guarded`` vs ``raw``: the seed_expansion template through the guard vs the same text and
  parameters through ``driver.execute_query(routing_=READ)``, interleaved; the ratio is the
  guard's overhead (validation, auto-commit read transaction, row cap, unpacking).
- ``postgres``: the same expansion, like for like (bench/pg_search.py ``kg_expand``: the same
  fanout, frontier cap, early stop, ranking and columns); the run checks that it returns the
  same (hop, weight) rows as the guarded template for each seed set.
- ``pg-cte``: the old peer, one recursive CTE (same fanout; no frontier cap, no early stop).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, LiteralString

import numpy as np
from neo4j import Driver, RoutingControl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg.cypher.params import SeedExpansionParams
from kg.graph.driver import open_async_driver, open_driver
from kg.graph.meta import ensure_current
from kg.graph.schema import apply_schema
from kg.resolve import make_embedder
from kg.resolve.embed import embedder_identity, make_chunk_embedder
from kg.search.models import SearchRequest
from kg.search.service import SearchService
from kg.settings import Settings

TYPES: tuple[LiteralString, ...] = (
    "DEPENDS_ON",
    "CALLS",
    "OWNED_BY",
    "USES",
    "HOSTED_ON",
    "MAINTAINED_BY",
    "PART_OF_SYSTEM",
    "RELATED_TO",
)
ENTITY_TYPES = ("service", "database", "team", "system", "library", "queue")
ADJECTIVES = ("payment", "ledger", "billing", "auth", "user", "order", "search", "audit",
              "report", "invoice", "stock", "cart", "email", "risk", "fraud", "cache")  # fmt: skip
NOUNS = ("service", "store", "gateway", "worker", "api", "db", "queue", "team", "cluster",
         "index", "engine", "portal")  # fmt: skip
BATCH = 5000

_ENTITIES = """
UNWIND $rows AS row
CREATE (e:Entity {id: row.id, name: row.name, type: row.type, description: row.name,
                  aliases: [], embedding: row.embedding})
"""
_DOCS = "UNWIND $rows AS row CREATE (:Document {id: row.id, path: row.path, title: row.id})"
_CHUNKS = """
UNWIND $rows AS row
MATCH (d:Document {id: row.doc})
CREATE (c:Chunk {id: row.id, index: row.index, text: row.text, sha256: row.id,
                 embedding: row.embedding})-[:PART_OF]->(d)
WITH c, row
UNWIND row.mentions AS eid
MATCH (e:Entity {id: eid})
CREATE (c)-[:MENTIONS]->(e)
"""


def _relations_text(rel_type: LiteralString) -> LiteralString:
    # rel_type comes from the constant TYPES whitelist above, never from data.
    return (
        "UNWIND $rows AS row MATCH (s:Entity {id: row.s}) MATCH (t:Entity {id: row.t}) "
        "CREATE (s)-[:" + rel_type + " {weight: row.w, validFrom: row.vf, validTo: row.vt, "
        "chunk_ids: row.chunks, description: ''}]->(t)"
    )


# -- graph generation ------------------------------------------------------------------------


def entity_names(scale: float) -> list[str]:
    """The generated entities' names, in id order (``e<i>`` is named ``names[i]``)."""
    n = max(100, int(100_000 * scale))
    return [
        f"{ADJECTIVES[i % len(ADJECTIVES)]} {NOUNS[(i // len(ADJECTIVES)) % len(NOUNS)]} {i}"
        for i in range(n)
    ]


def generate(scale: float, supernodes: int, seed: int, decimals: int = 3) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    names = entity_names(scale)
    n = len(names)
    r = max(500, int(500_000 * scale))
    n_chunks = max(20, n // 5)
    super_deg = max(50, int(20_000 * scale))
    entities = [(f"e{i}", names[i], ENTITY_TYPES[i % len(ENTITY_TYPES)]) for i in range(n)]
    hubs = rng.choice(n, size=supernodes, replace=False)
    super_edges = supernodes * super_deg
    src = np.concatenate([np.repeat(hubs, super_deg), rng.integers(0, n, r - super_edges)])
    dst = rng.integers(0, n, r)
    dst = np.where(dst == src, (dst + 1) % n, dst)
    types = rng.integers(0, len(TYPES), r)
    weights = rng.random(r).round(decimals)
    start = date(2015, 1, 1)
    vf_days = rng.integers(0, 365 * 9, r)
    closed = rng.random(r) < 0.15
    vt_days = vf_days + rng.integers(30, 365 * 3, r)
    chunk_of = rng.integers(0, n_chunks, r)
    relations = [
        (
            f"e{src[i]}",
            f"e{dst[i]}",
            TYPES[types[i]],
            float(weights[i]),
            start + timedelta(days=int(vf_days[i])),
            start + timedelta(days=int(vt_days[i])) if closed[i] else None,
            f"c{chunk_of[i]}",
        )
        for i in range(r)
    ]
    mentions = rng.integers(0, n, (n_chunks, 5))
    chunks = [
        (f"c{j}", f"d{j // 20}", j % 20, [f"e{m}" for m in mentions[j]]) for j in range(n_chunks)
    ]
    return {
        "entities": entities,
        "relations": relations,
        "chunks": chunks,
        "hubs": [f"e{h}" for h in hubs],
        "n_docs": n_chunks // 20 + 1,
    }


def load_neo4j(driver: Driver, settings: Settings, graph: dict[str, Any]) -> None:
    db = settings.neo4j.database
    embedder = make_embedder(settings.resolve)
    chunk_embedder = make_chunk_embedder(settings.chunks)
    apply_schema(driver, database=db, dimension=settings.resolve.embedding_dim)
    # Stamp the empty graph as this kg's model, written by the embedders search will use.
    identities = {"entity": embedder_identity(embedder), "chunk": embedder_identity(chunk_embedder)}
    ensure_current(driver, db, embedders=identities)
    entities = graph["entities"]
    for i in range(0, len(entities), BATCH):
        part = entities[i : i + BATCH]
        vecs = embedder.embed([e[1] for e in part])
        rows = [
            {"id": e[0], "name": e[1], "type": e[2], "embedding": v.tolist()}
            for e, v in zip(part, vecs, strict=True)
        ]
        driver.execute_query(_ENTITIES, {"rows": rows}, database_=db)
    driver.execute_query(
        _DOCS,
        {"rows": [{"id": f"d{k}", "path": f"docs/d{k}.md"} for k in range(graph["n_docs"])]},
        database_=db,
    )
    names = {e[0]: e[1] for e in entities}
    chunks = graph["chunks"]
    for i in range(0, len(chunks), BATCH):
        part = chunks[i : i + BATCH]
        texts = [" and ".join(names[m] for m in c[3]) + " work together." for c in part]
        vecs = chunk_embedder.embed(texts)
        rows = [
            {"id": c[0], "doc": c[1], "index": c[2], "text": t, "mentions": c[3],
             "embedding": v.tolist()}
            for c, t, v in zip(part, texts, vecs, strict=True)
        ]  # fmt: skip
        driver.execute_query(_CHUNKS, {"rows": rows}, database_=db)
    by_type: dict[str, list[dict[str, Any]]] = {t: [] for t in TYPES}
    for s, t, typ, w, vf, vt, chunk in graph["relations"]:
        by_type[typ].append({"s": s, "t": t, "w": w, "vf": vf, "vt": vt, "chunks": [chunk]})
    for typ in TYPES:
        rows = by_type[typ]
        for i in range(0, len(rows), BATCH * 2):
            driver.execute_query(
                _relations_text(typ), {"rows": rows[i : i + BATCH * 2]}, database_=db
            )
    driver.execute_query("CALL db.awaitIndexes(600)", database_=db)


# -- measuring --------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> str:
    return f"p50 {statistics.median(values):7.2f} ms  p95 {pct(values, 0.95):7.2f} ms"


async def measure(
    settings: Settings, graph: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    rng = random.Random(args.seed)
    entities = graph["entities"]
    out: dict[str, Any] = {}
    driver = open_async_driver(settings.neo4j)
    try:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        await service.startup()
        as_of = datetime.now(UTC)
        for depth in (1, 2, 3):
            questions = [
                f"what does the {rng.choice(entities)[1]} depend on?" for _ in range(args.queries)
            ]
            for q in questions[: args.warmup]:
                await service.local_search(SearchRequest(query=q, depth=depth))
            times = []
            for q in questions:
                t0 = time.perf_counter()
                await service.local_search(SearchRequest(query=q, depth=depth))
                times.append((time.perf_counter() - t0) * 1000)
            out[f"search/{depth}"] = times

            seed_sets = [[rng.choice(entities)[0] for _ in range(5)] for _ in range(args.queries)]
            guarded, raw = [], []
            shapes: list[list[tuple[int, float]]] = []
            for k, seeds in enumerate(seed_sets):
                params = SeedExpansionParams(
                    entity_ids=seeds,
                    depth=depth,
                    as_of=as_of,
                    fanout=settings.search.fanout,
                    frontier_cap=settings.search.frontier_cap,
                    hub_degree=settings.search.hub_degree,
                    limit=settings.search.expansion_limit,
                )
                prepared = service.guard.prepare("seed_expansion", params)
                order = ("g", "r") if k % 2 == 0 else ("r", "g")
                for which in order:
                    t0 = time.perf_counter()
                    if which == "g":
                        result = await service.guard.run("seed_expansion", params)
                        shapes.append(_shape((r["hop"], r["weight"]) for r in result.rows))
                    else:
                        await driver.execute_query(
                            prepared.text,
                            prepared.cypher_params(),
                            routing_=RoutingControl.READ,
                            database_=settings.neo4j.database,
                        )
                    elapsed = (time.perf_counter() - t0) * 1000
                    (guarded if which == "g" else raw).append(elapsed)
            out[f"guarded/{depth}"] = guarded[args.warmup :]
            out[f"raw/{depth}"] = raw[args.warmup :]
            out[f"seedsets/{depth}"] = seed_sets
            out[f"shapes/{depth}"] = shapes
        hub_times = []
        for hub in graph["hubs"]:
            params = SeedExpansionParams(entity_ids=[hub], depth=3, as_of=as_of,
                                         hub_degree=settings.search.hub_degree,
                                         limit=settings.search.expansion_limit)  # fmt: skip
            for _ in range(3):
                t0 = time.perf_counter()
                await service.guard.run("seed_expansion", params)
                hub_times.append((time.perf_counter() - t0) * 1000)
        out["hubs/3"] = hub_times
    finally:
        await driver.close()
    return out


def _shape(rows: Iterable[tuple[Any, Any]]) -> list[tuple[int, float]]:
    """A result as its sorted (hop, weight) pairs: equal for equal results, ties aside."""
    return sorted((int(hop), round(float(weight), 3)) for hop, weight in rows)


def pg_params(seeds: list[str], depth: int, as_of: date, settings: Settings) -> dict[str, Any]:
    return {"seeds": seeds, "depth": depth, "as_of": as_of, "fanout": settings.search.fanout,
            "frontier_cap": settings.search.frontier_cap, "hub_degree": settings.search.hub_degree,
            "limit": settings.search.expansion_limit}  # fmt: skip


def measure_pg(
    dsn: str, settings: Settings, runs: dict[str, Any], hubs: list[str]
) -> dict[str, Any]:
    import psycopg

    from bench.pg_search import expand

    out: dict[str, Any] = {}
    today = date.today()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = '60s'")
        for depth in (1, 2, 3):
            times, cte_times, same = [], [], 0
            seed_sets = runs[f"seedsets/{depth}"]
            for k, seeds in enumerate(seed_sets):
                params = pg_params(seeds, depth, today, settings)
                # Interleaved, as guarded and raw: the like-for-like function, the old CTE.
                t0 = time.perf_counter()
                rows = expand(conn, params)
                times.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                expand(conn, params, cte=True)
                cte_times.append((time.perf_counter() - t0) * 1000)
                same += _shape((r[-1], r[7]) for r in rows) == runs[f"shapes/{depth}"][k]
            out[f"postgres/{depth}"] = times
            out[f"pg-cte/{depth}"] = cte_times
            out[f"same/{depth}"] = f"{same}/{len(seed_sets)}"
        hub_times = []
        for hub in hubs:
            params = pg_params([hub], 3, today, settings)
            t0 = time.perf_counter()
            try:
                expand(conn, params)
                hub_times.append((time.perf_counter() - t0) * 1000)
            except psycopg.errors.QueryCanceled:
                hub_times.append(60_000.0)
        out["postgres-hubs/3"] = hub_times
    return out


# -- servers ----------------------------------------------------------------------------------


def _entity_count(driver: Driver, settings: Settings) -> int:
    records, _, _ = driver.execute_query(
        "MATCH (e:Entity) RETURN count(e) AS n", database_=settings.neo4j.database
    )
    return int(records[0]["n"])


def _wipe(driver: Driver, settings: Settings) -> None:
    driver.execute_query(
        "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS",
        database_=settings.neo4j.database,
    )


@contextmanager
def neo4j_settings(args: argparse.Namespace) -> Iterator[Settings]:
    uri = args.uri or os.environ.get("NEO4J_URI")
    if uri and args.reuse:
        yield Settings(neo4j={"uri": uri})
        return
    if uri:
        if not args.wipe:
            raise SystemExit("refusing to wipe an existing Neo4j; pass --wipe to allow it")
        settings = Settings(neo4j={"uri": uri})
        with open_driver(settings.neo4j) as drv:
            _wipe(drv, settings)
        yield settings
        return
    from kg.localserver import throwaway_server

    with throwaway_server(
        password="kg-bench-password", heap=args.heap, pagecache=args.pagecache
    ) as settings:
        yield settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="1.0 = 100k entities, 500k relations"
    )
    parser.add_argument("--supernodes", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200, help="per depth and path")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--uri", default=None, help="an existing Neo4j (else a local one starts)")
    parser.add_argument("--wipe", action="store_true", help="allow wiping the --uri database")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="the --uri database already holds this graph (same --scale, --supernodes, --seed):"
        " load it only when its entity count differs",
    )
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--pagecache", default="1g")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument(
        "--weight-decimals",
        type=int,
        default=3,
        help="relation weights' precision (3: many ties, as extracted weights have)",
    )
    parser.add_argument(
        "--load-only", action="store_true", help="load the --uri database, measure nothing"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    graph = generate(args.scale, args.supernodes, args.seed, args.weight_decimals)
    print(f"generated {len(graph['entities'])} entities, {len(graph['relations'])} relations, "
          f"{len(graph['chunks'])} chunks, {args.supernodes} supernodes in "
          f"{time.perf_counter() - t0:.1f}s", flush=True)  # fmt: skip
    with neo4j_settings(args) as settings:
        t0 = time.perf_counter()
        with open_driver(settings.neo4j) as drv:
            if args.reuse and _entity_count(drv, settings) == len(graph["entities"]):
                print("neo4j: reusing the loaded graph", flush=True)
            else:
                if args.reuse:
                    _wipe(drv, settings)
                load_neo4j(drv, settings, graph)
                print(f"neo4j loaded in {time.perf_counter() - t0:.1f}s", flush=True)
        if args.load_only:
            return
        runs = asyncio.run(measure(settings, graph, args))
    if not args.no_pg:
        from bench.pg_search import load, throwaway_cluster
        from kg.localserver import free_port

        with throwaway_cluster(free_port()) as pg:
            t0 = time.perf_counter()
            load(pg.dsn, graph["entities"], [r[:6] for r in graph["relations"]],
                 mentions=[m for c in graph["chunks"] for m in c[3]])  # fmt: skip
            print(f"postgres loaded in {time.perf_counter() - t0:.1f}s", flush=True)
            runs.update(measure_pg(pg.dsn, settings, runs, graph["hubs"]))
    print()
    print(f"{'depth':>5}  {'path':<10} latency")
    for depth in (1, 2, 3):
        for path in ("search", "guarded", "raw", "postgres", "pg-cte"):
            key = f"{path}/{depth}"
            if key in runs:
                print(f"{depth:>5}  {path:<10} {summary(runs[key])}")
        g = statistics.median(runs[f"guarded/{depth}"])
        r = statistics.median(runs[f"raw/{depth}"])
        line = f"{depth:>5}  guard overhead (p50 guarded / raw) = {g / r:.3f}"
        if f"postgres/{depth}" in runs:
            pg = statistics.median(runs[f"postgres/{depth}"])
            line += (
                f"; guarded / postgres p50 = {g / pg:.2f} (same results: {runs[f'same/{depth}']})"
            )
        print(line)
    print(f"supernode seeds, depth 3: neo4j guarded {summary(runs['hubs/3'])}")
    if "postgres-hubs/3" in runs:
        print(f"supernode seeds, depth 3: postgres      {summary(runs['postgres-hubs/3'])}")


if __name__ == "__main__":
    main()
