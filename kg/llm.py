"""One structured LLM request for the question use cases (answers, questions to templates).

The endpoint is the ``answer`` settings section, each unset field taken from ``extract``. A
request has a budget of calls and tokens (``answer.max_calls``, ``answer.max_tokens``):
instructor's re-asks (after an answer fails validation, e.g. an invented citation) claim calls
from it, and the request stops when it is spent. The openai client never retries on its own
(``max_retries=0``), so every call is counted here.

Failures become kg errors: the endpoint failing or never producing a valid answer within the
budget is an :class:`~kg.errors.ExtractionError` (``BudgetExceeded`` when the budget ran out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import instructor
import openai
from instructor.core import InstructorError, InstructorRetryException
from pydantic import BaseModel, Field, SecretStr, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_not_exception_type

from kg.errors import BudgetExceeded, ExtractionError
from kg.settings import Settings

__all__ = ["LLMEndpoint", "LLMUsage", "ReaskFailed", "ask"]

M = TypeVar("M", bound=BaseModel)

_MODES: dict[str, instructor.Mode] = {
    "tools": instructor.Mode.TOOLS,
    "json": instructor.Mode.JSON,
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "md_json": instructor.Mode.MD_JSON,
}


class LLMUsage(BaseModel):
    """What one request cost at the LLM endpoint."""

    calls: int = Field(0, description="Chat-completion calls, re-asks included.")
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class LLMEndpoint:
    """The resolved endpoint and per-request bounds (``answer`` over ``extract``)."""

    base_url: str
    api_key: SecretStr
    model: str
    mode: str
    temperature: float
    timeout_s: float
    max_retries: int
    max_calls: int
    max_tokens: int

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMEndpoint:
        answer, extract = settings.answer, settings.extract
        return cls(
            base_url=answer.base_url or extract.base_url,
            api_key=answer.api_key if answer.api_key is not None else extract.api_key,
            model=answer.model or extract.model,
            mode=answer.mode or extract.mode,
            temperature=answer.temperature,
            timeout_s=answer.timeout_s,
            max_retries=answer.max_retries,
            max_calls=answer.max_calls,
            max_tokens=answer.max_tokens,
        )


class ReaskFailed(ExtractionError):
    """Every allowed attempt answered, but none validated; ``error`` is the last reason."""

    def __init__(self, message: str, error: ValidationError | None, usage: LLMUsage) -> None:
        super().__init__(message)
        self.error = error
        self.usage = usage


class _Meter:
    def __init__(self, endpoint: LLMEndpoint) -> None:
        self.endpoint = endpoint
        self.usage = LLMUsage()
        self.budget_hit: str | None = None

    def claim_call(self) -> bool:
        if self.usage.calls >= self.endpoint.max_calls:
            self.budget_hit = f"the request's budget of {self.endpoint.max_calls} LLM calls"
            return False
        if self.usage.total_tokens >= self.endpoint.max_tokens:
            self.budget_hit = f"the request's budget of {self.endpoint.max_tokens} tokens"
            return False
        self.usage.calls += 1
        return True

    def add(self, usage: Any) -> None:
        self.usage.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.usage.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)


async def ask(
    endpoint: LLMEndpoint,
    response_model: type[M],
    messages: Sequence[Mapping[str, str]],
    *,
    context: Mapping[str, Any],
) -> tuple[M, LLMUsage]:
    """One validated answer of ``response_model``; re-asks within the request's budget.

    ``context`` is instructor's validation context (what the model's validators check
    against, e.g. the ids that may be cited).
    """
    meter = _Meter(endpoint)
    if not meter.claim_call():  # max_calls >= 1 by settings; a zero budget still says so
        raise BudgetExceeded(f"stopped before asking: {meter.budget_hit}")
    limit = endpoint.max_retries + 1

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= limit:
            return True
        return not meter.claim_call()

    retrying = AsyncRetrying(
        stop=stop, retry=retry_if_not_exception_type((openai.APIError,)), reraise=True
    )
    async with openai.AsyncOpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key.get_secret_value(),
        timeout=endpoint.timeout_s,
        max_retries=0,
    ) as raw:
        client = instructor.from_openai(raw, mode=_MODES[endpoint.mode])
        try:
            result, completion = await client.chat.completions.create_with_completion(
                model=endpoint.model,
                messages=list(messages),  # type: ignore[arg-type]
                response_model=response_model,
                max_retries=retrying,
                context=dict(context),
                temperature=endpoint.temperature,
            )
        except InstructorRetryException as exc:
            meter.add(exc.total_usage)
            cause = exc.__cause__
            if isinstance(cause, openai.APIError):
                raise ExtractionError(f"the LLM endpoint failed: {_describe(cause)}") from cause
            last = cause if isinstance(cause, ValidationError) else None
            why = f" ({meter.budget_hit} was spent)" if meter.budget_hit else ""
            raise ReaskFailed(
                f"the LLM gave no valid answer in {exc.n_attempts} attempt(s){why}: {_short(exc)}",
                last,
                meter.usage,
            ) from exc
        except openai.APIError as exc:
            raise ExtractionError(f"the LLM endpoint failed: {_describe(exc)}") from exc
        except InstructorError as exc:  # e.g. output cut off (finish_reason=length)
            raise ExtractionError(f"the LLM's answer was unusable: {_short(exc)}") from exc
    meter.add(getattr(completion, "usage", None))
    # A clean copy: instructor hangs the raw completion on the model it returns.
    clean = response_model.model_validate(result.model_dump(mode="json"), context=dict(context))
    return clean, meter.usage


def _describe(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    return type(exc).__name__


def _short(exc: BaseException, limit: int = 400) -> str:
    last = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(last, ValidationError):
        text = "; ".join(
            ".".join(str(p) for p in err["loc"]) + ": " + err["msg"]
            for err in last.errors(include_url=False, include_input=False)
        )
    else:
        text = " ".join(str(last).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
