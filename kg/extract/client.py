"""The LLM extraction backend: chunks in, validated :class:`ExtractionResult` per chunk out.

Any OpenAI-compatible endpoint serves (OpenAI, Azure, Ollama, vLLM, llama.cpp server, LM
Studio) through the LLM seam (:mod:`kg.llm`, use ``extract``). Three layers of retry, each for
its own failure:

- instructor re-asks when the answer does not validate (``max_retries``), sending the error;
- we back off with jitter on 429, 5xx, timeouts and connection errors (``backoff_attempts``);
- the client itself never retries, so every call is counted here.

A chunk either yields a whole result or is recorded as failed with a reason: nothing partial.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, Literal

from pydantic import ValidationError

from kg.errors import ExtractionError
from kg.extract.backend import NOT_RUN, ChunkOutcome, ExtractionRun, run_sync
from kg.extract.budget import RunBudget, Usage
from kg.extract.cache import ExtractionCache
from kg.extract.ontology import Ontology, ontology_from_settings
from kg.extract.prompts import build_messages
from kg.extract.schema import DroppedItem, ExtractionResult, salvage
from kg.llm import (
    Endpoint,
    LLMCallError,
    LLMEndpointError,
    LLMInvalidOutput,
    Reask,
    Reply,
    StructuredLLM,
    TokenUsage,
    extract_endpoint,
    llm_client,
)
from kg.llm.reach import refused
from kg.models import Chunk
from kg.settings import ExtractSettings, LLMSettings

__all__ = ["NOT_RUN", "ChunkOutcome", "ExtractionRun", "LLMExtractor"]

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
MAX_REASON_CHARS = 600


class _Meter:
    """One chunk's counters while it runs."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.budget_hit = False

    def add_usage(self, usage: TokenUsage, budget: RunBudget) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        budget.add_tokens(usage.prompt_tokens + usage.completion_tokens)

    def usage(self, *, failed: bool) -> Usage:
        return Usage(
            calls=self.calls,
            retries=max(0, self.calls - 1),
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            failures=1 if failed else 0,
        )


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class LLMExtractor:
    """The :class:`~kg.extract.backend.ExtractionBackend` of any OpenAI-compatible LLM.

    The constructor does no I/O: the HTTP client is opened for each run and closed at its end;
    the ontology file (if configured and not given) is read when a run starts. ``endpoint``
    is the ``extract`` use's (:func:`kg.llm.resolve_endpoint`); unset, the section's own
    fields over the ``llm`` section's defaults (or ``shared``).
    """

    def __init__(
        self,
        settings: ExtractSettings,
        *,
        cache: ExtractionCache | None = None,
        ontology: Ontology | None = None,
        endpoint: Endpoint | None = None,
        shared: LLMSettings | None = None,
    ) -> None:
        self.settings = settings
        self.endpoint = endpoint or extract_endpoint(settings, shared)
        self.cache = cache
        self._ontology = ontology

    def ontology(self) -> Ontology:
        """The ontology in force (settings lists and/or file); read once."""
        if self._ontology is None:
            self._ontology = ontology_from_settings(self.settings)
        return self._ontology

    def extract_chunks_sync(
        self,
        chunks: Sequence[Chunk],
        *,
        on_done: Callable[[ChunkOutcome], None] | None = None,
        on_error: Literal["record", "raise"] = "record",
    ) -> ExtractionRun:
        """Blocking wrapper; works with or without an event loop running in this thread."""
        return run_sync(self, chunks, on_done=on_done, on_error=on_error)

    async def extract_chunks(
        self,
        chunks: Sequence[Chunk],
        *,
        on_done: Callable[[ChunkOutcome], None] | None = None,
        on_error: Literal["record", "raise"] = "record",
    ) -> ExtractionRun:
        """Extract every chunk, ``settings.concurrency`` at a time, within the run's budget.

        ``on_done`` is called as each chunk finishes (progress bars). With ``on_error="raise"``
        the first failed chunk cancels the rest and raises :class:`ExtractionError`; with
        ``"record"`` failures are kept in the run. An endpoint that rejects the key or model
        (401/403/404) always raises: every other chunk would fail the same way.
        """
        ontology = self.ontology()
        budget = RunBudget(self.endpoint.max_calls, self.endpoint.max_tokens)
        outcomes: list[ChunkOutcome | None] = [None] * len(chunks)
        # Nothing listening is definite: every chunk the cache lacks fails at once, for the
        # one reason, instead of each retrying a refused port (kg/llm/reach.py).
        down = await self._nobody_listens() if chunks else None
        semaphore = asyncio.Semaphore(self.endpoint.concurrency)
        async with _OnFirstCall(self.endpoint) as client:

            async def run_one(index: int, chunk: Chunk) -> None:
                async with semaphore:
                    outcome = await self._extract_one(client, chunk, ontology, budget, down)
                outcomes[index] = outcome
                if on_done is not None:
                    on_done(outcome)
                if on_error == "raise" and outcome.error is not None and not outcome.not_run:
                    raise ExtractionError(f"chunk {chunk.id} failed: {outcome.error}")

            tasks = [asyncio.create_task(run_one(i, c)) for i, c in enumerate(chunks)]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

        done = [o for o in outcomes if o is not None]
        per_document: dict[str, Usage] = {}
        total = Usage()
        for outcome in done:
            total += outcome.usage
            per_document[outcome.document_id] = (
                per_document.get(outcome.document_id, Usage()) + outcome.usage
            )
        stopped = any(o.not_run for o in done) or budget.reason is not None
        return ExtractionRun(done, total, per_document, stopped, budget.reason)

    # Long on purpose: one chunk's whole retry state machine (cache, budget, re-asks, salvage,
    # backoff) reads top to bottom in one place; split, its exits would scatter.
    async def _extract_one(
        self,
        client: _OnFirstCall,
        chunk: Chunk,
        ontology: Ontology,
        budget: RunBudget,
        down: str | None = None,
    ) -> ChunkOutcome:
        settings = self.settings

        def outcome(
            result: ExtractionResult | None,
            error: str | None,
            usage: Usage,
            cached: bool = False,
            dropped: tuple[DroppedItem, ...] = (),
        ) -> ChunkOutcome:
            return ChunkOutcome(chunk.id, chunk.document_id, result, error, cached, usage, dropped)

        if self.cache is not None:
            try:
                hit = await self.cache.aget(chunk.sha256, self.endpoint.model, ontology)
            except ExtractionError as exc:  # a broken cache costs calls, not the run
                log.warning("%s", exc)
                hit = None
            if hit is not None:
                return outcome(hit, None, Usage(cache_hits=1), cached=True)
        if down is not None:
            return outcome(None, down, Usage())

        if not budget.reserve_call():
            return outcome(None, f"{NOT_RUN} ({budget.reason})", Usage())

        meter = _Meter()
        meter.calls = 1
        context = {"chunk_text": chunk.text, "ontology": ontology}
        attempt = 0
        while True:
            try:
                reply = await client.create(
                    ExtractionResult,
                    build_messages(ontology),
                    reask=self._reasking(meter, budget),
                    context=context,
                )
            except (LLMEndpointError, LLMInvalidOutput) as exc:
                if not exc.retried:
                    raise
                meter.add_usage(exc.usage, budget)
                if isinstance(exc, LLMEndpointError) and exc.fatal:
                    raise ExtractionError(
                        self.endpoint.failed(exc.detail, status=exc.status)
                    ) from exc
                if not (isinstance(exc, LLMEndpointError) and exc.transient):
                    kept = _salvaged(exc, ontology)
                    if kept is not None and not meter.budget_hit:
                        # Re-asks are spent: keep the valid items, report the invalid ones.
                        result, dropped = kept
                        await self._cache_put(chunk, result, ontology)
                        return outcome(result, None, meter.usage(failed=False), dropped=dropped)
                    return outcome(None, self._invalid_reason(exc, meter), meter.usage(failed=True))
                attempt += 1
                if attempt >= settings.backoff_attempts:
                    failed = self.endpoint.failed(
                        exc.detail,
                        status=exc.status,
                        connection=exc.connection,
                        timed_out=exc.timed_out,
                    )
                    reason = f"gave up after {attempt} attempts: {failed}"
                    return outcome(None, _shorten(reason), meter.usage(failed=True))
                if not budget.reserve_call():
                    reason = f"stopped: {budget.reason}; last error: {exc.detail}"
                    return outcome(None, _shorten(reason), meter.usage(failed=True))
                meter.calls += 1
                delay = self._backoff(attempt, exc)
                log.warning(
                    "chunk %s: the LLM endpoint %s: %s; retrying in %.2fs",
                    chunk.id,
                    self.endpoint.where,
                    exc.detail,
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            except LLMCallError as exc:  # e.g. truncated output (finish_reason=length)
                return outcome(None, _shorten(exc.plain), meter.usage(failed=True))
            meter.add_usage(reply.usage, budget)
            # A clean copy: instructor hangs the raw completion on the model it returns.
            result = ExtractionResult.model_validate(
                reply.value.model_dump(mode="json"), context={"ontology": ontology}
            )
            await self._cache_put(chunk, result, ontology)
            return outcome(result, None, meter.usage(failed=False))

    async def _nobody_listens(self) -> str | None:
        """The failure every uncached chunk gets when the endpoint refuses connections."""
        error = await refused(self.endpoint.base_url)
        if error is None:
            return None
        reason = " ".join(str(error).split()) or type(error).__name__
        return self.endpoint.failed(f"no connection ({reason})", connection=True)

    async def _cache_put(self, chunk: Chunk, result: ExtractionResult, ontology: Ontology) -> None:
        if self.cache is None:
            return
        try:
            await self.cache.aput(chunk.sha256, self.endpoint.model, result, ontology)
        except ExtractionError as exc:
            log.warning("extraction cache write failed: %s", exc)

    def _reasking(self, meter: _Meter, budget: RunBudget) -> Reask:
        """instructor's re-ask loop, with each re-ask claiming a call from the budget."""

        def claim() -> bool:
            if not budget.reserve_call():
                meter.budget_hit = True
                return False
            meter.calls += 1
            return True

        return Reask(self.endpoint.max_retries + 1, claim)

    def _invalid_reason(self, exc: LLMCallError, meter: _Meter) -> str:
        prefix = (
            f"stopped: budget reached after {exc.n_attempts} attempt(s)"
            if meter.budget_hit
            else f"invalid output after {exc.n_attempts} attempt(s)"
        )
        return _shorten(f"{prefix}: {exc.reason}")

    def _backoff(self, attempt: int, cause: LLMEndpointError) -> float:
        base = self.settings.backoff_base_s * (2.0 ** (attempt - 1))
        delay = base * random.uniform(0.5, 1.5)  # noqa: S311 - jitter, not security
        hinted = cause.retry_after
        if hinted is not None:
            delay = max(delay, hinted)
        return min(delay, MAX_BACKOFF_S)


def _salvaged(
    exc: LLMCallError, ontology: Ontology
) -> tuple[ExtractionResult, tuple[DroppedItem, ...]] | None:
    """The valid part of the last answer, if it was a JSON extraction at all."""
    if not isinstance(exc, LLMInvalidOutput):
        return None
    data = _last_json(exc.last_completion)
    if not isinstance(data, dict):
        return None
    entities, relations = data.get("entities", []), data.get("relations", [])
    if not isinstance(entities, list) or not isinstance(relations, list):
        return None
    try:
        result, dropped = salvage(entities, relations, ontology=ontology)
    except ValidationError:
        return None
    return result, tuple(dropped)


def _last_json(completion: Any) -> Any:
    """The JSON arguments (tools modes) or content (JSON modes) of a chat completion."""
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None
    texts: list[str] = []
    for call in getattr(message, "tool_calls", None) or []:
        arguments = getattr(getattr(call, "function", None), "arguments", None)
        if isinstance(arguments, str):
            texts.append(arguments)
    content = getattr(message, "content", None)
    if isinstance(content, str):
        fenced = re.search(r"```(?:json)?\s*(.*?)```", content, re.DOTALL)
        texts.append(fenced.group(1) if fenced else content)
    for text in texts:
        try:
            return json.loads(text)
        except ValueError:
            continue
    return None


class _OnFirstCall:
    """The run's LLM client, opened at its first call: a run whose chunks all come from the
    cache, or that finds nobody listening, never imports openai and instructor (~0.7 s of a
    `kg ingest` re-run's start) nor opens a connection pool."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._stack = AsyncExitStack()
        self._client: StructuredLLM | None = None
        self._opening = asyncio.Lock()

    async def __aenter__(self) -> _OnFirstCall:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def create(
        self,
        response_model: type[ExtractionResult],
        messages: Sequence[Mapping[str, str]],
        *,
        reask: Reask | int,
        context: Mapping[str, Any] | None = None,
    ) -> Reply[ExtractionResult]:
        if self._client is None:
            async with self._opening:
                if self._client is None:
                    self._client = await self._open()
        return await self._client.create(response_model, messages, reask=reask, context=context)

    async def _open(self) -> StructuredLLM:
        try:
            return await self._stack.enter_async_context(llm_client(self._endpoint))
        except LLMCallError as exc:
            # A client that cannot open fails the run, as it did when opened up front: as an
            # LLMCallError it would be recorded on every chunk as that chunk's failure.
            raise ExtractionError(f"cannot open the LLM client: {exc}") from exc
