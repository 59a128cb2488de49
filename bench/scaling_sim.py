"""Scale-out simulated on one machine: 1, 2 and 4 ingest workers; 1 and 2 API replicas.

    .venv/bin/python bench/scaling_sim.py                        # everything, ~15 min
    .venv/bin/python bench/scaling_sim.py --parts triplets --workers 1,4
    .venv/bin/python bench/scaling_sim.py --parts llm --llm-passages 300 --llm-delay-ms 300

Parts (``--parts``, comma-separated):

- ``triplets``: ``kg ingest EMPTY --triplets corpus.jsonl --workers N`` over the MuSiQue dev
  set (1,890 passages with LLM triplets), wiped before each run. After each run the whole graph
  is snapshotted (tests/graphsnap.py: every node and relationship with its properties, without
  timestamps and embeddings) and compared with the 1-worker graph: "same graph".
- ``llm``: the first ``--llm-passages`` passages as Markdown files, extracted by kg's real
  openai/instructor client against a scripted OpenAI-compatible server on loopback
  (tests/fakellm.py) that answers every call after a fixed ``--llm-delay-ms``, standing in for a
  real LLM's latency, with the passage's own triplets as the extraction. The delay is the
  point: it is not a real model, and no figure here measures one.
- ``api``: over the graph the last ingest left, ``kg serve`` as 1 and 2 replicas (separate
  processes on separate ports, one worker each), ``--clients`` keep-alive clients split evenly
  over the replicas (round robin by client), ``POST /search/local`` (graph mode).

Measured: wall clock; the CPU seconds of everything kg ran (this process's children: the
``kg ingest`` process and its workers, or the replicas) and of the Neo4j server
(/proc/<pid>/stat), each per ingested relation or per search. The machine's cores are shared
by Neo4j, kg and the load clients: read the ratios, not the absolute speed. A throwaway local
Neo4j is started (deleted afterwards); nothing leaves loopback. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.load_bench import (  # noqa: E402 (after the path insert)
    Tally,
    api_process,
    cpu_seconds,
    drive,
    make_bodies,
    neo4j_pid,
    process_tree,
    tree_cpu,
)
from kg.extract import read_triplets  # noqa: E402
from kg.graph.driver import open_driver  # noqa: E402
from kg.graph.schema import apply_schema  # noqa: E402
from kg.localserver import free_port  # noqa: E402
from kg.settings import Settings  # noqa: E402
from tests.fakellm import Reply, ScriptedLLM  # noqa: E402
from tests.graphsnap import snapshot  # noqa: E402

CORPUS = Path(os.environ.get("KG_MUSIQUE", REPO.parent / "shared/data/musique-dev/corpus.jsonl"))


def children_cpu() -> float:
    """CPU seconds of this process's finished (waited-for) descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wipe(settings: Settings) -> None:
    with open_driver(settings.neo4j) as driver, driver.session() as session:
        session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS")
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")
        apply_schema(driver, database=settings.neo4j.database,
                     dimension=settings.resolve.embedding_dim)  # fmt: skip


def kg_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "KG_"))}
    env.update(
        KG_ENV_FILE="",
        KG_NEO4J__URI=settings.neo4j.uri,
        KG_NEO4J__USERNAME=settings.neo4j.username,
        KG_NEO4J__PASSWORD=settings.neo4j.password.get_secret_value(),
        KG_NEO4J__DATABASE=settings.neo4j.database,
        KG_RESOLVE__EMBEDDING_DIM=str(settings.resolve.embedding_dim),
        **extra,
    )
    return env


