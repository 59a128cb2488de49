"""The seam every LLM use goes through: one structured call, one embeddings call, their errors.

A :class:`StructuredLLM` answers a chat with a validated pydantic model (instructor re-asks
with the validation error), or streams it: partial models as the endpoint writes, then the
complete one, validated once (a stream is never re-asked). The openai and instructor
exceptions never leave kg/llm: a failed call raises one of

- :class:`LLMEndpointError`: the endpoint failed (HTTP status, timeout, connection);
- :class:`LLMInvalidOutput`: every allowed attempt answered, none validated;
- :class:`LLMUnusableOutput`: the answer could not be used at all (e.g. cut off).

All three are :class:`~kg.errors.ExtractionError` and carry the tokens the call spent.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from kg.errors import ExtractionError
from kg.llm.endpoint import Endpoint

__all__ = [
    "EmbeddingsClient",
    "EmbeddingsReply",
    "LLMCallError",
    "LLMEndpointError",
    "LLMInvalidOutput",
    "LLMUnusableOutput",
    "Reask",
    "Reply",
    "Streamed",
    "StructuredLLM",
    "SyncStructuredLLM",
    "TokenUsage",
]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class TokenUsage:
    """Tokens one call (re-asks included) spent, as kg counted them (:mod:`kg.llm.bounded`:
    the endpoint's report only where it agrees with the texts' length)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, raw: Any) -> TokenUsage:
        """From an openai ``usage`` object (or None)."""
        return cls(
            int(getattr(raw, "prompt_tokens", 0) or 0),
            int(getattr(raw, "completion_tokens", 0) or 0),
            int(getattr(raw, "total_tokens", 0) or 0),
        )


@dataclass
class CallMeter:
    """Tokens of one structured call, re-asks included, as kg counted them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    exchanges: int = 0

    def usage(self) -> TokenUsage:
        total = self.prompt_tokens + self.completion_tokens
        return TokenUsage(self.prompt_tokens, self.completion_tokens, total)


_CALL_METER: contextvars.ContextVar[CallMeter | None] = contextvars.ContextVar(
    "kg_llm_meter", default=None
)


class metering:
    """``with metering() as meter:`` counts the chat exchanges made inside the block."""

    def __init__(self) -> None:
        self.meter = CallMeter()
        self._token: contextvars.Token[CallMeter | None] | None = None

    def __enter__(self) -> CallMeter:
        self._token = _CALL_METER.set(self.meter)
        return self.meter

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CALL_METER.reset(self._token)


def current_meter() -> CallMeter | None:
    """The meter of the structured call running in this task or thread, if any."""
    return _CALL_METER.get()


@dataclass(frozen=True)
class Reply(Generic[M]):
    """A validated answer and what it cost."""

    value: M
    usage: TokenUsage


@dataclass(frozen=True)
class Streamed(Generic[M]):
    """One step of a streamed answer. Before the end, ``value`` is the model so far (built
    without validation: fields not yet written are None) and ``usage`` is None; the last step
    has ``done`` set, the complete model validated, and what the call cost."""

    value: M
    done: bool = False
    usage: TokenUsage | None = None


@dataclass(frozen=True)
class Reask:
    """How many attempts a call may make; ``claim`` is asked before each re-ask (a budget).

    HTTP errors are never re-asked: they end the call as :class:`LLMEndpointError`.
    """

    attempts: int
    claim: Callable[[], bool] | None = None


class LLMCallError(ExtractionError):
    """One structured call failed; ``reason`` is the underlying error's text."""

    def __init__(
        self,
        reason: str,
        *,
        usage: TokenUsage | None = None,
        n_attempts: int = 1,
        retried: bool = True,
        plain: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage or TokenUsage()
        self.n_attempts = n_attempts
        self.retried = retried  # False: the error came before instructor's re-ask loop
        self.plain = plain or reason  # "<ExceptionType>: <message>" of the underlying error


class LLMEndpointError(LLMCallError):
    """The endpoint failed: ``detail`` names it ("timeout", "HTTP 503: ...")."""

    def __init__(
        self,
        reason: str,
        *,
        detail: str,
        brief: str,
        status: int | None = None,
        transient: bool = False,
        fatal: bool = False,
        retry_after: float | None = None,
        connection: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(reason, **kwargs)
        self.detail = detail
        self.brief = brief  # without the server's message: "HTTP 503", "timeout"
        self.status = status
        self.transient = transient  # 429, 5xx, timeouts, connection errors: back off and retry
        self.fatal = fatal  # 401/403/404: wrong key, model or URL, every call would fail so
        self.retry_after = retry_after
        self.connection = connection  # no answer at all: nothing listens there, or unreachable
        self.timed_out = brief == "timeout"


class LLMInvalidOutput(LLMCallError):
    """Every attempt answered, none validated; the last completion is kept for salvage."""

    def __init__(
        self,
        reason: str,
        *,
        last_completion: Any = None,
        validation_error: ValidationError | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(reason, **kwargs)
        self.last_completion = last_completion
        self.validation_error = validation_error


class LLMUnusableOutput(LLMCallError):
    """The answer could not be parsed at all (e.g. cut off at the token limit)."""


class StructuredLLM(Protocol):
    """One OpenAI-compatible chat endpoint answering with validated models (async).

    Used as ``async with``: the HTTP client lives between enter and exit.
    """

    @property
    def endpoint(self) -> Endpoint:
        """What the client calls, with which model and bounds."""
        ...

    async def __aenter__(self) -> StructuredLLM: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def create(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        reask: Reask | int,
        context: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> Reply[M]:
        """The answer as ``response_model``; ``messages`` may use ``{{ context }}`` keys.

        ``reask``: a :class:`Reask`, or instructor's own count of re-asks (an int).
        """
        ...

    def stream(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        context: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> AsyncGenerator[Streamed[M], None]:
        """The answer as it is written: partial models, then the complete one validated
        against ``context``; one attempt, never re-asked. The same bounds hold as for
        :meth:`create` (bytes, deadline, metered tokens); a failure raises the same errors.
        Closing the iterator early (or cancelling its task) closes the connection."""
        ...


class SyncStructuredLLM(Protocol):
    """The blocking twin, for callers in sync code (entity resolution)."""

    @property
    def endpoint(self) -> Endpoint: ...

    def create(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        reask: Reask | int,
        context: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> Reply[M]: ...


@dataclass(frozen=True)
class EmbeddingsReply:
    """Vectors by input index, and the tokens the endpoint counted (None: not reported)."""

    vectors: list[tuple[int, list[float]]] = field(default_factory=list)
    tokens: int | None = None


class EmbeddingsClient(Protocol):
    """An OpenAI-compatible ``/embeddings`` endpoint (blocking); raises LLMEndpointError."""

    def create(
        self, model: str, texts: Sequence[str], *, dimensions: int | None
    ) -> EmbeddingsReply: ...
