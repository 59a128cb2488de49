"""The fact vectors (graph model 5), kept per process: the graph signal's fact matching in
memory.

Asked through the ``fact_embedding`` vector index (``facts_by_vector``), matching the question
against 17k facts took ~50 ms on the MuSiQue graph, four times a chunk vector query over its
1.9k chunks: the index is written batch by batch, at ingest and by ``kg migrate``, and an
approximate search visits each of its segments. The vectors are small next to what they save
(17k x 256 floats: 17 MB), so each process reads them once through the guard (``fact_page``,
one bounded page per call) into one normalized matrix, and a question's exact nearest facts
are one matrix-vector product (~1 ms). The reading belongs to the graph's counts
(``graph_counts``: writing a fact adds its ABOUT links, so the count of relationships moves)
and is read again when they move, and at the latest after :data:`MAX_AGE_S`. More than
:data:`MAX_BYTES` of vectors are not read: the graph signal then asks the vector index.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import FactPageParams
from kg.search.names import MAX_AGE_S, Stamp

#: Most bytes of fact vectors kept per process (float32); past it, the vector index is asked.
MAX_BYTES = 256 * 1024 * 1024
#: Facts per ``fact_page`` call.
PAGE = 1000


@dataclass(frozen=True)
class FactMatrix:
    """Facts' ends by row, and their unit vectors."""

    ids: tuple[str, ...]
    subjects: tuple[str, ...]
    objects: tuple[str, ...]
    vectors: npt.NDArray[np.float32]

    def nearest(self, query: list[float], k: int) -> list[dict[str, Any]]:
        """The ``k`` facts nearest to ``query`` as ``facts_by_vector`` rows, scored as the
        vector index scores cosine: (1 + cos) / 2."""
        if not self.ids or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return []
        # einsum, not BLAS: a multithreaded gemv on a busy machine was 5x slower (measured)
        cos = np.einsum("ij,j->i", self.vectors, q / norm)
        k = min(k, len(cos))
        top = np.argpartition(-cos, k - 1)[:k]
        top = top[np.argsort(-cos[top], kind="stable")]
        return [
            {"id": self.ids[i], "subject_id": self.subjects[i], "object_id": self.objects[i],
             "score": (1.0 + float(cos[i])) / 2.0}
            for i in top
        ]  # fmt: skip


def build(rows: list[dict[str, Any]], dim: int) -> FactMatrix:
    """The matrix of ``fact_page`` rows whose vectors have ``dim`` numbers."""
    kept = [r for r in rows if len(r.get("embedding") or ()) == dim]
    vectors = np.array([r["embedding"] for r in kept], dtype=np.float32).reshape(len(kept), dim)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return FactMatrix(
        ids=tuple(str(r["id"]) for r in kept),
        subjects=tuple(str(r.get("subject_id") or "") for r in kept),
        objects=tuple(str(r.get("object_id") or "") for r in kept),
        vectors=vectors,
    )


class Facts:
    """The fact matrix for the graph's current counts, read again when they change."""

    def __init__(self, guard: Guard, dim: int) -> None:
        self._guard = guard
        self._dim = dim
        self._matrix: FactMatrix | None = None
        self._stamp: Stamp | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()

    async def for_stamp(self, stamp: Stamp) -> FactMatrix | None:
        """The facts of a graph whose counts are ``stamp``; None when there are too many to
        keep (the caller asks the vector index)."""
        if self._fresh(stamp):
            return self._matrix
        async with self._lock:
            if not self._fresh(stamp):
                self._matrix = await self._read()
                self._stamp, self._read_at = stamp, time.monotonic()
        return self._matrix

    def _fresh(self, stamp: Stamp) -> bool:
        return self._stamp == stamp and time.monotonic() - self._read_at < MAX_AGE_S

    async def _read(self) -> FactMatrix | None:
        rows: list[dict[str, Any]] = []
        most = MAX_BYTES // (4 * self._dim)
        after = ""
        while len(rows) <= most:
            result = await self._guard.run(
                "fact_page", FactPageParams.model_construct(after=after, limit=PAGE)
            )
            rows += result.rows
            # Rows come in id order, so a page the row cap cut short goes on after its last.
            if not result.rows or (len(result.rows) < PAGE and not result.truncated):
                return await asyncio.to_thread(build, rows, self._dim)
            after = str(result.rows[-1]["id"])
        return None
