"""The chunk vectors, kept per process: the vector signal's nearest chunks in memory.

Asked through the ``chunk_embedding`` vector index (``chunks_by_vector``), the vector signal
was one more guarded round trip per search, with 50 chunk texts to decode, and a search is
bound by the API process's CPU (docs/benchmarks.md, "Latency on an LLM-extracted graph",
round 5). The vectors are small (1,890 x 256 floats on the MuSiQue graph: 2 MB), so each
process reads them once through the guard (``chunk_page``), and a question's exact nearest
chunks are one matrix-vector product; the texts of the chunks a response shows are read
once, after fusion (kg/search/service.py). Kept like the fact vectors (kg/search/kept.py):
read again when the graph's counts move (a new chunk adds its PART_OF link). More than
:data:`MAX_BYTES` of vectors are not read: the signal then asks the vector index.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import ChunkPageParams
from kg.search.kept import Kept, RowNamespaces, cosines, listed, top_rows, unit_rows

#: Most bytes of chunk vectors kept per process (float32); past it, the vector index is asked.
MAX_BYTES = 256 * 1024 * 1024
#: Chunks per ``chunk_page`` call.
PAGE = 2000
#: Questions whose cosines are remembered (a few searches at once each ask twice).
RECENT = 8


@dataclass(frozen=True)
class ChunkMatrix:
    """Chunk ids by row, their unit vectors, namespaces and documents."""

    ids: tuple[str, ...]
    vectors: npt.NDArray[np.float32]
    namespaces: RowNamespaces
    documents: tuple[str, ...] = ()
    # the last questions' cosines: in hybrid the vector signal and the graph's passage
    # restarts ask with the same embedding, and the product is most of either's cost
    _recent: dict[tuple[float, ...], npt.NDArray[np.float32] | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    def nearest(
        self, query: list[float], k: int, scope: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` chunks nearest to ``query`` (in ``scope`` when given) with their scores,
        best first."""
        if not len(self.ids) or k <= 0:
            return []
        key = tuple(query)
        if key in self._recent:
            cos = self._recent[key]
        else:
            cos = cosines(self.vectors, query)
            while len(self._recent) >= RECENT:
                del self._recent[next(iter(self._recent))]
            self._recent[key] = cos
        if cos is None:
            return []
        allowed = None if scope is None else self.namespaces.mask(scope)
        return [(self.ids[i], score) for i, score in top_rows(cos, k, allowed)]

    @functools.cached_property
    def document_of(self) -> Mapping[str, str]:
        """Chunk id -> its document's id: hybrid's document evidence (kg.search.fusion)."""
        return dict(zip(self.ids, self.documents, strict=True))


def build(rows: list[dict[str, Any]], dim: int) -> ChunkMatrix:
    """The matrix of ``chunk_page`` rows whose vectors have ``dim`` numbers."""
    kept, vectors = unit_rows(rows, dim)
    return ChunkMatrix(
        ids=tuple(str(r["id"]) for r in kept),
        vectors=vectors,
        namespaces=RowNamespaces.of(listed(r.get("namespace")) for r in kept),
        documents=tuple(str(r.get("document") or "") for r in kept),
    )


class ChunkVectors(Kept[ChunkMatrix]):
    """The chunk matrix for the graph's current counts; None when there are too many chunks
    to keep (the caller asks the vector index)."""

    def __init__(self, guard: Guard, dim: int) -> None:
        super().__init__(
            guard,
            "chunk_page",
            lambda after, limit: ChunkPageParams.model_construct(after=after, limit=limit),
            lambda rows: build(rows, dim),
            page_size=PAGE,
            most=MAX_BYTES // (4 * dim),
        )
