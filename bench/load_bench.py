"""Load test: 50 keep-alive clients on POST /search/local against the API in its own process.

    .venv/bin/python bench/load_bench.py --local --graph example            # ~2 min
    .venv/bin/python bench/load_bench.py --local --graph 100k --clients 50,8  # two windows
    .venv/bin/python bench/load_bench.py --graph example --wipe             # NEO4J_URI's Neo4j
    .venv/bin/python bench/load_bench.py --graph 100k --reuse --workers 2   # a loaded one, kept
    .venv/bin/python bench/load_bench.py --local --graph example --workers 2 --seconds 20 \
        --client httpx,raw,httpx,raw        # the two load generators, alternating, one server

Neo4j: ``--local`` starts a throwaway ``kg.localserver.LocalNeo4j`` on free ports (deleted
afterwards); otherwise the one in NEO4J_URI / KG_NEO4J__* is used, and wiped only with
``--wipe``. The graph is the example corpus (``kg.ingest`` with its triplets file) or the
generated 100k-entity graph of bench/search_bench.py (500k relations, 5 supernodes); with
``--reuse`` a database that already holds the graph is used as it is (nothing wiped). The API is
``kg serve`` (``--workers N``) in a child process on a free loopback port, auth off.

The run is bounded: it stops after ``--seconds`` (plus ``--warmup`` seconds not counted) or
``--max-requests``, whichever comes first; every request has a client timeout; the API and a
local Neo4j are stopped in ``finally``. Everything stays on loopback. Reported: requests,
errors (non-2xx responses and exceptions, separately), p50/p95/p99 latency, throughput, the API
processes' peak RSS (VmHWM from /proc/<pid>/status, summed over workers), and the CPU the API,
Neo4j (when its pid is known: a local server) and the clients used over the window, in cores.
The clients share the machine's cores with the API and Neo4j, so the figures are for the whole
box. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from neo4j import Driver  # noqa: E402

from kg.graph.driver import open_driver  # noqa: E402 (after the path insert)
from kg.graph.schema import apply_schema  # noqa: E402
from kg.localserver import free_port  # noqa: E402
from kg.settings import Settings  # noqa: E402

EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
QUESTIONS = (
    "What does {a} depend on?",
    "Who owns {a}?",
    "Where is {a} hosted?",
    "{a}",
    "How is {a} related to {b}?",
    "What changed about {a} recently?",
)


# -- Neo4j and the graph ---------------------------------------------------------------------


@contextmanager
def neo4j_settings(args: argparse.Namespace) -> Iterator[Settings]:
    """A throwaway local server (``--local``) or the configured one, checked to be loopback."""
    if not args.local:
        settings = Settings()
        host = urlsplit(settings.neo4j.uri).hostname or ""
        if host not in LOOPBACK:
            raise SystemExit(f"refusing a non-loopback Neo4j ({host}); use --local")
        if not (args.wipe or args.reuse):
            raise SystemExit("refusing to wipe the configured Neo4j; pass --wipe or --local")
        yield settings
        return
    from kg.localserver import throwaway_server

    with throwaway_server(
        password="kg-load-password", heap=args.heap, pagecache=args.pagecache
    ) as settings:
        yield settings


def load_graph(settings: Settings, args: argparse.Namespace) -> list[str]:
    """Wipe, load the chosen graph, and return entity names to ask about."""
    db = settings.neo4j.database
    with open_driver(settings.neo4j) as driver:
        if args.reuse:
            return _names(driver, db, args, started=None)
        with driver.session(database=db) as session:
            session.run(
                "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
            ).consume()
        started = time.perf_counter()
        apply_schema(driver, database=db, dimension=settings.resolve.embedding_dim)
        if args.graph == "example":
            from kg.ingest import ingest

            ingest(settings, driver, EXAMPLE, triplets=TRIPLETS)
        else:
            from bench.search_bench import generate, load_neo4j

            load_neo4j(driver, settings, generate(args.scale, 5, args.seed))
        return _names(driver, db, args, started)


def _names(driver: Driver, db: str, args: argparse.Namespace, started: float | None) -> list[str]:
    records = driver.execute_query(
        "MATCH (e:Entity) RETURN e.name AS name ORDER BY e.id LIMIT 5000", database_=db
    ).records
    counts = driver.execute_query(
        "MATCH (e:Entity) WITH count(e) AS entities "
        "MATCH ()-[r]->() WHERE NOT type(r) IN ['MENTIONS', 'PART_OF', 'NEXT'] "
        "RETURN entities, count(r) AS relations",
        database_=db,
    ).records[0]
    how = "reused" if started is None else f"loaded in {time.perf_counter() - started:.1f}s"
    print(f"graph {args.graph}: {counts['entities']} entities, {counts['relations']} relations, "
          f"{how}", flush=True)  # fmt: skip
    if not records:
        raise SystemExit("the graph has no entities to ask about")
    return [str(r["name"]) for r in records if r["name"]]


# -- the API process -------------------------------------------------------------------------


@contextmanager
def api_process(
    settings: Settings,
    port: int,
    workers: int,
    *,
    extra_env: Mapping[str, str] | None = None,
    settle_s: float | None = None,
    cwd: Path = REPO,
) -> Iterator[subprocess.Popen[bytes]]:
    """``kg serve`` in a child process, yielded once ``/health`` answers 200 and, with several
    workers, ``settle_s`` later (default 2 s: the other workers finish their start-up). Its
    settings come from KG_ variables: the caller's KG_SEARCH__ / KG_API__ tuning passes
    through, then ``extra_env``. ``cwd``: the checkout whose kg serves (another one for a
    before/after run; ``python -m`` puts it first on the path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "KG_NEO4J"))}
    env.update(
        KG_NEO4J__URI=settings.neo4j.uri,
        KG_NEO4J__USERNAME=settings.neo4j.username,
        KG_NEO4J__PASSWORD=settings.neo4j.password.get_secret_value(),
        KG_NEO4J__DATABASE=settings.neo4j.database,
        KG_RESOLVE__EMBEDDING_DIM=str(settings.resolve.embedding_dim),
        KG_API__REQUIRE_AUTH="false",
        KG_LOG_LEVEL="WARNING",
        **(extra_env or {}),
    )
    cmd = [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--workers", str(workers)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the API exited during start-up (code {proc.returncode})")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the API did not become healthy within 300 s")
            time.sleep(0.05)
        time.sleep(settle_s if settle_s is not None else 2.0 if workers > 1 else 0.0)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    return tree


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (from /proc/<pid>/stat); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(p) for p in pids)


