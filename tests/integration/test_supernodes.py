"""Supernodes: one entity with 100k relations must not make any template unbounded.

Every registry template, ``local_search`` and ``neighborhood`` at depths 1..3 are seeded at
the hub. Each must finish inside the configured query timeout, return at most its row cap
(``truncated`` set where the cap bit), and the test process's memory must stay bounded: the
per-node top-k read, the frontier cap and the guard's row cap are what keep a 100k-degree node
from becoming 100k rows in Python. ``pytest -s`` prints the per-call figures quoted in
docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.cypher import REGISTRY
from kg.errors import QueryTimeout, StoreError
from kg.graph.driver import open_async_driver
from kg.resolve import make_embedder
from kg.search.models import SearchRequest, TemplateResult
from kg.search.service import SearchService
from kg.settings import Settings
from tests.apidata import wipe
from tests.fixture_model import as_current_model

DEGREE = 100_000
BATCH = 10_000
HUB = "sn-hub"
HUB_B = "sn-hub-b"  # a second, smaller supernode reached at hop 2
LONER = "sn-loner"  # no relations: paths to it must exhaust the search and stop
HUB_NAME = "Central Gateway"
CHUNKS = 5_000  # every one MENTIONS the hub
EMBEDDED_CHUNKS = 20
DOCUMENTS = 5
RSS_BOUND_MB = 300
#: Calls that miss the bound today (docs/reliability.md, "Supernodes"): SHORTEST 10 between two
#: supernodes walks the hub's whole neighbourhood. They are run on their own, and must still
#: end cleanly. (fanout 1000 at depth 3 exhausted the server's transaction memory, so fanout is
#: now capped at 500, which the widest calls below use.)
KNOWN_LIMITS = frozenset(
    {
        "paths_between hub->hubB d2",
        "paths_between hub->hubB d3",
    }
)
AS_OF = datetime.now(UTC)

_HUBS = """
UNWIND $rows AS row
CREATE (:Entity {id: row.id, name: row.name, type: 'Gateway', description: row.name,
                 aliases: row.aliases, embedding: row.embedding, first_seen: datetime()})
"""

# Leaves i in [lo, hi): even ones the hub DEPENDS_ON, odd ones CALL the hub. Weights repeat
# every 1000 so the heaviest relations are known (i % 1000 = 999); every seventh was closed.
_LEAVES = """
MATCH (h:Entity {id: $hub})
UNWIND range($lo, $hi - 1) AS i
CREATE (n:Entity {id: 'sn-leaf-' + toString(i), name: 'leaf component ' + toString(i),
                  type: 'Component', aliases: ['lc-' + toString(i)], first_seen: datetime()})
WITH h, n, i, {key: toString(i), weight: (i % 1000) / 1000.0, description: 'wired to',
               validFrom: date('2015-01-01') + duration({days: i % 3000}),
               validTo: CASE WHEN i % 7 = 0 THEN date('2024-01-01') END,
               chunk_ids: ['sn-chunk-' + toString(i % $chunks)]} AS props
FOREACH (_ IN CASE WHEN i % 2 = 0 THEN [1] ELSE [] END |
  CREATE (h)-[r:DEPENDS_ON]->(n) SET r = props)
FOREACH (_ IN CASE WHEN i % 2 = 1 THEN [1] ELSE [] END |
  CREATE (n)-[r:CALLS]->(h) SET r = props)
"""

# Second-hop structure: leaf i -> leaf i+1 for i % 10 = 9, leaf i -> hub B for i % 4 = 3
# (both include the heaviest leaves, so depth 2 and 3 reach hub B and expand it).
_SECOND_HOP = """
MATCH (b:Entity {id: $hub_b})
UNWIND range($lo, $hi - 1) AS i
MATCH (a:Entity {id: 'sn-leaf-' + toString(i)})
CALL (a, b, i) {
  WITH a, b, i WHERE i % 4 = 3
  CREATE (a)-[:PART_OF_SYSTEM {weight: 0.6, validFrom: date('2020-01-01'),
                               chunk_ids: ['sn-chunk-0']}]->(b)
}
CALL (a, i) {
  WITH a, i WHERE i % 10 = 9
  MATCH (c:Entity {id: 'sn-leaf-' + toString((i + 1) % $degree)})
  CREATE (a)-[:RELATED_TO {weight: 0.5, chunk_ids: ['sn-chunk-1']}]->(c)
}
"""

_DOCS = """
UNWIND range(0, $docs - 1) AS d
CREATE (:Document {id: 'sn-doc-' + toString(d), path: 'supernode/' + toString(d) + '.md',
                   root: 'supernode', title: 'Supernode ' + toString(d), sha256: toString(d)})
