"""The LLM extraction client: chunks in, validated :class:`ExtractionResult` per chunk out.

Any OpenAI-compatible endpoint serves (OpenAI, Azure, Ollama, vLLM, llama.cpp server, LM
Studio) through ``openai.AsyncOpenAI`` patched by instructor. Three layers of retry, each for
its own failure:

- instructor re-asks when the answer does not validate (``max_retries``), sending the error;
- we back off with jitter on 429, 5xx, timeouts and connection errors (``backoff_attempts``);
- the openai client itself never retries (``max_retries=0``), so every call is counted here.

A chunk either yields a whole result or is recorded as failed with a reason: nothing partial.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import instructor
import openai
from instructor.core import InstructorError, InstructorRetryException
from pydantic import ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_not_exception_type

from kg.errors import ExtractionError
from kg.extract.budget import RunBudget, Usage
from kg.extract.cache import ExtractionCache
from kg.extract.ontology import Ontology, ontology_from_settings
from kg.extract.prompts import build_messages
from kg.extract.schema import DroppedItem, ExtractionResult, salvage
from kg.models import Chunk
from kg.settings import ExtractSettings

__all__ = ["NOT_RUN", "ChunkOutcome", "ExtractionRun", "Extractor"]

log = logging.getLogger(__name__)

NOT_RUN = "not run: budget reached"
MAX_BACKOFF_S = 60.0
MAX_REASON_CHARS = 600

MODES: dict[str, instructor.Mode] = {
    "tools": instructor.Mode.TOOLS,
    "json": instructor.Mode.JSON,
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "md_json": instructor.Mode.MD_JSON,
}

# The endpoint or key is wrong: every chunk would fail the same way, so stop the run.
_FATAL = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


@dataclass(frozen=True)
class ChunkOutcome:
    """One chunk's end: a ``result`` or an ``error``, never both."""

    chunk_id: str
    document_id: str
    result: ExtractionResult | None
    error: str | None
    cached: bool
    usage: Usage
    dropped: tuple[DroppedItem, ...] = ()  # invalid items left out once re-asks were spent

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def not_run(self) -> bool:
        return self.error is not None and self.error.startswith(NOT_RUN)


