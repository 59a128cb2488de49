"""``kg ingest PATH --workers N``: N processes on this machine, one shard each, one finish.

Each child runs the pipeline for its shard (kg/shards.py) up to staging: load, chunk,
extract or import, chunk embeddings, documents and chunks written, facts staged in the graph.
When all have staged, this process resolves and writes everything staged in one pass
(:func:`kg.ingest.finish_staged`), the same pass a single worker runs: the graph is the same.
A child that fails leaves its documents incomplete and nothing is finished; running the same
command again redoes what is missing and finishes.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import fields
from pathlib import Path
from typing import Any

from neo4j import Driver

from kg.errors import KGError
from kg.ingest import STAGES, IngestSummary, Progress, finish_ingest, ingest
from kg.resolve import Embedder
from kg.resolve.adjudicate import Adjudicator
from kg.settings import Settings
from kg.shards import MAX_WORKERS, Shard

# A worker's summary as the total lists it: what it did, not what the finish did.
_WORKER_KEYS = (
    "shard", "documents_new", "documents_changed", "documents_unchanged", "documents_pruned",
    "chunks", "llm_calls", "cache_hits", "seconds", "timings",
)  # fmt: skip


def ingest_parallel(
    settings: Settings,
    driver: Driver,
    path: Path,
    *,
    workers: int,
    options: dict[str, Any],
    progress: Progress | None = None,
    embedder: Embedder | None = None,
    adjudicator: Adjudicator | None = None,
    chunk_embedder: Embedder | None = None,
) -> IngestSummary:
    """Stage ``path`` with ``workers`` processes, then finish here; one summary for all.

    ``options`` are :func:`kg.ingest.ingest`'s keyword options (triplets, namespace, ...).
    The children build their embedders from settings; ``embedder`` and ``chunk_embedder``
    serve the finish only, so give ones equal to the configured ones (or none).
    """
    if not 1 <= workers <= MAX_WORKERS:
        raise KGError(f"--workers must be 1..{MAX_WORKERS}, not {workers}")
    started = time.monotonic()
    if progress is not None:
        progress.stage("workers", workers)
    summaries: list[IngestSummary] = []
    failures: list[str] = []
    context = multiprocessing.get_context("spawn")  # no driver or thread crosses a fork
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            pool.submit(_stage_shard, settings, path, options, Shard(i, workers)): i
            for i in range(workers)
        }
        for future in as_completed(futures):
            try:
                summaries.append(future.result())
            except Exception as exc:  # a child's error or its death: reported below
                failures.append(f"worker {futures[future]}/{workers}: {exc or type(exc).__name__}")
            if progress is not None:
                progress.advance()
    if failures:
        raise KGError(
            "; ".join(sorted(failures))
            + ". What the other workers staged is kept: run the same command again to redo "
            "what is missing and finish"
        )
    finished = finish_ingest(
        settings,
        driver,
        path,
        namespace=options.get("namespace"),
        progress=progress,
        embedder=embedder,
        adjudicator=adjudicator,
        chunk_embedder=chunk_embedder,
    )
    total = combine(sorted(summaries, key=lambda s: s.shard), finished)
    total.seconds = round(time.monotonic() - started, 3)
    return total


def _stage_shard(
    settings: Settings, path: Path, options: dict[str, Any], shard: Shard
) -> IngestSummary:
    """One child: its own driver, its shard, staged and not finished."""
    from kg.graph.driver import open_driver

    with open_driver(settings.neo4j) as driver:
        return ingest(settings, driver, path, shard=shard, finish=False, **options)


def combine(workers: list[IngestSummary], finished: IngestSummary) -> IngestSummary:
    """The total of the workers' summaries and the finish's: counts add up, lists join,
    each stage's seconds are the slowest worker's (they ran at once) plus the finish's."""
    total = IngestSummary(root=finished.root, source=finished.source)
    parts = [*workers, finished]
    for f in fields(IngestSummary):
        values = [getattr(s, f.name) for s in parts]
        if f.type in ("int", int):
            setattr(total, f.name, sum(values))
        elif f.name in {"skipped", "import_errors", "dropped", "failures", "removed"}:
            setattr(total, f.name, [item for value in values for item in value])
    total.removed.sort()
    total.communities_stale = finished.communities_stale
    total.stopped_by_budget = any(s.stopped_by_budget for s in workers)
    total.budget_reason = next((s.budget_reason for s in workers if s.budget_reason), None)
    total.finished = finished.finished
    total.timings = {
        stage: round(
            max((s.timings.get(stage, 0.0) for s in workers), default=0.0)
            + finished.timings.get(stage, 0.0),
            3,
        )
        for stage in STAGES
    }
    total.workers = [{key: s.to_dict()[key] for key in _WORKER_KEYS} for s in workers]
    return total
