"""One structured LLM request for the question use cases (answers, questions to templates,
translation).

The endpoint is the use's settings section over ``llm`` (:mod:`kg.llm.endpoint`). A request
has a budget of calls and tokens (``answer.max_calls``, ``answer.max_tokens``): instructor's
re-asks (after an answer fails validation, e.g. an invented citation) claim calls from it, and
the request stops when it is spent. The client never retries on its own, so every call is
counted here.

Failures become kg errors: the endpoint failing or never producing a valid answer within the
budget is an :class:`~kg.errors.ExtractionError` (``BudgetExceeded`` when the budget ran out).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from kg.basemodel import Model
from kg.errors import BudgetExceeded, ExtractionError
from kg.llm.endpoint import Endpoint
from kg.llm.factory import llm_client
from kg.llm.protocol import (
    LLMCallError,
    LLMEndpointError,
    LLMInvalidOutput,
    LLMUnusableOutput,
    Reask,
    TokenUsage,
    current_meter,
)

__all__ = ["LLMEndpoint", "LLMUsage", "ReaskFailed", "ask", "ask_stream"]

M = TypeVar("M", bound=BaseModel)

#: The resolved endpoint of a request (kept under its old name for answers and questions).
LLMEndpoint = Endpoint


class LLMUsage(Model):
    """What one request cost at the LLM endpoint."""

    calls: int = Field(0, description="Chat-completion calls, re-asks included.")
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ReaskFailed(ExtractionError):
    """Every allowed attempt answered, but none validated; ``error`` is the last reason."""

    def __init__(self, message: str, error: ValidationError | None, usage: LLMUsage) -> None:
        super().__init__(message)
        self.error = error
        self.usage = usage


class _Meter:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.usage = LLMUsage()
        self.budget_hit: str | None = None

    def claim_call(self) -> bool:
        max_calls, max_tokens = self.endpoint.max_calls, self.endpoint.max_tokens
        if max_calls is not None and self.usage.calls >= max_calls:
            self.budget_hit = f"the request's budget of {self.endpoint.max_calls} LLM calls"
            return False
        # Before a re-ask, the call in progress has spent tokens too (kg's count of them).
        live = current_meter()
        spent = self.usage.total_tokens + (live.usage().total_tokens if live else 0)
        if max_tokens is not None and spent >= max_tokens:
            self.budget_hit = f"the request's budget of {self.endpoint.max_tokens} tokens"
            return False
        self.usage.calls += 1
        return True

    def add(self, usage: TokenUsage) -> None:
        self.usage.prompt_tokens += usage.prompt_tokens
        self.usage.completion_tokens += usage.completion_tokens


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
    meter = _started(endpoint)
    reask = Reask(endpoint.max_retries + 1, meter.claim_call)
    try:
        async with llm_client(endpoint) as client:
            reply = await client.create(response_model, messages, reask=reask, context=context)
    except _HANDLED as exc:
        raise _failed(exc, meter) from exc
    meter.add(reply.usage)
    return _clean(response_model, reply.value, context), meter.usage


async def ask_stream(
    endpoint: LLMEndpoint,
    response_model: type[M],
    messages: Sequence[Mapping[str, str]],
    *,
    context: Mapping[str, Any],
) -> AsyncGenerator[M | tuple[M, LLMUsage], None]:
    """:func:`ask` as it is written: the model so far (partial: fields not yet written are
    None), then one ``(answer, usage)`` validated as :func:`ask` validates it. One call of the
    request's budget, never re-asked: an answer that does not validate raises
    :class:`ReaskFailed` after one attempt, the same errors as :func:`ask` otherwise."""
    meter = _started(endpoint)
    try:
        async with llm_client(endpoint) as client:
            steps = client.stream(response_model, messages, context=context)
            async with aclosing(steps):
                async for step in steps:
                    if not step.done:
                        yield step.value
                        continue
                    meter.add(step.usage or TokenUsage())
                    yield _clean(response_model, step.value, context), meter.usage
    except _HANDLED as exc:
        raise _failed(exc, meter) from exc


_HANDLED = (LLMEndpointError, LLMInvalidOutput, LLMUnusableOutput)


def _started(endpoint: Endpoint) -> _Meter:
    """A request's meter, its first call claimed."""
    meter = _Meter(endpoint)
    if not meter.claim_call():  # max_calls >= 1 by settings; a zero budget still says so
        raise BudgetExceeded(f"stopped before asking: {meter.budget_hit}")
    return meter


def _clean(response_model: type[M], value: M, context: Mapping[str, Any]) -> M:
    """A clean copy, validated again: instructor hangs the raw completion on its model."""
    return response_model.model_validate(value.model_dump(mode="json"), context=dict(context))


def _failed(exc: LLMCallError, meter: _Meter) -> ExtractionError:
    """The seam's error as the kg error of a request (the tokens it spent counted)."""
    endpoint = meter.endpoint
    if isinstance(exc, LLMEndpointError):
        meter.add(exc.usage)
        return ExtractionError(
            endpoint.failed(
                exc.brief, status=exc.status, connection=exc.connection, timed_out=exc.timed_out
            )
        )
    if isinstance(exc, LLMInvalidOutput):
        meter.add(exc.usage)
        why = f" ({meter.budget_hit} was spent)" if meter.budget_hit else ""
        last = _short(exc.__cause__ or exc)
        return ReaskFailed(
            f"the LLM gave no valid answer in {exc.n_attempts} attempt(s){why}: {last}",
            exc.validation_error,
            meter.usage,
        )
    # e.g. output cut off (finish_reason=length)
    return ExtractionError(f"the LLM's answer was unusable: {_short(exc.__cause__ or exc)}")


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