"""

_CHUNKS = """
MATCH (h:Entity {id: $hub})
UNWIND range(0, $chunks - 1) AS j
MATCH (d:Document {id: 'sn-doc-' + toString(j % $docs)})
CREATE (c:Chunk {id: 'sn-chunk-' + toString(j), document_id: d.id, index: j / $docs,
                 text: 'Central Gateway note ' + toString(j), sha256: toString(j)})
CREATE (c)-[:PART_OF]->(d)
CREATE (c)-[:MENTIONS]->(h)
"""

_CHUNK_EMBEDDINGS = """
UNWIND $rows AS row
MATCH (c:Chunk {id: row.id})
SET c.embedding = row.embedding
"""


def build_supernode_graph(driver: Driver, settings: Settings) -> None:
    """Written server-side from ``range()`` in batches: the client never holds 100k rows."""
    db = settings.neo4j.database
    embedder = make_embedder(settings.resolve)
    hubs = [(HUB, HUB_NAME, ["gateway"]), (HUB_B, "Platform Core", []), (LONER, "Lone Probe", [])]
    vectors = embedder.embed([name for _, name, _ in hubs])
    driver.execute_query(
        _HUBS,
        rows=[
            {"id": i, "name": n, "aliases": a, "embedding": [float(x) for x in v]}
            for (i, n, a), v in zip(hubs, vectors, strict=True)
        ],
        database_=db,
    )
    for lo in range(0, DEGREE, BATCH):
        driver.execute_query(_LEAVES, hub=HUB, lo=lo, hi=lo + BATCH, chunks=CHUNKS, database_=db)
    for lo in range(0, DEGREE, BATCH):
        driver.execute_query(
            _SECOND_HOP, hub_b=HUB_B, lo=lo, hi=lo + BATCH, degree=DEGREE, database_=db
        )
    driver.execute_query(_DOCS, docs=DOCUMENTS, database_=db)
    driver.execute_query(_CHUNKS, hub=HUB, chunks=CHUNKS, docs=DOCUMENTS, database_=db)
    texts = [f"Central Gateway note {j}" for j in range(EMBEDDED_CHUNKS)]
    driver.execute_query(
        _CHUNK_EMBEDDINGS,
        rows=[
            {"id": f"sn-chunk-{j}", "embedding": [float(x) for x in v]}
            for j, v in enumerate(embedder.embed(texts))
        ],
        database_=db,
    )
    driver.execute_query("CALL db.awaitIndexes(300)", database_=db)
    as_current_model(driver, settings.neo4j.database)


def memory_kb(field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def reset_peak_rss() -> None:
    """Make VmHWM track the peak from now on (Linux: ``5`` to clear_refs), when allowed."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


@dataclass(frozen=True)
class Call:
    label: str
    ms: float
    rows: int
    cap: int
    truncated: bool


