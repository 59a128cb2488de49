"""How the CLI shows the pipeline's stages (kg.ingest.Progress, with counts: CountingProgress).

On a terminal, a rich bar per stage with its counts ("extract ━━━ 41/120 chunks 38 LLM calls ·
2.1/s · 3 failed"). Anywhere else (a pipe, a CI log), plain lines on stderr: one when a stage
starts, one when it ends with its counts and seconds, and at most one every few seconds in
between, so a log shows where a long run is without a line per chunk. With ``--json``,
nothing: stdout carries the JSON object alone.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

#: What each stage's total counts (kg.ingest.STAGES, and kg.ingest_workers' "workers").
UNITS = {"chunk": "documents", "extract": "chunks", "write": "steps", "workers": "workers"}
#: Counts shown only when not zero.
UNLESS_ZERO = frozenset({"skipped", "cached", "failed"})
#: Seconds between two plain lines of one stage.
EVERY_S = 5.0


def describe(counts: Mapping[str, int], seconds: float) -> str:
    """A stage's counts as text: ``38 LLM calls · 2.1/s · 3 failed``."""
    parts: list[str] = []
    for name, value in counts.items():
        if name in UNLESS_ZERO and not value:
            continue
        if name == "calls":
            parts.append(f"{value} LLM calls")
            if value and seconds > 0:
                parts.append(f"{value / seconds:.1f}/s")
        else:
            parts.append(f"{value} {name}")
    return " · ".join(parts)


@dataclass
class _Stage:
    name: str
    total: int | None
    started: float
    done: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def line(self, now: float) -> str:
        """``41/120 chunks · 38 LLM calls · 2.1/s · 20.0 s``."""
        seconds = now - self.started
        parts = []
        if self.total is not None:
            parts.append(f"{self.done}/{self.total} {UNITS.get(self.name, '')}".rstrip())
        if counts := describe(self.counts, seconds):
            parts.append(counts)
        parts.append(f"{seconds:.1f} s")
        return " · ".join(parts)


class PlainProgress:
    """Plain lines for a log: a stage's start, its end, at most one line every ``every_s``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._every_s = every_s
        self._clock = clock
        self._stage: _Stage | None = None
        self._last = 0.0
        self._lock = threading.Lock()  # extraction reports from its own thread

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with self._lock:
            self._end("done" if exc is None else "stopped")

    def stage(self, name: str, total: int | None) -> None:
        with self._lock:
            self._end("done")
            now = self._clock()
            self._stage = _Stage(name, total, now)
            self._last = now
            size = "" if total is None else f" ({total} {UNITS.get(name, '')}".rstrip() + ")"
            self._write(f"{name}: started{size}")

    def advance(self, amount: int = 1) -> None:
        with self._lock:
            if self._stage is not None:
                self._stage.done += amount
                self._now_and_then()

    def note(self, counts: Mapping[str, int]) -> None:
        with self._lock:
            if self._stage is not None:
                self._stage.counts.update(counts)  # shown with the next advance

    def _now_and_then(self) -> None:
        assert self._stage is not None
        now = self._clock()
        if now - self._last >= self._every_s:
            self._last = now
            self._write(f"{self._stage.name}: {self._stage.line(now)}")

    def _end(self, how: str) -> None:
        if self._stage is not None:
            self._write(f"{self._stage.name}: {how}, {self._stage.line(self._clock())}")
            self._stage = None

    def _write(self, line: str) -> None:
        self._stream.write(line + "\n")
        self._stream.flush()


class RichProgress:
    """One bar per stage with its counts; a stage without a total shows a spinner."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description:<11}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self._task: TaskID | None = None
        self._counts: dict[str, int] = {}

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish()
        self._progress.stop()

    def stage(self, name: str, total: int | None) -> None:
        self._finish()
        self._counts = {}
        unit = UNITS.get(name, "")
        self._task = self._progress.add_task(name, total=total, unit=unit, counts="")

    def advance(self, amount: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, amount)
            if "calls" in self._counts:  # the rate moves with time
                self._show()

    def note(self, counts: Mapping[str, int]) -> None:
        if self._task is not None:
            self._counts.update(counts)
            self._show()

    def _show(self) -> None:
        assert self._task is not None
        elapsed = self._progress.tasks[self._task].elapsed or 0.0
        self._progress.update(self._task, counts=describe(self._counts, elapsed))

    def _finish(self) -> None:
        if self._task is None:
            return
        task = self._progress.tasks[self._task]
        total = task.total if task.total is not None else max(task.completed, 1)
        self._progress.update(self._task, total=total, completed=total)


class Quiet:
    """No display (``--json``: stdout is the JSON object alone)."""

    def __enter__(self) -> Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def stage(self, name: str, total: int | None) -> None:
        pass

    def advance(self, amount: int = 1) -> None:
        pass

    def note(self, counts: Mapping[str, int]) -> None:
        pass


def stage_progress(
    console: Console, *, quiet: bool = False
) -> RichProgress | PlainProgress | Quiet:
    """The display for a command printing on ``console``: rich bars when it is a terminal,
    plain lines on stderr when not, nothing when ``quiet`` (``--json``)."""
    if quiet:
        return Quiet()
    if console.is_terminal:
        return RichProgress(console)
    return PlainProgress(sys.stderr)