def neo4j_pid(settings: Settings) -> int | None:
    """The local server's pid (``--local``, or the one ``kg neo4j start`` runs), if any."""
    from kg.localserver import LocalNeo4j

    try:
        status = LocalNeo4j(settings).status()
    except Exception:  # not a local server: its CPU is not reported
        return None
    return status.pid if status.running else None


def memory_mb(pids: list[int], field: str) -> float:
    """``VmHWM`` (peak) or ``VmRSS`` summed over processes, in MB."""
    total = 0.0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(x.split()[1]) / 1024 for x in lines if x.startswith(field + ":"))
    return total


# -- the clients -----------------------------------------------------------------------------


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    exceptions: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    warmup_sent: int = 0
    warmup_failed: int = 0

    def begin(self, started: float, count_from: float, budget: list[int]) -> bool:
        """Count a request being sent; whether it falls in the measured window."""
        counted = started >= count_from
        if counted:
            budget[0] -= 1
            self.sent += 1
        else:
            self.warmup_sent += 1
        return counted

    def failed(self, counted: bool, exc: BaseException) -> None:
        if counted:
            self.exceptions[type(exc).__name__] += 1
        else:
            self.warmup_failed += 1

    def answered(self, counted: bool, started: float, status: int) -> None:
        if counted:
            self.latencies_ms.append((time.monotonic() - started) * 1000)
            self.statuses[status] += 1
        elif not 200 <= status < 300:
            self.warmup_failed += 1


