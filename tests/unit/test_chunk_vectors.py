"""The chunk vectors kept per process: exact nearest chunks, scored as the vector index does."""

from __future__ import annotations

import pytest

from kg.search.chunk_vectors import build


def _rows() -> list[dict[str, object]]:
    return [
        {"id": "c-a", "embedding": [1.0, 0.0, 0.0]},
        {"id": "c-b", "embedding": [0.0, 2.0, 0.0]},  # not unit: normalized on build
        {"id": "c-c", "embedding": [0.0, 1.0, 0.0]},
        {"id": "c-d", "embedding": [-1.0, 0.0, 0.0]},
        {"id": "c-bad", "embedding": [1.0, 0.0]},  # another width: not kept
        {"id": "c-none"},
    ]


def test_nearest_chunks_best_first_scored_like_the_index() -> None:
    matrix = build(_rows(), 3)
    assert matrix.ids == ("c-a", "c-b", "c-c", "c-d")
    found = matrix.nearest([0.6, 0.8, 0.0], 3)
    # cosine 0.8 for c-b and c-c (equal: by id), 0.6 for c-a; score = (1 + cos) / 2
    assert [cid for cid, _ in found] == ["c-b", "c-c", "c-a"]
    assert [score for _, score in found] == pytest.approx([0.9, 0.9, 0.8])


def test_k_past_the_chunks_and_a_zero_question() -> None:
    matrix = build(_rows(), 3)
    assert matrix.nearest([-1.0, 0.0, 0.0], 50)[0][0] == "c-d"
    assert len(matrix.nearest([1.0, 1.0, 1.0], 50)) == 4
    assert matrix.nearest([0.0, 0.0, 0.0], 5) == []
    assert build([], 3).nearest([1.0, 0.0, 0.0], 5) == []
