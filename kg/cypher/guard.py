"""Runs registry templates, and nothing else, inside bounded READ transactions.

Every run: look the template up by name (:class:`~kg.errors.NotFoundError`), validate the
parameters with its model (:class:`~kg.errors.QueryRejected` naming the field), check any
relation-type filter against the types the graph has, then run it as an auto-commit
transaction on a READ session (the server rejects a write in it) with a per-query timeout,
read at most the template's row cap and report ``truncated``. Driver errors become kg errors:

    TransactionTimedOut*             -> QueryTimeout
    ServiceUnavailable, SessionExpired,
    refused connections              -> StoreUnavailable
    any other server or driver error -> StoreError

A caller may widen the bound for what runs inside :func:`first_query_grace` (a context
variable, so it reaches every task the call spawns): the library's first search and start-up's
warm-up run there, under ``search.first_query_timeout_s``. Right after a restart of Neo4j a
cold server (JVM, page cache) ran a first search's templates past ``query_timeout_s``
(bench/restart_first_query.py); every later search keeps the strict bound.

Every session asks for READ access, which is READ routing on a ``neo4j://`` URI: on a cluster the
read lands on a secondary or a follower, never on the writer it does not need. Sessions start
from the bookmarks of the graph's write chain (``bookmarks``, the write driver's manager:
kg/client.py), so a read waits until the server it lands on has applied every write this graph
made (read-your-writes). They add nothing to the chain: a read never waits for another read's
server to be matched. A guard without a chain reads whatever its server has (docs/scaling.md,
"Consistency").

Auto-commit (not ``execute_read``) because a guarded read is never retried: a timeout must
surface at once, and an unreachable server must not cost the retry budget. Not an explicit
transaction either: RUN and PULL go out together, one round trip where BEGIN, RUN + PULL and
ROLLBACK took three (docs/benchmarks.md, "Local search latency").
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, LiteralString, TypeVar

from neo4j import (
    READ_ACCESS,
    AsyncDriver,
    AsyncManagedTransaction,
    Bookmarks,
    NotificationMinimumSeverity,
    Query,
)
from neo4j.api import BookmarkManager
from neo4j.time import Date, DateTime, Duration, Time
from pydantic import ValidationError

from kg import observe, scope
from kg.cypher.admission import Admission, cost_of, current_client
from kg.cypher.params import (
    CHUNK_EMBEDDING_DIM_CONTEXT,
    EMBEDDING_DIM_CONTEXT,
    TemplateParams,
)
from kg.cypher.templates import REGISTRY, Registry, Template
from kg.errors import (
    ConfigError,
    KGError,
    QueryRejected,
    rejected,
    translate,
)
from kg.search.models import TemplateResult
from kg.settings import Settings

#: The parameter a packed template's text reads: how many rows to pack (the cap + 1).
READ_ROWS = "read_rows"

# How long past the server-side timeout the client waits before giving up on its own.
_CLIENT_GRACE_S = 2.0
_T = TypeVar("_T")
#: EXPLAINs in flight at start-up: the server plans each query on one core, so a few at once
#: use the machine while leaving room for traffic (measured in docs/benchmarks.md).
PLAN_CONCURRENCY = 4
#: A parameter in a template's text (``$name``; ``$(`` opens a dynamic label, not a parameter).
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


_SCALARS = frozenset({str, int, float, bool, type(None)})

# The widened time bound of the reads inside first_query_grace, or None.
_GRACE_S: ContextVar[float | None] = ContextVar("kg_first_query_grace_s", default=None)


@contextmanager
def first_query_grace(bound_s: float) -> Iterator[None]:
    """Guarded reads in this block (and the tasks it starts) may run up to ``bound_s``, or
    ``query_timeout_s`` when that is longer: for a first search on a server that may be cold."""
    token = _GRACE_S.set(bound_s)
    try:
        yield
    finally:
        _GRACE_S.reset(token)


async def _bounded(steps: Sequence[Awaitable[_T]], limit: int) -> list[_T]:
    """Await ``steps`` at most ``limit`` at a time; results in order, the first error raised."""
    gate = asyncio.Semaphore(limit)

    async def one(step: Awaitable[_T]) -> _T:
        async with gate:
            return await step

    tasks = [asyncio.ensure_future(one(step)) for step in steps]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()


def plain(value: Any) -> Any:
    """Neo4j values as JSON-ready Python: temporals become ISO 8601 strings."""
    # Scalars are tested inline, not by a call each: a packed result is one deep value, and
    # a call per leaf was a tenth of a search's CPU on the example graph.
    scalars = _SCALARS
    if type(value) in scalars:
        return value
    if isinstance(value, dict):
        return {k: v if type(v) in scalars else plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [v if type(v) in scalars else plain(v) for v in value]
    if isinstance(value, Date | DateTime | Time | Duration):
        return value.iso_format()
    return value


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Prepared:
    """A validated call: which text to run with which parameters."""

    template: Template
    params: TemplateParams
    text: LiteralString
    row_cap: int

    def cypher_params(self) -> dict[str, Any]:
        params = self.params.cypher_params()
        # Every text may name $namespaces; a template that reads the whole graph gets null.
        params["namespaces"] = self.params.namespaces if self.template.scoped else None
        if self.template.packed:
            # One row past the cap, so the guard can tell the result was cut.
            params[READ_ROWS] = self.row_cap + 1
        return params


@dataclass
class _TypeCache:
    types: frozenset[str] | None = None
    loaded_at: float = 0.0


class Guard:
    """The gate between callers and Neo4j. The constructor does no I/O."""

    def __init__(
        self,
        driver: AsyncDriver,
        settings: Settings,
        registry: Registry = REGISTRY,
        *,
        bookmarks: BookmarkManager | None = None,
    ) -> None:
        self._driver = driver
        self.bookmarks = bookmarks
        self._database = settings.neo4j.database
        self._search = settings.search
        self.registry = registry
        self._types = _TypeCache()
        self._types_lock = asyncio.Lock()
        # Bounded concurrency: past a few parallel reads Neo4j only gets slower for everyone
        # (measured in docs/reliability.md), so extra requests queue here, then shed as busy;
        # expensive templates and any one client get only a share of the slots.
        slots = settings.search.max_concurrent_queries
        self.admission = Admission(
            slots,
            heavy_slots=settings.api.heavy_slots(slots),
            per_client=settings.api.query_slots_per_client(slots),
        )
        self._validation_context = {
            EMBEDDING_DIM_CONTEXT: settings.resolve.embedding_dim,
            CHUNK_EMBEDDING_DIM_CONTEXT: settings.chunks.embedding_dim,
        }

    def write_position(self) -> frozenset[str]:
        """Where this process's write chain is (its bookmarks; empty without a chain): a
        change means this process wrote since."""
        if self.bookmarks is None:
            return frozenset()
        return frozenset(self.bookmarks.get_bookmarks())

    # -- validation (no I/O) -------------------------------------------------------------------

    def prepare(self, name: str, params: Mapping[str, Any] | TemplateParams) -> Prepared:
        """Look up and validate; raise NotFoundError / QueryRejected."""
        template = self.registry.get(name)
        if isinstance(params, TemplateParams):
            if not isinstance(params, template.params):
                raise QueryRejected(
                    f"template {name} takes {template.params.__name__}",
                    errors=[{"field": "params", "reason": "wrong parameter model"}],
                )
            # Checked again against this graph; callers may pass a model_construct()ed one
            # (kg.search.signals.base), whose values are validated here, not when dumped.
            raw: dict[str, Any] = params.model_dump(warnings=False)
        elif isinstance(params, Mapping):
            raw = dict(params)
        else:
            raise QueryRejected(
                "parameters must be an object",
                errors=[{"field": "params", "reason": "must be an object"}],
            )
        try:
            # the context carries what only this graph knows (the vector indexes' dimension)
            model = template.params.model_validate(raw, context=self._validation_context)
        except ValidationError as exc:
            raise rejected(exc, f"template {name}") from None
        if template.scoped:
            # The caller's scope (kg/scope.py) bounds what the parameters may ask for.
            namespaces = scope.within(model.namespaces)
            if namespaces != model.namespaces:
                model = model.model_copy(update={"namespaces": namespaces})
        elif model.namespaces is not None:
            raise QueryRejected(
                f"template {name} reads the whole graph: it takes no namespaces",
                errors=[{"field": "namespaces", "reason": "not taken by this template"}],
            )
        return Prepared(
            template=template,
            params=model,
            text=template.text_for(model),
            row_cap=min(template.row_cap, self._search.row_cap),
        )

    def session_config(self) -> dict[str, Any]:
        """Every guarded session's configuration: READ access (READ routing on ``neo4j://``),
        this guard's database, and the write chain's bookmarks now, when it has a chain (the
        session waits for them and does not record its own)."""
        config: dict[str, Any] = {
            "database": self._database,
            "default_access_mode": READ_ACCESS,
            "notifications_min_severity": NotificationMinimumSeverity.OFF,
        }
        if self.bookmarks is not None:
            config["bookmarks"] = Bookmarks.from_raw_values(self.bookmarks.get_bookmarks())
        return config

    # -- running ------------------------------------------------------------------------------

    async def run(self, name: str, params: Mapping[str, Any] | TemplateParams) -> TemplateResult:
        """Validate, check relation types, run in a READ transaction, cap the rows."""
        # the template's name, its rows and time: never its parameters' values
        with observe.span("kg.guard.read", template=name if name in self.registry else "?") as read:
            prepared = self.prepare(name, params)
            types = prepared.params.relation_type_filter()
            if types:
                await self.check_relation_types(types)
            cost = cost_of(prepared.template.name, prepared.params)
            async with self.admission.slot(
                cost, self._search.queue_timeout_s, current_client.get()
            ):
                started = time.perf_counter()
                rows, truncated = await self._read(
                    prepared.template.name,
                    prepared.text,
                    prepared.cypher_params(),
                    prepared.row_cap,
                    packed=prepared.template.packed,
                    temporal=prepared.template.temporal,
                )
            took_ms = (time.perf_counter() - started) * 1000
            read.set(rows=len(rows), truncated=truncated, ms=round(took_ms, 3), cost=cost)
        return TemplateResult(
            template=prepared.template.name, rows=rows, truncated=truncated, took_ms=took_ms
        )

    async def _read(
        self,
        name: str,
        text: LiteralString,
        params: dict[str, Any],
        row_cap: int,
        *,
        packed: bool = False,
        temporal: bool = True,
    ) -> tuple[list[dict[str, Any]], bool]:
        timeout = max(self._search.query_timeout_s, _GRACE_S.get() or 0.0)
        what = f"template {name}"
        try:
            async with asyncio.timeout(timeout + _CLIENT_GRACE_S):
                if packed:
                    return await self._read_packed(
                        name, text, params, row_cap, timeout, temporal=temporal
                    )
                return await self._read_once(name, text, params, row_cap, timeout)
        except KGError:
            raise
        except (Exception, TimeoutError) as exc:
            raise translate(exc, what) from exc

    async def _read_once(
        self,
        name: str,
        text: LiteralString,
        params: dict[str, Any],
        row_cap: int,
        budget_s: float,
        *,
        temporal: bool = True,
    ) -> tuple[list[dict[str, Any]], bool]:
        convert = plain if temporal else _same
        async with self._driver.session(**self.session_config()) as session:
            query = Query(text, metadata={"app": "kg", "template": name}, timeout=budget_s)
            result = await session.run(query, params)
            keys = result.keys()
            rows: list[dict[str, Any]] = []
            truncated = False
            async for record in result:
                if len(rows) >= row_cap:
                    truncated = True
                    break
                rows.append({k: convert(v) for k, v in zip(keys, record.values(), strict=True)})
            # Past the cap, the rest is discarded on the server, never sent.
            await result.consume()
            return rows, truncated

    async def _read_packed(
        self,
        name: str,
        text: LiteralString,
        params: dict[str, Any],
        row_cap: int,
        budget_s: float,
        *,
        temporal: bool = True,
    ) -> tuple[list[dict[str, Any]], bool]:
        """A packed template's one record, unpacked: its ``rows`` up to the cap."""
        packed, _ = await self._read_once(name, text, params, 1, budget_s, temporal=temporal)
        rows = packed[0]["rows"] if packed else []
        return rows[:row_cap], len(rows) > row_cap

    # -- relation types -----------------------------------------------------------------------

    async def relation_types(self, *, refresh: bool = False) -> frozenset[str]:
        """Relationship types in the graph, cached for ``search.relation_types_ttl_s``."""
        cache = self._types
        fresh = time.monotonic() - cache.loaded_at < self._search.relation_types_ttl_s
        if cache.types is not None and fresh and not refresh:
            return cache.types
        async with self._types_lock:
            if (
                cache.types is not None
                and not refresh
                and (time.monotonic() - cache.loaded_at < self._search.relation_types_ttl_s)
            ):
                return cache.types
            result = await self.run("relation_types", {})
            cache.types = frozenset(str(row["type"]) for row in result.rows)
            cache.loaded_at = time.monotonic()
            return cache.types

    async def check_relation_types(self, types: list[str]) -> None:
        """QueryRejected naming ``relation_types`` for a type not in the graph (after a refresh)."""
        known = await self.relation_types()
        if set(types) - known:
            known = await self.relation_types(refresh=True)
        unknown = sorted(set(types) - known)
        if unknown:
            raise QueryRejected(
                f"unknown relation type(s): {', '.join(unknown)}",
                errors=[
                    {"field": "relation_types", "reason": f"unknown relation type {t!r}"}
                    for t in unknown
                ],
            )

    # -- start-up checks ----------------------------------------------------------------------

    async def verify_read_only(
        self, samples: Mapping[str, Mapping[str, Any]] | None = None
    ) -> dict[str, str]:
        """EXPLAIN every rendered text; ConfigError unless the server calls each one a read.

        ``samples`` maps a text to parameters to EXPLAIN it with: the server then plans it as
        a search will run it and caches the plan. A text without a sample is explained with
        each of its parameters null: Neo4j caches no plan for an EXPLAIN that leaves a
        parameter unbound, so every start planned those texts again (3.5 s of the server's CPU
        per `kg serve` start on 2 cores); with nulls the second start finds them cached.
        Returns ``{"name/variant": query_type}``.
        """
        calls = [
            (f"{template.name}/{variant}", text)
            for template in self.registry
            for variant, text in template.texts.items()
        ]

        async def explain(key: str, text: LiteralString) -> str:
            try:
                return await self._explain(text, (samples or {}).get(text) or _nulls(text))
            except Exception as exc:
                raise translate(exc, f"EXPLAIN of {key}") from exc

        types = await _bounded([explain(key, text) for key, text in calls], PLAN_CONCURRENCY)
        found = dict(zip((key for key, _ in calls), types, strict=True))
        for key, query_type in found.items():
            if query_type != "r":
                raise ConfigError(f"template {key} is not read-only (query type {query_type!r})")
        return found

    async def plan(self, name: str, params: Mapping[str, Any] | TemplateParams) -> None:
        """EXPLAIN one validated call with its parameters: the server plans and caches it.

        Neo4j keys its plan cache on the text and the parameters' types (and, for lists, a
        size bucket), so an EXPLAIN without parameters leaves the searches' plans cold.
        """
        prepared = self.prepare(name, params)
        try:
            await self._explain(prepared.text, prepared.cypher_params())
        except Exception as exc:
            raise translate(exc, f"EXPLAIN of {name}") from exc

    async def plan_all(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """:meth:`plan` each call, a few at a time (planning is one core per query)."""
        await _bounded([self.plan(name, params) for name, params in calls], PLAN_CONCURRENCY)

    async def _explain(self, text: LiteralString, params: Mapping[str, Any] | None = None) -> str:
        async def work(tx: AsyncManagedTransaction) -> str:
            result = await tx.run("EXPLAIN " + text, dict(params or {}))
            summary = await result.consume()
            return str(summary.query_type)

        async with self._driver.session(**self.session_config()) as session:
            return await session.execute_read(work)

    async def health(self) -> bool:
        """True when Neo4j answers a trivial read."""
        try:
            await self._driver.verify_connectivity()
        except Exception:
            return False
        return True


def _nulls(text: str) -> dict[str, None]:
    """Every parameter of ``text``, null: enough to EXPLAIN it, and a plan the server caches."""
    return dict.fromkeys(_PARAMETER.findall(text))
