"""Community clustering at 100k entities / 500k relations: graspologic-native vs igraph.

Run:
    .venv/bin/python bench/communities_bench.py                 # in memory: both libraries
    .venv/bin/python bench/communities_bench.py --neo4j         # also load into a real Neo4j
                                                                # and time kg's read + cluster
    (--neo4j uses NEO4J_URI / NEO4J_PASSWORD when set, and deletes its Entity nodes first)

The graph is generated deterministically: entities in planted groups (sizes 10..100), 80 % of
relations inside a group, weights uniform in 0..1. In memory, kg's clustering
(:func:`kg.communities.cluster.cluster`, hierarchical Leiden of graspologic-native, with the
default max cluster size 10) runs against igraph's flat Leiden (modularity) when igraph is
installed (it is not a kg dependency: ``pip install igraph`` to compare). With ``--neo4j`` the
graph is written to the first real server the tests would use (tests/neo4j_backend.py) and
kg's whole read (keyset batches) + cluster is timed; only what ran is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kg.communities.cluster import Pair, cluster


def generate(entities: int, relations: int, seed: int = 7) -> list[tuple[int, int, float]]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(10, 101, entities // 10)
    group = np.repeat(np.arange(len(sizes)), sizes)[:entities]
    group = np.concatenate([group, np.full(entities - len(group), group[-1])])
    starts = np.searchsorted(group, np.arange(len(sizes)))
    ends = np.searchsorted(group, np.arange(len(sizes)), side="right")
    src = rng.integers(0, entities, relations)
    inside = rng.random(relations) < 0.8
    lo, hi = starts[group[src]], ends[group[src]]
    dst = np.where(inside, lo + (rng.random(relations) * (hi - lo)).astype(int),
                   rng.integers(0, entities, relations))  # fmt: skip
    weight = rng.random(relations)
    keep = src != dst
    return list(zip(src[keep].tolist(), dst[keep].tolist(), weight[keep].tolist(), strict=True))


def pairs_of(edges: list[tuple[int, int, float]]) -> list[Pair]:
    summed: dict[tuple[str, str], float] = {}
    for s, d, w in edges:
        a, b = sorted((f"e{s:06d}", f"e{d:06d}"))
        summed[(a, b)] = summed.get((a, b), 0.0) + w
    return [Pair(a, b, w) for (a, b), w in sorted(summed.items())]


def run_igraph(pairs: list[Pair]) -> dict[str, object] | None:
    try:
        import igraph
    except ImportError:
        return None
    start = time.perf_counter()
    index: dict[str, int] = {}
    edges = [(index.setdefault(p.a, len(index)), index.setdefault(p.b, len(index))) for p in pairs]
    graph = igraph.Graph(n=len(index), edges=edges)
    graph.es["weight"] = [p.weight for p in pairs]
    igraph.set_random_number_generator(None)
    parts = graph.community_leiden(objective_function="modularity", weights="weight")
    took = time.perf_counter() - start
    return {"method": "igraph flat Leiden", "seconds": round(took, 2), "communities": len(parts),
            "levels": 1}  # fmt: skip


def run_kg(pairs: list[Pair]) -> dict[str, object]:
    start = time.perf_counter()
    communities = cluster(pairs, max_cluster_size=10, seed=42)
    took = time.perf_counter() - start
    levels = {c.level for c in communities}
    return {"method": "kg: graspologic-native hierarchical Leiden", "seconds": round(took, 2),
            "communities": len(communities), "levels": len(levels)}  # fmt: skip


def run_neo4j(edges: list[tuple[int, int, float]], entities: int) -> dict[str, object]:
    from kg.communities.store import CommunityStore
    from kg.graph.driver import open_driver
    from kg.settings import Settings
    from tests.neo4j_backend import neo4j_target

    with neo4j_target() as target:
        settings = Settings(neo4j={"uri": target.uri, "username": target.username,
                                   "password": target.password, "database": target.database})  # fmt: skip
        with open_driver(settings.neo4j) as driver:
            db = target.database
            with driver.session(database=db) as session:  # an existing server (NEO4J_URI)
                session.run("MATCH (n:Entity) CALL (n) { DETACH DELETE n } "
                            "IN TRANSACTIONS OF 1000 ROWS").consume()  # fmt: skip
            driver.execute_query("CREATE CONSTRAINT b_entity IF NOT EXISTS "
                                 "FOR (e:Entity) REQUIRE e.id IS UNIQUE", database_=db)  # fmt: skip
            start = time.perf_counter()
            ids = [{"id": f"e{i:06d}"} for i in range(entities)]
            for i in range(0, len(ids), 10_000):
                driver.execute_query("UNWIND $rows AS row CREATE (:Entity {id: row.id})",
                                     rows=ids[i : i + 10_000], database_=db)  # fmt: skip
            rows = [{"s": f"e{s:06d}", "d": f"e{d:06d}", "w": w, "k": f"{n}"}
                    for n, (s, d, w) in enumerate(edges)]  # fmt: skip
            for i in range(0, len(rows), 10_000):
                driver.execute_query(
                    "UNWIND $rows AS row MATCH (a:Entity {id: row.s}) MATCH (b:Entity {id: row.d}) "
                    "CREATE (a)-[:RELATED {predicate: 'RELATES_TO', weight: row.w, key: row.k, "
                    "chunk_ids: []}]->(b)", rows=rows[i : i + 10_000], database_=db)  # fmt: skip
            load = time.perf_counter() - start
            start = time.perf_counter()
            pairs = CommunityStore(driver, db).pairs()
            read = time.perf_counter() - start
            start = time.perf_counter()
            communities = cluster(pairs, max_cluster_size=10, seed=42)
            took = time.perf_counter() - start
    return {"method": "kg: read from Neo4j + cluster", "load_s": round(load, 1),
            "read_s": round(read, 2), "cluster_s": round(took, 2),
            "seconds": round(read + took, 2), "pairs": len(pairs),
            "communities": len(communities)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--relations", type=int, default=500_000)
    parser.add_argument("--neo4j", action="store_true")
    args = parser.parse_args()
    edges = generate(args.entities, args.relations)
    pairs = pairs_of(edges)
    print(json.dumps({"entities": args.entities, "relations": len(edges), "pairs": len(pairs)}))
    for result in (run_kg(pairs), run_igraph(pairs)):
        if result is not None:
            print(json.dumps(result))
    if args.neo4j:
        print(json.dumps(run_neo4j(edges, args.entities)))


if __name__ == "__main__":
    main()
