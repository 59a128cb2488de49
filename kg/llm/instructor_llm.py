"""The one place that builds openai and instructor clients (imported only when one is built).

The openai client never retries on its own for chat (``max_retries=0``): re-asks are
instructor's, backoff is the caller's, so every call is counted by kg.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, TypeVar

import httpx2
import instructor
import openai
from instructor.core import InstructorError, InstructorRetryException
from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception

from kg import observe
from kg.llm.bounded import BoundedAsyncTransport, BoundedTransport, ResponseTooLarge, proxy_for
from kg.llm.endpoint import Endpoint
from kg.llm.protocol import (
    EmbeddingsReply,
    LLMCallError,
    LLMEndpointError,
    LLMInvalidOutput,
    LLMUnusableOutput,
    Reask,
    Reply,
    Streamed,
    TokenUsage,
    metering,
)

__all__ = ["InstructorLLM", "OpenAIEmbeddings", "SyncInstructorLLM"]

M = TypeVar("M", bound=BaseModel)

MODES: dict[str, instructor.Mode] = {
    "tools": instructor.Mode.TOOLS,
    "json": instructor.Mode.JSON,
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "md_json": instructor.Mode.MD_JSON,
}

# The endpoint or key is wrong: every call would fail the same way.
_FATAL = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


def _mode(endpoint: Endpoint) -> instructor.Mode:
    try:
        return MODES[endpoint.mode]
    except KeyError:
        raise LLMCallError(f"unknown instructor mode {endpoint.mode!r}") from None


def _stop(reask: Reask) -> Any:
    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= reask.attempts:
            return True
        return reask.claim is not None and not reask.claim()

    return stop


def _reaskable(exc: BaseException) -> bool:
    """Re-ask after a parse or validation failure only: never after an HTTP error (the
    caller's backoff decides), and never after a cancellation (a deadline or a client that
    went away must end the call, not start another)."""
    return isinstance(exc, Exception) and not isinstance(exc, openai.APIError)


def _call_options(endpoint: Endpoint) -> dict[str, Any]:
    """What every chat call sends besides the messages: the answer's length bound."""
    if endpoint.max_output_tokens is None:
        return {}
    return {"max_tokens": endpoint.max_output_tokens}


def _client_options(endpoint: Endpoint) -> dict[str, Any]:
    """The openai client's bounds: one attempt per call, answers read through the bounded
    transport (kg.llm.bounded), in no content encoding."""
    return {
        "base_url": endpoint.base_url,
        "api_key": endpoint.api_key.get_secret_value(),
        "timeout": endpoint.timeout_s,
        "max_retries": 0,
        "default_headers": {"Accept-Encoding": "identity"},
    }


def _too_large(exc: BaseException) -> ResponseTooLarge | None:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ResponseTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _root_reason(exc: BaseException) -> str:
    """The innermost cause's message: openai says only "Connection error."."""
    seen = exc
    for _ in range(8):
        cause = seen.__cause__ or seen.__context__
        if cause is None:
            break
        seen = cause
    text = " ".join(str(seen).split()) or type(seen).__name__
    return text[:200]


def _retry_after(exc: BaseException) -> float | None:
    if isinstance(exc, openai.APIStatusError):
        value = exc.response.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None
    return None


def _endpoint_error(exc: openai.OpenAIError, **kwargs: Any) -> LLMEndpointError:
    connection = isinstance(exc, openai.APIConnectionError) and not isinstance(
        exc, openai.APITimeoutError
    )
    too_large = _too_large(exc)
    if too_large is not None:
        reason = str(too_large)
        brief = f"answer larger than {too_large.limit} bytes (llm.max_response_bytes)"
        return LLMEndpointError(reason, detail=reason, brief=brief, plain=reason, **kwargs)
    if isinstance(exc, openai.APITimeoutError):
        detail = brief = "timeout"
    elif isinstance(exc, openai.APIStatusError):
        detail, brief = f"HTTP {exc.status_code}: {exc.message}", f"HTTP {exc.status_code}"
    elif isinstance(exc, openai.APIConnectionError):
        reason = _root_reason(exc)  # the local socket's words ("Connection refused"), no data
        detail, brief = f"connection error: {reason}", f"no connection ({reason})"
    else:
        detail, brief = f"{type(exc).__name__}: {exc}", type(exc).__name__
    transient = isinstance(exc, (openai.APIConnectionError, openai.RateLimitError)) or (
        isinstance(exc, openai.APIStatusError) and exc.status_code >= 500
    )
    return LLMEndpointError(
        str(exc),
        detail=detail,
        brief=brief,
        status=exc.status_code if isinstance(exc, openai.APIStatusError) else None,
        transient=transient,
        fatal=isinstance(exc, _FATAL),
        connection=connection,
        retry_after=_retry_after(exc),
        plain=f"{type(exc).__name__}: {exc}",
        **kwargs,
    )


