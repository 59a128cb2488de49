"""What kg accepts from an LLM endpoint: a bounded answer, and tokens it counted itself.

An outside test answered with a 50 MB ``answer`` (the API grew by 500 MB) and claimed usages
of 20 and 10^30 tokens, which went straight into the response and the request's budget. So
every chat call goes through an HTTP transport that

- reads at most ``llm.max_response_bytes`` of the body, decoded (gzip and deflate are decoded
  here under the same bound; kg asks for no encoding at all), and fails the call past it;
- counts the tokens of each exchange from the texts themselves: about one token per 4 bytes
  of UTF-8 (:func:`estimate_tokens`) of what was sent (the messages and tool schemas) and of
  what came back (the message and its tool-call arguments). The endpoint's own figure is kept
  only within a factor of 4 of that estimate (its tokenizer knows better than a byte count,
  but no endpoint may claim 20 tokens for 50 MB, or 10^30 for a sentence).

A streamed answer (a request with ``"stream": true``, :meth:`InstructorLLM.stream`) is passed
on as it arrives, under the same bounds: its bytes (the server-sent events, framing included)
count against ``llm.max_response_bytes``, it must end within the same deadline, and its tokens
are metered when it ends (or is cut) from the deltas' texts and the endpoint's final ``usage``
chunk (``stream_options.include_usage``), within the same factor.

The tokens of one :meth:`kg.llm.instructor_llm.InstructorLLM.create` call, re-asks included,
are gathered in a :class:`~kg.llm.protocol.CallMeter` that the call installs in a context
variable (the transport runs in the caller's task or thread), so a budget sees them between
re-asks (:mod:`kg.llm.ask`).
"""

from __future__ import annotations

import json
import math
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2

from kg.llm.protocol import CallMeter, current_meter
from kg.llm.reach import proxy_for as proxy_for  # where it lived

__all__ = [
    "PLAUSIBLE_FACTOR",
    "BoundedAsyncTransport",
    "BoundedTransport",
    "ResponseTooLarge",
    "counted",
    "estimate_tokens",
    "proxy_for",
]

#: How far the endpoint's reported token count may stray from kg's estimate before the
#: estimate is used instead (either way).
PLAUSIBLE_FACTOR = 4
#: Bytes of UTF-8 per token in kg's estimate (English runs near 4, Russian near 5, CJK near 3).
BYTES_PER_TOKEN = 4


class ResponseTooLarge(httpx2.TransportError):
    """The endpoint's answer passed ``llm.max_response_bytes``; the call fails."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the LLM endpoint's answer was larger than {limit} bytes "
            "(llm.max_response_bytes); it was not read further"
        )
        self.limit = limit


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` holds: one per 4 bytes of UTF-8, rounded up."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / BYTES_PER_TOKEN)


def counted(reported: Any, measured: int) -> int:
    """The endpoint's count when it is a number within :data:`PLAUSIBLE_FACTOR` of ours, else
    the nearest bound of that range (ours when it reported nothing)."""
    if isinstance(reported, bool) or not isinstance(reported, int | float):
        return measured
    if not math.isfinite(reported):
        return measured * PLAUSIBLE_FACTOR if reported > 0 else measured
    low, high = math.ceil(measured / PLAUSIBLE_FACTOR), measured * PLAUSIBLE_FACTOR
    return int(min(max(reported, low), high))


def _texts(value: Any, out: list[str]) -> None:
    """Every string inside a JSON value (keys of objects too: they are sent and read)."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.append(str(key))
            _texts(item, out)
    elif isinstance(value, list):
        for item in value:
            _texts(item, out)


def _sent_text(body: Any) -> str:
    out: list[str] = []
    if isinstance(body, dict):
        _texts(body.get("messages"), out)
        _texts(body.get("tools"), out)
        _texts(body.get("response_format"), out)
    return " ".join(out)


def _answer_text(body: Any) -> str:
    out: list[str] = []
    choices = body.get("choices") if isinstance(body, dict) else None
    for choice in choices if isinstance(choices, list) else []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            _texts(message.get("content"), out)
            _texts(message.get("tool_calls"), out)
            _texts(message.get("function_call"), out)
    return " ".join(out)


def _streamed_text(content: bytes) -> tuple[str, dict[str, Any]]:
    """The texts of a streamed answer's deltas, and its last ``usage`` chunk (or ``{}``)."""
    out: list[str] = []
    usage: dict[str, Any] = {}
    for line in content.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue  # "[DONE]", or a line cut by the bound
        if not isinstance(event, dict):
            continue
        if isinstance(event.get("usage"), dict):
            usage = event["usage"]
        choices = event.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict):
                _texts(delta.get("content"), out)
                _texts(delta.get("tool_calls"), out)
                _texts(delta.get("function_call"), out)
    return "".join(out), usage


def _sent(request: httpx2.Request) -> Any:
    try:
        return json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None


def _account(
    request: httpx2.Request,
    content: bytes,
    meter: CallMeter | None = None,
    *,
    streamed: bool = False,
) -> None:
    """Add one chat exchange to the call's meter (default: the current one; none: nothing)."""
    meter = meter if meter is not None else current_meter()
    if meter is None or not request.url.path.endswith("/chat/completions"):
        return
    if streamed:
        text, usage = _streamed_text(content)
    else:
        try:
            answer = json.loads(content)
        except ValueError:
            answer = None
        text = _answer_text(answer)
        reported = answer.get("usage") if isinstance(answer, dict) else None
        usage = reported if isinstance(reported, dict) else {}
    sent = _sent(request)
    meter.prompt_tokens += counted(usage.get("prompt_tokens"), estimate_tokens(_sent_text(sent)))
    meter.completion_tokens += counted(usage.get("completion_tokens"), estimate_tokens(text))
    meter.exchanges += 1


