"""Start-up EXPLAINs run a few at a time: results in order, never more in flight than the
bound, and the first failure raised with the rest cancelled."""

from __future__ import annotations

import asyncio

import pytest

from kg.cypher.guard import _bounded


def test_results_keep_their_order_and_the_bound_holds() -> None:
    in_flight = 0
    peak = 0

    async def step(i: int) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01 * (5 - i % 5))  # later steps finish first
        in_flight -= 1
        return i

    async def main() -> list[int]:
        return await _bounded([step(i) for i in range(12)], 3)

    assert asyncio.run(main()) == list(range(12))
    assert peak == 3


def test_the_first_failure_is_raised_and_the_rest_cancelled() -> None:
    finished: list[int] = []

    async def step(i: int) -> int:
        if i == 1:
            raise ValueError("step 1 failed")
        await asyncio.sleep(0.05)
        finished.append(i)
        return i

    async def main() -> None:
        await _bounded([step(i) for i in range(6)], 2)

    with pytest.raises(ValueError, match="step 1 failed"):
        asyncio.run(main())
    assert len(finished) < 6