def run_ingest(
    settings: Settings, args: list[str], workers: int, env: dict[str, str], server: int | None
) -> dict[str, Any]:
    """One ``kg ingest ... --workers N --json``: its summary, wall clock and CPU."""
    wipe(settings)
    cmd = [sys.executable, "-m", "cli.main", "ingest", *args, "--workers", str(workers), "--json"]
    cpu0, neo0, t0 = children_cpu(), cpu_seconds(server or -1), time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    kg_cpu, neo_cpu = children_cpu() - cpu0, cpu_seconds(server or -1) - neo0
    if done.returncode != 0:
        raise SystemExit(f"kg ingest failed ({done.returncode}): {done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    relations = summary["relations_created"] + summary["relations_updated"]
    return {
        "workers": workers,
        "wall_s": round(wall, 1),
        "documents": summary["documents_new"],
        "relations": relations,
        "llm_calls": summary["llm_calls"],
        "relations_per_s": round(relations / wall, 1),
        "kg_cpu_s": round(kg_cpu, 1),
        "neo4j_cpu_s": round(neo_cpu, 1),
        "kg_cpu_ms_per_relation": round(1000 * kg_cpu / max(relations, 1), 2),
        "neo4j_cpu_ms_per_relation": round(1000 * neo_cpu / max(relations, 1), 2),
        "stage_s": summary["timings"],
    }


def triplets_part(
    settings: Settings, workers: list[int], server: int | None, count: int
) -> list[dict[str, Any]]:
    rows, reference = [], None
    with tempfile.TemporaryDirectory() as tmp:
        empty, corpus = Path(tmp) / "empty", CORPUS
        empty.mkdir()
        if count:
            corpus = Path(tmp) / "corpus.jsonl"
            lines = CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)[:count]
            corpus.write_text("".join(lines), encoding="utf-8")
        for n in workers:
            row = run_ingest(settings, [str(empty), "--triplets", str(corpus)], n,
                             kg_env(settings), server)  # fmt: skip
            with open_driver(settings.neo4j) as driver:
                graph = snapshot(driver)
            reference = reference or graph
            row["same_graph_as_first"] = graph == reference
            rows.append(row)
            print(json.dumps({"part": "triplets", **row}), flush=True)
    return rows


@contextmanager
def scripted_llm(passages: list[tuple[str, str, dict[str, Any]]], delay_s: float) -> Iterator[str]:
    """The loopback stand-in: each call answered after ``delay_s`` with its passage's triplets."""
    keys = [(text[:120], result) for _, text, result in passages]

    def respond(request: dict[str, Any]) -> Reply:
        prompt = json.dumps(request.get("messages", []), ensure_ascii=False)
        for key, result in keys:
            if json.dumps(key, ensure_ascii=False)[1:-1] in prompt:
                return Reply(payload=result, delay_s=delay_s)
        return Reply(payload={"entities": [], "relations": []}, delay_s=delay_s)

    with ScriptedLLM(responder=respond) as llm:
        yield llm.base_url


