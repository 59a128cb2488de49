"""The router on the labelled questions (tests/data/router/questions.tsv).

The set was written and labelled before kg/search/router.py's rules. A third of it (a hash of the
question picks which) is the test part: the rules were tuned on the rest only, and the
accuracy below on the test part is the figure in docs/benchmarks.md.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from kg.search.models import MODES, SEARCH_MODES
from kg.search.router import MAX_PHRASES, link_by_names, phrases, route

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = REPO / "tests" / "data" / "router" / "questions.tsv"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
EXPECTED = {"global": "global", "local": "graph", "vector": "vector"}


def _names() -> set[str]:
    names: set[str] = set()
    for line in TRIPLETS.read_text(encoding="utf-8").splitlines():
        for t in json.loads(line).get("triplets", []):
            names.update((t["subject"], t["object"]))
    return names


def _rows() -> list[tuple[str, str, str, bool]]:
    rows = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        label, question, *rest = line.split("\t")
        test = int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) % 3 == 0
        rows.append((label, question, rest[0] if rest else "", test))
    return rows


def _accuracy(test: bool) -> tuple[float, list[str]]:
    names = _names()
    rows = [r for r in _rows() if r[3] == test]
    misses = []
    for label, question, extra, _ in rows:
        decided = route(
            question,
            linked=link_by_names(question, names),
            relation_filter=extra.startswith("relation_types="),
            as_of=extra.startswith("as_of="),
        )
        if decided.mode != EXPECTED[label]:
            misses.append(f"{label} -> {decided.mode}: {question} ({decided.reason})")
    return 1 - len(misses) / len(rows), misses


def test_the_labelled_set_is_big_enough_balanced_and_bilingual() -> None:
    rows = _rows()
    assert len(rows) >= 120
    assert min(Counter(r[0] for r in rows).values()) >= 40
    russian = [r for r in rows if any("а" <= ch <= "я" for ch in r[1].lower())]
    assert len(russian) >= 40
    assert 0.25 <= sum(r[3] for r in rows) / len(rows) <= 0.4


def test_router_accuracy_on_the_test_part() -> None:
    accuracy, misses = _accuracy(test=True)
    assert accuracy >= 0.9, misses


def test_router_accuracy_on_the_dev_part() -> None:
    accuracy, misses = _accuracy(test=False)
    assert accuracy >= 0.9, misses


@pytest.mark.parametrize(
    ("question", "mode"),
    [
        ("What are the main parts of the platform and who owns them?", "global"),
        ("Кто владеет AuthService?", "graph"),
        ("How long are refresh tokens valid?", "vector"),
    ],
)
def test_the_router_says_why(question: str, mode: str) -> None:
    decided = route(question, linked=link_by_names(question, _names()))
    assert decided.mode == mode
    assert decided.reason


def test_filters_send_a_question_to_the_graph() -> None:
    decided = route("What are all the ownership facts?", linked=[], relation_filter=True)
    assert decided.mode == "graph"
    assert "relation-type filter" in decided.reason


def test_phrases_are_bounded_and_link_whole_words() -> None:
    assert len(phrases(" ".join(f"word{i}" for i in range(200)))) == MAX_PHRASES
    assert link_by_names("what runs on k8s-eu-1?", {"k8s-eu-1", "k8s-eu-2"}) == ["k8s-eu-1"]
    assert link_by_names("authservice", {"AuthService"}) == ["AuthService"]
    assert link_by_names("the author", {"Auth"}) == []


def test_one_list_of_modes() -> None:
    assert set(SEARCH_MODES) < set(MODES)
    assert set(MODES) - set(SEARCH_MODES) == {"global", "auto"}
