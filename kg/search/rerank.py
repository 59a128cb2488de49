"""The optional rerank stage: a ``/rerank`` endpoint reorders the fused top chunks.

Off by default (``search.rerank.enabled``). When on, every local search sends the question and
its top ``search.rerank.top_n`` chunks (each cut to ``max_doc_chars``) to one HTTP endpoint and
orders those chunks by the scores it returns; chunks past the top N keep their order after
them. Two shapes are in use:

- ``cohere`` (Cohere, Jina, vLLM, llama.cpp server, Infinity): request
  ``{model?, query, documents, top_n}``, response ``{"results": [{index, relevance_score}]}``;
- ``tei`` (Hugging Face text-embeddings-inference): request ``{query, texts}``, response
  ``[{index, score}]``.

The answer is checked strictly (a JSON body under :data:`MAX_RESPONSE_BYTES` on the wire and
once inflated, indices in range and distinct, finite numbers). Anything else (no connection, a
timeout, a non-2xx status, a malformed body) leaves the fused order as it was, and
:class:`~kg.search.models.RerankOutcome` says why: a search never fails because its reranker
did. Chunks the endpoint left unscored (a server that answers its own top k) follow the scored
ones, in fused order. Error messages name neither the URL nor the key, and quote no text of
the endpoint's (which could echo the key it was sent).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import ssl
import time
import zlib
from collections.abc import Sequence
from typing import Any, TypeGuard
from urllib.parse import urlsplit

from kg import observe
from kg.search.models import ChunkHit, RerankOutcome
from kg.settings import RerankSettings

logger = logging.getLogger(__name__)

#: The longest response body read: a score per document is a few dozen bytes, so this leaves
#: room for servers that echo the documents back, and bounds what a broken one can send.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


class RerankFailed(Exception):
    """The endpoint's answer cannot be used; the message is safe to return to the caller."""


class Reranker:
    """Calls one rerank endpoint. The constructor does no I/O. Each call opens its own
    connection, so one instance serves any event loop; the TLS context (loading the CA
    certificates costs about 100 ms) is built on the first call and shared."""

    def __init__(self, settings: RerankSettings) -> None:
        self._settings = settings
        self._tls: ssl.SSLContext | None = None

    async def rerank(
        self, query: str, chunks: Sequence[ChunkHit]
    ) -> tuple[list[ChunkHit], RerankOutcome]:
        """``chunks`` with the top N reordered by the endpoint, and what happened."""
        head = list(chunks[: self._settings.top_n])
        tail = list(chunks[self._settings.top_n :])
        if not head:
            return [], RerankOutcome(applied=False, reranked=0)
        started = time.perf_counter()
        host = urlsplit(self._settings.url or "").hostname or ""
        with observe.span("kg.search.rerank", host=host, documents=len(head)) as call:
            try:
                scores = await self.scores(query, [c.text for c in head])
            except RerankFailed as exc:
                call.set(outcome="failed")
                logger.warning("rerank failed, the fused order stands: %s", exc)
                took = round((time.perf_counter() - started) * 1000, 3)
                outcome = RerankOutcome(
                    applied=False, reranked=len(head), error=str(exc), took_ms=took
                )
                return [*head, *tail], outcome
        # Scored first, best first; ties and unscored chunks keep their fused order.
        order = sorted(range(len(head)), key=lambda i: (i not in scores, -scores.get(i, 0.0), i))
        reranked = [
            head[i].model_copy(update={"rerank_score": scores[i]}) if i in scores else head[i]
            for i in order
        ]
        took = round((time.perf_counter() - started) * 1000, 3)
        return [*reranked, *tail], RerankOutcome(applied=True, reranked=len(head), took_ms=took)

    async def scores(self, query: str, texts: Sequence[str]) -> dict[int, float]:
        """The endpoint's score of each text by position; RerankFailed when none can be had."""
        cut = [text[: self._settings.max_doc_chars] for text in texts]
        body = request_body(self._settings, query, cut)
        try:
            async with asyncio.timeout(self._settings.timeout_s):
                data = await self._post(body)
        except TimeoutError:
            raise RerankFailed(f"no answer within {self._settings.timeout_s:g} s") from None
        return parse_scores(self._settings.shape, data, len(cut))

    async def _post(self, body: dict[str, Any]) -> bytes:
        import httpx  # only when reranking is on: `import kg` stays light

        assert self._settings.url is not None  # RerankSettings requires it when enabled
        # Compression is not asked for (the answer is small); gzip or deflate sent anyway is
        # inflated by `decoded`, within the bound.
        headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if self._settings.api_key is not None:
            headers["Authorization"] = f"Bearer {self._settings.api_key.get_secret_value()}"
        try:
            if self._tls is None:  # reads the CA file: off the event loop
                self._tls = await asyncio.to_thread(httpx.create_ssl_context)
            async with (
                httpx.AsyncClient(timeout=self._settings.timeout_s, verify=self._tls) as client,
                client.stream("POST", self._settings.url, json=body, headers=headers) as resp,
            ):
                if not resp.is_success:
                    raise RerankFailed(f"the endpoint answered HTTP {resp.status_code}")
                # Raw bytes: httpx's decoders inflate each read whole, so a gzip bomb (or gzip
                # of gzip) would fill memory before any check here.
                data = bytearray()
                async for part in resp.aiter_raw():
                    data += part
                    if len(data) > MAX_RESPONSE_BYTES:
                        raise RerankFailed(f"response over {MAX_RESPONSE_BYTES} bytes")
                codings = resp.headers.get_list("Content-Encoding", split_commas=True)
                return decoded(codings, bytes(data))
        except httpx.TimeoutException:
            raise RerankFailed(f"no answer within {self._settings.timeout_s:g} s") from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            # The class only: an httpx message may carry the URL.
            raise RerankFailed(f"request failed ({type(exc).__name__})") from None


