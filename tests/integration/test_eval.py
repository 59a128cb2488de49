"""`kg eval` end to end on the bundled example: every mode scored on labelled questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver

from kg import KnowledgeGraph
from kg.settings import Settings
from tests.clienv import run_kg

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
QUESTIONS = REPO / "examples" / "platform-docs.questions.jsonl"


@pytest.fixture(scope="module")
def example(driver: Driver, settings: Settings) -> Iterator[Driver]:
    from tests.conftest import ingested_example

    yield from ingested_example(driver, settings)


def test_kg_eval_scores_every_mode_on_the_example(example: Driver, settings: Settings) -> None:
    proc = run_kg(settings, "eval", str(QUESTIONS), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["questions"] == 10
    assert report["skipped"] == []
    scores = {s["mode"]: s for s in report["modes"]}
    assert list(scores) == ["text", "vector", "graph", "hybrid", "auto"]
    for score in scores.values():
        assert score["questions"] == 10
        assert score["errors"] == 0
        assert 0 <= score["hit_at_1"] <= score["hit_at_3"] <= score["hit_at_5"] <= 1
        assert 0 < score["median_ms"] <= score["p95_ms"]
    # the labels are right and the example is searchable: most answers are found at once
    assert scores["text"]["hit_at_3"] >= 0.7
    assert scores["hybrid"]["hit_at_3"] >= 0.7
    assert report["recommended"] in scores
    assert report["reason"].startswith(report["recommended"] + ":")

    table = run_kg(settings, "eval", str(QUESTIONS), "--mode", "text", "--mode", "graph")
    assert table.returncode == 0, table.stderr
    assert "hit@3" in table.stdout
    assert "use: " in table.stdout
    rows = [
        line
        for line in table.stdout.splitlines()
        if line.strip(" │|").startswith(("text", "graph"))
    ]
    assert len(rows) == 2


def test_bad_lines_are_named_and_wrong_labels_score_nothing(
    example: Driver, settings: Settings, tmp_path: Path
) -> None:
    good = QUESTIONS.read_text(encoding="utf-8").splitlines()[0]
    wrong = json.dumps({"question": json.loads(good)["question"], "gold": ["no/such/file.md"]})
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join([good, "{oops", wrong, '{"question": "x"}']) + "\n")
    proc = run_kg(settings, "eval", str(path), "--mode", "text")
    assert proc.returncode == 0, proc.stderr
    assert "skipped line 2: not JSON" in " ".join(proc.stderr.split())
    assert "skipped line 4" in proc.stderr

    with KnowledgeGraph(settings) as graph:
        report = graph.evaluate(path, modes=["text"])
    assert [s.line for s in report.skipped] == [2, 4]
    (text,) = report.modes
    assert text.questions == 2
    assert text.hit_at_5 == 0.5  # the right label is found, the wrong one never
    assert text.recall_at_5 == 0.5


def test_a_file_with_no_question_fails_clearly(
    example: Driver, settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("{oops\n")
    proc = run_kg(settings, "eval", str(path))
    assert proc.returncode != 0
    assert "no questions to evaluate" in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = run_kg(settings, "eval", str(tmp_path / "absent.jsonl"))
    assert missing.returncode != 0
    assert "Traceback" not in missing.stderr
