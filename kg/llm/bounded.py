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

from kg.llm.protocol import current_meter
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


def _account(request: httpx2.Request, content: bytes) -> None:
    """Add one chat exchange to the current call's meter (no meter: nothing to add)."""
    meter = current_meter()
    if meter is None or not request.url.path.endswith("/chat/completions"):
        return
    try:
        sent = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        sent = None
    try:
        answer = json.loads(content)
    except ValueError:
        answer = None
    usage = answer.get("usage") if isinstance(answer, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    meter.prompt_tokens += counted(usage.get("prompt_tokens"), estimate_tokens(_sent_text(sent)))
    meter.completion_tokens += counted(
        usage.get("completion_tokens"), estimate_tokens(_answer_text(answer))
    )
    meter.exchanges += 1


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
