"""FAISS candidates: exact below the threshold, HNSW above, deterministic either way."""

from __future__ import annotations

import numpy as np

from kg.resolve import HashingEmbedder
from kg.resolve.index import knn


def _vectors(n: int) -> np.ndarray:
    return HashingEmbedder(64).embed([f"component-{i % 97}-{i}" for i in range(n)])


def test_flat_below_threshold_finds_itself_first() -> None:
    vectors = _vectors(300)
    neighbours, kind = knn(vectors, 5, approximate_above=1000)
    assert kind == "flat"
    assert neighbours.ids.shape == (300, 5)
    assert np.array_equal(neighbours.ids[:, 0], np.arange(300))


def test_hnsw_above_threshold_is_deterministic_and_accurate() -> None:
    vectors = _vectors(3000)
    first, kind = knn(vectors, 5, approximate_above=1000)
    second, _ = knn(vectors, 5, approximate_above=1000)
    exact, _ = knn(vectors, 5, approximate_above=10_000)
    assert kind == "hnsw"
    assert np.array_equal(first.ids, second.ids)
    recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(first.ids, exact.ids, strict=True)])
    assert recall > 0.9


def test_k_larger_than_rows_and_empty() -> None:
    neighbours, _ = knn(_vectors(3), 10, approximate_above=100)
    assert neighbours.ids.shape == (3, 3)
    empty, _ = knn(np.zeros((0, 8), dtype=np.float32), 4, approximate_above=100)
    assert empty.ids.shape[0] == 0


def test_per_label_indexes_are_deterministic_and_never_cross_labels() -> None:
    from kg.resolve.index import knn_by_label

    vectors = _vectors(3000)
    labels = [i % 3 for i in range(3000)]
    first, kind = knn_by_label(vectors, labels, 5, approximate_above=500, workers=2)
    second, _ = knn_by_label(vectors, labels, 5, approximate_above=500, workers=2)
    serial, _ = knn_by_label(vectors, labels, 5, approximate_above=500, workers=1)
    assert kind == "hnsw"
    assert np.array_equal(first.ids, second.ids)
    assert np.array_equal(first.ids, serial.ids)  # threads do not change the graphs
    found = first.ids[first.ids >= 0]
    rows = np.nonzero(first.ids >= 0)[0]
    assert np.array_equal(found % 3, rows % 3)
