"""The communities use case: read the entity graph, cluster it, report on each community, write.

``build`` recomputes every community from the graph as it is now (see docs/communities.md for
what an incremental ingest does to existing ones). Steps, each timed in the summary:

1. read: entity pairs and their summed fact weights, in bounded keyset batches;
2. cluster: hierarchical Leiden with a fixed seed (:mod:`kg.communities.cluster`);
3. context: each community's top entities, relations and chunks (bounded per community);
4. report: extractive, or through the LLM with cache, budget and re-asks
   (:mod:`kg.communities.reports`); a dry run estimates the calls and writes nothing;
5. write: communities, IN_COMMUNITY and PARENT in batches, then the previous build's leftovers
   are deleted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from neo4j import Driver
from pydantic import Field

from kg.basemodel import Model
from kg.communities.cluster import Community, Pair, cluster, member_hash
from kg.communities.reports import (
    CommunityReport,
    LLMReporter,
    ReportCache,
    estimate_tokens,
    extractive_report,
    relative_rating,
)
from kg.communities.store import CommunityStore, ReportContext, StoredReport
from kg.extract.budget import RunBudget, Usage
from kg.llm import resolve_endpoint
from kg.settings import Settings

__all__ = ["CommunityBuildSummary", "build_communities"]

T = TypeVar("T")


class CommunityBuildSummary(Model):
    """What ``kg communities build`` did (``--json`` prints this)."""

    entities: int = Field(description="Entities placed in at least one community.")
    pairs: int = Field(description="Related entity pairs read from the graph.")
    communities: int
    levels: int
    per_level: dict[int, int] = Field(default_factory=dict)
    reports_extractive: int = 0
    reports_llm: int = 0
    reports_cached: int = 0
    reports_failed: int = 0
    report_error: str | None = Field(
        None,
        description="The first failed report's reason (an endpoint failure names the URL "
        "tried and the settings to change).",
    )
    llm_calls: int = 0
    llm_tokens: int = 0
    stopped_by_budget: bool = False
    budget_reason: str | None = None
    deleted: int = Field(0, description="Communities of earlier builds removed.")
    dry_run: bool = False
    estimated_calls: int = 0
    estimated_tokens: int = 0
    timings: dict[str, float] = Field(default_factory=dict)


def _run(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, inside a running loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _internal_weights(communities: Sequence[Community], pairs: Sequence[Pair]) -> dict[str, float]:
    """Summed weight of the pairs inside each community."""
    by_level: dict[int, dict[str, str]] = defaultdict(dict)
    for c in communities:
        for member in c.members:
            by_level[c.level][member] = c.id
    weights: dict[str, float] = defaultdict(float)
    for placement in by_level.values():
        for p in pairs:
            home = placement.get(p.a)
            if home is not None and home == placement.get(p.b):
                weights[home] += p.weight
    return weights


def build_communities(
    settings: Settings,
    driver: Driver,
    *,
    dry_run: bool = False,
    reporter: LLMReporter | None = None,
) -> CommunityBuildSummary:
    """Recompute communities and their reports; see the module docstring."""
    cs = settings.communities
    timings: dict[str, float] = {}
    store = CommunityStore(
        driver,
        settings.neo4j.database,
        read_batch=cs.read_batch,
        write_batch=settings.write.batch_size,
        timeout_s=settings.write.timeout_s,
    )
    start = time.perf_counter()
    pairs = store.pairs()
    timings["read"] = time.perf_counter() - start

    start = time.perf_counter()
    communities = cluster(
        pairs,
        max_cluster_size=cs.max_cluster_size,
        resolution=cs.resolution,
        seed=cs.seed,
        min_size=cs.min_size,
    )
    timings["cluster"] = time.perf_counter() - start

    start = time.perf_counter()
    contexts = store.contexts(
        communities,
        max_entities=cs.report_entities,
        max_relations=cs.report_relations,
        max_chunks=cs.report_chunks,
        chunk_chars=cs.chunk_chars,
    )
    timings["context"] = time.perf_counter() - start

    summary = _summary(communities, len(pairs), dry_run=dry_run)

    start = time.perf_counter()
    llm, cached, reporter = _report_step(settings, reporter, contexts, summary, dry_run)
    timings["report"] = time.perf_counter() - start

    if dry_run:
        summary.timings = {k: round(v, 3) for k, v in timings.items()}
        return summary

    start = time.perf_counter()
    rows = _rows(contexts, _internal_weights(communities, pairs), llm, cached, reporter, summary)
    summary.deleted = store.write(rows, uuid.uuid4().hex)
    timings["write"] = time.perf_counter() - start
    summary.timings = {k: round(v, 3) for k, v in timings.items()}
    return summary


def _summary(
    communities: Sequence[Community], pairs: int, *, dry_run: bool
) -> CommunityBuildSummary:
    per_level: dict[int, int] = defaultdict(int)
    for c in communities:
        per_level[c.level] += 1
    return CommunityBuildSummary(
        entities=len({m for c in communities for m in c.members}),
        pairs=pairs,
        communities=len(communities),
        levels=len(per_level),
        per_level=dict(sorted(per_level.items())),
        dry_run=dry_run,
    )


def _report_step(
    settings: Settings,
    reporter: LLMReporter | None,
    contexts: Sequence[ReportContext],
    summary: CommunityBuildSummary,
    dry_run: bool,
) -> tuple[dict[str, CommunityReport], set[str], LLMReporter | None]:
    """LLM reports where configured (cached, budgeted); an empty map means all extractive."""
    cs = settings.communities
    if cs.reports != "llm":
        return {}, set(), reporter
    if reporter is None:
        endpoint = resolve_endpoint(settings, "reports")
        reporter = LLMReporter(endpoint, cs, ReportCache(cs.cache_path))
    try:
        llm, cached = _llm_reports(reporter, contexts, summary, dry_run=dry_run)
    finally:
        if reporter.cache is not None:
            reporter.cache.close()
    return llm, cached, reporter


def _rows(
    contexts: Sequence[ReportContext],
    internal: dict[str, float],
    llm: dict[str, CommunityReport],
    cached: set[str],
    reporter: LLMReporter | None,
    summary: CommunityBuildSummary,
) -> list[StoredReport]:
    """What the write stores: the LLM's report where there is one, else an extractive one."""
    ids = [c.community.id for c in contexts]
    ratings = dict(zip(ids, relative_rating([internal.get(i, 0.0) for i in ids]), strict=True))
    rows: list[StoredReport] = []
    for context in contexts:
        cid = context.community.id
        report = llm.get(cid)
        kind = "llm" if report is not None else "extractive"
        if report is None:
            report = extractive_report(context).model_copy(update={"rating": ratings[cid]})
            summary.reports_extractive += 1
        elif cid in cached:
            summary.reports_cached += 1
        rows.append(
            StoredReport(
                community=context.community,
                title=report.title,
                summary=report.summary,
                findings=[f.model_dump(mode="json") for f in report.findings],
                rating=report.rating,
                rank=report.rating,
                kind=kind,
                report_key=reporter.key(context) if reporter is not None and kind == "llm" else "",
                members_hash=member_hash(context.community.members),
            )
        )
    return rows


