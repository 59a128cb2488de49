"""The SQLite cache (JSON values, version keys, concurrency), the run budget and estimates."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from kg.extract import cache as cache_module
from kg.extract.budget import RunBudget, Usage, estimate
from kg.extract.cache import ExtractionCache, cache_key
from kg.extract.ontology import Ontology
from kg.extract.schema import ExtractionResult
from kg.models import Chunk
from kg.settings import ExtractSettings

RESULT = ExtractionResult.model_validate(
    {
        "entities": [{"name": "Сервис", "type": "Service"}, {"name": "B", "type": "Service"}],
        "relations": [
            {"source": "Сервис", "target": "B", "predicate": "calls", "valid_from": "2024"}
        ],
    }
)


def test_constructor_does_no_io(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    cache = ExtractionCache(path)
    assert not path.parent.exists()
    cache.close()


def test_round_trip_as_json(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with ExtractionCache(path) as cache:
        assert cache.get("sha", "m") is None
        cache.put("sha", "m", RESULT)
        assert cache.get("sha", "m") == RESULT
        assert cache.contains("sha", "m")
        assert len(cache) == 1
    raw = sqlite3.connect(path).execute("SELECT value FROM extractions").fetchone()[0]
    assert '"Сервис"' in raw  # readable JSON, not a pickle
    assert '"valid_from": "2024-01-01"' in raw


def test_key_covers_model_versions_and_ontology(monkeypatch: pytest.MonkeyPatch) -> None:
    base = cache_key("sha", "m")
    assert cache_key("sha", "m2") != base
    assert cache_key("sha2", "m") != base
    assert cache_key("sha", "m", Ontology.build(["A"])) != base
    assert cache_key("sha", "m", Ontology()) == base
    monkeypatch.setattr(cache_module, "PROMPT_VERSION", "other")
    assert cache_key("sha", "m") != base


def test_row_that_no_longer_validates_is_a_miss(tmp_path: Path) -> None:
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        cache.put("sha", "m", RESULT)
        cache._connection().execute("UPDATE extractions SET value = '{\"relations\": 5}'")
        assert cache.get("sha", "m") is None


def test_concurrent_coroutines(tmp_path: Path) -> None:
    async def main(cache: ExtractionCache) -> list[ExtractionResult | None]:
        await asyncio.gather(*(cache.aput(f"s{i}", "m", RESULT) for i in range(40)))
        return await asyncio.gather(*(cache.aget(f"s{i}", "m") for i in range(40)))

    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        assert all(r == RESULT for r in asyncio.run(main(cache)))
        assert len(cache) == 40


def test_run_budget_calls_and_tokens() -> None:
    budget = RunBudget(max_calls=2, max_tokens=None)
    assert budget.reserve_call()
    assert budget.reserve_call()
    assert not budget.reserve_call()
    assert budget.reason == "max_calls=2 reached"
    tokens = RunBudget(max_calls=None, max_tokens=100)
    assert tokens.reserve_call()
    tokens.add_tokens(120)
    assert not tokens.reserve_call()
    assert tokens.reason is not None
    assert tokens.reason.startswith("max_tokens=100")
    unlimited = RunBudget(None, None)
    assert all(unlimited.reserve_call() for _ in range(1000))


def test_usage_adds() -> None:
    total = Usage(1, 0, 10, 5) + Usage(2, 1, 20, 10, cache_hits=1, failures=1)
    assert total == Usage(3, 1, 30, 15, 1, 1)
    assert total.total_tokens == 45


def _chunk(i: int, text: str) -> Chunk:
    import hashlib

    return Chunk(f"c{i}", "d", i, text, hashlib.sha256(text.encode()).hexdigest())


def test_estimate_without_calls_and_with_cache(tmp_path: Path) -> None:
    chunks = [_chunk(i, f"Payments service {i} calls the Ledger. " * 20) for i in range(3)]
    settings = ExtractSettings(model="m")
    est = estimate(chunks, settings)
    assert est.calls == 3
    assert est.prompt_tokens > 3 * 100  # chunk text plus prompt and schema overhead
    assert est.completion_tokens > 0
    assert est.cached == 0
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        cache.put(chunks[0].sha256, "m", RESULT)
        cached = estimate(chunks, settings, cache=cache)
    assert cached.calls == 2
    assert cached.cached == 1
    assert cached.total_tokens < est.total_tokens


def test_corrupt_cache_file_raises_extraction_error(tmp_path: Path) -> None:
    from kg.errors import ExtractionError

    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with ExtractionCache(path) as cache, pytest.raises(ExtractionError, match="cache"):
        cache.get("sha", "m")
