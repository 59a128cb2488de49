"""The text a fact node is embedded by (kg/graph/facts.py): readable and bounded."""

from __future__ import annotations

import numpy as np

from kg.graph.facts import fact_rows, fact_text
from kg.limits import MAX_FACT_CHARS, MAX_FACT_KEY_CHARS
from kg.resolve.embed import HashingEmbedder


def test_predicates_read_as_lower_case_words() -> None:
    assert fact_text("AuthService", "STORES_DATA_IN", "PostgreSQL") == (
        "AuthService stores data in PostgreSQL"
    )
    assert fact_text("Сервис платежей", "ЯВЛЯЕТСЯ_ЧАСТЬЮ", "Платформа") == (
        "Сервис платежей является частью Платформа"
    )
    assert fact_text(" Kappa ", "DEPENDS__ON_", "Lambda") == "Kappa depends on Lambda"


def test_a_missing_part_leaves_no_double_space_and_the_text_is_bounded() -> None:
    assert fact_text("", "RELATED", "X") == "related X"
    long = fact_text("a" * 900, "OWNS", "b" * 900)
    assert len(long) == MAX_FACT_CHARS
    assert long.endswith("…")


def test_rows_embed_each_text_and_skip_keys_the_index_cannot_hold() -> None:
    embedder = HashingEmbedder(32)
    records = [
        {"key": "a|OWNS|b|", "subject_id": "a", "subject": "Alpha", "predicate": "OWNS",
         "object_id": "b", "object": "Beta"},
        {"key": "x" * (MAX_FACT_KEY_CHARS + 1), "subject_id": "x", "subject": "X",
         "predicate": "OWNS", "object_id": "y", "object": "Y"},
    ]  # fmt: skip
    rows = fact_rows(records, embedder)
    assert [r["key"] for r in rows] == ["a|OWNS|b|"]
    assert rows[0]["text"] == "Alpha owns Beta"
    expected = embedder.embed(["Alpha owns Beta"])[0]
    assert np.allclose(rows[0]["embedding"], expected)
    assert fact_rows([], embedder) == []
