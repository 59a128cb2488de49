"""The linking filter: every entity name's form, kept per process, so that linking asks the
fulltext index only about the question's n-grams that some name or alias equals.

Linking keeps an ``entity_links`` hit only when a name or alias of the hit has exactly the
n-gram's words (:func:`kg.words.form`), so an n-gram that no name has can only return hits that
are thrown away. On the MuSiQue graph a question sent about 80 n-grams, each one fulltext call
(about 1 ms of server time each), and a handful of them name anything: the filter takes
linking from a third of a graph search to a few milliseconds (docs/search.md, "Speed").

The forms are read through the guard (``name_page``, one bounded page per call) once per
process and again whenever the graph's counts change (``graph_counts``: entities, MENTIONS
links and relationships, from the count store, one cheap call per search), and at the latest
after :data:`MAX_AGE_S`. A graph with more than :data:`MAX_NAMES` entities is not read: the
filter is off and every n-gram is asked, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kg.cypher.guard import Guard
from kg.cypher.params import NamePageParams, NoParams
from kg.words import form

#: Most entities read into the filter; past it, linking asks every n-gram.
MAX_NAMES = 200_000
#: Entities per ``name_page`` call.
PAGE = 2000
#: A reading is trusted at most this long even when the counts have not moved (a rename or
#: an alias added without a new mention changes no count).
MAX_AGE_S = 300.0

Stamp = tuple[int, int, int]


class NameForms:
    """The forms of every entity name and alias, refreshed when the graph's counts change."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard
        self._forms: frozenset[tuple[str, ...]] | None = None
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
                self._forms = await self._read(stamp)
                self._stamp, self._read_at = stamp, time.monotonic()
        return self._forms

    def _fresh(self, stamp: Stamp) -> bool:
        return self._stamp == stamp and time.monotonic() - self._read_at < MAX_AGE_S

    async def counts(self) -> Stamp:
        """The graph's counts now (``graph_counts``)."""
        result = await self._guard.run("graph_counts", NoParams())
        return stamp_of(result.rows[0] if result.rows else {})

    async def _read(self, stamp: Stamp) -> frozenset[tuple[str, ...]] | None:
        if stamp[0] > MAX_NAMES:
            return None
        forms: set[tuple[str, ...]] = set()
        after = ""
        for _ in range(MAX_NAMES // PAGE + 1):
            result = await self._guard.run(
                "name_page", NamePageParams.model_construct(after=after, limit=PAGE)
            )
            for row in result.rows:
                forms.update(name_forms([row.get("name"), *(row.get("aliases") or [])]))
            # Rows come in id order, so a page the row cap cut short goes on after its last.
            if not result.rows or (len(result.rows) < PAGE and not result.truncated):
                return frozenset(forms)
            after = str(result.rows[-1]["id"])
        return None


def stamp_of(row: Mapping[str, Any]) -> Stamp:
    """The counts of a ``graph_counts`` row (or ``counted_links``' first)."""
    return (int(row.get("entities") or 0), int(row.get("mentions") or 0),
            int(row.get("relationships") or 0))  # fmt: skip


def name_forms(names: Iterable[object]) -> list[tuple[str, ...]]:
    """The forms of names (those that have one)."""
    found = []
    for name in names:
        value = form(str(name or ""))
        if value is not None:
            found.append(value)
    return found


def may_name(
    spellings: Sequence[tuple[str, ...]], forms: frozenset[tuple[str, ...]] | None
) -> list[tuple[str, ...]]:
    """The spellings some name or alias has (all of them when the filter is off)."""
    if forms is None:
        return list(spellings)
    return [spelling for spelling in spellings if spelling in forms]
