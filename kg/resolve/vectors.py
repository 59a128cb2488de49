"""What every embedder shares: the :class:`Embedder` protocol and L2-normalized float32 rows.

Its own module so that the embedders (kg/resolve/embed.py, kg/resolve/wordllama.py) depend on
it and not on each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors", "embed_queries", "normalize_rows"]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns names into L2-normalized float32 rows of width ``dim``."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Questions, on the query side of an asymmetric embedder (e5 prefixes ``query:`` to a
    question and ``passage:`` to what it is matched against); others embed them as any text."""
    side = getattr(embedder, "embed_queries", None)
    return side(texts) if callable(side) else embedder.embed(texts)


def normalize_rows(vectors: Vectors) -> Vectors:
    """L2-normalize rows in place (zero rows stay zero) so inner product is cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    vectors /= norms
    return vectors
