"""``kg eval``: a user's own check of search on their own corpus and questions.

A questions file is JSONL, one ``{"question": ..., "gold": [document paths or ids],
"namespace": ...?}`` a line. Every question runs in every mode asked for; the documents of the
chunks each mode returns, in their order, are scored against the gold documents: hit@1/3/5,
recall@5, MRR, and the median and p95 latency as the caller sees it. Bad lines are reported
by line number and skipped: a typo in line 40 must not cost the other 99 questions.

Scoring is by document, not chunk: a user labels which file answers a question, and a
document's chunks are an artefact of chunking. ``global`` returns community reports, not
documents, so it is not a mode here.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from kg.basemodel import Model
from kg.errors import ConfigError, KGError
from kg.search.global_models import RoutedRequest, RoutedResponse
from kg.search.models import ChunkHit

EvalMode = Literal["text", "vector", "graph", "hybrid", "auto"]
EVAL_MODES: tuple[EvalMode, ...] = ("text", "vector", "graph", "hybrid", "auto")
#: The ranks scored; the search asks for at least the largest.
HIT_AT = (1, 3, 5)
#: The most questions one file may hold, and the longest line read: bounded like every input.
MAX_QUESTIONS = 10_000
MAX_LINE_CHARS = 20_000


@dataclass(frozen=True)
class EvalQuestion:
    """One labelled question: which documents (paths or ids) answer it."""

    question: str
    gold: tuple[str, ...]
    namespace: str | None = None
    line: int = 0


class SkippedLine(Model):
    line: int
    reason: str


class ModeScore(Model):
    """One mode over every question (ratios in 0..1; latency in milliseconds)."""

    mode: EvalMode
    questions: int
    hit_at_1: float
    hit_at_3: float
    hit_at_5: float
    recall_at_5: float
    mrr: float
    median_ms: float
    p95_ms: float
    errors: int = Field(0, description="Searches that failed (each counted as a miss).")


class EvalReport(Model):
    questions: int
    skipped: list[SkippedLine]
    modes: list[ModeScore]
    recommended: EvalMode | None = Field(
        None, description="The mode to use: the best hit@3, then MRR, then the fastest."
    )
    reason: str = ""


def read_questions(path: Path) -> tuple[list[EvalQuestion], list[SkippedLine]]:
    """The questions of a JSONL file, and the lines skipped with why."""
    if not path.is_file():
        raise ConfigError(f"questions file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the questions file {path}: {exc}") from exc
    return parse_questions(lines)


def parse_questions(lines: Iterable[str]) -> tuple[list[EvalQuestion], list[SkippedLine]]:
    questions: list[EvalQuestion] = []
    skipped: list[SkippedLine] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if len(questions) >= MAX_QUESTIONS:
            skipped.append(SkippedLine(line=number, reason=f"past {MAX_QUESTIONS} questions"))
            continue
        try:
            questions.append(_question(raw, number))
        except ValueError as exc:
            skipped.append(SkippedLine(line=number, reason=str(exc)))
    return questions, skipped


def _question(raw: str, number: int) -> EvalQuestion:
    if len(raw) > MAX_LINE_CHARS:
        raise ValueError(f"line longer than {MAX_LINE_CHARS} characters")
    try:
        item = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(item, dict):
        raise ValueError("not a JSON object")
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError('"question" must be a non-empty string')
    gold = item.get("gold")
    if isinstance(gold, str):
        gold = [gold]
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) and g for g in gold):
        raise ValueError('"gold" must be a document path or id, or a non-empty list of them')
    namespace = item.get("namespace")
    if namespace is not None and not (isinstance(namespace, str) and namespace):
        raise ValueError('"namespace" must be a non-empty string when given')
    unknown = sorted(set(item) - {"question", "gold", "namespace"})
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(unknown)}")
    return EvalQuestion(question.strip(), tuple(gold), namespace, number)


def is_gold(gold: str, document_id: str, document_path: str) -> bool:
    """A gold label names a document by its id, its path, or a path that ends in the other at a
    folder boundary (``docs/auth.md`` and ``auth.md`` when the folder ``docs`` was ingested)."""
    label = gold.strip().replace("\\", "/").removeprefix("./")
    if label in (document_id, document_path):
        return True
    return label.endswith("/" + document_path) or document_path.endswith("/" + label)


def ranked_documents(chunks: Sequence[ChunkHit]) -> list[tuple[str, str]]:
    """The documents of the chunks, first appearance first: (id, path)."""
    seen: dict[str, str] = {}
    for chunk in chunks:
        seen.setdefault(chunk.document_id, chunk.document_path)
    return list(seen.items())


@dataclass
class _Tally:
    hits: dict[int, int]
    recall: float = 0.0
    reciprocal: float = 0.0
    errors: int = 0

    def add(self, ranked: list[tuple[str, str]], gold: tuple[str, ...]) -> None:
        found = [any(is_gold(g, did, path) for g in gold) for did, path in ranked]
        first = next((rank for rank, ok in enumerate(found, start=1) if ok), None)
        for k in HIT_AT:
            self.hits[k] += first is not None and first <= k
        if first is not None:
            self.reciprocal += 1 / first
        top = ranked[: max(HIT_AT)]
        self.recall += sum(any(is_gold(g, d, p) for d, p in top) for g in gold) / len(gold)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


async def evaluate(
    search: Callable[[RoutedRequest], Awaitable[RoutedResponse]],
    questions: Sequence[EvalQuestion],
    *,
    modes: Sequence[EvalMode] = EVAL_MODES,
    depth: int = 2,
    limit: int = 10,
    skipped: Sequence[SkippedLine] = (),
    progress: Callable[[], Any] | None = None,
) -> EvalReport:
    """Every question in every mode, one at a time (latency is the caller's, unshared; each
    mode's first question runs once untimed before, as a warm server would have it)."""
    if not questions:
        raise ConfigError("no questions to evaluate (every line was skipped or the file is empty)")
    unknown = [m for m in modes if m not in EVAL_MODES]
    if unknown:
        raise ConfigError(f"unknown mode(s) {unknown}; choose from {', '.join(EVAL_MODES)}")
    limit = max(limit, max(HIT_AT))
    scores: list[ModeScore] = []
    for mode in dict.fromkeys(modes):
        tally = _Tally(hits=dict.fromkeys(HIT_AT, 0))
        times: list[float] = []
        with contextlib.suppress(KGError):  # untimed: a mode's first search plans its reads
            await search(_request(questions[0], mode, depth, limit))
        for item in questions:
            request = _request(item, mode, depth, limit)
            started = time.perf_counter()
            try:
                response = await search(request)
            except KGError:
                tally.errors += 1
                response = None
            times.append((time.perf_counter() - started) * 1000)
            chunks = response.local.chunks if response and response.local else []
            tally.add(ranked_documents(chunks), item.gold)
            if progress is not None:
                progress()
        n = len(questions)
        scores.append(
            ModeScore(
                mode=mode,
                questions=n,
                hit_at_1=tally.hits[1] / n,
                hit_at_3=tally.hits[3] / n,
                hit_at_5=tally.hits[5] / n,
                recall_at_5=tally.recall / n,
                mrr=tally.reciprocal / n,
                median_ms=round(statistics.median(times), 1),
                p95_ms=round(_p95(times), 1),
                errors=tally.errors,
            )
        )
    recommended, reason = recommend(scores)
    return EvalReport(
        questions=len(questions),
        skipped=list(skipped),
        modes=scores,
        recommended=recommended,
        reason=reason,
    )


def _request(item: EvalQuestion, mode: EvalMode, depth: int, limit: int) -> RoutedRequest:
    namespaces = [item.namespace] if item.namespace else None
    return RoutedRequest(
        query=item.question, mode=mode, depth=depth, limit=limit, namespaces=namespaces
    )


def recommend(scores: Sequence[ModeScore]) -> tuple[EvalMode | None, str]:
    """The best hit@3, then MRR; among modes within a question of it, the fastest.

    "Within a question": on a small set one question is noise, and a user pays latency on
    every search. ``auto`` wins a tie it is in: it is the default and adapts per question.
    """
    if not scores:
        return None, ""
    n = scores[0].questions
    best = max(scores, key=lambda s: (s.hit_at_3, s.mrr))
    slack = 1 / n if n else 0.0
    near = [
        s
        for s in scores
        if s.hit_at_3 >= best.hit_at_3 - slack - 1e-9 and s.mrr >= best.mrr - slack - 1e-9
    ]
    auto = next((s for s in near if s.mode == "auto"), None)
    fastest = min(near, key=lambda s: s.median_ms)
    pick = auto if auto is not None and auto.median_ms <= 2 * fastest.median_ms else fastest
    reason = (
        f"{pick.mode}: hit@3 {pick.hit_at_3:.2f}, MRR {pick.mrr:.2f}, median {pick.median_ms} ms"
    )
    if (pick.hit_at_3, pick.mrr) < (best.hit_at_3, best.mrr):
        reason += (
            f" (best {best.mode}: hit@3 {best.hit_at_3:.2f}, MRR {best.mrr:.2f}, "
            f"median {best.median_ms} ms; within one question of it, and faster or the default)"
        )
    return pick.mode, reason
