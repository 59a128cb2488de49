"""The quality floor on the labelled alias dataset (tests/data/aliases/aliases.jsonl).

Numbers measured when the floor was set (docs/resolution.md): ours pairwise P 0.987,
R 0.778, F1 0.870, B-cubed F1 0.894; exact-name F1 0.374; fuzzy WRatio F1 0.311.
"""

from __future__ import annotations

from bench.resolve_quality import evaluate, load

FLOOR_F1 = 0.86
FLOOR_PRECISION = 0.97


def test_dataset_shape() -> None:
    rows = load()
    assert len(rows) >= 400
    assert len({r.gold for r in rows}) >= 100
    assert any("а" <= ch <= "я" for r in rows for ch in r.mention.casefold())


def test_ours_holds_the_floor_and_beats_both_baselines() -> None:
    results = evaluate(load())
    ours = results.pop("ours")
    assert ours.precision >= FLOOR_PRECISION
    assert ours.f1 >= FLOOR_F1
    for name, baseline in results.items():
        assert ours.f1 > baseline.f1, name
        assert ours.bcubed_f1 > baseline.bcubed_f1, name