def _stream_failure(exc: httpx2.TransportError, base_url: str, usage: TokenUsage) -> LLMCallError:
    """A transport error while a stream is read (openai lets those through bare there), named
    as the same error before the body would be: the same timeout, bound or connection error."""
    request = httpx2.Request("POST", base_url)
    error: openai.OpenAIError = (
        openai.APITimeoutError(request=request)
        if isinstance(exc, httpx2.TimeoutException)
        else openai.APIConnectionError(request=request)
    )
    error.__cause__ = exc
    return _endpoint_error(error, retried=False, usage=usage)


def _invalid(exc: ValidationError, usage: TokenUsage) -> LLMInvalidOutput:
    """The one attempt of a stream answered, and did not validate."""
    return LLMInvalidOutput(
        str(exc),
        usage=usage,
        n_attempts=1,
        validation_error=exc,
        plain=f"{type(exc).__name__}: {exc}",
    )


def _translate(exc: Exception, usage: TokenUsage) -> LLMCallError:
    """An openai or instructor exception as the seam's error, with the tokens kg counted."""
    if isinstance(exc, InstructorRetryException):
        cause = exc.__cause__
        if isinstance(cause, openai.OpenAIError):
            return _endpoint_error(cause, usage=usage, n_attempts=exc.n_attempts)
        return LLMInvalidOutput(
            str(cause if cause is not None else exc),
            usage=usage,
            n_attempts=exc.n_attempts,
            last_completion=exc.last_completion,
            validation_error=cause if isinstance(cause, ValidationError) else None,
            plain=f"{type(exc).__name__}: {exc}",
        )
    if isinstance(exc, openai.OpenAIError):
        return _endpoint_error(exc, retried=False, usage=usage)
    return LLMUnusableOutput(
        str(exc), retried=False, usage=usage, plain=f"{type(exc).__name__}: {exc}"
    )


def _observed(endpoint: Endpoint, meter: Any) -> Any:
    """The call's span: the use, the endpoint's host, the model; on exit the tokens and
    re-asks the meter counted and the outcome (never a prompt, an answer or the key)."""
    return observe.llm_call(endpoint.use, endpoint.base_url, endpoint.model, meter)


def _create_kwargs(
    endpoint: Endpoint,
    response_model: type[BaseModel],
    messages: Sequence[Mapping[str, str]],
    retries: int | AsyncRetrying | Retrying,
    context: Mapping[str, Any] | None,
    temperature: float | None,
) -> dict[str, Any]:
    """One structured call's arguments, the same for the async and the blocking twin."""
    return {
        "model": endpoint.model,
        "messages": list(messages),
        "response_model": response_model,
        "max_retries": retries,
        "context": dict(context) if context is not None else None,
        "temperature": endpoint.temperature if temperature is None else temperature,
        **_call_options(endpoint),
    }


