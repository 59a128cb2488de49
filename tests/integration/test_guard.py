"""The guard against a real Neo4j: read-only, bounded, timed, and data never becomes Cypher."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from neo4j import Driver

from kg.cypher.guard import Prepared
from kg.cypher.params import NeighborhoodParams, NoParams
from kg.cypher.templates import REGISTRY, Template
from kg.errors import (
    ConfigError,
    NotFoundError,
    Overloaded,
    QueryRejected,
    QueryTimeout,
    StoreError,
    StoreUnavailable,
)
from kg.localserver import free_port
from kg.search.models import SearchRequest
from kg.search.service import SearchService
from kg.settings import Settings
from tests.burn import burn_template
from tests.graphdata import counts, tuned, with_service, write_test_graph

HOSTILE = [
    "x'}) DETACH DELETE n //",
    'x"}) MATCH (n) DETACH DELETE n RETURN 1 //',
    "payment` ]->() DETACH DELETE n //",
    "*/ MATCH (n) DETACH DELETE n /*",
]


@pytest.fixture
def graph(clean_graph: Driver, settings: Settings) -> Driver:
    write_test_graph(clean_graph, settings)
    return clean_graph


def test_every_rendered_template_is_a_read_by_explain(driver: Driver, settings: Settings) -> None:
    found = with_service(settings, lambda s: s.startup())
    expected = {f"{t.name}/{v}" for t in REGISTRY for v in t.texts}
    assert set(found) == expected
    assert set(found.values()) == {"r"}


def test_startup_runs_real_searches_without_translating(graph: Driver, settings: Settings) -> None:
    """The start-up searches read the graph (seeds, expansion, chunks) but never translate:
    that would call an LLM at every start."""

    async def start(service: SearchService) -> tuple[list[str], int, int]:
        calls: list[str] = []
        asked: list[str] = []
        real_run = service.guard.run

        async def recording_run(name: str, params: Any) -> Any:
            calls.append(name)
            return await real_run(name, params)

        async def recording_translate(query: str) -> tuple[dict[str, Any], None]:
            asked.append(query)
            return {}, None

        service.guard.run = recording_run  # type: ignore[method-assign]
        service._translate = recording_translate  # type: ignore[method-assign,assignment]
        await service.startup()
        at_startup = list(calls)
        translated_at_startup = len(asked)
        await service.local_search(SearchRequest(query="PaymentService"))
        return at_startup, translated_at_startup, len(asked)

    calls, translated, translated_after = with_service(settings, start)
    # the passage and relation graphs are read once (mention_page, relation_page), not hop by
    # hop (passage_hop, seed_expansion)
    # and names are linked in memory (name_page with the counts), not by the fulltext index
    assert {"entity_seeds", "chunks_by_vector", "name_page", "graph_counts", "relation_page",
            "mention_page", "chunks_by_text"} <= set(calls)  # fmt: skip
    assert not {"entity_links", "counted_links"} & set(calls)
    assert "passage_hop" not in calls
    assert "seed_expansion" not in calls
    assert (translated, translated_after) == (0, 1)  # an ordinary search does ask
    assert with_service(settings, lambda s: s.warm_searches()) == 3

    calls, _, _ = with_service(tuned(settings, warm_up_searches=0), start)
    assert calls == []  # planning only: EXPLAINs are not guarded runs


def test_a_write_template_fails_verification_and_the_server_refuses_it(
    graph: Driver, settings: Settings
) -> None:
    evil = Template(
        name="evil",
        description="test only: a write that must never run",
        params=NoParams,
        texts={"default": "CREATE (:Intruder) RETURN 1 AS one"},
        row_cap=1,
    )
    registry = REGISTRY.with_templates(evil)
    with pytest.raises(ConfigError, match="evil/default"):
        with_service(settings, lambda s: s.startup(), registry)
    # Even past verification, the READ transaction makes the server reject the write.
    with pytest.raises(StoreError, match="AccessMode"):
        with_service(settings, lambda s: s.run_template("evil", {}), registry)
    records, _, _ = graph.execute_query("MATCH (n:Intruder) RETURN count(n) AS n")
    assert records[0]["n"] == 0


def test_unknown_template_is_not_found(driver: Driver, settings: Settings) -> None:
    with pytest.raises(NotFoundError, match="no template"):
        with_service(settings, lambda s: s.run_template("MATCH (n) DETACH DELETE n", {}))


@pytest.mark.parametrize(
    ("name", "params", "field"),
    [
        ("entity_neighborhood", {"entity_id": "payment", "depth": 4}, "depth"),
        ("entity_neighborhood", {"entity_id": "payment", "depth": 0}, "depth"),
        ("entity_neighborhood", {"entity_id": "payment", "limit": 10**9}, "limit"),
        ("entity_neighborhood", {"entity_id": "payment", "fanout": -1}, "fanout"),
        ("entity_neighborhood", {"entity_id": "x" * 1_000_000}, "entity_id"),
        ("entity_neighborhood", {"entity_id": "pay\x00ment"}, "entity_id"),
        ("entity_neighborhood", {"entity_id": "payment", "extra": 1}, "extra"),
        ("entity_neighborhood", {"entity_id": "payment", "as_of": "yesterday"}, "as_of"),
        ("paths_between", {"source_id": "a", "target_id": "b", "depth": 4}, "depth"),
        ("seed_expansion", {"entity_ids": ["a"] * 51}, "entity_ids"),
        (
            "entity_neighborhood",
            {"entity_id": "payment", "relation_types": ["DEPENDS_ON]->() DELETE n //"]},
            "relation_types.0",
        ),
        ("entity_seeds", {"embedding": [float("nan")] * 256}, "embedding"),
    ],
)
def test_bad_parameters_are_rejected_naming_the_field(
    graph: Driver, settings: Settings, name: str, params: dict[str, Any], field: str
) -> None:
    before = counts(graph, settings)
    with pytest.raises(QueryRejected) as excinfo:
        with_service(settings, lambda s: s.run_template(name, params))
    assert field in {e["field"] for e in excinfo.value.errors}
    assert counts(graph, settings) == before


def test_depth_four_is_rejected_by_the_service_too(graph: Driver, settings: Settings) -> None:
    with pytest.raises(QueryRejected) as excinfo:
        with_service(settings, lambda s: s.neighborhood("payment", depth=4))
    assert excinfo.value.errors[0]["field"] == "depth"
    request = SearchRequest.model_construct(
        query="payment", mode="graph", depth=4, limit=5, as_of=None, relation_types=None
    )
    with pytest.raises(QueryRejected, match="depth"):
        with_service(settings, lambda s: s.local_search(request))


@pytest.mark.parametrize("hostile", HOSTILE)
def test_cypher_in_parameters_is_only_data(graph: Driver, settings: Settings, hostile: str) -> None:
    before = counts(graph, settings)

    async def attack(service: SearchService) -> list[int]:
        sizes = []
        for name, params in [
            ("entity_neighborhood", {"entity_id": hostile, "depth": 3}),
            ("seed_expansion", {"entity_ids": [hostile, "payment"], "depth": 2}),
            ("paths_between", {"source_id": hostile, "target_id": "finance"}),
            ("entity_sources", {"entity_id": hostile}),
            ("entity_seeds", {"embedding": [0.1] * 256, "text": hostile}),
        ]:
            sizes.append(len((await service.run_template(name, params)).rows))
        await service.local_search(SearchRequest(query=hostile, depth=3))
        await service.local_search(SearchRequest(query=hostile, mode="hybrid"))
        return sizes

    sizes = with_service(settings, attack)
    assert sizes[0] == 0  # no entity has that id
    assert sizes[1] > 0  # the real seed still expands
    assert counts(graph, settings) == before
    assert before.nodes > 0


def test_lucene_syntax_in_the_question_does_not_error(graph: Driver, settings: Settings) -> None:
    questions = [
        'name:(Payment OR "Ledger',
        "payment~ AND ledger^2 || [a TO b] {c} !d :e \\ /f/ -g +h ?*",
        "NOT",
        "???",
        "\"'`;",
    ]

    async def ask(service: SearchService) -> list[int]:
        out = []
        for q in questions:
            response = await service.local_search(SearchRequest(query=q, mode="hybrid"))
            out.append(len(response.entities))
        return out

    sizes = with_service(settings, ask)
    assert sizes[0] > 0  # the words still match Payment Service / Ledger DB


def test_a_nul_or_huge_question_is_rejected_before_neo4j(driver: Driver) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="query"):
        SearchRequest(query="payment\x00")
    with pytest.raises(ValidationError, match="query"):
        SearchRequest(query="x" * 1_000_000)


def test_settings_can_be_stricter_than_the_request_model(
    driver: Driver, settings: Settings
) -> None:
    strict = tuned(settings, max_query_chars=10, max_limit=5)
    with pytest.raises(QueryRejected) as excinfo:
        with_service(
            strict, lambda s: s.local_search(SearchRequest(query="a long question", limit=50))
        )
    assert {e["field"] for e in excinfo.value.errors} == {"query", "limit"}


def test_unknown_relation_type_is_rejected(graph: Driver, settings: Settings) -> None:
    with pytest.raises(QueryRejected) as excinfo:
        with_service(
            settings,
            lambda s: s.local_search(SearchRequest(query="payment", relation_types=["NOPE"])),
        )
    assert excinfo.value.errors == [
        {"field": "relation_types", "reason": "unknown relation type 'NOPE'"}
    ]
    with pytest.raises(QueryRejected, match="NOPE"):
        with_service(
            settings,
            lambda s: s.run_template(
                "entity_neighborhood", {"entity_id": "payment", "relation_types": ["NOPE"]}
            ),
        )


def test_relation_type_cache_refreshes_for_a_new_type(graph: Driver, settings: Settings) -> None:
    async def scenario(service: SearchService) -> None:
        assert "MONITORS" not in await service.guard.relation_types()
        # As the writer does it: a long-tail predicate on RELATED, catalogued.
        graph.execute_query(
            "MATCH (a:Entity {id: 'auth'}), (b:Entity {id: 'payment'}) "
            "CREATE (a)-[:RELATED {predicate: 'MONITORS', weight: 0.5}]->(b) "
            "MERGE (:Predicate {name: 'MONITORS', stored_as: 'RELATED'})",
            database_=settings.neo4j.database,
        )
        result = await service.run_template(
            "entity_neighborhood", {"entity_id": "auth", "relation_types": ["MONITORS"]}
        )
        assert [r["type"] for r in result.rows] == ["MONITORS"]

    with_service(settings, scenario)


def test_rows_past_the_cap_are_not_read_and_marked_truncated(
    graph: Driver, settings: Settings
) -> None:
    capped = tuned(settings, row_cap=2)
    result = with_service(
        capped,
        lambda s: s.run_template("entity_neighborhood", {"entity_id": "payment", "depth": 3}),
    )
    assert len(result.rows) == 2
    assert result.truncated
    full = with_service(
        settings,
        lambda s: s.run_template("entity_neighborhood", {"entity_id": "payment", "depth": 3}),
    )
    assert len(full.rows) > 2
    assert not full.truncated


def _db_hits(plan: dict[str, Any]) -> int:
    return int(plan.get("dbHits", 0)) + sum(_db_hits(c) for c in plan.get("children", []))


def test_expansion_stops_reading_once_the_limit_is_filled(
    graph: Driver, settings: Settings
) -> None:
    """Rows come out by hop: once earlier hops fill the limit, later hops read nothing."""

    def profiled(depth: int, limit: int) -> tuple[int, list[Any]]:
        params = NeighborhoodParams(entity_id="payment", depth=depth, limit=limit)
        prepared = with_service(settings, lambda s: _prepared(s, params))
        records, summary, _ = graph.execute_query(
            "PROFILE " + prepared.text, prepared.cypher_params()
        )
        return _db_hits(summary.profile or {}), records[0]["rows"]

    near_hits, near = profiled(1, 1)
    far_hits, far = profiled(3, 1)
    full_hits, full = profiled(3, 500)
    assert far == near
    assert len(full) > 1
    # Depth 3 limited to one row reads what depth 1 reads; unlimited, it reads much more.
    assert far_hits <= near_hits + 5
    assert full_hits > 2 * far_hits


def test_templates_marked_without_temporals_return_plain_json(
    graph: Driver, settings: Settings
) -> None:
    """The guard skips the temporal conversion for them: their rows must already be JSON."""
    calls = {
        "passage_hop": {"entity_ids": ["payment", "ledger"]},
        "evidence_chunks": {"entity_ids": ["payment", "ledger"]},
        "graph_evidence": {"entity_ids": ["payment", "ledger"]},
        "entity_details": {"entity_ids": ["payment", "ledger"]},
        "graph_counts": {},
        "counted_links": {"phrases": [["payment"], ["ledger"]]},
        "name_page": {},
        "mention_page": {},
        "fact_page": {},
        "chunk_page": {},
        "entity_page": {},
        "facts_by_vector": {"embedding": [1.0] * settings.chunks.embedding_dim, "k": 5},
        "chunks_by_vector": {"embedding": [1.0] * settings.chunks.embedding_dim, "k": 5},
        "chunks_by_text": {"text": "payment"},
        "namespaces": {},
        "chunks_dated_after": {"chunk_ids": ["c1"], "as_of": "2024-01-01"},
    }
    assert {t.name for t in REGISTRY if not t.temporal} == set(calls)
    for name, params in calls.items():
        result = with_service(settings, lambda s, n=name, p=params: s.run_template(n, p))
        # this graph is written without Fact nodes (test_fact_search.py reads real ones)
        # ... nor dated documents (test_folder_graph.py reads them)
        empty = {"fact_page", "facts_by_vector", "namespaces", "chunks_dated_after"}
        assert result.rows or name in empty, name
        json.dumps(result.rows)  # a neo4j.time value here would raise TypeError


async def _prepared(service: SearchService, params: NeighborhoodParams) -> Prepared:
    return service.guard.prepare("entity_neighborhood", params)


SLOW = burn_template("slow")  # a read that keeps the CPU busy for minutes


def test_a_slow_query_is_stopped_by_the_timeout(driver: Driver, settings: Settings) -> None:
    quick = tuned(settings, query_timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(QueryTimeout, match="time bound"):
        with_service(quick, lambda s: s.run_template("slow", {}), REGISTRY.with_templates(SLOW))
    assert time.monotonic() - started < 10
    # The server really stopped it: nothing of ours is still running there.
    records, _, _ = driver.execute_query(
        "SHOW TRANSACTIONS YIELD metaData, status RETURN metaData, status",
        database_=settings.neo4j.database,
    )
    assert not [r for r in records if (r["metaData"] or {}).get("template") == "slow"]


def test_unreachable_neo4j_is_store_unavailable(settings: Settings) -> None:
    closed = settings.model_copy(
        update={
            "neo4j": settings.neo4j.model_copy(
                update={"uri": f"bolt://127.0.0.1:{free_port()}", "connection_timeout_s": 2.0}
            )
        }
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        with_service(closed, lambda s: s.local_search(SearchRequest(query="payment")))
    with pytest.raises(StoreUnavailable):
        with_service(closed, lambda s: s.get_entity("payment"))
    assert with_service(closed, lambda s: s.health()) is False
    assert time.monotonic() - started < 20


def test_queries_past_the_concurrency_bound_wait_then_are_shed_as_busy(settings: Settings) -> None:
    """One slot, a slow query holding it: the next call waits queue_timeout_s, then Overloaded."""
    narrow = tuned(settings, query_timeout_s=2.0, max_concurrent_queries=1, queue_timeout_s=0.3)

    async def two_at_once(service: SearchService) -> list[object]:
        first = asyncio.create_task(service.run_template("slow", {}))
        await asyncio.sleep(0.05)  # let the first one take the slot
        second = asyncio.create_task(service.run_template("entity_by_id", {"entity_id": "x"}))
        return list(await asyncio.gather(first, second, return_exceptions=True))

    started = time.monotonic()
    first, second = with_service(narrow, two_at_once, REGISTRY.with_templates(SLOW))
    assert isinstance(first, QueryTimeout)
    assert isinstance(second, Overloaded)
    assert "busy" in str(second)
    assert time.monotonic() - started < 10
    # With the slot free again, queries run as usual.
    ok = with_service(narrow, lambda s: s.run_template("entity_by_id", {"entity_id": "x"}))
    assert ok.rows == []