def request_body(settings: RerankSettings, query: str, texts: list[str]) -> dict[str, Any]:
    """The request in the endpoint's shape."""
    if settings.shape == "tei":
        return {"query": query, "texts": texts}
    body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
    if settings.model:
        body["model"] = settings.model
    return body


def decoded(codings: Sequence[str], body: bytes) -> bytes:
    """``body`` with its content codings (listed in the order applied) undone, never inflated
    past :data:`MAX_RESPONSE_BYTES`: each layer stops there, however much more it holds."""
    for coding in reversed([c.strip().lower() for c in codings]):
        if coding in ("", "identity"):
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):  # the name is not shown: endpoint text
            raise RerankFailed("the response's Content-Encoding is not supported")
        body = _inflated(body, raw_fallback=coding == "deflate")
    return body


def _inflated(body: bytes, *, raw_fallback: bool) -> bytes:
    """One gzip or zlib layer (the header says which), or raw deflate as ``deflate``'s fallback."""
    for wbits in (zlib.MAX_WBITS | 32, -zlib.MAX_WBITS)[: 2 if raw_fallback else 1]:
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, MAX_RESPONSE_BYTES + 1)
        except zlib.error:
            continue
        if len(out) > MAX_RESPONSE_BYTES:
            raise RerankFailed(f"response over {MAX_RESPONSE_BYTES} bytes")
        if inflater.eof and not inflater.unused_data:
            return out
        break  # cut short, or bytes after the end
    raise RerankFailed("the response's compressed body is corrupt")


def parse_scores(shape: str, data: bytes, count: int) -> dict[int, float]:
    """Scores by document position from a response body, checked strictly."""
    try:
        parsed = json.loads(data)
    except ValueError:  # also bad UTF-8
        raise RerankFailed("the response is not JSON") from None
    except RecursionError:  # `[[[[…` within the size bound
        raise RerankFailed("the response is nested too deeply") from None
    if shape == "tei":
        items, score_key = parsed, "score"
    else:
        items = parsed.get("results") if isinstance(parsed, dict) else None
        score_key = "relevance_score"
    if not isinstance(items, list) or not items:
        expected = "a list" if shape == "tei" else "an object with a `results` list"
        raise RerankFailed(f"malformed response: expected {expected} of scores")
    if len(items) > count:
        raise RerankFailed(f"malformed response: {len(items)} scores for {count} documents")
    scores: dict[int, float] = {}
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get(score_key) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            shown = _shown(index)
            raise RerankFailed(f"malformed response: index {shown} not in 0..{count - 1}")
        if index in scores:
            raise RerankFailed(f"malformed response: index {index} scored twice")
        if not _finite(score):
            raise RerankFailed(f"malformed response: `{score_key}` of index {index} not a number")
        scores[index] = float(score)
    return scores


def _shown(index: object) -> str:
    """A bad index as an error may show it: a short integer, else only its JSON type. Never
    the endpoint's text, which could carry anything (the API key it was sent, for one)."""
    if isinstance(index, bool):
        return "(a boolean)"
    if isinstance(index, int):
        return str(index) if abs(index) < 10**40 else "(a huge integer)"
    kinds = {float: "(a float)", str: "(a string)", list: "(a list)", dict: "(an object)"}
    return kinds.get(type(index), "(null or missing)")


def _finite(value: object) -> TypeGuard[int | float]:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False
