"""Community reports: extractive (no LLM, the default) or written by an LLM through instructor.

The LLM answers with :class:`CommunityReport`. Every finding cites relation ids (``r.key``) or
chunk ids from the context it was given; a citation that is not in that context fails
validation and instructor re-asks with the error. Every call (first try and re-ask) reserves a
slot in the build's :class:`~kg.extract.budget.RunBudget`, the same accounting as extraction;
once the budget is spent the remaining communities get extractive reports, which are never
cached, so the next build asks again.

Reports are cached in SQLite (JSON, never pickle) by the hash of the member set, the model and
``PROMPT_VERSION``: a rebuild of an unchanged graph makes no LLM call. A cached report whose
citations are no longer all in the community's context is treated as a miss.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, StringConstraints, ValidationInfo, field_validator

from kg.basemodel import Model
from kg.communities.cluster import member_hash
from kg.communities.store import ReportContext
from kg.documents import count_tokens
from kg.extract.budget import RunBudget, Usage
from kg.llm import (
    Endpoint,
    LLMCallError,
    LLMEndpointError,
    Reask,
    StructuredLLM,
    TokenUsage,
    llm_client,
)
from kg.settings import CommunitySettings
from kg.sqlite_cache import SqliteCache

__all__ = [
    "PROMPT_VERSION",
    "CommunityReport",
    "Finding",
    "LLMReporter",
    "ReportCache",
    "extractive_report",
    "render_context",
]

log = logging.getLogger(__name__)

PROMPT_VERSION = "community-report-2026.1"

SYSTEM_PROMPT = """\
You write a report on one community of a knowledge graph: a group of entities that are closely
related. You are given its entities, the relations between them (each with an id) and the
passages that mention them most (each with an id).

Return:
- title: a short name for the community, naming its most important entities;
- summary: two to four sentences on what the community is and how its parts relate;
- findings: up to 8 key facts; each has a one-line summary, an explanation, and `citations`:
  the ids of the relations or passages that support it, copied exactly from the context;
- rating: 0 to 10, how important this community is for understanding the whole corpus.
Use only the context. Write in the language of the context.
"""

USER_TEMPLATE = """\
<context>
{{ community_context }}
</context>
"""

ShortText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]


class Finding(Model):
    summary: ShortText
    explanation: str = Field("", max_length=2000)
    citations: list[str] = Field(min_length=1, max_length=10)


class CommunityReport(Model):
    """What the LLM must answer; citations are checked against ``context['citable']``."""

    title: ShortText
    summary: str = Field(min_length=1, max_length=3000)
    findings: list[Finding] = Field(default_factory=list, max_length=10)
    rating: float = Field(ge=0, le=10)

    @field_validator("findings")
    @classmethod
    def _citations_in_context(cls, value: list[Finding], info: ValidationInfo) -> list[Finding]:
        citable = (info.context or {}).get("citable")
        if citable is None:
            return value
        unknown = sorted({c for f in value for c in f.citations if c not in citable})
        if unknown:
            raise ValueError(
                f"citations not in the context: {unknown[:10]}; cite only relation or passage "
                "ids given in the context"
            )
        return value


def render_context(context: ReportContext) -> str:
    """The community as the prompt shows it (a value of the template, never template text)."""
    lines = ["Entities (name | type | degree | description):"]
    lines += [
        f"- {e['name']} | {e['type']} | {e['degree']} | {e['description']}"
        for e in context.entities
    ]
    lines.append("Relations (id | source | predicate | target | weight | description):")
    lines += [
        f"- {r['id']} | {r['source']} | {r['predicate']} | {r['target']} | {r['weight']:.2f} | "
        f"{r['description']}"
        for r in context.relations
    ]
    lines.append("Passages (id | text):")
    lines += [f"- {c['id']} | {' '.join(str(c['text']).split())}" for c in context.chunks]
    return "\n".join(lines)


def extractive_report(context: ReportContext) -> CommunityReport:
    """A report from the graph alone: top entities by degree, top relations by weight, and
    the chunks that mention most members. Its rating is filled in by the build (relative)."""
    names = [str(e["name"]) for e in context.entities]
    head = ", ".join(names[:3]) if names else context.community.id
    title = head if len(names) <= 3 else f"{head} and {len(context.community.members) - 3} more"
    facts = [
        f"{r['source']} {str(r['predicate']).replace('_', ' ').lower()} {r['target']}"
        for r in context.relations[:5]
    ]
    summary = (
        f"{len(context.community.members)} entities at level {context.community.level}, "
        f"most connected: {', '.join(names[:5]) or 'none'}."
    )
    if facts:
        summary += " Main facts: " + "; ".join(facts) + "."
    findings = [
        Finding(
            summary=f"{r['source']} {r['predicate']} {r['target']}"[:300],
            explanation=str(r["description"])[:2000],
            citations=[str(r["id"]), *[str(c) for c in r["chunk_ids"][:2]]],
        )
        for r in context.relations[:8]
    ]
    findings += [
        Finding(
            summary=f"Passage mentioning {c['hits']} of its entities"[:300],
            explanation=" ".join(str(c["text"]).split())[:300],
            citations=[str(c["id"])],
        )
        for c in context.chunks[:2]
    ]
    return CommunityReport(title=title[:300], summary=summary[:3000], findings=findings, rating=0)


def report_key(members: Sequence[str], model: str) -> str:
    """The cache identity: the member set, the model and the prompt version."""
    raw = "\x1f".join([member_hash(members), model, PROMPT_VERSION])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


_REPORTS_TABLE = "CREATE TABLE IF NOT EXISTS reports (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


class ReportCache:
    """Reports as JSON in SQLite (:class:`kg.sqlite_cache.SqliteCache`), opened lazily."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteCache(path, schema=_REPORTS_TABLE, what="report cache")
        self.path = self._db.path

    def get(self, key: str, citable: frozenset[str]) -> CommunityReport | None:
        row = self._db.fetchone("SELECT value FROM reports WHERE key = ?", (key,))
        if row is None:
            return None
        try:
            return CommunityReport.model_validate(json.loads(row[0]), context={"citable": citable})
        except ValueError:  # stale citations or an old shape: ask again
            return None

    def put(self, key: str, report: CommunityReport) -> None:
        value = json.dumps(report.model_dump(mode="json"), ensure_ascii=False)
        self._db.write("INSERT OR REPLACE INTO reports VALUES (?, ?)", (key, value))

    def close(self) -> None:
        self._db.close()


