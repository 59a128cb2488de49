"""Counting what extraction costs, stopping at a ceiling, and estimating before spending.

``Usage`` is what a chunk, a document or a run consumed. ``RunBudget`` is the ceiling for one
run: every HTTP call to the LLM (first try, re-ask, or retry after a 429) must reserve a slot
first, so ``max_calls`` is never exceeded. Token counts are only known after a call returns, so
``max_tokens`` stops new calls once reached; calls already in flight may overshoot it a little.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kg.documents import count_tokens
from kg.extract.prompts import USER_TEMPLATE, render_system_prompt
from kg.extract.schema import ExtractionResult
from kg.llm.budget import RunBudget
from kg.llm.endpoint import extract_endpoint
from kg.models import Chunk
from kg.settings import ExtractSettings

if TYPE_CHECKING:
    from kg.extract.cache import ExtractionCache
    from kg.extract.ontology import Ontology

__all__ = ["Estimate", "RunBudget", "Usage", "estimate"]

# An extraction's JSON answer is usually a bit shorter than the passage it describes.
COMPLETION_RATIO = 0.6
MIN_COMPLETION_TOKENS = 40


@dataclass(frozen=True)
class Usage:
    """Calls (HTTP requests), retries (re-asks + transient retries), tokens, hits, failures."""

    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    failures: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.retries + other.retries,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cache_hits + other.cache_hits,
            self.failures + other.failures,
        )


@dataclass(frozen=True)
class Estimate:
    """What a run would cost without re-asks: for ``--dry-run``. ``cached`` chunks are free."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def estimate(
    chunks: Sequence[Chunk],
    settings: ExtractSettings,
    *,
    ontology: Ontology | None = None,
    cache: ExtractionCache | None = None,
) -> Estimate:
    """Approximate calls and tokens for extracting ``chunks``; makes no LLM call.

    Each call carries the system prompt, the JSON schema of the answer and the chunk; the
    answer is guessed at ``COMPLETION_RATIO`` of the chunk. With a cache, chunks already
    extracted under the same model, prompt and schema versions are counted as ``cached``.
    """
    overhead = (
        count_tokens(render_system_prompt(ontology))
        + count_tokens(USER_TEMPLATE)
        + count_tokens(json.dumps(ExtractionResult.model_json_schema()))
    )
    model = extract_endpoint(settings).model
    calls = prompt = completion = cached = 0
    for chunk in chunks:
        if cache is not None and cache.contains(chunk.sha256, model, ontology):
            cached += 1
            continue
        tokens = count_tokens(chunk.text)
        calls += 1
        prompt += overhead + tokens
        completion += max(MIN_COMPLETION_TOKENS, round(tokens * COMPLETION_RATIO))
    return Estimate(calls, prompt, completion, cached)