class InstructorLLM:
    """:class:`~kg.llm.protocol.StructuredLLM` over ``openai.AsyncOpenAI`` patched by instructor.

    The constructor does no I/O; the HTTP client is opened on enter and closed on exit.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._raw: openai.AsyncOpenAI | None = None
        self._client: instructor.AsyncInstructor | None = None

    async def __aenter__(self) -> InstructorLLM:
        mode = _mode(self.endpoint)
        endpoint = self.endpoint
        transport = BoundedAsyncTransport(
            endpoint.max_response_bytes, endpoint.timeout_s, proxy_for(endpoint.base_url)
        )
        self._raw = openai.AsyncOpenAI(
            **_client_options(endpoint),
            http_client=openai.DefaultAsyncHttpxClient(transport=transport),
        )
        self._client = instructor.from_openai(self._raw, mode=mode)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._raw is not None:
            await self._raw.close()
        self._raw = self._client = None

    async def create(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        reask: Reask | int,
        context: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> Reply[M]:
        if self._client is None:
            raise LLMCallError("the LLM client is not open: use it as `async with`")
        retries: int | AsyncRetrying = (
            reask
            if isinstance(reask, int)
            else AsyncRetrying(
                stop=_stop(reask), retry=retry_if_exception(_reaskable), reraise=True
            )
        )
        with metering() as meter, _observed(self.endpoint, meter):
            try:
                value, _completion = await self._client.chat.completions.create_with_completion(
                    **_create_kwargs(
                        self.endpoint, response_model, messages, retries, context, temperature
                    )
                )
            except (InstructorError, openai.OpenAIError) as exc:
                raise _translate(exc, meter.usage()) from exc
        return Reply(value, meter.usage())

    async def stream(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        context: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> AsyncGenerator[Streamed[M], None]:
        """instructor's partial models over one streamed call (``create_partial``, no
        re-asks), read through the same bounded transport, which meters it when it ends."""
        if self._client is None:
            raise LLMCallError("the LLM client is not open: use it as `async with`")
        kwargs = _create_kwargs(self.endpoint, response_model, messages, 0, context, temperature)
        kwargs["stream_options"] = {"include_usage": True}  # the tokens, in a last chunk
        partials = self._client.chat.completions.create_partial(**kwargs)
        counting = metering()
        meter = counting.meter
        last: M | None = None
        failure: Exception | None = None
        try:
            # The request goes out in the first step; the transport keeps this meter for the
            # stream, so no context variable stays set across a yield.
            with counting:
                item = await anext(partials, None)
            while item is not None:
                last = item
                yield Streamed(item)
                item = await anext(partials, None)
            if last is None:
                raise LLMUnusableOutput(
                    "the LLM endpoint streamed no answer", retried=False, usage=meter.usage()
                )
            final = response_model.model_validate(
                last.model_dump(mode="json", warnings=False),
                context=dict(context) if context is not None else None,
            )
        except (InstructorError, openai.OpenAIError, ValidationError, httpx2.TransportError) as exc:
            failure = exc
        finally:
            # closed (and metered) before the error is named; a consumer that stopped early or
            # was cancelled closes the connection here
            await partials.aclose()
        if isinstance(failure, ValidationError):  # instructor validates the complete object
            raise _invalid(failure, meter.usage()) from failure
        if isinstance(failure, httpx2.TransportError):
            raise _stream_failure(failure, self.endpoint.base_url, meter.usage()) from failure
        if failure is not None:
            raise _translate(failure, meter.usage()) from failure
        yield Streamed(final, done=True, usage=meter.usage())


class SyncInstructorLLM:
    """The blocking twin over ``openai.OpenAI``; the client is made on first use."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._client: instructor.Instructor | None = None

    def _get_client(self) -> instructor.Instructor:
        if self._client is None:
            mode = _mode(self.endpoint)
            endpoint = self.endpoint
            transport = BoundedTransport(
                endpoint.max_response_bytes, endpoint.timeout_s, proxy_for(endpoint.base_url)
            )
            raw = openai.OpenAI(
                **_client_options(endpoint),
                http_client=openai.DefaultHttpxClient(transport=transport),
            )
            self._client = instructor.from_openai(raw, mode=mode)
        return self._client

    def create(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        reask: Reask | int,
        context: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> Reply[M]:
        client = self._get_client()
        retries: int | Retrying = (
            reask
            if isinstance(reask, int)
            else Retrying(stop=_stop(reask), retry=retry_if_exception(_reaskable), reraise=True)
        )
        with metering() as meter, _observed(self.endpoint, meter):
            try:
                value, _completion = client.chat.completions.create_with_completion(
                    **_create_kwargs(
                        self.endpoint, response_model, messages, retries, context, temperature
                    )
                )
            except (InstructorError, openai.OpenAIError) as exc:
                raise _translate(exc, meter.usage()) from exc
        return Reply(value, meter.usage())


class OpenAIEmbeddings:
    """:class:`~kg.llm.protocol.EmbeddingsClient` over ``openai.OpenAI``, made on first use.

    Unlike chat, embeddings keep the openai client's own retries (its default): a batch is
    cheap to repeat and nothing counts its attempts.
    """

    def __init__(self, base_url: str | None, api_key: str, timeout_s: float) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._client: openai.OpenAI | None = None

    def create(
        self, model: str, texts: Sequence[str], *, dimensions: int | None
    ) -> EmbeddingsReply:
        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s
            )
        extra: dict[str, Any] = {"dimensions": dimensions} if dimensions is not None else {}
        with observe.llm_call("embeddings", self.base_url, model) as call:
            try:
                reply = self._client.embeddings.create(model=model, input=list(texts), **extra)
            except openai.OpenAIError as exc:
                raise _endpoint_error(exc, retried=False) from exc
            tokens = int(reply.usage.total_tokens) if reply.usage is not None else None
            call.set(prompt_tokens=tokens, texts=len(texts))
        return EmbeddingsReply([(item.index, list(item.embedding)) for item in reply.data], tokens)
