"""How ``kg serve`` runs the app under uvicorn, with bounds uvicorn lacks on its own.

uvicorn has a keep-alive timeout, ``limit_concurrency`` and an event-size limit, but no
deadline for a request's headers and none for sends: a client that sends its headers one
byte a second, or pipelines requests and never reads the answers, holds its connection (and a
file descriptor) forever; about 1,100 such clients exhausted the descriptors of a test server,
and 1,000 that never read kept ``/health`` from answering. ``guarded_h11`` is uvicorn's own h11
protocol plus three bounds:

- **Header deadline**: a connection must deliver a complete request head within
  ``header_timeout_s`` of opening (or of its previous response); otherwise it is closed.
- **Send deadline**: when the transport's buffer passes its high-water mark (the peer is not
  reading), the peer must read enough to drain it within ``send_timeout_s``; otherwise the
  connection is aborted (``close()`` would wait forever to flush the buffer).
- **Connection cap**: past ``max_connections`` open connections, the one that has waited
  longest for a request head or for its peer to read is closed to make room (a slow client, a
  stalled reader, or an idle keep-alive); when every connection is busy with a request, the
  new one is closed instead. So a flood of
  slow clients cannot lock out a client that sends a whole request at once, and the process
  keeps descriptors for the requests it is serving.

The body deadline is the app's (api/middleware.py), so it holds under any ASGI server.
In production, still put a reverse proxy in front (docs/reliability.md shows nginx's settings).
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from kg.errors import ConfigError
from kg.settings import Settings

#: h11's own default, made explicit: a request head larger than this is refused (400).
MAX_HEAD_BYTES = 16 * 1024
KEEP_ALIVE_S = 5
GRACEFUL_SHUTDOWN_S = 10


class _GuardedH11(H11Protocol):
    header_timeout_s: float = 10.0
    max_connections: int = 1000
    send_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_deadline: asyncio.TimerHandle | None = None
        self._send_deadline: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0
        self._stalled_since: float | None = None
        super().connection_made(transport)
        if len(self.connections) > self.max_connections and not self._evict_slowest():
            transport.close()
            return
        self._arm()

    def _evict_slowest(self) -> bool:
        """Close the connection that has waited longest, for a request head or for its peer
        to read a response, if any."""
        waiting = [
            c
            for c in self.connections
            if c is not self
            and isinstance(c, _GuardedH11)
            and (c._head_deadline is not None or c._stalled_since is not None)
            and not c.transport.is_closing()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._idle_since())
        oldest._disarm()
        oldest._drop()
        return True

    def _idle_since(self) -> float:
        return self._stalled_since if self._stalled_since is not None else self._waiting_since

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request head arrived; its body has the app's own deadline

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._arm()  # waiting for the next request's head

    def pause_writing(self) -> None:
        """The send buffer is full: the peer must read within ``send_timeout_s``."""
        super().pause_writing()
        if self._send_deadline is None:
            self._stalled_since = self.loop.time()
            self._send_deadline = self.loop.call_later(self.send_timeout_s, self._drop)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._unstall()
        super().connection_lost(exc)

    def _unstall(self) -> None:
        deadline = getattr(self, "_send_deadline", None)
        if deadline is not None:
            deadline.cancel()
        self._send_deadline = None
        self._stalled_since = None

    def _drop(self) -> None:
        """Close now: ``close()`` would wait to flush a buffer that a stalled peer never reads."""
        self._unstall()
        self.transport.abort()

    def _arm(self) -> None:
        self._disarm()
        self._waiting_since = self.loop.time()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _disarm(self) -> None:
        deadline = getattr(self, "_head_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


class GuardedH11Protocol(_GuardedH11):
    """The protocol ``kg serve --workers N`` names to uvicorn by import string: a spawned worker
    cannot be handed a class made at run time, so each worker sets these bounds itself
    (:func:`configure_protocol`) when it builds its app, before it accepts a connection."""


def configure_protocol(
    header_timeout_s: float, max_connections: int, send_timeout_s: float = 10.0
) -> str:
    """Set :class:`GuardedH11Protocol`'s bounds in this process; return its import string."""
    GuardedH11Protocol.header_timeout_s = header_timeout_s
    GuardedH11Protocol.max_connections = max_connections
    GuardedH11Protocol.send_timeout_s = send_timeout_s
    return f"{__name__}:GuardedH11Protocol"


