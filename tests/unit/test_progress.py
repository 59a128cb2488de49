"""The CLI's stage display (cli/progress.py) and the counts the pipeline gives it (issue 42, 4)."""

from __future__ import annotations

import io
from collections.abc import Mapping

from rich.console import Console

from cli.progress import PlainProgress, Quiet, RichProgress, describe, stage_progress
from kg.ingest import CountingProgress, IngestSummary, _chunk, _note, _Plan
from kg.models import Document
from kg.settings import Settings


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _plain() -> tuple[PlainProgress, io.StringIO, _Clock]:
    out, clock = io.StringIO(), _Clock()
    return PlainProgress(out, every_s=5.0, clock=clock), out, clock


def test_a_stage_prints_one_line_at_its_start_and_one_at_its_end_with_counts() -> None:
    progress, out, clock = _plain()
    with progress:
        progress.stage("load", None)
        progress.note({"files": 3, "skipped": 0})
        clock.now += 0.25
        progress.stage("extract", 4)
        for calls in (1, 2, 3, 4):
            clock.now += 1.0
            progress.note({"calls": calls, "cached": 0, "failed": 1 if calls > 2 else 0})
            progress.advance()
    assert out.getvalue().splitlines() == [
        "load: started",
        "load: done, 3 files · 0.2 s",
        "extract: started (4 chunks)",
        "extract: done, 4/4 chunks · 4 LLM calls · 1.0/s · 1 failed · 4.0 s",
    ]


def test_a_long_stage_prints_at_most_one_line_every_five_seconds() -> None:
    progress, out, clock = _plain()
    with progress:
        progress.stage("extract", 100)
        for i in range(100):
            clock.now += 0.5  # 50 s in all: about ten lines between start and end
            progress.note({"calls": i + 1})
            progress.advance()
    lines = out.getvalue().splitlines()
    assert lines[0] == "extract: started (100 chunks)"
    assert lines[-1] == "extract: done, 100/100 chunks · 100 LLM calls · 2.0/s · 50.0 s"
    between = lines[1:-1]
    assert 8 <= len(between) <= 10, lines
    assert between[0] == "extract: 10/100 chunks · 10 LLM calls · 2.0/s · 5.0 s"


def test_a_failing_run_says_where_it_stopped() -> None:
    progress, out, _ = _plain()
    try:
        with progress:
            progress.stage("write", 3)
            progress.advance()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert out.getvalue().splitlines()[-1] == "write: stopped, 1/3 steps · 0.0 s"


def test_counts_read_as_words_and_zeros_of_the_optional_ones_are_left_out() -> None:
    assert describe({"calls": 38, "failed": 3, "cached": 0}, 18.1) == (
        "38 LLM calls · 2.1/s · 3 failed"
    )
    assert describe({"entities": 5, "relations": 7, "facts": 7}, 1.0) == (
        "5 entities · 7 relations · 7 facts"
    )
    assert describe({"calls": 0}, 0.0) == "0 LLM calls"


def test_the_display_follows_the_console_and_json() -> None:
    plain = Console(file=io.StringIO())
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert isinstance(stage_progress(plain), PlainProgress)
    assert isinstance(stage_progress(terminal), RichProgress)
    assert isinstance(stage_progress(terminal, quiet=True), Quiet)
    assert isinstance(stage_progress(plain, quiet=True), Quiet)


def test_the_rich_bar_shows_the_stage_counts() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160)
    with RichProgress(console) as progress:
        progress.stage("extract", 2)
        progress.note({"calls": 2, "failed": 1})
        progress.advance(2)
    shown = out.getvalue()
    assert "2/2" in shown
    assert "chunks" in shown
    assert "2 LLM calls" in shown
    assert "1 failed" in shown


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def stage(self, name: str, total: int | None) -> None:
        self.events.append(("stage", name))

    def advance(self, amount: int = 1) -> None:
        self.events.append(("advance", amount))

    def note(self, counts: Mapping[str, int]) -> None:
        self.events.append(("note", dict(counts)))


class _StagesOnly:
    """A Progress from before counts: it still works (note is never called on it)."""

    def stage(self, name: str, total: int | None) -> None:
        pass

    def advance(self, amount: int = 1) -> None:
        pass


def test_counts_reach_a_counting_progress_only() -> None:
    recorder = _Recorder()
    assert isinstance(recorder, CountingProgress)
    assert not isinstance(_StagesOnly(), CountingProgress)
    _note(recorder, files=2)
    _note(_StagesOnly(), files=2)  # no AttributeError
    assert recorder.events == [("note", {"files": 2})]


def test_the_chunk_stage_counts_chunks_as_documents_are_chunked() -> None:
    text = "\n\n".join(f"Paragraph {i} " + "word " * 300 for i in range(6))
    docs = [Document(f"d{i}", f"d{i}.md", f"D{i}", text, f"h{i}") for i in range(2)]
    plan = _Plan(docs, [], {})
    summary = IngestSummary(root="/r")
    recorder = _Recorder()
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    _chunk(settings, plan, summary, recorder)
    notes = [e[1] for e in recorder.events if e[0] == "note"]
    per_doc = len(plan.chunks["d0"])
    assert per_doc > 1
    assert notes == [{"chunks": per_doc}, {"chunks": 2 * per_doc}]
    assert summary.chunks == 2 * per_doc
    assert [e for e in recorder.events if e[0] == "advance"] == [("advance", 1)] * 2