@dataclass(frozen=True)
class ReportOutcome:
    context: ReportContext
    report: CommunityReport | None  # None: failed or not run (the build falls back)
    cached: bool
    usage: Usage
    error: str | None = None


def estimate_tokens(context: ReportContext) -> tuple[int, int]:
    """Prompt and completion tokens of one report call, for ``--dry-run``."""
    prompt = count_tokens(SYSTEM_PROMPT) + count_tokens(render_context(context)) + 300
    return prompt, 400


class LLMReporter:
    """Writes reports with the ``reports`` LLM use (:mod:`kg.llm`); constructor does no I/O."""

    def __init__(
        self, endpoint: Endpoint, settings: CommunitySettings, cache: ReportCache | None
    ) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self.cache = cache

    def key(self, context: ReportContext) -> str:
        return report_key(context.community.members, self.endpoint.model)

    def cached(self, context: ReportContext) -> CommunityReport | None:
        if self.cache is None:
            return None
        return self.cache.get(self.key(context), context.citable)

    async def reports(
        self, contexts: Sequence[ReportContext], budget: RunBudget
    ) -> list[ReportOutcome]:
        semaphore = asyncio.Semaphore(self.endpoint.concurrency)
        async with llm_client(self.endpoint) as client:

            async def one(context: ReportContext) -> ReportOutcome:
                async with semaphore:
                    return await self._one(client, context, budget)

            return list(await asyncio.gather(*(one(c) for c in contexts)))

    async def _one(
        self, client: StructuredLLM, context: ReportContext, budget: RunBudget
    ) -> ReportOutcome:
        hit = await asyncio.to_thread(self.cached, context)
        if hit is not None:
            return ReportOutcome(context, hit, True, Usage(cache_hits=1))
        if not budget.reserve_call():
            return ReportOutcome(context, None, False, Usage(), f"not run: {budget.reason}")
        calls = [1]

        def claim() -> bool:
            if not budget.reserve_call():
                return False
            calls[0] += 1
            return True

        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_TEMPLATE},
        ]
        try:
            reply = await client.create(
                CommunityReport,
                messages,
                reask=Reask(self.endpoint.max_retries + 1, claim),
                context={
                    "community_context": render_context(context),
                    "citable": context.citable,
                },
            )
        except LLMEndpointError as exc:  # name the endpoint tried and the settings to change
            usage = _usage(exc.usage, calls[0], failed=True, budget=budget)
            reason = self.endpoint.failed(
                exc.brief, status=exc.status, connection=exc.connection, timed_out=exc.timed_out
            )
            return ReportOutcome(context, None, False, usage, reason[:600])
        except LLMCallError as exc:
            if exc.retried:
                usage = _usage(exc.usage, calls[0], failed=True, budget=budget)
                reason = f"invalid report after {exc.n_attempts} attempt(s): {exc.reason}"
                return ReportOutcome(context, None, False, usage, reason[:600])
            usage = _usage(TokenUsage(), calls[0], failed=True, budget=budget)
            return ReportOutcome(context, None, False, usage, exc.plain[:600])
        usage = _usage(reply.usage, calls[0], failed=False, budget=budget)
        clean = CommunityReport.model_validate(reply.value.model_dump(mode="json"))
        if self.cache is not None:
            await asyncio.to_thread(self.cache.put, self.key(context), clean)
        return ReportOutcome(context, clean, False, usage)


def _usage(raw: TokenUsage, calls: int, *, failed: bool, budget: RunBudget) -> Usage:
    prompt, completion = raw.prompt_tokens, raw.completion_tokens
    budget.add_tokens(prompt + completion)
    return Usage(
        calls=calls,
        retries=max(0, calls - 1),
        prompt_tokens=prompt,
        completion_tokens=completion,
        failures=1 if failed else 0,
    )


def relative_rating(weights: Sequence[float]) -> list[float]:
    """Extractive ratings 0..10: log-scaled internal weight against the level's largest."""
    top = max((math.log1p(w) for w in weights), default=0.0)
    return [round(10 * math.log1p(w) / top, 2) if top > 0 else 0.0 for w in weights]
