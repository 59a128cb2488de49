"""Admission control against the real Neo4j: expensive calls and greedy clients cannot take
every query slot, so a normal search from someone else still runs at once.

The "expensive" queries are reads that keep the server busy until the query timeout stops
them; before per-client caps and cost classes they held every slot and the cheap call waited
for the whole timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kg.cypher import admission
from kg.cypher.admission import current_client
from kg.cypher.templates import REGISTRY
from kg.errors import QueryTimeout
from kg.search.service import SearchService
from kg.settings import Settings
from tests.burn import burn_template, stop_burns
from tests.graphdata import tuned, with_service

REG = REGISTRY.with_templates(burn_template("slow"), burn_template("slow_heavy"))
# Without fairness the cheap call gets a slot only when a flood call's QUERY_TIMEOUT_S frees
# one. So the test asks whether every flood call was still running when the cheap calls had
# their answers, not how many seconds they took: a loaded machine slows both alike.
QUERY_TIMEOUT_S = 8.0


@pytest.fixture(autouse=True)
def heavy_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission, "HEAVY", {**admission.HEAVY, "slow_heavy": lambda _: True})


def _settings(settings: Settings, *, per_client: int, heavy: int) -> Settings:
    s = tuned(settings, max_concurrent_queries=3, query_timeout_s=QUERY_TIMEOUT_S,
              queue_timeout_s=2 * QUERY_TIMEOUT_S)  # fmt: skip
    api = s.api.model_copy(
        update={"max_queries_per_client": per_client, "heavy_query_slots": heavy}
    )
    return s.model_copy(update={"api": api})


async def _as(client: str, call: Callable[[], Awaitable[Any]]) -> Any:
    current_client.set(client)  # this task's own context
    return await call()


async def _flood_then_measure(
    service: SearchService, flood_template: str, floods: int
) -> tuple[int, list[Any]]:
    """How many flood calls had ended when the cheap calls were answered (0: the cheap calls
    waited for no flood slot), and the flood's outcomes."""
    await service.run_template("entity_by_id", {"entity_id": "nobody"})  # warm: plan cached
    flood = [
        asyncio.create_task(_as("flood", lambda: service.run_template(flood_template, {})))
        for _ in range(floods)
    ]
    await asyncio.sleep(0.5)  # the flood holds what it can get
    cheap = await asyncio.gather(
        *(
            _as("user", lambda: service.run_template("entity_by_id", {"entity_id": "nobody"}))
            for _ in range(2)
        )
    )
    ended = sum(task.done() for task in flood)
    for task in flood:
        task.cancel()
    results = await asyncio.gather(*flood, return_exceptions=True)
    # The server would count on to its timeout what was cancelled client-side: stop it.
    await asyncio.to_thread(stop_burns, service.settings)
    assert all(r.rows == [] for r in cheap)
    return ended, results


def test_expensive_calls_leave_slots_for_cheap_ones(settings: Settings) -> None:
    narrow = _settings(settings, per_client=3, heavy=1)
    ended, flood = with_service(narrow, lambda s: _flood_then_measure(s, "slow_heavy", 4), REG)
    assert ended == 0, f"the cheap calls waited until {ended} expensive ones timed out"
    assert all(isinstance(r, QueryTimeout | asyncio.CancelledError) for r in flood), flood


def test_one_client_cannot_hold_every_slot(settings: Settings) -> None:
    narrow = _settings(settings, per_client=2, heavy=1)
    ended, _ = with_service(narrow, lambda s: _flood_then_measure(s, "slow", 4), REG)
    assert ended == 0, f"another client's calls waited until {ended} greedy ones timed out"
