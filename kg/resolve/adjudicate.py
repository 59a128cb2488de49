"""Optional LLM adjudication for pairs in the uncertain band (off by default).

Why only the band: below ``uncertain_threshold`` the pair is clearly apart, at or above
``merge_threshold`` clearly together; asking an LLM about those would cost calls and add
noise. Calls and tokens are counted like extraction calls, and ``max_calls`` bounds a run.
A failed call (endpoint down, invalid answer after re-asks) counts as "not the same": keeping
two nodes apart is recoverable, a wrong merge pollutes the graph.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pydantic import Field, SecretStr

from kg.basemodel import Model
from kg.errors import ResolutionError
from kg.llm import (
    Endpoint,
    LLMCallError,
    SyncStructuredLLM,
    TokenUsage,
    resolve_endpoint,
    sync_llm_client,
)

if TYPE_CHECKING:
    from kg.settings import Settings

log = logging.getLogger(__name__)

PROMPT_VERSION = "resolve-adjudicate-v1"
SYSTEM_PROMPT = (
    "You decide whether two entity mentions from a knowledge graph refer to the same "
    "real-world entity. Names may be abbreviated, transliterated (Russian/English) or "
    "misspelt. Different things with similar names (authentication vs authorization, Java "
    "vs JavaScript) are NOT the same. Answer with same=true only when you are confident."
)


class SameEntity(Model):
    """The LLM's verdict on one pair."""

    same: bool = Field(description="true only if both mentions name the same entity")
    reason: str = Field(description="one short sentence")


@dataclass(frozen=True)
class Side:
    """One side of a pair as shown to the adjudicator."""

    name: str
    type: str
    description: str = ""
    aliases: tuple[str, ...] = ()

    def render(self) -> str:
        lines = [f"name: {self.name}", f"type: {self.type}"]
        if self.aliases:
            lines.append("aliases: " + ", ".join(self.aliases[:10]))
        if self.description:
            lines.append(f"description: {self.description[:500]}")
        return "\n".join(lines)


class Adjudicator(Protocol):
    """Decides uncertain pairs; the resolver asks it nothing else."""

    def same(self, a: Side, b: Side, score: float) -> bool: ...


@dataclass
class AdjudicationUsage:
    """Calls (HTTP requests), tokens and failures, named like extraction's usage."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    skipped: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class LLMAdjudicator:
    """Any OpenAI-compatible chat endpoint through the LLM seam (:mod:`kg.llm`, use
    ``adjudicate``); the client connects on first use."""

    base_url: str
    api_key: str
    model: str
    mode: str = "tools"
    max_retries: int = 1
    timeout_s: float = 60.0
    max_calls: int | None = 500
    usage: AdjudicationUsage = field(default_factory=AdjudicationUsage)
    _client: SyncStructuredLLM | None = None

    @classmethod
    def for_endpoint(cls, endpoint: Endpoint, max_calls: int | None) -> LLMAdjudicator:
        return cls(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key.get_secret_value(),
            model=endpoint.model,
            mode=endpoint.mode,
            max_retries=endpoint.max_retries,
            timeout_s=endpoint.timeout_s,
            max_calls=max_calls,
        )

    def _get_client(self) -> SyncStructuredLLM:
        if self._client is None:
            if self.mode not in ("tools", "json", "json_schema", "md_json"):
                raise ResolutionError(f"unknown instructor mode {self.mode!r}")
            endpoint = Endpoint(
                use="adjudicate",
                base_url=self.base_url,
                api_key=SecretStr(self.api_key),
                model=self.model,
                mode=self.mode,
                temperature=0.0,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                concurrency=1,
                max_calls=None,
                max_tokens=None,
            )
            self._client = sync_llm_client(endpoint)
        return self._client

    def same(self, a: Side, b: Side, score: float) -> bool:
        """Ask once per pair; over ``max_calls`` the pair is kept apart and counted as skipped."""
        if self.max_calls is not None and self.usage.calls >= self.max_calls:
            self.usage.skipped += 1
            return False
        client = self._get_client()
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": f"Mention A:\n{a.render()}\n\nMention B:\n{b.render()}\n\n"
                f"String similarity score: {score:.2f}. Same entity?",
            },
        ]
        self.usage.calls += 1
        try:
            reply = client.create(SameEntity, messages, reask=self.max_retries, temperature=0.0)
        except LLMCallError as exc:
            if exc.retried:
                self._add_usage(exc.usage)
            self.usage.failures += 1
            log.warning("adjudication of %r / %r failed: %s", a.name, b.name, exc.__cause__ or exc)
            return False
        except OSError as exc:
            self.usage.failures += 1
            log.warning("adjudication of %r / %r failed: %s", a.name, b.name, exc)
            return False
        verdict = reply.value
        self._add_usage(reply.usage)
        log.debug("adjudicated %r / %r: %s (%s)", a.name, b.name, verdict.same, verdict.reason)
        return bool(verdict.same)

    def _add_usage(self, usage: TokenUsage) -> None:
        self.usage.prompt_tokens += usage.prompt_tokens
        self.usage.completion_tokens += usage.completion_tokens


def make_adjudicator(settings: Settings) -> LLMAdjudicator | None:
    """An adjudicator on the ``adjudicate`` endpoint; None when ``llm_adjudication`` is off."""
    if not settings.resolve.llm_adjudication:
        return None
    return LLMAdjudicator.for_endpoint(
        resolve_endpoint(settings, "adjudicate"), settings.resolve.llm_max_calls
    )
