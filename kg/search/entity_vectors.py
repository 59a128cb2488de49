"""The entity vectors, kept per process: the vector half of the graph signal's fuzzy seeds in
memory.

A question that names no entity and matches no fact is seeded from the entities nearest to it
and the entity names its words match (``entity_seeds``). Asked through the ``entity_embedding``
vector index, the vector half was most of that read: on the docs set, where most questions
name nothing, 4.0 of its 6.4 ms alone, scoped, and the read was the last to finish in `hybrid`
(docs/search.md, "Speed"). The vectors are small (363 x 256 floats on the docs graph), so each
process reads them once through the guard (``entity_page``, with each entity's name, type and
namespaces), and a question's exact nearest entities in the scope are one matrix-vector
product; the read keeps the fulltext half only. Kept like the fact and chunk vectors
(kg/search/kept.py): read again when the graph's counts move. More than :data:`MAX_BYTES` of
vectors are not read: the index is asked then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import EntityPageParams
from kg.search.kept import Kept, RowNamespaces, listed, nearest_rows, unit_rows

#: Most bytes of entity vectors kept per process (float32); past it, the vector index is asked.
MAX_BYTES = 256 * 1024 * 1024
#: Entities per ``entity_page`` call.
PAGE = 2000


@dataclass(frozen=True)
class EntityMatrix:
    """Entity ids, names and types by row, their unit vectors and namespaces."""

    ids: tuple[str, ...]
    names: tuple[str, ...]
    types: tuple[str, ...]
    vectors: npt.NDArray[np.float32]
    namespaces: RowNamespaces

    def nearest(
        self, query: list[float], k: int, scope: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The ``k`` entities nearest to ``query`` (in ``scope`` when given: an entity with a
        namespace in it, as ``entity_seeds`` filters), best first, as seed rows: id, name,
        type and the score the vector index gives (the response reads the description and
        aliases of the entities it shows, kg/search/service.py)."""
        allowed = None if scope is None else self.namespaces.mask(scope)
        return [
            {"id": self.ids[i], "name": self.names[i], "type": self.types[i], "score": score}
            for i, score in nearest_rows(self.vectors, query, k, allowed)
        ]


def build(rows: list[dict[str, Any]], dim: int) -> EntityMatrix:
    """The matrix of ``entity_page`` rows whose vectors have ``dim`` numbers."""
    kept, vectors = unit_rows(rows, dim)
    return EntityMatrix(
        ids=tuple(str(r["id"]) for r in kept),
        names=tuple(str(r.get("name") or "") for r in kept),
        types=tuple(str(r.get("type") or "") for r in kept),
        vectors=vectors,
        namespaces=RowNamespaces.of(listed(r.get("namespaces")) for r in kept),
    )


class EntityVectors(Kept[EntityMatrix]):
    """The entity matrix for the graph's current counts, read again when they change; None
    when there are too many to keep (the caller asks the vector index)."""

    def __init__(self, guard: Guard, dim: int) -> None:
        super().__init__(
            guard,
            "entity_page",
            lambda after, limit: EntityPageParams.model_construct(after=after, limit=limit),
            lambda rows: build(rows, dim),
            page_size=PAGE,
            most=MAX_BYTES // (4 * dim),
        )
