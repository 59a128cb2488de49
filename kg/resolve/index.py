"""Candidate search with FAISS: exact inner product for small sets, HNSW past a measured size.

Why two: an exact ``IndexFlatIP`` search over n names costs O(n^2) and wins below a few tens of
thousands of rows (no build cost, perfect recall); HNSW builds in O(n log n) and searches in
roughly log time. ``approximate_above`` holds the crossover measured by
``bench/resolve_bench.py --mode crossover`` (see docs/resolution.md).

Why one index per type (``knn_by_label``): types never merge, so a row's neighbours of
another type are wasted candidate slots, and the per-type indexes are smaller (the HNSW build
is O(n log n), the flat search O(n^2)) and independent, so they run in parallel threads
(FAISS releases the GIL).

Determinism: FAISS HNSW inserts in parallel OpenMP threads, which can change the graph between
runs. Every index is built with one OpenMP thread (``omp_set_num_threads`` is per calling
thread), so insertion order is the only input; parallelism comes from building several
indexes at once. Searching never mutates an index, so its thread count cannot change results.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

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


def knn(
    vectors: npt.NDArray[np.float32],
    k: int,
    approximate_above: int,
    search_threads: int | None = None,
) -> tuple[Neighbours, str]:
    """The k nearest rows of every row among all rows (self included), and the index kind.

    The index is built with one OpenMP thread; the search uses ``search_threads`` (default:
    what OpenMP would use).
    """
    n, dim = vectors.shape
    k = max(1, min(k, n))
    if n == 0:
        empty = np.zeros((0, k), dtype=np.int64)
        return Neighbours(empty, empty.astype(np.float32)), "flat"
    import faiss  # here, not at import: `import kg` and the CLI's start stay light

    data = np.ascontiguousarray(vectors, dtype=np.float32)
    threads = faiss.omp_get_max_threads()
    index: faiss.Index
    try:
        if n > approximate_above:
            kind = "hnsw"
            hnsw = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            hnsw.hnsw.efSearch = max(HNSW_EF_SEARCH, 2 * k)
            faiss.omp_set_num_threads(1)
            hnsw.add(data)
            index = hnsw
        else:
            kind = "flat"
            index = faiss.IndexFlatIP(dim)
            index.add(data)
        faiss.omp_set_num_threads(search_threads or threads)
        scores, ids = index.search(data, k)
    finally:
        faiss.omp_set_num_threads(threads)
    return Neighbours(ids.astype(np.int64), scores.astype(np.float32)), kind


def knn_by_label(
    vectors: npt.NDArray[np.float32],
    labels: Sequence[int],
    k: int,
    approximate_above: int,
    workers: int | None = None,
) -> tuple[Neighbours, str]:
    """``knn`` within each label (entity type) separately; ids are rows of ``vectors``.

    Indexes are built and searched in up to ``workers`` threads (default: the CPU count),
    largest first; a row only ever has neighbours of its own label. The kind is ``hnsw`` when
    any label's index was approximate.
    """
    n = len(vectors)
    k = max(1, min(k, n)) if n else 1
    ids = np.full((n, k), -1, dtype=np.int64)
    scores = np.zeros((n, k), dtype=np.float32)
    if n == 0:
        return Neighbours(ids, scores), "flat"
    label_array = np.asarray(labels, dtype=np.int64)
    order = np.argsort(label_array, kind="stable")
    bounds = np.flatnonzero(np.diff(label_array[order])) + 1
    members = sorted(np.split(order, bounds), key=len, reverse=True)
    cpus = workers or os.cpu_count() or 1
    pool_size = max(1, min(cpus, len(members)))
    search_threads = max(1, cpus // pool_size)

    def run(rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], Neighbours, str]:
        found, kind = knn(vectors[rows], k, approximate_above, search_threads)
        return rows, found, kind

    kinds: set[str] = set()
    with ThreadPoolExecutor(max_workers=pool_size) as pool:
        for rows, found, kind in pool.map(run, members):
            width = found.ids.shape[1]
            local = found.ids
            ids[rows, :width] = np.where(local >= 0, rows[np.maximum(local, 0)], -1)
            scores[rows, :width] = found.scores
            kinds.add(kind)
    return Neighbours(ids, scores), "hnsw" if "hnsw" in kinds else "flat"