def _llm_reports(
    reporter: LLMReporter,
    contexts: Sequence[ReportContext],
    summary: CommunityBuildSummary,
    *,
    dry_run: bool,
) -> tuple[dict[str, CommunityReport], set[str]]:
    cs = reporter.settings
    if dry_run:
        for context in contexts:
            if reporter.cached(context) is not None:
                summary.reports_cached += 1
                continue
            prompt, completion = estimate_tokens(context)
            summary.estimated_calls += 1
            summary.estimated_tokens += prompt + completion
        return {}, set()
    budget = RunBudget(cs.max_calls, cs.max_tokens)
    outcomes = _run(lambda: reporter.reports(contexts, budget))
    reports: dict[str, CommunityReport] = {}
    cached: set[str] = set()
    usage = Usage()
    for outcome in outcomes:
        usage += outcome.usage
        if outcome.report is None:
            if outcome.error is not None and not outcome.error.startswith("not run"):
                summary.reports_failed += 1
                summary.report_error = summary.report_error or outcome.error
            continue
        reports[outcome.context.community.id] = outcome.report
        summary.reports_llm += 1
        if outcome.cached:
            cached.add(outcome.context.community.id)
    summary.llm_calls = usage.calls
    summary.llm_tokens = usage.total_tokens
    summary.stopped_by_budget = budget.reason is not None
    summary.budget_reason = budget.reason
    return reports, cached
