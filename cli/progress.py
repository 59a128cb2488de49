"""A rich progress display that follows the pipeline's stages (kg.ingest.Progress)."""

from __future__ import annotations

from types import TracebackType

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


class RichProgress:
    """One bar per stage; a stage without a total shows a spinner."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description:<11}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self._task: TaskID | None = None

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
        self._task = self._progress.add_task(name, total=total)

    def advance(self, amount: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, amount)

    def _finish(self) -> None:
        if self._task is None:
            return
        task = self._progress.tasks[self._task]
        total = task.total if task.total is not None else max(task.completed, 1)
        self._progress.update(self._task, total=total, completed=total)
