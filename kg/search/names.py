"""The linking filter: every entity name's form, kept per process, so that linking asks the
fulltext index only about the question's n-grams that some name or alias equals.

Linking keeps an ``entity_links`` hit only when a name or alias of the hit has exactly the
n-gram's words (:func:`kg.words.form`), so an n-gram that no name has can only return hits that
are thrown away. On the MuSiQue graph a question sent about 80 n-grams, each one fulltext call
(about 1 ms of server time each), and a handful of them name anything: the filter takes
linking from a third of a graph search to a few milliseconds (docs/search.md, "Speed").

The forms are read through the guard (``name_page``, one bounded page per call) once per
process and again whenever the graph's counts change (``graph_counts``: entities, MENTIONS
links and relationships, from the count store: one cheap call, made again after
``search.counts_ttl_s`` or a write of this process), and at the latest after
:data:`MAX_AGE_S`. A graph with more than :data:`MAX_NAMES` entities is not read: the filter
is off and every n-gram is asked, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kg.cypher.guard import Guard
from kg.cypher.params import NamePageParams, NoParams
from kg.search.kept import MAX_AGE_S, RowNamespaces, Stamp, listed
from kg.words import form

#: Most entities read into the filter; past it, linking asks every n-gram.
MAX_NAMES = 200_000
#: Entities per ``name_page`` call.
PAGE = 2000


@dataclass(frozen=True)
class NameIndex:
    """Every entity by the forms of its name and aliases, with what linking returns of it:
    linking in memory (:meth:`links`) instead of asking the fulltext index."""

    ids: tuple[str, ...]
    names: tuple[object, ...]
    types: tuple[object, ...]
    aliases: tuple[tuple[str, ...], ...]
    alias_sources: tuple[tuple[object, ...], ...]
    mentions: tuple[int, ...]
    namespaces: RowNamespaces
    # form -> (entity, alias position or -1 for the name), entities in id order
    by_form: Mapping[tuple[str, ...], tuple[tuple[int, int], ...]]

    def links(
        self,
        spellings: Sequence[tuple[str, ...]],
        scope: Sequence[str] | None,
        per_phrase: int,
        scoped_mentions: Callable[[str], int] | None = None,
    ) -> list[dict[str, Any]]:
        """``entity_links`` rows for the spellings: the entities (at most ``per_phrase`` each,
        in id order) whose name, or an alias a namespace in the scope gave, has exactly the
        spelling's form; scoped, entities in the scope only, with the aliases the scope gave
        and ``scoped_mentions``' counts (the chunks in scope that mention them; None: the
        whole graph's, every chunk being in scope)."""
        wanted = None if scope is None else set(scope)
        in_scope = None if scope is None else self.namespaces.mask(scope)
        rows: list[dict[str, Any]] = []
        for spelling in spellings:
            found: list[int] = []
            for at, alias in self.by_form.get(spelling, ()):
                if len(found) >= per_phrase:
                    break
                if at in found or (in_scope is not None and not in_scope[at]):
                    continue
                if wanted is not None and alias >= 0:
                    sources = self.alias_sources[at]
                    if alias >= len(sources) or sources[alias] not in wanted:
                        continue
                found.append(at)
            rows += [self._row(at, spelling, wanted, scoped_mentions) for at in found]
        return rows

    def _row(
        self,
        at: int,
        spelling: tuple[str, ...],
        wanted: set[str] | None,
        scoped_mentions: Callable[[str], int] | None,
    ) -> dict[str, Any]:
        aliases = list(self.aliases[at])
        mentions = self.mentions[at]
        if wanted is not None:
            sources = self.alias_sources[at]
            aliases = [
                a for i, a in enumerate(aliases) if i < len(sources) and sources[i] in wanted
            ]
        if scoped_mentions is not None:
            mentions = scoped_mentions(self.ids[at])
        return {"id": self.ids[at], "phrase": " ".join(spelling), "name": self.names[at],
                "type": self.types[at], "aliases": aliases, "mentions": mentions}  # fmt: skip


def name_index(rows: Sequence[Mapping[str, Any]]) -> NameIndex:
    """The index of ``name_page`` rows."""
    ordered = sorted(rows, key=lambda r: str(r["id"]))
    by_form: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    for at, row in enumerate(ordered):
        spelled = [(row.get("name"), -1)]
        spelled += [(alias, i) for i, alias in enumerate(row.get("aliases") or [])]
        for name, position in spelled:
            value = form(str(name or ""))
            if value is not None:
                by_form.setdefault(value, []).append((at, position))
    return NameIndex(
        ids=tuple(str(r["id"]) for r in ordered),
        names=tuple(r.get("name") for r in ordered),
        types=tuple(r.get("type") for r in ordered),
        aliases=tuple(tuple(str(a) for a in r.get("aliases") or []) for r in ordered),
        alias_sources=tuple(tuple(r.get("alias_sources") or []) for r in ordered),
        mentions=tuple(int(r.get("mentions") or 0) for r in ordered),
        namespaces=RowNamespaces.of(listed(r.get("namespaces")) for r in ordered),
        by_form={key: tuple(value) for key, value in by_form.items()},
    )