def llm_part(
    settings: Settings, workers: list[int], server: int | None, count: int, delay_s: float
) -> list[dict[str, Any]]:
    imported = read_triplets(CORPUS).documents[:count]
    passages = [
        (d.title, d.text, d.result.model_dump(mode="json", exclude_none=True)) for d in imported
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, scripted_llm(passages, delay_s) as base_url:
        folder = Path(tmp) / "passages"
        folder.mkdir()
        for i, (title, text, _) in enumerate(passages):
            (folder / f"{i:04d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
        for n in workers:
            env = kg_env(
                settings,
                KG_LLM__BASE_URL=base_url,
                KG_LLM__API_KEY="scripted",
                KG_LLM__MODEL="scripted-300ms",
                KG_EXTRACT__CACHE_PATH=str(Path(tmp) / f"cache-{n}.sqlite"),
            )
            row = run_ingest(settings, [str(folder)], n, env, server)
            row["llm_delay_ms"] = round(delay_s * 1000)
            rows.append(row)
            print(json.dumps({"part": "llm", **row}), flush=True)
    return rows


async def _drive_all(ports: list[int], bodies: list[dict[str, Any]], clients: int,
                     args: argparse.Namespace) -> tuple[list[Tally], float]:  # fmt: skip
    share = [clients // len(ports) + (1 if i < clients % len(ports) else 0)
             for i in range(len(ports))]  # fmt: skip
    results = await asyncio.gather(
        *(drive(port, bodies, n, args) for port, n in zip(ports, share, strict=True))
    )
    return [t for t, _ in results], max(w for _, w in results)


def api_part(settings: Settings, replicas: list[int], server: int | None,
             args: argparse.Namespace) -> list[dict[str, Any]]:  # fmt: skip
    with open_driver(settings.neo4j) as driver:
        names = [r["name"] for r in driver.execute_query(
            "MATCH (e:Entity) RETURN e.name AS name ORDER BY e.id LIMIT 2000").records]  # fmt: skip
    bodies = make_bodies(names, args)
    rows = []
    for count in replicas:
        with ExitStack() as stack:
            ports = [free_port() for _ in range(count)]
            procs = [stack.enter_context(api_process(settings, port, 1)) for port in ports]
            pids = [p for proc in procs for p in process_tree(proc.pid)]
            before = (tree_cpu(pids), cpu_seconds(server or -1))
            tallies, window = asyncio.run(_drive_all(ports, bodies, args.clients, args))
            api_cpu, neo_cpu = tree_cpu(pids) - before[0], cpu_seconds(server or -1) - before[1]
        ok = sum(n for t in tallies for code, n in t.statuses.items() if 200 <= code < 300)
        failed = sum(t.sent for t in tallies) - ok
        latencies = sorted(x for t in tallies for x in t.latencies_ms)
        # The CPU windows include the warm-up; the searches made then count too.
        searches = ok + sum(t.warmup_sent - t.warmup_failed for t in tallies)
        row = {
            "replicas": count,
            "clients": args.clients,
            "seconds": round(window, 1),
            "searches_per_s": round(ok / window, 1) if window else 0.0,
            "failed": failed,
            "p50_ms": round(latencies[len(latencies) // 2], 1) if latencies else None,
            "api_cpu_ms_per_search": round(1000 * api_cpu / max(searches, 1), 1),
            "neo4j_cpu_ms_per_search": round(1000 * neo_cpu / max(searches, 1), 1),
            "api_cores": round(api_cpu / (window + args.warmup), 2),
            "neo4j_cores": round(neo_cpu / (window + args.warmup), 2),
        }
        rows.append(row)
        print(json.dumps({"part": "api", **row}), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="llm,triplets,api", help="llm,triplets,api")
    parser.add_argument("--workers", default="1,2,4", help="ingest workers to compare")
    parser.add_argument("--replicas", default="1,2", help="API replicas to compare")
    parser.add_argument("--passages", type=int, default=0, help="triplets: first N (0: all)")
    parser.add_argument("--llm-passages", type=int, default=300)
    parser.add_argument("--llm-delay-ms", type=float, default=300.0)
    parser.add_argument("--clients", type=int, default=16, help="API load clients in all")
    parser.add_argument("--seconds", type=float, default=20.0, help="API measured window")
    parser.add_argument("--warmup", type=float, default=5.0, help="API seconds not counted")
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--pagecache", default="512m")
    args = parser.parse_args()
    # What bench/load_bench.py's clients read.
    args.modes, args.seed, args.max_requests, args.request_timeout = "graph", 7, 10**6, 30.0
    parts = set(args.parts.split(","))
    workers = [int(x) for x in args.workers.split(",")]
    replicas = [int(x) for x in args.replicas.split(",")]
    from kg.localserver import throwaway_server

    results: dict[str, Any] = {}
    with throwaway_server(
        password="kg-scaling-sim", heap=args.heap, pagecache=args.pagecache
    ) as settings:
        server = neo4j_pid(settings)
        if "llm" in parts:
            results["llm"] = llm_part(
                settings, workers, server, args.llm_passages, args.llm_delay_ms / 1000
            )
        if "triplets" in parts:
            results["triplets"] = triplets_part(settings, workers, server, args.passages)
        if "api" in parts:
            results["api"] = api_part(settings, replicas, server, args)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
