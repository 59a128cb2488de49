"""Which ``--shard I/N`` runs are staging now, so that a finish waits for them.

A finish resolves everything staged for a source in one pass: run while a shard is still
staging, it would resolve part of the round and the shard the rest, and the graph would not be
the one-worker graph (issue 39, C4). Each shard run therefore keeps
``(:KgShardStaging {source, index, count})`` with its ``owner`` and a lease (``expires``,
server time) from its start until it has staged, renewing the lease from a background thread;
a finish waits until no live mark is left. A run of the same shard takes the mark over (a
rerun after a crash need not wait for the dead run's lease), and a mark whose lease ran out
(its run died) no longer counts and is deleted by the next finish.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, LiteralString

from neo4j import Driver, RoutingControl

from kg.errors import StoreError
from kg.graph.lock import new_owner
from kg.graph.tx import write

log = logging.getLogger(__name__)

_BEGIN: LiteralString = """
MERGE (m:KgShardStaging {source: $source, index: $index, count: $count})
SET m.owner = $owner, m.expires = datetime() + duration({milliseconds: $lease_ms})
"""
_RENEW: LiteralString = """
MATCH (m:KgShardStaging {source: $source, index: $index, count: $count})
WHERE m.owner = $owner
SET m.expires = datetime() + duration({milliseconds: $lease_ms})
RETURN count(m) AS held
"""
_END: LiteralString = """
MATCH (m:KgShardStaging {source: $source, index: $index, count: $count})
WHERE m.owner = $owner DELETE m
"""
_LIVE: LiteralString = """
MATCH (m:KgShardStaging {source: $source}) WHERE m.expires >= datetime()
RETURN m.index AS index, m.count AS count, m.owner AS owner ORDER BY m.count, m.index
"""
_DROP_EXPIRED: LiteralString = """
MATCH (m:KgShardStaging {source: $source}) WHERE m.expires < datetime() DELETE m
"""


class ShardsStaging(StoreError):
    """Shards of the source were still staging when the finish stopped waiting for them."""


@dataclass(frozen=True)
class StagingShard:
    """A live mark: which shard, and who runs it (host:pid:random)."""

    index: int
    count: int
    owner: str

    def __str__(self) -> str:
        return f"{self.index}/{self.count} ({self.owner})"


@contextmanager
def staging_shard(
    driver: Driver, database: str, source: str, index: int, count: int, lease_s: float
) -> Iterator[None]:
    """Mark shard ``index``/``count`` of ``source`` as staging for the block."""
    params: dict[str, Any] = {"source": source, "index": index, "count": count,
                              "owner": new_owner(), "lease_ms": int(lease_s * 1000)}  # fmt: skip
    write(driver, database, _BEGIN, params)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(lease_s / 3):
            try:
                write(driver, database, _RENEW, params)
            except Exception as exc:  # retried at the next tick; the lease covers two misses
                log.warning("renewing the staging mark of shard %s/%s failed: %s",
                            index, count, exc)  # fmt: skip

    renewer = threading.Thread(target=renew, name="kg-shard-staging", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        write(driver, database, _END, params)


def live_shards(driver: Driver, database: str, source: str) -> list[StagingShard]:
    """The shards of ``source`` staging now (their lease has not run out)."""
    records, _, _ = driver.execute_query(
        _LIVE, {"source": source}, routing_=RoutingControl.WRITE, database_=database
    )
    return [StagingShard(int(r["index"]), int(r["count"]), str(r["owner"])) for r in records]


def wait_for_shards(
    driver: Driver,
    database: str,
    source: str,
    wait_s: float,
    *,
    waiting: Callable[[list[StagingShard]], None] | None = None,
    poll_s: float = 0.5,
) -> None:
    """Return once no shard of ``source`` is staging; :class:`ShardsStaging` after ``wait_s``.
    ``waiting`` hears the live shards once, when there are any."""
    deadline = time.monotonic() + wait_s
    delay, told = poll_s, False
    while live := live_shards(driver, database, source):
        if not told and waiting is not None:
            waiting(live)
            told = True
        if time.monotonic() >= deadline:
            listed = ", ".join(str(s) for s in live)
            raise ShardsStaging(
                f"shards of {source!r} are still staging: {listed}; a finish resolves a "
                f"round only once every running shard has staged, and waited {wait_s:.0f} s "
                "(write.resolve_wait_s). The last shard of a round finishes it itself; run "
                "the finish again when they have ended"
            )
        time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
        delay = min(delay * 1.5, 5.0)
    write(driver, database, _DROP_EXPIRED, {"source": source})