def template_calls(embedding: list[float]) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, template, parameters): every template, seeded at the hub, at its heaviest."""
    widest = {"fanout": 500, "frontier_cap": 5000, "limit": 10_000}
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for depth in (1, 2, 3):
        calls += [
            (f"entity_neighborhood d{depth}", "entity_neighborhood",
             {"entity_id": HUB, "depth": depth, "as_of": AS_OF}),
            (f"entity_neighborhood d{depth} widest", "entity_neighborhood",
             {"entity_id": HUB, "depth": depth, **widest}),
            (f"seed_expansion d{depth}", "seed_expansion",
             {"entity_ids": [HUB, HUB_B], "depth": depth, "as_of": AS_OF}),
            (f"paths_between hub->hubB d{depth}", "paths_between",
             {"source_id": HUB, "target_id": HUB_B, "depth": depth, "limit": 100}),
            (f"paths_between hub->loner d{depth}", "paths_between",
             {"source_id": HUB, "target_id": LONER, "depth": depth, "limit": 100}),
        ]  # fmt: skip
    calls += [
        ("entity_sources", "entity_sources", {"entity_id": HUB, "limit": 1000}),
        ("relations_valid_at", "relations_valid_at",
         {"entity_id": HUB, "as_of": date(2023, 6, 1), "limit": 10_000}),
        ("entity_by_id", "entity_by_id", {"entity_id": HUB}),
        ("entity_details", "entity_details",
         {"entity_ids": [HUB, HUB_B, *[f"sn-leaf-{i}" for i in range(198)]]}),
        ("entity_seeds", "entity_seeds", {"embedding": embedding, "text": HUB_NAME, "k": 500}),
        ("chunks_by_vector", "chunks_by_vector", {"embedding": embedding, "k": 1000}),
        ("evidence_chunks", "evidence_chunks",
         {"chunk_ids": [f"sn-chunk-{j}" for j in range(1000)], "entity_ids": [HUB, HUB_B],
          "per_entity": 200, "limit": 5000}),
        ("graph_evidence", "graph_evidence",
         {"chunk_ids": [f"sn-chunk-{j}" for j in range(1000)],
          "entity_ids": [HUB, HUB_B, *[f"sn-leaf-{i}" for i in range(198)]], "limit": 1000}),
        ("relation_types", "relation_types", {}),
        ("chunks_by_text", "chunks_by_text", {"text": HUB_NAME, "k": 1000}),
        ("entity_links", "entity_links",
         {"phrases": [HUB_NAME.casefold().split(), ["gateway"]], "per_phrase": 50,
          "limit": 10_000}),
        ("passage_hop", "passage_hop",
         {"entity_ids": [HUB, HUB_B], "per_entity": 1000, "per_chunk": 200, "limit": 10_000}),
        ("community_reports", "community_reports", {"level": 0, "limit": 500}),
        ("name_links", "name_links", {"phrases": [HUB_NAME], "limit": 500}),
        ("corpus_languages", "corpus_languages", {}),
        ("graph_counts", "graph_counts", {}),
        ("counted_links", "counted_links",
         {"phrases": [HUB_NAME.casefold().split(), ["gateway"]], "per_phrase": 50,
          "limit": 10_000}),
        ("name_page", "name_page", {"after": "", "limit": 10_000}),
        ("mention_page", "mention_page", {"after": "", "limit": 10_000, "per_chunk": 200}),
        ("relation_page", "relation_page",
         {"after": "", "limit": 10_000, "per_entity": 10_000}),
        ("fact_page", "fact_page", {"after": "", "limit": 5000}),
        ("chunk_page", "chunk_page", {"after": "", "limit": 5000}),
        ("entity_page", "entity_page", {"after": "", "limit": 5000}),
        ("facts_by_vector", "facts_by_vector", {"embedding": embedding, "k": 100}),
        ("namespaces", "namespaces", {}),
        ("chunks_dated_after", "chunks_dated_after",
         {"chunk_ids": [f"sn-chunk-{j}" for j in range(1000)], "as_of": date(2023, 6, 1)}),
    ]  # fmt: skip
    return calls


async def _timed(label: str, cap: int, call: Callable[[], Awaitable[Any]]) -> tuple[Call, Any]:
    started = time.perf_counter()
    out = await call()
    ms = (time.perf_counter() - started) * 1000
    if isinstance(out, TemplateResult):
        return Call(label, ms, len(out.rows), cap, out.truncated), out
    return Call(label, ms, -1, cap, False), out


async def exercise(settings: Settings, skip: frozenset[str] = frozenset()) -> list[Call]:
    """Every template, local search and neighbourhood at the hub; the figures of each."""
    calls: list[Call] = []
    row_cap = settings.search.row_cap
    async with open_async_driver(settings.neo4j) as driver:
        embedder = make_embedder(settings.resolve)
        service = SearchService(driver, settings, embedder)
        await service.startup()
        embedding = [float(x) for x in embedder.embed([HUB_NAME])[0]]
        seen: set[str] = set()
        for label, name, params in template_calls(embedding):
            seen.add(name)
            if label in skip:
                continue
            cap = min(REGISTRY.get(name).row_cap, row_cap)
            call, result = await _timed(
                label, cap, lambda n=name, p=params: service.run_template(n, p)
            )
            assert call.rows <= cap, call
            assert not result.truncated or call.rows == cap, call
            calls.append(call)
        assert seen == set(REGISTRY.names()), "every template runs against the supernode"
        for depth in (1, 2, 3):
            for mode in ("graph", "hybrid"):
                req = SearchRequest(query=f"What does the {HUB_NAME} depend on?", depth=depth,
                                    limit=100, mode=mode)  # fmt: skip
                call, resp = await _timed(
                    f"local_search {mode} d{depth}",
                    req.limit,
                    lambda r=req: service.local_search(r),
                )
                assert {e.id: e.hops for e in resp.entities}.get(HUB) == 0, "the hub is a seed"
                for items in (resp.entities, resp.relations, resp.chunks):
                    assert len(items) <= req.limit
                assert resp.relations, "the expansion found the hub's relations"
                calls.append(Call(call.label, call.ms, len(resp.relations), req.limit, False))
            call, hood = await _timed(
                f"neighborhood d{depth}", row_cap, lambda d=depth: service.neighborhood(HUB, d)
            )
            assert hood.entity.degree >= DEGREE
            assert len(hood.relations) <= row_cap
            calls.append(Call(call.label, call.ms, len(hood.relations), row_cap, hood.truncated))
    return calls


async def attempt(settings: Settings, labels: frozenset[str]) -> dict[str, tuple[float, str]]:
    """Run the labelled template calls; how long each took and how it ended."""
    out: dict[str, tuple[float, str]] = {}
    async with open_async_driver(settings.neo4j) as driver:
        embedder = make_embedder(settings.resolve)
        service = SearchService(driver, settings, embedder)
        embedding = [float(x) for x in embedder.embed([HUB_NAME])[0]]
        for label, name, params in template_calls(embedding):
            if label not in labels:
                continue
            started = time.perf_counter()
            try:
                result = await service.run_template(name, params)
                outcome = f"{len(result.rows)} rows"
            except (QueryTimeout, StoreError) as exc:
                outcome = f"{type(exc).__name__}: {str(exc)[:160]}"
            out[label] = ((time.perf_counter() - started) * 1000, outcome)
    return out


@pytest.fixture(scope="module")
def supernode_graph(driver: Driver, settings: Settings) -> Iterator[float]:
    """The graph, built once for this module; yields how long building took (s)."""
    wipe(driver, settings)
    started = time.perf_counter()
    build_supernode_graph(driver, settings)
    built_s = time.perf_counter() - started
    yield built_s
    wipe(driver, settings)


@pytest.mark.slow
def test_every_template_and_search_stay_bounded_at_a_100k_supernode(
    supernode_graph: float, driver: Driver, settings: Settings
) -> None:
    degree = driver.execute_query(
        "MATCH (h:Entity {id: $id}) RETURN COUNT { (h)--(:Entity) } AS d",
        id=HUB,
        database_=settings.neo4j.database,
    ).records[0]["d"]
    assert degree == DEGREE

    rss_before = memory_kb("VmRSS")
    reset_peak_rss()
    calls = asyncio.run(exercise(settings, skip=KNOWN_LIMITS))
    rss_after, peak = memory_kb("VmRSS"), memory_kb("VmHWM")

    timeout_ms = settings.search.query_timeout_s * 1000
    print(f"\nsupernode graph built in {supernode_graph:.1f}s; hub degree {degree}")
    print(f"{'call':<40} {'ms':>8} {'rows':>6} {'cap':>6} truncated")
    for c in calls:
        print(f"{c.label:<40} {c.ms:8.1f} {c.rows:6d} {c.cap:6d} {c.truncated}")
    growth_mb = (rss_after - rss_before) / 1024
    peak_mb = (peak - rss_before) / 1024
    print(f"RSS before {rss_before / 1024:.0f} MB, after {rss_after / 1024:.0f} MB "
          f"(+{growth_mb:.0f} MB), peak +{peak_mb:.0f} MB")  # fmt: skip

    slow = [c for c in calls if c.ms >= timeout_ms]
    assert not slow, f"past the {settings.search.query_timeout_s}s query timeout: {slow}"
    by_label = {c.label: c for c in calls}
    # the cap bit where more rows existed: 10k requested, row_cap allowed
    assert by_label["relations_valid_at"].truncated
    assert by_label["relations_valid_at"].rows == by_label["relations_valid_at"].cap
    assert by_label["entity_neighborhood d1 widest"].rows == 500  # fanout 500 from the hub
    assert by_label["entity_neighborhood d1"].rows == settings.search.fanout
    assert by_label["entity_sources"].rows == 1000
    assert growth_mb < RSS_BOUND_MB
    assert peak_mb < RSS_BOUND_MB


@pytest.mark.slow
def test_known_supernode_limits_fail_cleanly_and_in_time(
    supernode_graph: float, settings: Settings
) -> None:
    """The calls that do not yet meet the bound must still end cleanly, never hang.

    Ends as xfail naming each call that missed, so the limit stays visible in every run
    (docs/reliability.md has the analysis); passes once they all answer in time.
    """
    # A 2 s bound, not the default 5 s: these calls run into it, and ending cleanly at a bound
    # is what is checked (the suite's time: issue 38).
    search = settings.search.model_copy(
        update={"query_timeout_s": 2.0, "first_query_timeout_s": 2.0}
    )
    bounded = settings.model_copy(update={"search": search})
    timeout_ms = bounded.search.query_timeout_s * 1000
    results = asyncio.run(attempt(bounded, KNOWN_LIMITS))
    assert set(results) == KNOWN_LIMITS
    for label, (ms, outcome) in sorted(results.items()):
        print(f"\n{label:<40} {ms:8.1f} ms  {outcome}", end="")
        assert ms < timeout_ms + 2_500, (label, ms)  # the guard's own client-side deadline
    missed = {k: v for k, v in results.items() if v[0] >= timeout_ms or "rows" not in v[1]}
    if missed:
        pytest.xfail(
            "known supernode limits: "
            + "; ".join(f"{k} ({ms:.0f} ms, {o[:80]})" for k, (ms, o) in sorted(missed.items()))
        )