def _asks_stream(request: httpx2.Request) -> bool:
    """True for a chat request that asked for a streamed answer."""
    if not request.url.path.endswith("/chat/completions"):
        return False
    sent = _sent(request)
    return isinstance(sent, dict) and sent.get("stream") is True


class _BoundedStream(httpx2.AsyncByteStream):
    """A streamed answer passed on as it arrives: at most ``limit`` bytes, ending before
    ``ends`` (monotonic), metered into ``meter`` once, when it ends or is closed early."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        request: httpx2.Request,
        meter: CallMeter | None,
        limit: int,
        ends: float,
    ) -> None:
        self._inner = inner
        self._request = request
        self._meter = meter
        self._limit = limit
        self._ends = ends
        self._raw = bytearray()
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._raw += chunk
                if len(self._raw) > self._limit:
                    raise ResponseTooLarge(self._limit)
                if time.monotonic() > self._ends:
                    raise httpx2.ReadTimeout("the LLM endpoint's answer did not end in time")
                yield chunk
        finally:  # cut, cancelled (a client that went away) or done: the connection closes
            await self.aclose()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        _account(self._request, bytes(self._raw), self._meter, streamed=True)
        await self._inner.aclose()


def _decoded(raw: bytes, encoding: str, limit: int) -> bytes:
    """The body without its content encoding, at most ``limit`` bytes of it."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise httpx2.DecodingError(f"the LLM endpoint answered in an unasked encoding {encoding!r}")
    wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
    try:
        decoder = zlib.decompressobj(wbits)
        body = decoder.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise httpx2.DecodingError(f"the LLM endpoint's {encoding} body is corrupt") from exc
    if len(body) > limit or decoder.unconsumed_tail:
        raise ResponseTooLarge(limit)
    return body


_HOP_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def _rebuilt(response: httpx2.Response, body: bytes) -> httpx2.Response:
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _HOP_HEADERS]
    return httpx2.Response(
        response.status_code, headers=headers, content=body, extensions=response.extensions
    )


class BoundedAsyncTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that reads at most ``limit`` bytes per answer, within ``deadline_s``
    from the first byte of headers to the last of the body, and meters chat exchanges."""

    def __init__(self, limit: int, deadline_s: float, proxy: str | None = None) -> None:
        self._inner = httpx2.AsyncHTTPTransport(proxy=proxy)
        self._limit = limit
        self._deadline_s = deadline_s

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        ends = time.monotonic() + self._deadline_s
        if _asks_stream(request) and response.status_code < 300:
            return self._streamed(request, response, ends)
        raw = bytearray()
        try:
            stream = response.stream
            assert isinstance(stream, httpx2.AsyncByteStream)
            chunks: AsyncIterator[bytes] = stream.__aiter__()
            async for chunk in chunks:
                raw += chunk
                if len(raw) > self._limit:
                    raise ResponseTooLarge(self._limit)
                if time.monotonic() > ends:
                    raise httpx2.ReadTimeout("the LLM endpoint's answer did not end in time")
        finally:
            await response.aclose()
        body = _decoded(bytes(raw), response.headers.get("content-encoding", ""), self._limit)
        _account(request, body)
        return _rebuilt(response, body)

    def _streamed(
        self, request: httpx2.Request, response: httpx2.Response, ends: float
    ) -> httpx2.Response:
        """The answer as a bounded stream (the meter is the caller's: the stream is read
        after this returns, possibly by another task)."""
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise httpx2.DecodingError(
                f"the LLM endpoint streamed in an unasked encoding {encoding!r}"
            )
        bounded = _BoundedStream(stream, request, current_meter(), self._limit, ends)
        headers = [
            (k, v) for k, v in response.headers.multi_items() if k.lower() not in _HOP_HEADERS
        ]
        return httpx2.Response(
            response.status_code, headers=headers, stream=bounded, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx2.BaseTransport):
    """The blocking twin of :class:`BoundedAsyncTransport`."""

    def __init__(self, limit: int, deadline_s: float, proxy: str | None = None) -> None:
        self._inner = httpx2.HTTPTransport(proxy=proxy)
        self._limit = limit
        self._deadline_s = deadline_s

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._inner.handle_request(request)
        ends = time.monotonic() + self._deadline_s
        raw = bytearray()
        try:
            stream = response.stream
            assert isinstance(stream, httpx2.SyncByteStream)
            chunks: Iterator[bytes] = iter(stream)
            for chunk in chunks:
                raw += chunk
                if len(raw) > self._limit:
                    raise ResponseTooLarge(self._limit)
                if time.monotonic() > ends:
                    raise httpx2.ReadTimeout("the LLM endpoint's answer did not end in time")
        finally:
            response.close()
        body = _decoded(bytes(raw), response.headers.get("content-encoding", ""), self._limit)
        _account(request, body)
        return _rebuilt(response, body)

    def close(self) -> None:
        self._inner.close()
