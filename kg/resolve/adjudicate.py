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
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from kg.errors import ResolutionError

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


class SameEntity(BaseModel):
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
    """instructor over any OpenAI-compatible chat endpoint; the client is made on first use."""

    base_url: str
    api_key: str
    model: str
    mode: str = "tools"
    max_retries: int = 1
    timeout_s: float = 60.0
    max_calls: int | None = 500
    usage: AdjudicationUsage = field(default_factory=AdjudicationUsage)
    _client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            import instructor
            import openai

            modes = {
                "tools": instructor.Mode.TOOLS,
                "json": instructor.Mode.JSON,
                "json_schema": instructor.Mode.JSON_SCHEMA,
                "md_json": instructor.Mode.MD_JSON,
            }
            if self.mode not in modes:
                raise ResolutionError(f"unknown instructor mode {self.mode!r}")
            raw = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
            )
            self._client = instructor.from_openai(raw, mode=modes[self.mode])
        return self._client

    def same(self, a: Side, b: Side, score: float) -> bool:
        """Ask once per pair; over ``max_calls`` the pair is kept apart and counted as skipped."""
        import openai
        from instructor.core import InstructorError, InstructorRetryException

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
            verdict, completion = client.chat.completions.create_with_completion(
                model=self.model,
                messages=messages,
                response_model=SameEntity,
                max_retries=self.max_retries,
                temperature=0.0,
            )
        except InstructorRetryException as exc:
            self._add_usage(exc.total_usage)
            self.usage.failures += 1
            log.warning("adjudication of %r / %r failed: %s", a.name, b.name, exc)
            return False
        except (InstructorError, openai.OpenAIError, OSError) as exc:
            self.usage.failures += 1
            log.warning("adjudication of %r / %r failed: %s", a.name, b.name, exc)
            return False
        self._add_usage(getattr(completion, "usage", None))
        log.debug("adjudicated %r / %r: %s (%s)", a.name, b.name, verdict.same, verdict.reason)
        return bool(verdict.same)

    def _add_usage(self, usage: Any) -> None:
        self.usage.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.usage.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)


def make_adjudicator(settings: Settings) -> LLMAdjudicator | None:
    """An adjudicator on the extraction endpoint; None when ``llm_adjudication`` is off."""
    if not settings.resolve.llm_adjudication:
        return None
    extract = settings.extract
    return LLMAdjudicator(
        base_url=extract.base_url,
        api_key=extract.api_key.get_secret_value(),
        model=extract.model,
        mode=extract.mode,
        max_retries=extract.max_retries,
        timeout_s=extract.timeout_s,
        max_calls=settings.resolve.llm_max_calls,
    )
