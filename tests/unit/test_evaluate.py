"""kg eval's contract: questions files, gold labels, scores and the recommended mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg.errors import ConfigError
from kg.evaluate import (
    ModeScore,
    _Tally,
    is_gold,
    parse_questions,
    ranked_documents,
    read_questions,
    recommend,
)
from kg.search.models import ChunkHit


def test_bad_lines_are_reported_by_number_and_the_rest_are_kept() -> None:
    lines = [
        json.dumps({"question": "Who owns auth?", "gold": ["a.md"]}),
        "",  # blank lines are not questions and not errors
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"question": "  ", "gold": ["a.md"]}),
        json.dumps({"question": "No gold", "gold": []}),
        json.dumps({"question": "Gold of numbers", "gold": [1]}),
        json.dumps({"question": "Typo", "gold": ["a.md"], "namespase": "x"}),
        json.dumps({"question": "One gold as a string", "gold": "b.md", "namespace": "wiki"}),
    ]
    questions, skipped = parse_questions(lines)
    assert [(q.line, q.question, q.gold, q.namespace) for q in questions] == [
        (1, "Who owns auth?", ("a.md",), None),
        (9, "One gold as a string", ("b.md",), "wiki"),
    ]
    reasons = {s.line: s.reason for s in skipped}
    assert sorted(reasons) == [3, 4, 5, 6, 7, 8]
    assert reasons[3].startswith("not JSON")
    assert reasons[4] == "not a JSON object"
    assert "question" in reasons[5]
    assert "gold" in reasons[6]
    assert "gold" in reasons[7]
    assert reasons[8] == "unknown field(s): namespase"


def test_a_missing_or_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        read_questions(tmp_path / "absent.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="cannot read"):
        read_questions(binary)


@pytest.mark.parametrize(
    ("gold", "expected"),
    [
        ("services/auth.md", True),  # the path as ingested
        ("docs/services/auth.md", True),  # with the ingested folder in front
        ("./services/auth.md", True),
        ("auth.md", True),  # the path's tail, at a folder boundary
        ("th.md", False),  # not at a boundary
        ("doc-123", True),  # the document's id
        ("services/authz.md", False),
    ],
)
def test_gold_names_a_document_by_path_or_id(gold: str, expected: bool) -> None:
    assert is_gold(gold, "doc-123", "services/auth.md") is expected


def _chunk(doc: str, n: int) -> ChunkHit:
    return ChunkHit(id=f"{doc}#{n}", text="", document_id=doc, document_path=f"{doc}.md", score=1)


def test_scores_are_by_document_in_rank_order() -> None:
    chunks = [_chunk("a", 0), _chunk("a", 1), _chunk("b", 0), _chunk("c", 0), _chunk("d", 0)]
    ranked = ranked_documents(chunks)
    assert ranked == [("a", "a.md"), ("b", "b.md"), ("c", "c.md"), ("d", "d.md")]
    tally = _Tally(hits={1: 0, 3: 0, 5: 0})
    tally.add(ranked, ("c.md", "z.md"))  # first gold at rank 3, one of two golds found
    tally.add(ranked, ("a",))  # rank 1, by id
    tally.add(ranked, ("z.md",))  # never found
    assert tally.hits == {1: 1, 3: 2, 5: 2}
    assert tally.reciprocal == pytest.approx(1 / 3 + 1)
    assert tally.recall == pytest.approx(0.5 + 1 + 0)


def _score(mode: str, hit3: float, mrr: float, ms: float, n: int = 10) -> ModeScore:
    return ModeScore.model_validate(
        {"mode": mode, "questions": n, "hit_at_1": mrr, "hit_at_3": hit3, "hit_at_5": hit3,
         "recall_at_5": hit3, "mrr": mrr, "median_ms": ms, "p95_ms": ms}
    )  # fmt: skip


def test_the_best_mode_is_recommended_and_a_near_tie_goes_to_the_faster() -> None:
    best, reason = recommend([_score("text", 0.6, 0.5, 5), _score("hybrid", 0.9, 0.8, 40)])
    assert best == "hybrid"
    assert reason.startswith("hybrid: hit@3 0.90")
    # within one question of ten: the faster one, and the reason names the best
    best, reason = recommend([_score("text", 0.8, 0.75, 5), _score("hybrid", 0.9, 0.8, 40)])
    assert best == "text"
    assert "best hybrid" in reason
    # auto, the default, wins a near tie unless it costs more than twice the fastest
    near = [_score("text", 0.8, 0.75, 5), _score("auto", 0.9, 0.8, 9)]
    assert recommend(near)[0] == "auto"
    slow = [_score("text", 0.8, 0.75, 5), _score("auto", 0.9, 0.8, 11)]
    assert recommend(slow)[0] == "text"
