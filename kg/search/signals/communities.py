"""Global search: questions about the whole corpus, answered from community reports.

1. **Read**: the ``community_reports`` template (read-only, guarded like every search read)
   returns the best-ranked ``KG_COMMUNITIES__GLOBAL_REPORTS`` reports of the level.
2. **Rank**: each report is scored by its rank and the overlap of its words with the question's;
   the top ``limit`` are kept. Without an LLM (the default) this is the answer: the ranked
   reports and their top findings (facts with relation and chunk ids), as context.
3. **Map** (``KG_COMMUNITIES__GLOBAL_ANSWER=llm``): batches of ``global_batch`` reports, each
   call answering :class:`MapAnswer` (rated points citing community, relation or chunk ids of
   its batch; others are rejected and re-asked).
4. **Reduce**: one call answers :class:`ReduceAnswer` from the best points, citing only what
   the points cite.

Every step is bounded: reports read (template limit), reports mapped (``limit``), points kept
for the reduce, and the LLM calls and tokens of one request (``global_max_calls``,
``global_max_tokens``; a ``RunBudget`` as in extraction). When the budget runs out the
response carries what was done, with ``stopped_by_budget``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from kg.basemodel import Model
from kg.llm import LLMCallError, Reask, StructuredLLM, open_llm
from kg.llm.budget import RunBudget
from kg.search.global_models import (
    CommunityHit,
    GlobalPoint,
    GlobalSearchRequest,
    GlobalSearchResponse,
    ReportFinding,
)
from kg.search.models import TemplateResult
from kg.search.router import STOP_WORDS, words
from kg.settings import Settings

__all__ = ["MapAnswer", "ReduceAnswer", "TemplateRunner", "global_search"]

M = TypeVar("M", bound=BaseModel)

MAX_POINTS = 30  # points handed to the reduce step
FINDINGS_PER_REPORT = 5

MAP_PROMPT = """\
You answer a question about a whole corpus from a batch of community reports of its knowledge
graph. Return the points of these reports that help answer the question: each with a
description, a score from 0 (useless) to 100 (essential), and `citations`: ids copied exactly
from the reports (community ids, or the relation and passage ids their findings cite).
Return no points if the reports do not help.
"""

REDUCE_PROMPT = """\
You answer a question about a whole corpus from rated points that analysts extracted from
community reports. Write a concise answer in the language of the question, using only the
points, and list in `citations` the ids (copied exactly from the points) that support it.
"""

USER_TEMPLATE = """\
<question>
{{ question }}
</question>
<material>
{{ material }}
</material>
"""


class TemplateRunner(Protocol):
    """What global search needs of the search service: one guarded template run."""

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult: ...


def _check(citations: Sequence[str], info: ValidationInfo) -> None:
    citable = (info.context or {}).get("citable")
    if citable is None:
        return
    unknown = sorted({c for c in citations if c not in citable})
    if unknown:
        raise ValueError(f"citations not in the material: {unknown[:10]}; cite only given ids")


class MapPoint(Model):
    description: str = Field(min_length=1, max_length=1000)
    score: float = Field(ge=0, le=100)
    citations: list[str] = Field(min_length=1, max_length=10)


class MapAnswer(Model):
    points: list[MapPoint] = Field(default_factory=list, max_length=10)

    @field_validator("points")
    @classmethod
    def _cited(cls, value: list[MapPoint], info: ValidationInfo) -> list[MapPoint]:
        _check([c for p in value for c in p.citations], info)
        return value


class ReduceAnswer(Model):
    answer: str = Field(min_length=1, max_length=6000)
    citations: list[str] = Field(min_length=1, max_length=30)

    @field_validator("citations")
    @classmethod
    def _cited(cls, value: list[str], info: ValidationInfo) -> list[str]:
        _check(value, info)
        return value


def _stems(text: str) -> set[str]:
    return {w[:5] for w in words(text) if w not in STOP_WORDS and len(w) > 2}


def _hit(row: Mapping[str, Any], question: set[str]) -> CommunityHit:
    try:
        raw = json.loads(row.get("findings") or "[]")
    except ValueError:
        raw = []
    findings = [ReportFinding.model_validate(f) for f in raw[:FINDINGS_PER_REPORT]]
    text = " ".join(
        [row.get("title") or "", row.get("summary") or ""] + [f.summary for f in findings]
    )
    overlap = len(question & _stems(text)) / len(question) if question else 0.0
    rank = float(row.get("rank") or 0.0)
    return CommunityHit(
        id=row["id"],
        level=int(row["level"]),
        size=int(row.get("size") or 0),
        title=row.get("title") or "",
        summary=row.get("summary") or "",
        rank=rank,
        score=round(0.5 * overlap + 0.5 * rank / 10, 4),
        report_kind=row.get("report_kind") or "extractive",
        findings=findings,
    )


def _material(reports: Sequence[CommunityHit]) -> tuple[str, frozenset[str]]:
    lines: list[str] = []
    citable: set[str] = set()
    for r in reports:
        citable.add(r.id)
        lines.append(f"## community {r.id}: {r.title} (rank {r.rank:.1f})\n{r.summary}")
        for f in r.findings:
            citable.update(f.citations)
            lines.append(f"- {f.summary} [{', '.join(f.citations)}]")
    return "\n".join(lines), frozenset(citable)


async def global_search(
    runner: TemplateRunner, settings: Settings, request: GlobalSearchRequest
) -> GlobalSearchResponse:
    """Ranked community reports for the question; with an LLM, map-reduced into an answer."""
    started = time.perf_counter()
    cs = settings.communities
    level = cs.global_level if request.level is None else request.level
    read = max(cs.global_reports, request.limit)
    result = await runner.run_template("community_reports", {"level": level, "limit": read})
    question = _stems(request.query)
    hits = sorted(
        (_hit(row, question) for row in result.rows), key=lambda h: (-h.score, -h.rank, h.id)
    )[: request.limit]
    response = GlobalSearchResponse(query=request.query, level=level, reports=hits, took_ms=0.0)
    if not hits:
        response.notes.append(
            f"no community reports at level {level}: run `kg communities build` first"
        )
    elif cs.global_answer == "llm":
        await _map_reduce(settings, request.query, hits, response)
    response.took_ms = round((time.perf_counter() - started) * 1000, 2)
    return response


async def _map_reduce(
    settings: Settings, query: str, hits: Sequence[CommunityHit], response: GlobalSearchResponse
) -> None:
    cs = settings.communities
    budget = RunBudget(cs.global_max_calls, cs.global_max_tokens)
    async with open_llm(settings, "reports") as client:
        batches = [hits[i : i + cs.global_batch] for i in range(0, len(hits), cs.global_batch)]
        # The reduce needs one call: the map may use all but that one.
        map_budget = RunBudget(max(1, cs.global_max_calls - 1), cs.global_max_tokens)
        maps = await asyncio.gather(
            *(_ask(client, settings, map_budget, MAP_PROMPT, query, b, MapAnswer) for b in batches)
        )
        budget.calls = map_budget.calls
        budget.tokens = map_budget.tokens
        points = [p for answer in maps if answer is not None for p in answer.points]
        points.sort(key=lambda p: -p.score)
        response.points = [GlobalPoint(**p.model_dump()) for p in points[:MAX_POINTS]]
        if response.points:
            material = "\n".join(
                f"- ({p.score:.0f}) {p.description} [{', '.join(p.citations)}]"
                for p in response.points
            )
            citable = frozenset(c for p in response.points for c in p.citations)
            reduced = await _ask_text(
                client, settings, budget, REDUCE_PROMPT, query, material, citable, ReduceAnswer
            )
            if reduced is not None:
                response.answer, response.citations = reduced.answer, reduced.citations
        else:
            response.notes.append("the map step found no relevant points")
    response.llm_calls = budget.calls
    response.llm_tokens = budget.tokens
    response.stopped_by_budget = map_budget.reason is not None or budget.reason is not None


async def _ask(
    client: StructuredLLM,
    settings: Settings,
    budget: RunBudget,
    prompt: str,
    query: str,
    batch: Sequence[CommunityHit],
    model: type[MapAnswer],
) -> MapAnswer | None:
    material, citable = _material(batch)
    return await _ask_text(client, settings, budget, prompt, query, material, citable, model)


async def _ask_text(
    client: StructuredLLM,
    settings: Settings,
    budget: RunBudget,
    prompt: str,
    query: str,
    material: str,
    citable: frozenset[str],
    model: type[M],
) -> M | None:
    """One instructor call with re-asks, every attempt reserved from ``budget``."""
    if not budget.reserve_call():
        return None
    limit = client.endpoint.max_retries + 1

    messages = [
        {"role": "system", "content": prompt},
        {"role": "user", "content": USER_TEMPLATE},
    ]
    try:
        reply = await client.create(
            model,
            messages,
            reask=Reask(limit, budget.reserve_call),
            context={"question": query, "material": material, "citable": citable},
        )
    except LLMCallError as exc:
        if exc.retried:
            budget.add_tokens(exc.usage.total_tokens)
        return None
    budget.add_tokens(reply.usage.total_tokens)
    return reply.value


class CommunityReports:
    """The global signal as a retriever: community reports ranked for the question (and, with
    ``communities.global_answer = llm``, map-reduced into an answer)."""

    def __init__(self, runner: TemplateRunner, settings: Settings) -> None:
        self._runner = runner
        self._settings = settings

    async def search(self, query: GlobalSearchRequest) -> GlobalSearchResponse:
        return await global_search(self._runner, self._settings, query)
