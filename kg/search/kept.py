"""What local search keeps per process and graph change: read once through the guard, page by
page, and read again when the graph's counts move (``graph_counts``, kg/search/names.py) or at
the latest after :data:`MAX_AGE_S`.

The fact vectors (kg/search/facts.py) and the chunk vectors (kg/search/chunk_vectors.py) are
kept this way; each says how to read a page and what to build of the rows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import TemplateParams

#: A reading is trusted at most this long even when the counts have not moved (a rename or
#: an alias added without a new mention changes no count).
MAX_AGE_S = 300.0

#: The graph's counts (``graph_counts``: entities, MENTIONS links, relationships): what a
#: kept reading belongs to.
Stamp = tuple[int, int, int]

T = TypeVar("T")
V = TypeVar("V")


class Kept(Generic[T]):
    """The value built of every page of one whole-graph template, for the graph's current
    counts; None when more than ``most`` rows would have to be kept.

    Finding that out costs reading ``most`` rows, so a graph found too large is not read
    again while it only grows (every count at or above the counts it had then): under a
    steady import, each write would otherwise make the next search read and drop them."""

    def __init__(
        self,
        guard: Guard,
        template: str,
        page: Callable[[str, int], TemplateParams],
        build: Callable[[list[dict[str, Any]]], T],
        *,
        page_size: int,
        most: int,
    ) -> None:
        self._guard = guard
        self._template = template
        self._page = page
        self._build = build
        self._page_size = page_size
        self._most = most
        self._value: T | None = None
        self._stamp: Stamp | None = None
        self._read_at = 0.0
        self._too_large_at: Stamp | None = None
        self._lock = asyncio.Lock()

    async def for_stamp(self, stamp: Stamp) -> T | None:
        """The value for a graph whose counts are ``stamp`` (read again if they moved)."""
        if self._fresh(stamp):
            return self._value
        async with self._lock:
            if not self._fresh(stamp):
                too_large = self._too_large_at
                if too_large is None or any(
                    now < then for now, then in zip(stamp, too_large, strict=True)
                ):
                    self._value = await self._read()  # None: too large (still, or again)
                    self._too_large_at = stamp if self._value is None else None
                self._stamp, self._read_at = stamp, time.monotonic()
        return self._value

    def _fresh(self, stamp: Stamp) -> bool:
        return self._stamp == stamp and time.monotonic() - self._read_at < MAX_AGE_S

    async def _read(self) -> T | None:
        rows: list[dict[str, Any]] = []
        after = ""
        while len(rows) <= self._most:
            result = await self._guard.run(self._template, self._page(after, self._page_size))
            rows += result.rows
            # Rows come in id order, so a page the row cap cut short goes on after its last.
            if not result.rows or (len(result.rows) < self._page_size and not result.truncated):
                return await asyncio.to_thread(self._build, rows)
            after = str(result.rows[-1]["id"])
        return None


#: Scopes whose row masks (or views) one kept value remembers (a tenant's searches reuse theirs).
MAX_SCOPES = 256


def per_scope(
    cache: dict[tuple[str, ...], V], scope: Sequence[str], make: Callable[[tuple[str, ...]], V]
) -> V:
    """``make(scope)`` once per scope (its namespaces in any order), at most
    :data:`MAX_SCOPES` remembered."""
    key = tuple(sorted(set(scope)))
    found = cache.get(key)
    if found is None:
        found = make(key)
        if len(cache) >= MAX_SCOPES:
            cache.clear()
        cache[key] = found
    return found


@dataclass(frozen=True)
class RowNamespaces:
    """The namespaces of each kept row (a chunk has one, a fact or an entity several), so that
    a scoped search filters what the process keeps instead of asking the graph again. Row
    ``i``'s namespaces are ``names[codes[ptr[i]:ptr[i + 1]]]``; a row with none is in no scope
    (as ``chunk_in_scope`` and ``in_scope`` read a missing property)."""

    names: tuple[str, ...]
    ptr: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]
    _masks: dict[tuple[str, ...], npt.NDArray[np.bool_]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(cls, rows: Iterable[Iterable[str]]) -> RowNamespaces:
        at: dict[str, int] = {}
        ptr: list[int] = [0]
        codes: list[int] = []
        for names in rows:
            codes += dict.fromkeys(at.setdefault(str(n), len(at)) for n in names)
            ptr.append(len(codes))
        return cls(tuple(at), np.array(ptr, dtype=np.int64), np.array(codes, dtype=np.int64))

    def mask(self, scope: Sequence[str]) -> npt.NDArray[np.bool_]:
        """The rows with a namespace in ``scope`` (remembered per scope; read-only)."""
        return per_scope(self._masks, scope, self._mask)

    def _mask(self, scope: tuple[str, ...]) -> npt.NDArray[np.bool_]:
        wanted = np.isin(np.array(self.names, dtype=object), np.array(scope, dtype=object))
        hit = wanted[self.codes] if len(self.codes) else np.zeros(0, dtype=np.bool_)
        rows = len(self.ptr) - 1
        owner = np.repeat(np.arange(rows, dtype=np.int64), np.diff(self.ptr))
        found = np.zeros(rows, dtype=np.bool_)
        found[owner[hit]] = True
        found.setflags(write=False)
        return found


def listed(value: object) -> list[str]:
    """A row's ``namespaces`` (a list, one string, or nothing) as a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return []


def unit_rows(
    rows: list[dict[str, Any]], dim: int
) -> tuple[list[dict[str, Any]], npt.NDArray[np.float32]]:
    """The page rows whose ``embedding`` has ``dim`` numbers, and those vectors normalized."""
    kept = [r for r in rows if len(r.get("embedding") or ()) == dim]
    vectors = np.array([r["embedding"] for r in kept], dtype=np.float32).reshape(len(kept), dim)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return kept, (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def cosines(
    vectors: npt.NDArray[np.float32], query: Sequence[float]
) -> npt.NDArray[np.float32] | None:
    """Each row's cosine with ``query`` (rows unit); None for a zero query."""
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if norm == 0:
        return None
    # A dot product per row, not BLAS: a multithreaded gemv on a busy machine was 5x slower
    # (measured); vecdot is one thread, and twice as fast as the einsum it replaced.
    cos: npt.NDArray[np.float32] = np.vecdot(vectors, q / norm)
    return cos


def top_rows(
    cos: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.bool_] | None = None
) -> list[tuple[int, float]]:
    """The ``k`` rows of highest cosine, best first, with the score the vector index gives
    cosine: (1 + cos) / 2; only ``allowed`` rows when given (a scope)."""
    if not len(cos) or k <= 0:
        return []
    if allowed is not None:
        k = min(k, int(allowed.sum()))
        if k <= 0:
            return []
        cos = np.where(allowed, cos, -np.inf)
    k = min(k, len(cos))
    top = np.argpartition(-cos, k - 1)[:k]
    top = top[np.argsort(-cos[top], kind="stable")]
    return [(int(i), (1.0 + float(cos[i])) / 2.0) for i in top]


def nearest_rows(
    vectors: npt.NDArray[np.float32],
    query: Sequence[float],
    k: int,
    allowed: npt.NDArray[np.bool_] | None = None,
) -> list[tuple[int, float]]:
    """The rows of ``vectors`` (unit) nearest to ``query``, best first, with the score the
    vector index gives cosine: (1 + cos) / 2; only ``allowed`` rows when given (a scope).
    Nothing for a zero query."""
    if not len(vectors) or k <= 0:
        return []
    cos = cosines(vectors, query)
    return [] if cos is None else top_rows(cos, k, allowed)
