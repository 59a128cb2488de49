"""Admission control for guarded reads: a bounded number of query slots, shared fairly.

Past a few parallel reads Neo4j only gets slower for everyone (docs/reliability.md), so the
guard runs at most ``slots`` at once and queues the rest. Three rules decide who goes next:

- **Cost classes.** A *heavy* read (``paths_between`` beyond one hop, the widest depth-3
  expansions) may hold at most ``heavy_slots`` slots, so cheap searches always keep
  ``slots - heavy_slots`` of them, however many expensive calls are waiting.
- **Per-client cap.** One client (an API key, else a client address: :data:`current_client`)
  holds at most ``per_client`` slots at once. The anonymous caller (the CLI, the library:
  no client set) is not capped.
- **Fair order.** A freed slot goes to the waiting client that holds the fewest slots, first
  come first served among equals; so a client that queued fifty calls does not make a
  newcomer wait behind all fifty.

A waiter that gets no slot within the queue timeout is shed: :class:`~kg.errors.ClientBusy`
when its own client was at its cap, :class:`~kg.errors.Overloaded` otherwise. Callers without
a client (the CLI, the library) are one anonymous client.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from kg import observe
from kg.errors import ClientBusy, Overloaded

Cost = Literal["light", "heavy"]

#: Who is asking: set by a surface (the API sets an API key's digest or the client address)
#: for the duration of a request; ``None`` is the anonymous caller.
current_client: ContextVar[str | None] = ContextVar("kg_current_client", default=None)


def _deep(params: Any) -> bool:
    return int(getattr(params, "depth", 1)) >= 2


def _widest_expansion(params: Any) -> bool:
    return int(getattr(params, "depth", 1)) >= 3 and int(getattr(params, "fanout", 0)) > 100


#: Heavy templates and when: measured on a 100k-entity graph with supernodes, these take
#: seconds where everything else takes well under one (docs/reliability.md, supernodes).
HEAVY: Mapping[str, Callable[[Any], bool]] = {
    "paths_between": _deep,
    "entity_neighborhood": _widest_expansion,
    "seed_expansion": _widest_expansion,
    # counts every namespace's facts and entities: label scans, once per namespace listed
    "namespaces": lambda _params: True,
}


def cost_of(template: str, params: Any) -> Cost:
    """The cost class of one call."""
    rule = HEAVY.get(template)
    return "heavy" if rule is not None and rule(params) else "light"


@dataclass(eq=False)
class _Waiter:
    seq: int
    client: str | None
    heavy: bool
    granted: asyncio.Future[None] = field(repr=False)


class Admission:
    """Slots for one event loop's guarded reads. Construction does no I/O."""

    def __init__(self, slots: int, *, heavy_slots: int, per_client: int) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.slots = slots
        self.heavy_slots = max(1, min(heavy_slots, slots))
        self.per_client = max(1, min(per_client, slots))
        self.running = 0
        self.running_heavy = 0
        self.by_client: dict[str | None, int] = {}
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()

    @contextlib.asynccontextmanager
    async def slot(
        self, cost: Cost, timeout_s: float, client: str | None = None
    ) -> AsyncIterator[None]:
        """Hold one slot for the body; ClientBusy/Overloaded after ``timeout_s`` of waiting."""
        heavy = cost == "heavy"
        await self._acquire(client, heavy, timeout_s)
        try:
            yield
        finally:
            self._release(client, heavy)

    # -- internals ----------------------------------------------------------------------------

    def _eligible(self, waiter: _Waiter) -> bool:
        if waiter.heavy and self.running_heavy >= self.heavy_slots:
            return False
        return self.by_client.get(waiter.client, 0) < self._cap(waiter.client)

    def _cap(self, client: str | None) -> int:
        # the anonymous caller (CLI, library) is the only client: it may use every slot
        return self.slots if client is None else self.per_client

    def _grant(self, client: str | None, heavy: bool) -> None:
        observe.count("slots", 1)
        self.running += 1
        self.running_heavy += heavy
        self.by_client[client] = self.by_client.get(client, 0) + 1

    def _release(self, client: str | None, heavy: bool) -> None:
        observe.count("slots", -1)
        self.running -= 1
        self.running_heavy -= heavy
        left = self.by_client.get(client, 0) - 1
        if left > 0:
            self.by_client[client] = left
        else:
            self.by_client.pop(client, None)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to eligible waiters, the least-served client first."""
        while self.running < self.slots:
            candidates = [w for w in self._waiters if self._eligible(w)]
            if not candidates:
                return
            best = min(candidates, key=lambda w: (self.by_client.get(w.client, 0), w.seq))
            self._waiters.remove(best)
            self._grant(best.client, best.heavy)
            best.granted.set_result(None)

    async def _acquire(self, client: str | None, heavy: bool, timeout_s: float) -> None:
        waiter = _Waiter(next(self._seq), client, heavy, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        self._dispatch()
        if waiter.granted.done():
            return
        # queued: the wait is observed (a span; metrics count waits and refusals)
        with observe.span("kg.admission.wait", cost="heavy" if heavy else "light"):
            await self._wait(waiter, client, heavy, timeout_s)

    async def _wait(
        self, waiter: _Waiter, client: str | None, heavy: bool, timeout_s: float
    ) -> None:
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.shield(waiter.granted)
        except BaseException as exc:
            if waiter.granted.done() and not waiter.granted.cancelled():
                # granted while we were being cancelled or timed out: hand the slot back
                self._release(client, heavy)
            else:
                waiter.granted.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if isinstance(exc, TimeoutError):
                raise self._shed(client, heavy, timeout_s) from None
            raise

    def _shed(self, client: str | None, heavy: bool, timeout_s: float) -> Overloaded:
        held = self.by_client.get(client, 0)
        if client is not None and held >= self.per_client:
            return ClientBusy(
                f"too many queries from this client: {held} are running (at most "
                f"{self.per_client} at once) and none finished within {timeout_s:g}s; "
                "wait for your earlier requests, then retry"
            )
        what = "expensive queries" if heavy else "queries"
        running = self.running_heavy if heavy else self.running
        return Overloaded(
            f"kg is busy: {running} {what} are running and none finished within "
            f"{timeout_s:g}s; retry shortly"
        )
