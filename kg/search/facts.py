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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import FactPageParams
from kg.search.kept import Kept, RowNamespaces, listed, nearest_rows, unit_rows

#: Most bytes of fact vectors kept per process (float32); past it, the vector index is asked.
MAX_BYTES = 256 * 1024 * 1024
#: Facts per ``fact_page`` call.
PAGE = 1000


@dataclass(frozen=True)
class FactMatrix:
    """Facts' ends by row, their unit vectors and namespaces."""

    ids: tuple[str, ...]
    subjects: tuple[str, ...]
    objects: tuple[str, ...]
    vectors: npt.NDArray[np.float32]
    namespaces: RowNamespaces

    def nearest(
        self, query: list[float], k: int, scope: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The ``k`` facts nearest to ``query`` (in ``scope`` when given: a fact with a
        namespace in it, as ``facts_by_vector`` filters) as ``facts_by_vector`` rows."""
        allowed = None if scope is None else self.namespaces.mask(scope)
        return [
            {"id": self.ids[i], "subject_id": self.subjects[i], "object_id": self.objects[i],
             "score": score}
            for i, score in nearest_rows(self.vectors, query, k, allowed)
        ]  # fmt: skip


def build(rows: list[dict[str, Any]], dim: int) -> FactMatrix:
    """The matrix of ``fact_page`` rows whose vectors have ``dim`` numbers."""
    kept, vectors = unit_rows(rows, dim)
    return FactMatrix(
        ids=tuple(str(r["id"]) for r in kept),
        subjects=tuple(str(r.get("subject_id") or "") for r in kept),
        objects=tuple(str(r.get("object_id") or "") for r in kept),
        vectors=vectors,
        namespaces=RowNamespaces.of(listed(r.get("namespaces")) for r in kept),
    )


class Facts(Kept[FactMatrix]):
    """The fact matrix for the graph's current counts, read again when they change; None
    when there are too many to keep (the caller asks the vector index)."""

    def __init__(self, guard: Guard, dim: int) -> None:
        super().__init__(
            guard,
            "fact_page",
            lambda after, limit: FactPageParams.model_construct(after=after, limit=limit),
            lambda rows: build(rows, dim),
            page_size=PAGE,
            most=MAX_BYTES // (4 * dim),
        )