class NameForms:
    """The forms of every entity name and alias, refreshed when the graph's counts change;
    with them, the index that links a question's spellings in memory."""

    def __init__(
        self,
        guard: Guard,
        counts_ttl_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._guard = guard
        self._counts_ttl_s = counts_ttl_s
        self.clock = clock  # what the counts' age is measured by (a test moves it on)
        # the last counts read: when, what, and the write chain's position before it
        self._counted: tuple[float, Stamp, frozenset[str]] | None = None
        self._reading: tuple[frozenset[str], asyncio.Future[Stamp]] | None = None
        self._forms: frozenset[tuple[str, ...]] | None = None
        self._index: NameIndex | None = None
        self._stamp: Stamp | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()

    async def current(self) -> frozenset[tuple[str, ...]] | None:
        """The forms for the graph as it is now, or None when the filter is off (too many
        entities)."""
        return await self.for_stamp(await self.counts())

    def last(self) -> tuple[Stamp | None, frozenset[tuple[str, ...]] | None]:
        """The stamp and forms of the last reading (None, None before any): linking may ask
        with them while the counts are read, and ask again if the counts moved."""
        if self._stamp is None or time.monotonic() - self._read_at >= MAX_AGE_S:
            return None, None
        return self._stamp, self._forms

    def index(self) -> NameIndex | None:
        """The name index of the last reading (None before any, or past :data:`MAX_NAMES`)."""
        return self._index if self.last()[0] is not None else None

    async def last_stamp(self) -> Stamp:
        """The counts of the last reading, else the graph's counts now: what is kept per
        process is matched against the last search's counts (a write since counts from the
        next search)."""
        stamp, _ = self.last()
        return stamp or await self.counts()

    async def for_stamp(self, stamp: Stamp) -> frozenset[tuple[str, ...]] | None:
        """The forms for a graph whose counts are ``stamp`` (read again if they moved)."""
        if self._fresh(stamp):
            return self._forms
        async with self._lock:
            if not self._fresh(stamp):
                rows = await self._read(stamp)
                self._index = None if rows is None else name_index(rows)
                self._forms = None if self._index is None else frozenset(self._index.by_form)
                self._stamp, self._read_at = stamp, time.monotonic()
        return self._forms

    def _fresh(self, stamp: Stamp) -> bool:
        return self._stamp == stamp and time.monotonic() - self._read_at < MAX_AGE_S

    async def counts(self) -> Stamp:
        """The graph's counts (``graph_counts``), read again after ``search.counts_ttl_s`` or
        when this process's write chain moved: a round trip less for most searches, at the
        price of another process's write showing in graph search up to that late."""
        # both taken before the read: a write during it is read by a later search
        position, started = self._guard.write_position(), self.clock()
        last = self._counted
        if last is not None and last[2] == position and started - last[0] < self._counts_ttl_s:
            return last[1]
        # Under load many searches find the counts expired at once: they share one read.
        reading = self._reading
        if reading is not None and reading[0] == position and self._counts_ttl_s > 0:
            return await asyncio.shield(reading[1])
        task = asyncio.ensure_future(self._read_counts(started, position))
        self._reading = (position, task)
        try:
            return await asyncio.shield(task)
        finally:
            if self._reading is not None and self._reading[1] is task:
                self._reading = None

    async def _read_counts(self, started: float, position: frozenset[str]) -> Stamp:
        result = await self._guard.run("graph_counts", NoParams())
        stamp = stamp_of(result.rows[0] if result.rows else {})
        self._counted = (started, stamp, position)
        return stamp

    async def _read(self, stamp: Stamp) -> list[dict[str, Any]] | None:
        if stamp[0] > MAX_NAMES:
            return None
        rows: list[dict[str, Any]] = []
        after = ""
        for _ in range(MAX_NAMES // PAGE + 1):
            result = await self._guard.run(
                "name_page", NamePageParams.model_construct(after=after, limit=PAGE)
            )
            rows += result.rows
            # Rows come in id order, so a page the row cap cut short goes on after its last.
            if not result.rows or (len(result.rows) < PAGE and not result.truncated):
                return rows
            after = str(result.rows[-1]["id"])
        return None


def stamp_of(row: Mapping[str, Any]) -> Stamp:
    """The counts of a ``graph_counts`` row (or ``counted_links``' first)."""
    return (int(row.get("entities") or 0), int(row.get("mentions") or 0),
            int(row.get("relationships") or 0))  # fmt: skip


def may_name(
    spellings: Sequence[tuple[str, ...]], forms: frozenset[tuple[str, ...]] | None
) -> list[tuple[str, ...]]:
    """The spellings some name or alias has (all of them when the filter is off)."""
    if forms is None:
        return list(spellings)
    return [spelling for spelling in spellings if spelling in forms]
