"""The extraction client end to end through the real openai + instructor clients.

The LLM is tests/fakellm.py's ScriptedLLM: a scripted OpenAI-compatible HTTP server on
loopback. Each test runs in TOOLS mode and in a JSON mode.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kg.errors import ExtractionError
from kg.extract import NOT_RUN, ChunkOutcome, ExtractionCache, Usage
from kg.extract import LLMExtractor as Extractor
from kg.extract.ontology import Ontology
from kg.models import Chunk
from kg.settings import ExtractSettings
from tests.fakellm import Reply, ScriptedLLM

GOOD: dict[str, Any] = {
    "entities": [
        {"name": "Payments", "type": "Service", "description": "Moves money."},
        {"name": "Ledger Service", "type": "Service", "aliases": ["Ledger"]},
    ],
    "relations": [
        {"source": "Payments", "target": "Ledger", "predicate": "calls", "valid_from": "2024-03"}
    ],
}
DANGLING: dict[str, Any] = {
    "entities": [{"name": "Payments", "type": "Service"}],
    "relations": [{"source": "Payments", "target": "Kafka", "predicate": "publishes to"}],
}
RUSSIAN: dict[str, Any] = {
    "entities": [
        {"name": "Сервис платежей", "type": "Сервис"},
        {"name": "Реестр операций", "type": "Сервис"},
    ],
    "relations": [
        {"source": "Сервис платежей", "target": "Реестр операций", "predicate": "вызывает"}
    ],
}


def _chunk(text: str, index: int = 0, doc: str = "doc_a") -> Chunk:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Chunk(f"chk_{doc}_{index}", doc, index, text, digest)


TEXT = "Payments calls the Ledger Service since March 2024."


@pytest.fixture(params=["tools", "json"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def _settings(llm: ScriptedLLM, mode: str = "tools", **overrides: Any) -> ExtractSettings:
    values: dict[str, Any] = {
        "base_url": llm.base_url,
        "api_key": "test-key",
        "model": "scripted-model",
        "mode": mode,
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_attempts": 3,
        "backoff_base_s": 0.001,
        "concurrency": 4,
    }
    return ExtractSettings(**(values | overrides))


def _run(settings: ExtractSettings, chunks: list[Chunk], **kwargs: Any) -> Any:
    return Extractor(settings, **kwargs).extract_chunks_sync(chunks)


def _messages_text(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


def test_valid_extraction(llm: ScriptedLLM, mode: str) -> None:
    # Figures near kg's own estimate of the texts are kept as the endpoint reports them
    # (kg.llm.bounded); implausible ones are not (tests/integration/test_llm_bounds.py).
    llm.script(Reply(payload=GOOD, prompt_tokens=1200, completion_tokens=40))
    run = _run(_settings(llm, mode), [_chunk(TEXT)])
    (outcome,) = run.outcomes
    assert outcome.error is None
    assert outcome.result is not None
    assert not outcome.cached
    relation = outcome.result.relations[0]
    assert (relation.source, relation.predicate, relation.target) == (
        "Payments",
        "CALLS",
        "Ledger Service",
    )
    assert str(relation.valid_from) == "2024-03-01"
    assert run.usage == Usage(calls=1, retries=0, prompt_tokens=1200, completion_tokens=40)
    assert run.per_document == {"doc_a": run.usage}
    assert not run.stopped_by_budget
    assert llm.calls == 1
    request = llm.requests[0]
    assert request["model"] == "scripted-model"
    assert TEXT in _messages_text(request)
    assert ("tools" in request) == (mode == "tools")


def test_invalid_json_then_valid_is_one_reask(llm: ScriptedLLM, mode: str) -> None:
    llm.script(
        Reply(payload='{"entities": [ oops', prompt_tokens=1000),
        Reply(payload=GOOD, prompt_tokens=1000),
    )
    run = _run(_settings(llm, mode), [_chunk(TEXT)])
    assert run.outcomes[0].result is not None
    assert run.usage.calls == 2
    assert run.usage.retries == 1
    assert run.usage.prompt_tokens == 2000
    assert llm.calls == 2


def test_dangling_relation_end_is_reasked_with_the_error(llm: ScriptedLLM, mode: str) -> None:
    llm.script(Reply(payload=DANGLING), Reply(payload=GOOD))
    run = _run(_settings(llm, mode), [_chunk(TEXT)])
    assert run.outcomes[0].result is not None
    assert llm.calls == 2
    reask = _messages_text(llm.requests[1])
    assert "'Kafka' is not one of the extracted entities" in reask


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_http_error_then_success(llm: ScriptedLLM, mode: str, status: int) -> None:
    llm.script(Reply(status=status), Reply(payload=GOOD))
    run = _run(_settings(llm, mode), [_chunk(TEXT)])
    assert run.outcomes[0].result is not None
    assert run.usage.calls == 2
    assert run.usage.retries == 1
    assert llm.calls == 2


def test_timeout_then_success(llm: ScriptedLLM, mode: str) -> None:
    llm.script(Reply(payload=GOOD, delay_s=1.0), Reply(payload=GOOD))
    started = time.monotonic()
    run = _run(_settings(llm, mode, timeout_s=0.2), [_chunk(TEXT)])
    assert time.monotonic() - started < 1.0
    assert run.outcomes[0].result is not None
    assert run.usage.calls == 2


def test_persistent_timeout_fails_the_chunk(llm: ScriptedLLM, mode: str) -> None:
    llm.responder = lambda _request: Reply(payload=GOOD, delay_s=0.6)
    run = _run(_settings(llm, mode, timeout_s=0.1, backoff_attempts=2), [_chunk(TEXT)])
    (outcome,) = run.outcomes
    assert outcome.result is None
    assert outcome.error == (
        f"gave up after 2 attempts: the LLM endpoint {llm.base_url} (model scripted-model) failed: "
        "timeout; it gave no answer within 0.1s (KG_EXTRACT__TIMEOUT_S or KG_LLM__TIMEOUT_S); "
        "check its load; or build the document graph without an LLM: kg ingest --graph metadata"
    )
    assert run.usage.failures == 1
    assert run.usage.calls == 2
    assert len(run.failed) == 1


def test_persistent_invalid_relation_drops_alone_after_reasks(llm: ScriptedLLM, mode: str) -> None:
    llm.responder = lambda _request: Reply(payload=DANGLING)
    run = _run(_settings(llm, mode, max_retries=2), [_chunk(TEXT), _chunk("Other.", 1)])
    # The re-ask budget is spent on every chunk (3 attempts each) ...
    assert run.usage.calls == 6
    assert llm.calls == 6
    # ... then the valid entity is kept and only the dangling relation is dropped, reported.
    for outcome in run.outcomes:
        assert outcome.error is None
        assert outcome.result is not None
        assert [e.name for e in outcome.result.entities] == ["Payments"]
        assert outcome.result.relations == []
        assert [(d.where(), d.reason) for d in outcome.dropped] == [
            ("relations[0]", "names no kept entity: 'Kafka'")
        ]
    assert run.usage.failures == 0


def test_unparseable_output_fails_with_reason_and_no_result(llm: ScriptedLLM, mode: str) -> None:
    llm.responder = lambda _request: Reply(payload={"entities": "not a list"})
    run = _run(_settings(llm, mode, max_retries=1), [_chunk(TEXT)])
    (outcome,) = run.outcomes
    assert outcome.result is None
    assert outcome.error is not None
    assert outcome.error.startswith("invalid output after 2 attempt(s)")
    assert run.usage.failures == 1


def test_persistent_server_error_fails_after_backoff(llm: ScriptedLLM, mode: str) -> None:
    llm.responder = lambda _request: Reply(status=502)
    run = _run(_settings(llm, mode, backoff_attempts=3), [_chunk(TEXT)])
    assert run.outcomes[0].error is not None
    assert run.outcomes[0].error.startswith(
        f"gave up after 3 attempts: the LLM endpoint {llm.base_url} (model scripted-model) "
        "failed: HTTP 502"
    )
    assert llm.calls == 3


def test_cache_hit_on_rerun_makes_no_calls(llm: ScriptedLLM, mode: str, tmp_path: Path) -> None:
    llm.responder = lambda _request: Reply(payload=GOOD)
    chunks = [_chunk(TEXT), _chunk("Second passage.", 1, "doc_b")]
    settings = _settings(llm, mode)
    with ExtractionCache(tmp_path / "cache.sqlite") as cache:
        first = _run(settings, chunks, cache=cache)
        assert llm.calls == 2
        assert first.usage.cache_hits == 0
    llm.reset()
    with ExtractionCache(tmp_path / "cache.sqlite") as cache:  # a new process, same file
        second = _run(settings, chunks, cache=cache)
    assert llm.calls == 0
    assert second.usage == Usage(cache_hits=2)
    assert all(o.cached for o in second.outcomes)
    assert [o.result for o in second.outcomes] == [o.result for o in first.outcomes]
    assert second.per_document == {"doc_a": Usage(cache_hits=1), "doc_b": Usage(cache_hits=1)}


RERUN_FROM_CACHE = """
import json, sys
from kg.extract import ExtractionCache, LLMExtractor
from kg.models import Chunk
from kg.settings import ExtractSettings
args = json.loads(sys.argv[1])
chunks = [Chunk(*c) for c in args["chunks"]]
with ExtractionCache(args["cache"]) as cache:
    run = LLMExtractor(ExtractSettings(**args["settings"]), cache=cache).extract_chunks_sync(chunks)
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"openai", "instructor"})
print(json.dumps({"cache_hits": run.usage.cache_hits, "loaded": loaded}))
"""


def test_a_rerun_served_from_the_cache_never_loads_the_llm_client(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    """The client opens at the first call: a re-run of unchanged chunks (a `kg ingest` of a
    folder that did not change) pays neither openai's and instructor's import nor a pool."""
    import subprocess
    import sys

    llm.responder = lambda _request: Reply(payload=GOOD)
    chunks = [_chunk(TEXT), _chunk("Second passage.", 1, "doc_b")]
    settings = _settings(llm)
    with ExtractionCache(tmp_path / "cache.sqlite") as cache:
        _run(settings, chunks, cache=cache)
    assert llm.calls == 2
    args = {
        "chunks": [[c.id, c.document_id, c.index, c.text, c.sha256] for c in chunks],
        "cache": str(tmp_path / "cache.sqlite"),
        "settings": settings.model_dump(mode="json"),
    }
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", RERUN_FROM_CACHE, json.dumps(args)],
        cwd=root, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"cache_hits": 2, "loaded": []}
    assert llm.calls == 2
    llm.reset()
    fresh = _run(settings, [_chunk("A third passage.", 2, "doc_c")], cache=None)
    assert llm.calls == 1  # a chunk the cache lacks still opens the client and calls
    assert fresh.outcomes[0].result is not None


def test_cache_misses_when_model_or_ontology_changes(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.responder = lambda _request: Reply(payload=GOOD)
    with ExtractionCache(tmp_path / "cache.sqlite") as cache:
        _run(_settings(llm), [_chunk(TEXT)], cache=cache)
        _run(_settings(llm, model="other-model"), [_chunk(TEXT)], cache=cache)
        _run(_settings(llm, allowed_predicates=["CALLS"]), [_chunk(TEXT)], cache=cache)
        assert llm.calls == 3
        _run(_settings(llm, model="other-model"), [_chunk(TEXT)], cache=cache)
    assert llm.calls == 3


def test_call_ceiling_stops_cleanly_and_keeps_results(llm: ScriptedLLM, mode: str) -> None:
    llm.responder = lambda _request: Reply(payload=GOOD)
    chunks = [_chunk(f"Passage {i}.", i) for i in range(5)]
    done: list[ChunkOutcome] = []
    settings = _settings(llm, mode, max_calls=2, concurrency=1)
    run = Extractor(settings).extract_chunks_sync(chunks, on_done=done.append)
    assert llm.calls == 2
    assert [o.ok for o in run.outcomes] == [True, True, False, False, False]
    assert len(run.not_run) == 3
    for outcome in run.not_run:
        assert outcome.error is not None
        assert outcome.error.startswith(NOT_RUN)
        assert outcome.usage == Usage()
    assert run.failed == []
    assert run.stopped_by_budget
    assert run.budget_reason == "max_calls=2 reached"
    assert len(done) == 5
    assert [o.chunk_id for o in run.outcomes] == [c.id for c in chunks]


def test_call_ceiling_holds_under_concurrency_and_reasks(llm: ScriptedLLM) -> None:
    llm.responder = lambda _request: Reply(payload=DANGLING)  # every chunk wants 3 calls
    chunks = [_chunk(f"Passage {i}.", i) for i in range(6)]
    run = _run(_settings(llm, max_calls=4, concurrency=3), chunks)
    assert llm.calls == 4
    assert run.usage.calls == 4
    assert run.stopped_by_budget
    started = [o for o in run.outcomes if not o.not_run]
    assert all(o.result is None for o in run.outcomes)
    assert any(o.error and o.error.startswith("stopped: budget reached") for o in started)


def test_token_ceiling(llm: ScriptedLLM) -> None:
    llm.responder = lambda _request: Reply(payload=GOOD, prompt_tokens=1000, completion_tokens=40)
    chunks = [_chunk(f"Passage {i}.", i) for i in range(4)]
    run = _run(_settings(llm, max_tokens=1500, concurrency=1), chunks)
    assert llm.calls == 2  # 1,040 tokens < 1,500 after one call, 2,080 after two
    assert [o.ok for o in run.outcomes] == [True, True, False, False]
    assert run.budget_reason is not None
    assert run.budget_reason.startswith("max_tokens=1500")


def test_russian_text(llm: ScriptedLLM, mode: str) -> None:
    text = "Сервис платежей вызывает Реестр операций для записи каждого перевода."
    llm.script(Reply(payload=RUSSIAN))
    run = _run(_settings(llm, mode), [_chunk(text)])
    result = run.outcomes[0].result
    assert result is not None
    assert [e.name for e in result.entities] == ["Сервис платежей", "Реестр операций"]
    # "вызывает" translates CALLS, so the two languages share one predicate (kg.extract.predicates)
    assert result.relations[0].predicate == "CALLS"
    sent = _messages_text(llm.requests[0])
    assert text in sent
    assert "language" in sent  # the prompt asks to keep names in the source language


def test_ontology_violation_is_reasked(llm: ScriptedLLM, mode: str) -> None:
    llm.script(Reply(payload=GOOD), Reply(payload=GOOD | {"relations": []}))
    settings = _settings(llm, mode, allowed_entity_types=["Service"], allowed_predicates=["USES"])
    run = _run(settings, [_chunk(TEXT)])
    assert run.outcomes[0].result is not None
    assert llm.calls == 2
    assert "Use only these predicates: USES" in _messages_text(llm.requests[0])
    assert "predicate 'CALLS' is not allowed; use one of: USES" in _messages_text(llm.requests[1])


def test_template_syntax_in_text_is_sent_verbatim(llm: ScriptedLLM) -> None:
    text = "Config uses {{ secret }} and {% if x %} blocks {# not a comment"
    llm.script(Reply(payload=GOOD))
    run = _run(_settings(llm), [_chunk(text)])
    assert run.outcomes[0].ok
    assert text in _messages_text(llm.requests[0])


def test_bad_key_stops_the_run(llm: ScriptedLLM) -> None:
    llm.responder = lambda _request: Reply(status=401)
    with pytest.raises(
        ExtractionError, match=r"HTTP 401.*check the key \(KG_EXTRACT__API_KEY or KG_LLM__API_KEY\)"
    ):
        _run(_settings(llm), [_chunk(TEXT), _chunk("x", 1)])


def test_on_error_raise(llm: ScriptedLLM) -> None:
    llm.responder = lambda _request: Reply(payload={"entities": "not a list"})
    extractor = Extractor(_settings(llm, max_retries=0))
    with pytest.raises(ExtractionError, match="chunk chk_doc_a_0 failed: invalid output"):
        extractor.extract_chunks_sync([_chunk(TEXT)], on_error="raise")


def test_concurrency_is_bounded(llm: ScriptedLLM) -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def responder(_request: dict[str, Any]) -> Reply:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return Reply(payload=GOOD)

    llm.responder = responder
    chunks = [_chunk(f"Passage {i}.", i, f"doc_{i % 3}") for i in range(12)]
    run = _run(_settings(llm, concurrency=3), chunks)
    assert all(o.ok for o in run.outcomes)
    assert state["peak"] == 3
    assert run.usage.calls == 12
    assert sum(u.calls for u in run.per_document.values()) == 12


def test_other_json_modes(llm: ScriptedLLM) -> None:
    for mode in ("json_schema", "md_json"):
        llm.script(Reply(payload=GOOD))
        run = _run(_settings(llm, mode), [_chunk(TEXT)])
        assert run.outcomes[0].ok, run.outcomes[0].error


def test_async_api_and_empty_input(llm: ScriptedLLM) -> None:
    llm.script(Reply(payload=GOOD))

    async def main() -> None:
        extractor = Extractor(_settings(llm), ontology=Ontology())
        empty = await extractor.extract_chunks([])
        assert empty.outcomes == []
        assert empty.usage == Usage()
        run = await extractor.extract_chunks([_chunk(TEXT)])
        assert run.outcomes[0].ok

    asyncio.run(main())


def test_constructor_does_no_io() -> None:
    settings = ExtractSettings(
        base_url="http://127.0.0.1:9/v1", ontology_file=Path("/missing.yaml")
    )
    Extractor(settings, cache=ExtractionCache(Path("/nonexistent/dir/cache.sqlite")))


def test_broken_cache_costs_calls_not_the_run(llm: ScriptedLLM, tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"not a database" * 100)
    llm.script(Reply(payload=GOOD))
    with ExtractionCache(path) as cache:
        run = _run(_settings(llm), [_chunk(TEXT)], cache=cache)
    assert run.outcomes[0].ok
    assert llm.calls == 1
