"""Candidate search with FAISS: exact inner product for small sets, HNSW past a measured size.

Why two: an exact ``IndexFlatIP`` search over n names costs O(n^2) and wins below a few tens of
thousands of rows (no build cost, perfect recall); HNSW builds in O(n log n) and searches in
roughly log time. ``approximate_above`` holds the crossover measured by
``bench/resolve_bench.py --mode crossover`` (see docs/resolution.md).

Determinism: FAISS HNSW inserts in parallel threads, which can change the graph between runs.
We build it single-threaded (insertion order is then the only input) and search in parallel
(search does not mutate the graph).
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np
import numpy.typing as npt

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 40
HNSW_EF_SEARCH = 64


@dataclass(frozen=True)
class Neighbours:
    """``ids[i]``: rows nearest to row i (``-1`` pads); ``scores[i]``: their cosines."""

    ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float32]


def knn(vectors: npt.NDArray[np.float32], k: int, approximate_above: int) -> tuple[Neighbours, str]:
    """The k nearest rows of every row among all rows (self included), and the index kind."""
    n, dim = vectors.shape
    k = max(1, min(k, n))
    if n == 0:
        empty = np.zeros((0, k), dtype=np.int64)
        return Neighbours(empty, empty.astype(np.float32)), "flat"
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    index: faiss.Index
    if n > approximate_above:
        kind = "hnsw"
        hnsw = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        hnsw.hnsw.efSearch = max(HNSW_EF_SEARCH, 2 * k)
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            hnsw.add(data)
        finally:
            faiss.omp_set_num_threads(threads)
        index = hnsw
    else:
        kind = "flat"
        index = faiss.IndexFlatIP(dim)
        index.add(data)
    scores, ids = index.search(data, k)
    return Neighbours(ids.astype(np.int64), scores.astype(np.float32)), kind
