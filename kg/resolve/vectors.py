"""What every embedder shares: the :class:`Embedder` protocol and L2-normalized float32 rows.

Its own module so that the embedders (kg/resolve/embed.py, kg/resolve/wordllama.py) depend on
it and not on each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors", "normalize_rows"]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns names into L2-normalized float32 rows of width ``dim``."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def normalize_rows(vectors: Vectors) -> Vectors:
    """L2-normalize rows in place (zero rows stay zero) so inner product is cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    vectors /= norms
    return vectors