def make_bodies(names: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """A fixed, seeded mix of questions, depths 1..3 and modes."""
    rng = random.Random(args.seed)
    modes = args.modes.split(",")
    bodies = []
    for _ in range(2000):
        a, b = rng.choice(names), rng.choice(names)
        query = rng.choice(QUESTIONS).format(a=a, b=b)
        bodies.append({"query": query, "depth": rng.choice((1, 2, 3)), "limit": 20,
                       "mode": rng.choice(modes)})  # fmt: skip
    return bodies


async def client(
    http: httpx.AsyncClient,
    bodies: list[dict[str, Any]],
    offset: int,
    stop_at: float,
    count_from: float,
    budget: list[int],
    tally: Tally,
) -> None:
    i = offset
    while time.monotonic() < stop_at and budget[0] > 0:
        body = bodies[i % len(bodies)]
        i += 1
        started = time.monotonic()
        counted = tally.begin(started, count_from, budget)
        try:
            resp = await http.post("/search/local", json=body)
        except httpx.HTTPError as exc:
            tally.failed(counted, exc)
            continue
        tally.answered(counted, started, resp.status_code)


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """One HTTP/1.1 response: its status, and whether the server keeps the connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip().lower()
    if "chunked" in headers.get("transfer-encoding", ""):
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")
    else:
        await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers.get("connection") != "close"


async def raw_client(
    port: int,
    requests: list[bytes],
    offset: int,
    stop_at: float,
    count_from: float,
    budget: list[int],
    tally: Tally,
    request_timeout: float,
) -> None:
    """One keep-alive connection, requests written as prepared bytes: a client that costs the
    box a small fraction of what the server spends on the request (httpx spent ~5 ms of CPU
    per request here, 0.75 of the 2 cores at 150 requests/s)."""
    i = offset
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    try:
        while time.monotonic() < stop_at and budget[0] > 0:
            request = requests[i % len(requests)]
            i += 1
            started = time.monotonic()
            counted = tally.begin(started, count_from, budget)
            try:
                if conn is None:
                    conn = await asyncio.wait_for(
                        asyncio.open_connection("127.0.0.1", port), request_timeout
                    )
                conn[1].write(request)
                status, keep = await asyncio.wait_for(_read_response(conn[0]), request_timeout)
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                TimeoutError,
                ValueError,
                IndexError,
            ) as exc:
                if conn is not None:
                    conn[1].close()
                    conn = None
                tally.failed(counted, exc)
                continue
            if not keep:
                conn[1].close()
                conn = None
            tally.answered(counted, started, status)
    finally:
        if conn is not None:
            conn[1].close()


def encode_requests(port: int, bodies: list[dict[str, Any]]) -> list[bytes]:
    out = []
    for body in bodies:
        payload = json.dumps(body).encode()
        out.append(
            f"POST /search/local HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
    return out


async def drive(
    port: int, bodies: list[dict[str, Any]], clients: int, kind: str, args: argparse.Namespace
) -> tuple[Tally, float]:
    """Run the clients; the tally of the measured window and its length in seconds."""
    if kind == "raw":
        return await _drive_raw(port, bodies, clients, args)
    tally = Tally()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=args.request_timeout
    ) as http:
        now = time.monotonic()
        count_from = now + args.warmup
        stop_at = count_from + args.seconds
        budget = [args.max_requests]
        tasks = [
            client(http, bodies, k * 37, stop_at, count_from, budget, tally) for k in range(clients)
        ]
        await asyncio.wait_for(
            asyncio.gather(*tasks), args.warmup + args.seconds + args.request_timeout + 10
        )
        window_s = max(time.monotonic(), count_from) - count_from
    return tally, window_s


async def _drive_raw(
    port: int, bodies: list[dict[str, Any]], clients: int, args: argparse.Namespace
) -> tuple[Tally, float]:
    tally = Tally()
    requests = encode_requests(port, bodies)
    now = time.monotonic()
    count_from = now + args.warmup
    stop_at = count_from + args.seconds
    budget = [args.max_requests]
    tasks = [
        raw_client(port, requests, k * 37, stop_at, count_from, budget, tally,
                   args.request_timeout)
        for k in range(clients)
    ]  # fmt: skip
    await asyncio.wait_for(
        asyncio.gather(*tasks), args.warmup + args.seconds + args.request_timeout + 10
    )
    return tally, max(time.monotonic(), count_from) - count_from


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(
    tally: Tally,
    window_s: float,
    clients: int,
    kind: str,
    api: dict[str, float],
    args: argparse.Namespace,
) -> dict[str, Any]:
    ok = sum(n for code, n in tally.statuses.items() if 200 <= code < 300)
    non2xx = {code: n for code, n in tally.statuses.items() if not 200 <= code < 300}
    lat = tally.latencies_ms or [float("nan")]
    out = {
        "graph": args.graph,
        "clients": clients,
        "seconds": round(window_s, 1),
        "requests": tally.sent,
        "ok": ok,
        "non_2xx": sum(non2xx.values()),
        "non_2xx_by_status": non2xx,
        "exceptions": sum(tally.exceptions.values()),
        "exceptions_by_type": dict(tally.exceptions),
        "p50_ms": round(statistics.median(lat), 1),
        "p95_ms": round(pct(lat, 0.95), 1),
        "p99_ms": round(pct(lat, 0.99), 1),
        "max_ms": round(max(lat), 1),
        "req_per_s": round(ok / window_s, 1) if window_s else 0.0,
        "api_peak_rss_mb": round(api["peak_mb"], 1),
        "api_rss_end_mb": round(api["rss_mb"], 1),
        "api_cpu_share": round(api["cpu_s"] / (window_s + args.warmup), 2),
        "neo4j_cpu_share": round(api["neo4j_cpu_s"] / (window_s + args.warmup), 2),
        "client_cpu_share": round(api["client_cpu_s"] / (window_s + args.warmup), 2),
        "workers": args.workers,
        "client": kind,
        "warmup_requests": tally.warmup_sent,
        "warmup_failed": tally.warmup_failed,
    }
    print(f"\n{args.graph}: {clients} {kind} clients, {out['seconds']}s measured "
          f"(after {args.warmup}s warm-up: {tally.warmup_sent} requests, "
          f"{tally.warmup_failed} failed)")  # fmt: skip
    print(f"  requests {out['requests']}  ok {ok}  non-2xx {out['non_2xx']} {non2xx or ''}  "
          f"exceptions {out['exceptions']} {dict(tally.exceptions) or ''}")  # fmt: skip
    print(f"  latency p50 {out['p50_ms']} ms  p95 {out['p95_ms']} ms  p99 {out['p99_ms']} ms  "
          f"max {out['max_ms']} ms")  # fmt: skip
    print(f"  throughput {out['req_per_s']} req/s  API peak RSS {out['api_peak_rss_mb']} MB "
          f"(end {out['api_rss_end_mb']} MB)")  # fmt: skip
    print(f"  CPU (cores): API {out['api_cpu_share']} ({args.workers} workers)  Neo4j "
          f"{out['neo4j_cpu_share']}  clients {out['client_cpu_share']} ({kind})")  # fmt: skip
    print(json.dumps(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", choices=("example", "100k"), default="example")
    parser.add_argument(
        "--clients", default="50", help="concurrent clients; a list (50,8) runs one window each"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds not counted")
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--request-timeout", type=float, default=30.0)
    parser.add_argument("--modes", default="graph", help="comma-separated: graph,vector,hybrid")
    parser.add_argument("--local", action="store_true", help="start a throwaway local Neo4j")
    parser.add_argument("--wipe", action="store_true", help="allow wiping the configured Neo4j")
    parser.add_argument("--scale", type=float, default=1.0, help="100k graph: 1.0 = 100k")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--reuse", action="store_true", help="the configured Neo4j holds the graph: keep it"
    )
    parser.add_argument("--workers", type=int, default=1, help="kg serve --workers")
    parser.add_argument(
        "--client",
        default="raw",
        help="raw: keep-alive HTTP/1.1 over asyncio streams (light); httpx: httpx.AsyncClient "
        "(~5 ms of CPU a request); a list (raw,httpx) runs a window each, side by side",
    )
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--pagecache", default="1g")
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    kinds = args.client.split(",")
    if not all(1 <= c <= 1000 for c in counts) or args.seconds <= 0 or args.max_requests < 1:
        raise SystemExit("--clients 1..1000, --seconds > 0, --max-requests >= 1")
    if not set(kinds) <= {"raw", "httpx"}:
        raise SystemExit("--client: raw, httpx, or a list of them")
    windows = [(c, kind) for c in counts for kind in kinds]

    with neo4j_settings(args) as settings:
        names = load_graph(settings, args)
        bodies = make_bodies(names, args)
        port = free_port()
        server_pid = neo4j_pid(settings)
        with api_process(settings, port, args.workers) as proc:
            for clients, kind in windows:
                pids = process_tree(proc.pid)
                before = (tree_cpu(pids), cpu_seconds(server_pid or -1), time.process_time())
                tally, window_s = asyncio.run(drive(port, bodies, clients, kind, args))
                api = {
                    "peak_mb": memory_mb(pids, "VmHWM"),
                    "rss_mb": memory_mb(pids, "VmRSS"),
                    "cpu_s": tree_cpu(pids) - before[0],
                    "neo4j_cpu_s": cpu_seconds(server_pid or -1) - before[1],
                    "client_cpu_s": time.process_time() - before[2],
                }
                report(tally, window_s, clients, kind, api, args)


if __name__ == "__main__":
    main()
