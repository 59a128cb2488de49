"""A lease lock kept in the graph: the one store every worker, on any machine, shares.

``(:KgLock {id})`` holds ``owner`` and ``expires`` (server time). Taking it is one write
transaction that first writes the node (so Neo4j's node lock serializes the check), then sets
the owner when the lock is free, already ours, or its lease has expired: a worker that died
holding it stalls the others for one lease at most. The holder renews the lease from a
background thread while it works and deletes the node when done. A uniqueness constraint on
``KgLock.id`` (schema/008_workers.cypher) keeps two first takers from making two nodes. A
take that waited on the node a release was deleting finds it again before it counts as taken
(a deleted node keeps no owner: without the check the taker and the next taker both held it).
Every transaction is a managed one: transient errors (deadlock, leader switch, lost
connection) are retried by the driver with backoff.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, LiteralString

from neo4j import Driver

from kg.errors import StoreError
from kg.graph.tx import write

log = logging.getLogger(__name__)

_TAKE: LiteralString = """
MERGE (l:KgLock {id: $id})
SET l.asked_by = $owner
WITH l, datetime() AS now
WITH l, now, (l.owner IS NULL OR l.owner = $owner OR l.expires < now) AS free
SET l.owner = CASE WHEN free THEN $owner ELSE l.owner END,
    l.expires = CASE WHEN free THEN now + duration({milliseconds: $lease_ms}) ELSE l.expires END
WITH l, free
OPTIONAL MATCH (kept:KgLock {id: $id}) WHERE kept.owner = $owner
RETURN free AND kept IS NOT NULL AS free, l.owner AS owner
"""

_RENEW: LiteralString = """
MATCH (l:KgLock {id: $id}) WHERE l.owner = $owner
SET l.expires = datetime() + duration({milliseconds: $lease_ms})
RETURN count(l) AS held
"""

_RELEASE: LiteralString = "MATCH (l:KgLock {id: $id}) WHERE l.owner = $owner DETACH DELETE l"


class LockLost(StoreError):
    """Our lease expired and another worker took the lock: stop writing."""


class LockTimeout(StoreError):
    """The lock stayed held by another live worker for longer than we were willing to wait."""


def new_owner() -> str:
    """A name for this holder: host, process and a random part (unique per lock object)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class GraphLock:
    """One named lease lock in the graph; see the module docstring."""

    driver: Driver
    database: str
    name: str
    lease_s: float = 60.0
    owner: str = field(default_factory=new_owner)
    _lost: threading.Event = field(default_factory=threading.Event, init=False)

    def try_acquire(self) -> bool:
        """Take the lock if it is free, ours or expired; True when we hold it now."""
        records = self._run(_TAKE)
        return bool(records and records[0]["free"])

    def acquire(self, wait_s: float = 600.0, poll_s: float = 0.5) -> None:
        """Wait (polling, with backoff up to 5 s) until the lock is ours."""
        deadline = time.monotonic() + wait_s
        delay = poll_s
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                raise LockTimeout(f"lock {self.name!r} still held after {wait_s:.0f} s")
            time.sleep(delay)
            delay = min(delay * 1.5, 5.0)
        self._lost.clear()

    def renew(self) -> bool:
        """Extend our lease; False (and :meth:`check` raises from then on) when it was lost."""
        records = self._run(_RENEW)
        held = bool(records and records[0]["held"])
        if not held:
            self._lost.set()
        return held

    def check(self) -> None:
        """Raise :class:`LockLost` when a renewal found the lock taken over."""
        if self._lost.is_set():
            raise LockLost(f"lock {self.name!r} was taken over after its lease expired")

    def release(self) -> None:
        self._run(_RELEASE)

    @contextmanager
    def held(self, wait_s: float = 600.0) -> Iterator[GraphLock]:
        """Hold the lock for the block, renewing the lease every third of it."""
        self.acquire(wait_s)
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew_until, args=(stop,), daemon=True)
        renewer.start()
        try:
            yield self
        finally:
            stop.set()
            renewer.join()
            self.release()

    def _renew_until(self, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 3):
            try:
                if not self.renew():
                    return
            except Exception as exc:  # a failed renewal is retried at the next tick
                log.warning("renewing lock %r failed: %s", self.name, exc)

    def _run(self, query: LiteralString) -> list[Any]:
        params = {"id": self.name, "owner": self.owner, "lease_ms": int(self.lease_s * 1000)}
        return write(self.driver, self.database, query, params)
