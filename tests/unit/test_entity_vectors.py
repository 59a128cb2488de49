"""The kept entity vectors: exact nearest entities in a scope, as ``entity_seeds`` rows."""

from __future__ import annotations

import math

import pytest

from kg.search.entity_vectors import build


def _rows() -> list[dict[str, object]]:
    return [
        {"id": "auth", "name": "AuthService", "type": "service", "embedding": [1.0, 0.0],
         "namespaces": ["alpha"]},
        {"id": "pay", "name": "Payment Service", "type": "service", "embedding": [0.6, 0.8],
         "namespaces": ["beta"]},
        {"id": "ledger", "name": "Ledger DB", "type": None, "embedding": [0.0, 2.0],
         "namespaces": ["alpha", "beta"]},
        {"id": "stub", "name": "Stub", "type": "x", "embedding": [1.0], "namespaces": ["alpha"]},
        {"id": "nowhere", "name": "Nowhere", "type": "x", "embedding": [1.0, 0.1]},
    ]  # fmt: skip


def test_nearest_entities_best_first_with_the_vector_index_score() -> None:
    matrix = build(_rows(), 2)
    assert "stub" not in matrix.ids  # a vector of another dimension is not kept
    found = matrix.nearest([1.0, 0.0], 3)
    assert [r["id"] for r in found] == ["auth", "nowhere", "pay"]
    assert found[0] == {"id": "auth", "name": "AuthService", "type": "service", "score": 1.0}
    # the index's cosine score, (1 + cos) / 2
    assert found[2]["score"] == pytest.approx((1 + 0.6) / 2)
    assert found[1]["score"] == pytest.approx((1 + 1 / math.sqrt(1.01)) / 2)


def test_a_scope_keeps_entities_with_a_namespace_in_it() -> None:
    matrix = build(_rows(), 2)
    assert [r["id"] for r in matrix.nearest([1.0, 0.0], 5, ["beta"])] == ["pay", "ledger"]
    assert [r["id"] for r in matrix.nearest([1.0, 0.0], 1, ["alpha"])] == ["auth"]
    # an entity without namespaces is in no scope; a scope nobody has finds nothing
    assert "nowhere" not in {r["id"] for r in matrix.nearest([1.0, 0.0], 5, ["alpha", "beta"])}
    assert matrix.nearest([1.0, 0.0], 5, ["gamma"]) == []


def test_a_missing_type_reads_empty_and_a_zero_question_finds_nothing() -> None:
    matrix = build(_rows(), 2)
    assert next(r for r in matrix.nearest([0.0, 1.0], 1))["type"] == ""
    assert matrix.nearest([0.0, 0.0], 3) == []
