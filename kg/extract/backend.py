"""The extraction contract: one protocol every extraction backend implements, chosen in one place.

A backend turns chunks into one :class:`ChunkOutcome` each (a validated result, or a reason it
failed) and reports the run's usage. The ingest calls :func:`make_extractor` and the protocol,
never a concrete backend: adding one (a local model, a rules engine) is one class implementing
:class:`ExtractionBackend` plus a branch in :func:`make_extractor`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from kg.extract.budget import Usage
from kg.extract.schema import DroppedItem, ExtractionResult
from kg.models import Chunk

if TYPE_CHECKING:
    from kg.extract.cache import ExtractionCache
    from kg.settings import Settings

__all__ = [
    "NOT_RUN",
    "ChunkOutcome",
    "ExtractionBackend",
    "ExtractionRun",
    "make_extractor",
    "run_sync",
]

NOT_RUN = "not run: budget reached"


@dataclass(frozen=True)
class ChunkOutcome:
    """One chunk's end: a ``result`` or an ``error``, never both."""

    chunk_id: str
    document_id: str
    result: ExtractionResult | None
    error: str | None
    cached: bool
    usage: Usage
    dropped: tuple[DroppedItem, ...] = ()  # invalid items left out once re-asks were spent

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def not_run(self) -> bool:
        return self.error is not None and self.error.startswith(NOT_RUN)


@dataclass(frozen=True)
class ExtractionRun:
    """A run's outcomes in chunk order, with totals and per-document usage."""

    outcomes: list[ChunkOutcome]
    usage: Usage
    per_document: dict[str, Usage] = field(default_factory=dict)
    stopped_by_budget: bool = False
    budget_reason: str | None = None

    @property
    def succeeded(self) -> list[ChunkOutcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def failed(self) -> list[ChunkOutcome]:
        return [o for o in self.outcomes if not o.ok and not o.not_run]

    @property
    def not_run(self) -> list[ChunkOutcome]:
        return [o for o in self.outcomes if o.not_run]


class ExtractionBackend(Protocol):
    """Chunks in, one outcome per chunk out (in chunk order), with the run's usage."""

    async def extract_chunks(
        self,
        chunks: Sequence[Chunk],
        *,
        on_done: Callable[[ChunkOutcome], None] | None = None,
        on_error: Literal["record", "raise"] = "record",
    ) -> ExtractionRun:
        """``on_done`` is called as each chunk finishes; ``on_error="raise"`` stops the run at
        the first failed chunk with :class:`~kg.errors.ExtractionError`."""
        ...


def make_extractor(settings: Settings, cache: ExtractionCache | None = None) -> ExtractionBackend:
    """The extraction backend the settings choose (today the one LLM backend)."""
    from kg.extract.client import LLMExtractor
    from kg.llm import resolve_endpoint

    return LLMExtractor(
        settings.extract, cache=cache, endpoint=resolve_endpoint(settings, "extract")
    )


def run_sync(
    backend: ExtractionBackend,
    chunks: Sequence[Chunk],
    *,
    on_done: Callable[[ChunkOutcome], None] | None = None,
    on_error: Literal["record", "raise"] = "record",
) -> ExtractionRun:
    """Run ``backend`` to the end from blocking code, with or without a running event loop."""

    def run() -> ExtractionRun:
        return asyncio.run(backend.extract_chunks(chunks, on_done=on_done, on_error=on_error))

    try:
        asyncio.get_running_loop()
        inside_a_loop = True
    except RuntimeError:
        inside_a_loop = False
    if not inside_a_loop:
        # Outside the except block: an error of the run must not carry "no running event
        # loop" as its context (kg.llm's root reason follows __context__ to the first cause).
        return run()
    # Called from inside a running loop (a notebook, an async app): asyncio.run would
    # refuse, so the extraction gets its own loop on a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()
