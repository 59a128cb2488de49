"""Valid-looking input that used to reach Neo4j and fail there (500/503) is now a 4xx naming
the field, decided before any query: as_of instants, question length in Lucene clauses,
embeddings. And admission control: cost classes, per-client caps, fair order.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from kg.cypher.admission import Admission, cost_of
from kg.cypher.lucene import MAX_TOKENS, escape_lucene
from kg.cypher.params import (
    CHUNK_EMBEDDING_DIM_CONTEXT,
    EMBEDDING_DIM_CONTEXT,
    ChunksByVectorParams,
    EntitySeedsParams,
    PathsBetweenParams,
    RelationsValidAtParams,
    SeedExpansionParams,
)
from kg.errors import ClientBusy, Overloaded
from kg.instants import AsOf
from kg.search.models import SearchRequest

# -- as_of ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2023-06-01", datetime(2023, 6, 1, tzinfo=UTC)),
        # an offset is an instant, never "the date 2023-06-01" (a 14-hour error)
        ("2023-06-01T00:00:00+14:00", datetime(2023, 5, 31, 10, tzinfo=UTC)),
        ("2023-06-01T00:00:00-12:00", datetime(2023, 6, 1, 12, tzinfo=UTC)),
        ("2023-06-01T10:00:00Z", datetime(2023, 6, 1, 10, tzinfo=UTC)),
        ("2023-06-01T10:00:00", datetime(2023, 6, 1, 10, tzinfo=UTC)),  # naive: UTC
        ("9999-12-31T23:00:00+00:00", datetime(9999, 12, 31, 23, tzinfo=UTC)),
    ],
)
def test_as_of_is_an_instant_in_utc(text: str, instant: datetime) -> None:
    assert TypeAdapter(AsOf).validate_python(text) == instant
    assert SearchRequest(query="q", as_of=text).as_of == instant  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00", "2023-02-30", "soon"]
)
def test_as_of_out_of_range_or_malformed_names_the_field(text: str) -> None:
    for model, extra in (
        (SearchRequest, {"query": "q"}),
        (SeedExpansionParams, {"entity_ids": ["e"]}),
        (PathsBetweenParams, {"source_id": "a", "target_id": "b"}),
        (RelationsValidAtParams, {"entity_id": "e"}),
    ):
        with pytest.raises(ValidationError) as info:
            model.model_validate({**extra, "as_of": text})
        assert [e["loc"][0] for e in info.value.errors()] == ["as_of"]


def test_as_of_reaches_cypher_as_the_same_instant_in_every_shape() -> None:
    params = SeedExpansionParams(entity_ids=["e"], as_of="2023-06-01T00:00:00+14:00")  # type: ignore[arg-type]
    cypher = params.cypher_params()
    assert cypher["as_of_dt"] == datetime(2023, 5, 31, 10, tzinfo=UTC)
    assert cypher["as_of_date"].isoformat() == "2023-05-31"


# -- the fulltext query stays under Lucene's clause limit ---------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "認証サービス" * 300,  # 1,800 characters, no spaces: one token per character
        "漢" * 5000,
        " ".join(["字"] * 3000),
        "数据库" + "😀" * 2000,
        "a-b." * 2000,
        " ".join(["word"] * 3000),
    ],
)
def test_a_long_question_in_any_script_stays_under_the_clause_limit(question: str) -> None:
    query = escape_lucene(question)
    assert query
    # an upper bound on the tokens the analyzer can make of it must stay within the budget
    unescaped = query.replace("\\", "")
    tokens = sum(1 if ord(c) >= 0x2E80 or not c.isalnum() else 0 for c in unescaped)
    assert tokens <= MAX_TOKENS


def test_the_start_of_a_long_cjk_question_is_kept() -> None:
    assert escape_lucene("認証サービス" + "漢" * 1500).startswith("認証サービス")


# -- embeddings ------------------------------------------------------------------------------

DIM = 8
# Each vector index has its own dimension: entity names and chunk texts may use other embedders.
CONTEXT = {EMBEDDING_DIM_CONTEXT: DIM, CHUNK_EMBEDDING_DIM_CONTEXT: DIM}


@pytest.mark.parametrize(
    ("vector", "reason"),
    [
        ([0.1] * 3, "must have 8 numbers"),
        ([0.1] * 9, "must have 8 numbers"),
        ([0.0] * DIM, "zero vector"),
        ([1e300] * DIM, "too large"),
        ([1e160, *[0.0] * (DIM - 1)], "too large"),
        ([float("nan"), *[0.1] * (DIM - 1)], "finite"),
    ],
)
def test_unusable_embeddings_are_rejected_naming_the_field(
    vector: list[float], reason: str
) -> None:
    for model, extra in ((ChunksByVectorParams, {}), (EntitySeedsParams, {"text": "x"})):
        with pytest.raises(ValidationError) as info:
            model.model_validate({**extra, "embedding": vector}, context=CONTEXT)
        errors = info.value.errors()
        assert [e["loc"][0] for e in errors] == ["embedding"]
        assert reason in errors[0]["msg"]


def test_each_index_checks_its_own_dimension() -> None:
    both = {EMBEDDING_DIM_CONTEXT: 4, CHUNK_EMBEDDING_DIM_CONTEXT: 8}
    ChunksByVectorParams.model_validate({"embedding": [0.1] * 8}, context=both)
    EntitySeedsParams.model_validate({"embedding": [0.1] * 4}, context=both)
    with pytest.raises(ValidationError, match="chunk_embedding vector index"):
        ChunksByVectorParams.model_validate({"embedding": [0.1] * 4}, context=both)
    with pytest.raises(ValidationError, match="entity_embedding vector index"):
        EntitySeedsParams.model_validate({"embedding": [0.1] * 8}, context=both)


def test_usable_embeddings_pass() -> None:
    for vector in ([0.1] * DIM, [1e-30] * DIM, [1e150, *[0.0] * (DIM - 1)]):
        ChunksByVectorParams.model_validate({"embedding": vector}, context=CONTEXT)


# -- admission: cost classes, per-client caps, fair order --------------------------------


def test_cost_classes() -> None:
    assert cost_of("paths_between", PathsBetweenParams(source_id="a", target_id="b")) == "heavy"
    assert cost_of("paths_between", PathsBetweenParams(source_id="a", target_id="b", depth=1)) == (
        "light"
    )
    wide = SeedExpansionParams(entity_ids=["e"], depth=3, fanout=500)
    assert cost_of("seed_expansion", wide) == "heavy"
    assert cost_of("seed_expansion", SeedExpansionParams(entity_ids=["e"], depth=3)) == "light"
    assert cost_of("entity_by_id", object()) == "light"


async def _hold(
    admission: Admission, cost: Any, client: str | None, release: asyncio.Event, log: list[str]
) -> None:
    async with admission.slot(cost, 5.0, client):
        log.append(f"{client}:{cost}")
        await release.wait()


def test_heavy_calls_leave_slots_for_light_ones() -> None:
    async def scenario() -> None:
        admission = Admission(4, heavy_slots=1, per_client=4)
        release = asyncio.Event()
        log: list[str] = []
        heavy = [
            asyncio.create_task(_hold(admission, "heavy", f"h{i}", release, log)) for i in range(6)
        ]
        await asyncio.sleep(0.01)
        assert admission.running_heavy == 1
        # three light calls from three clients start at once despite six heavy ones queued
        light = [
            asyncio.create_task(_hold(admission, "light", f"l{i}", release, log)) for i in range(3)
        ]
        await asyncio.sleep(0.01)
        assert sum(1 for entry in log if entry.endswith(":light")) == 3
        release.set()
        await asyncio.gather(*heavy, *light)
        assert admission.running == 0

    asyncio.run(scenario())


def test_one_client_cannot_take_every_slot_and_newcomers_go_first() -> None:
    async def scenario() -> None:
        admission = Admission(4, heavy_slots=1, per_client=3)
        release = asyncio.Event()
        log: list[str] = []
        greedy = [
            asyncio.create_task(_hold(admission, "light", "greedy", release, log))
            for _ in range(10)
        ]
        await asyncio.sleep(0.01)
        assert admission.by_client["greedy"] == 3  # capped: one slot stays for others
        other = asyncio.create_task(_hold(admission, "light", "polite", release, log))
        await asyncio.sleep(0.01)
        assert "polite:light" in log
        release.set()
        await asyncio.gather(*greedy, other)

    asyncio.run(scenario())


def test_a_freed_slot_goes_to_the_least_served_client() -> None:
    async def scenario() -> None:
        admission = Admission(2, heavy_slots=1, per_client=2)
        gates = [asyncio.Event() for _ in range(2)]
        log: list[str] = []
        first = [
            asyncio.create_task(_hold(admission, "light", "a", gates[i], log)) for i in range(2)
        ]
        await asyncio.sleep(0.01)
        done = asyncio.Event()
        done.set()
        queued_a = asyncio.create_task(_hold(admission, "light", "a", done, log))
        await asyncio.sleep(0.01)
        queued_b = asyncio.create_task(_hold(admission, "light", "b", done, log))
        await asyncio.sleep(0.01)
        gates[0].set()  # one slot frees: b (holding none) goes before a's earlier waiter
        await asyncio.sleep(0.01)
        assert log[2] == "b:light", log
        gates[1].set()
        await asyncio.gather(*first, queued_a, queued_b)

    asyncio.run(scenario())


def test_waiting_past_the_timeout_is_shed_with_the_right_error() -> None:
    async def scenario() -> None:
        admission = Admission(2, heavy_slots=1, per_client=1)
        release = asyncio.Event()
        log: list[str] = []
        held = [
            asyncio.create_task(_hold(admission, "light", "a", release, log)),
            asyncio.create_task(_hold(admission, "light", "b", release, log)),
        ]
        await asyncio.sleep(0.01)
        with pytest.raises(ClientBusy, match="too many queries from this client"):
            async with admission.slot("light", 0.05, "a"):
                pass
        with pytest.raises(Overloaded, match="busy") as info:
            async with admission.slot("light", 0.05, "c"):
                pass
        assert not isinstance(info.value, ClientBusy)
        assert admission._waiters == []
        release.set()
        await asyncio.gather(*held)
        assert (admission.running, admission.by_client) == (0, {})

    asyncio.run(scenario())


def test_the_anonymous_caller_may_use_every_slot() -> None:
    async def scenario() -> None:
        admission = Admission(4, heavy_slots=1, per_client=2)
        release = asyncio.Event()
        log: list[str] = []
        tasks = [
            asyncio.create_task(_hold(admission, "light", None, release, log)) for _ in range(4)
        ]
        await asyncio.sleep(0.01)
        assert admission.running == 4
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_a_cancelled_waiter_leaves_no_slot_behind() -> None:
    async def scenario() -> None:
        admission = Admission(1, heavy_slots=1, per_client=1)
        release = asyncio.Event()
        log: list[str] = []
        holder = asyncio.create_task(_hold(admission, "light", "a", release, log))
        await asyncio.sleep(0.01)
        waiter = asyncio.create_task(_hold(admission, "light", "b", release, log))
        await asyncio.sleep(0.01)
        waiter.cancel()
        release.set()
        await asyncio.gather(holder, waiter, return_exceptions=True)
        assert (admission.running, admission._waiters) == (0, [])

    asyncio.run(scenario())