@dataclass(frozen=True)
class ExtractionRun:
    """A run's outcomes in chunk order, with totals and per-document usage."""

    outcomes: list[ChunkOutcome]
    usage: Usage
    per_document: dict[str, Usage] = field(default_factory=dict)
    stopped_by_budget: bool = False
    budget_reason: str | None = None

    @property
    def succeeded(self) -> list[ChunkOutcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def failed(self) -> list[ChunkOutcome]:
        return [o for o in self.outcomes if not o.ok and not o.not_run]

    @property
    def not_run(self) -> list[ChunkOutcome]:
        return [o for o in self.outcomes if o.not_run]


class _Meter:
    """One chunk's counters while it runs."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.budget_hit = False

    def add_usage(self, usage: Any, budget: RunBudget) -> None:
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        budget.add_tokens(prompt + completion)

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


def _is_transient(exc: BaseException | None) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.RateLimitError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _describe(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error: {exc}"
    return f"{type(exc).__name__}: {exc}"


def _retry_after(exc: BaseException | None) -> float | None:
    if isinstance(exc, openai.APIStatusError):
        value = exc.response.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None
    return None


class Extractor:
    """Extracts entities and relations from chunks with any OpenAI-compatible LLM.

    The constructor does no I/O: the HTTP client is opened for each run and closed at its end;
    the ontology file (if configured and not given) is read when a run starts.
    """

    def __init__(
        self,
        settings: ExtractSettings,
        *,
        cache: ExtractionCache | None = None,
        ontology: Ontology | None = None,
    ) -> None:
        self.settings = settings
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

        def run() -> ExtractionRun:
            return asyncio.run(self.extract_chunks(chunks, on_done=on_done, on_error=on_error))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run()
        # Called from inside a running loop (a notebook, an async app): asyncio.run would
        # refuse, so the extraction gets its own loop on a worker thread.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(run).result()

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
        budget = RunBudget(self.settings.max_calls, self.settings.max_tokens)
        outcomes: list[ChunkOutcome | None] = [None] * len(chunks)
        semaphore = asyncio.Semaphore(self.settings.concurrency)
        async with openai.AsyncOpenAI(
            base_url=self.settings.base_url,
            api_key=self.settings.api_key.get_secret_value(),
            timeout=self.settings.timeout_s,
            max_retries=0,
        ) as raw:
            client = instructor.from_openai(raw, mode=MODES[self.settings.mode])

            async def run_one(index: int, chunk: Chunk) -> None:
                async with semaphore:
                    outcome = await self._extract_one(client, chunk, ontology, budget)
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
        client: instructor.AsyncInstructor,
        chunk: Chunk,
        ontology: Ontology,
        budget: RunBudget,
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
                hit = await self.cache.aget(chunk.sha256, settings.model, ontology)
            except ExtractionError as exc:  # a broken cache costs calls, not the run
                log.warning("%s", exc)
                hit = None
            if hit is not None:
                return outcome(hit, None, Usage(cache_hits=1), cached=True)

        if not budget.reserve_call():
            return outcome(None, f"{NOT_RUN} ({budget.reason})", Usage())

        meter = _Meter()
        meter.calls = 1
        context = {"chunk_text": chunk.text, "ontology": ontology}
        attempt = 0
        while True:
            try:
                result, completion = await client.chat.completions.create_with_completion(
                    model=settings.model,
                    messages=build_messages(ontology),  # type: ignore[arg-type]
                    response_model=ExtractionResult,
                    max_retries=self._reasking(meter, budget),
                    context=context,
                    temperature=settings.temperature,
                )
            except InstructorRetryException as exc:
                meter.add_usage(exc.total_usage, budget)
                cause = exc.__cause__
                if isinstance(cause, _FATAL):
                    raise ExtractionError(
                        f"the LLM endpoint rejected the request ({_describe(cause)}); "
                        "check base_url, model and api_key"
                    ) from cause
                if not _is_transient(cause):
                    kept = _salvaged(exc, ontology)
                    if kept is not None and not meter.budget_hit:
                        # Re-asks are spent: keep the valid items, report the invalid ones.
                        result, dropped = kept
                        await self._cache_put(chunk, result, ontology)
                        return outcome(result, None, meter.usage(failed=False), dropped=dropped)
                    return outcome(None, self._invalid_reason(exc, meter), meter.usage(failed=True))
                assert cause is not None
                attempt += 1
                if attempt >= settings.backoff_attempts:
                    reason = f"gave up after {attempt} attempts: {_describe(cause)}"
                    return outcome(None, _shorten(reason), meter.usage(failed=True))
                if not budget.reserve_call():
                    reason = f"stopped: {budget.reason}; last error: {_describe(cause)}"
                    return outcome(None, _shorten(reason), meter.usage(failed=True))
                meter.calls += 1
                delay = self._backoff(attempt, cause)
                log.warning("chunk %s: %s; retrying in %.2fs", chunk.id, _describe(cause), delay)
                await asyncio.sleep(delay)
                continue
            except InstructorError as exc:  # e.g. truncated output (finish_reason=length)
                reason = f"{type(exc).__name__}: {exc}"
                return outcome(None, _shorten(reason), meter.usage(failed=True))
            meter.add_usage(getattr(completion, "usage", None), budget)
            # A clean copy: instructor hangs the raw completion on the model it returns.
            result = ExtractionResult.model_validate(
                result.model_dump(mode="json"), context={"ontology": ontology}
            )
            await self._cache_put(chunk, result, ontology)
            return outcome(result, None, meter.usage(failed=False))

    async def _cache_put(self, chunk: Chunk, result: ExtractionResult, ontology: Ontology) -> None:
        if self.cache is None:
            return
        try:
            await self.cache.aput(chunk.sha256, self.settings.model, result, ontology)
        except ExtractionError as exc:
            log.warning("extraction cache write failed: %s", exc)

    def _reasking(self, meter: _Meter, budget: RunBudget) -> AsyncRetrying:
        """instructor's re-ask loop, with each re-ask claiming a call from the budget."""
        limit = self.settings.max_retries + 1

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number >= limit:
                return True
            if not budget.reserve_call():
                meter.budget_hit = True
                return True
            meter.calls += 1
            return False

        return AsyncRetrying(
            stop=stop,
            # HTTP errors go to our backoff, not to a re-ask.
            retry=retry_if_not_exception_type((openai.APIError,)),
            reraise=True,
        )

    def _invalid_reason(self, exc: InstructorRetryException, meter: _Meter) -> str:
        last = exc.__cause__ if exc.__cause__ is not None else exc
        prefix = (
            f"stopped: budget reached after {exc.n_attempts} attempt(s)"
            if meter.budget_hit
            else f"invalid output after {exc.n_attempts} attempt(s)"
        )
        return _shorten(f"{prefix}: {last}")

    def _backoff(self, attempt: int, cause: BaseException) -> float:
        base = self.settings.backoff_base_s * (2.0 ** (attempt - 1))
        delay = base * random.uniform(0.5, 1.5)  # noqa: S311 - jitter, not security
        hinted = _retry_after(cause)
        if hinted is not None:
            delay = max(delay, hinted)
        return min(delay, MAX_BACKOFF_S)


def _salvaged(
    exc: InstructorRetryException, ontology: Ontology
) -> tuple[ExtractionResult, tuple[DroppedItem, ...]] | None:
    """The valid part of the last answer, if it was a JSON extraction at all."""
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