def worker_share(settings: Settings, workers: int) -> Settings:
    """One worker's settings when ``workers`` processes of one ``kg serve`` serve together.

    Admission control and the connection cap live in each process, so every configured total
    (query slots, per-client and heavy-query slots, connections) is divided rounding down: N
    workers together never hold more than the settings allow one process. A total smaller
    than the worker count cannot be split without exceeding it (each worker needs at least
    one), so that worker count is refused with a ConfigError naming the setting to raise.
    """
    if workers <= 1:
        return settings
    slots = settings.search.max_concurrent_queries
    api = settings.api
    totals = {
        "KG_SEARCH__MAX_CONCURRENT_QUERIES": (slots, ""),
        "KG_API__MAX_QUERIES_PER_CLIENT": (
            api.query_slots_per_client(slots),
            "" if api.max_queries_per_client else " (three quarters of the query slots)",
        ),
        "KG_API__HEAVY_QUERY_SLOTS": (
            api.heavy_slots(slots),
            "" if api.heavy_query_slots else " (a quarter of the query slots)",
        ),
        "KG_API__MAX_CONNECTIONS": (api.max_connections, ""),
    }
    short = [
        f"{name}={total}{derived}" for name, (total, derived) in totals.items() if total < workers
    ]
    if short:
        most = min(total for total, _ in totals.values())
        which = "it" if len(short) == 1 else "each"
        raise ConfigError(
            f"--workers {workers} cannot share {'; '.join(short)} without exceeding the "
            f"setting (each worker needs at least one): raise {which} to at least {workers}, "
            f"or serve with at most {most} worker{'s' if most != 1 else ''}"
        )
    share = {name: total // workers for name, (total, _) in totals.items()}
    search = settings.search.model_copy(
        update={"max_concurrent_queries": share["KG_SEARCH__MAX_CONCURRENT_QUERIES"]}
    )
    api = api.model_copy(
        update={
            "max_connections": share["KG_API__MAX_CONNECTIONS"],
            # explicit, not derived again from the worker's smaller slot count
            "max_queries_per_client": share["KG_API__MAX_QUERIES_PER_CLIENT"],
            "heavy_query_slots": share["KG_API__HEAVY_QUERY_SLOTS"],
        }
    )
    return settings.model_copy(update={"search": search, "api": api})


def guarded_h11(
    header_timeout_s: float, max_connections: int, send_timeout_s: float = 10.0
) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with a header deadline, a send deadline and a
    connection cap."""
    return type(
        "GuardedH11Protocol",
        (_GuardedH11,),
        {
            "header_timeout_s": header_timeout_s,
            "max_connections": max_connections,
            "send_timeout_s": send_timeout_s,
        },
    )


def uvicorn_options(
    header_timeout_s: float, max_connections: int, send_timeout_s: float = 10.0
) -> dict[str, Any]:
    """The bounds ``kg serve`` (and ``kg mcp --http``) pass to uvicorn."""
    return {
        "http": guarded_h11(header_timeout_s, max_connections, send_timeout_s),
        "timeout_keep_alive": KEEP_ALIVE_S,
        # not uvicorn's limit_concurrency: it counts idle connections too, and answers 503
        # only once a request head has arrived, so slow clients would trip it for everyone
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
        "proxy_headers": False,
    }


def raise_open_files_limit(wanted: int) -> int:
    """Lift the soft limit on open files towards ``wanted`` (never past the hard limit), so
    the connection cap, not the descriptor table, is what sheds a flood. Returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
    return soft
