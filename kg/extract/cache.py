"""A SQLite cache of extraction results, so unchanged text is never sent to the LLM twice.

Keyed by the chunk's sha256, the model, ``PROMPT_VERSION``, ``SCHEMA_VERSION`` and the
ontology's fingerprint; values are the result as JSON (never pickle: a cache file must not be
able to run code). The file is :class:`kg.sqlite_cache.SqliteCache` (one connection under a
lock, private on disk); async callers go through a worker thread so the event loop never
blocks on disk.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from pydantic import ValidationError

from kg.extract.ontology import Ontology
from kg.extract.prompts import PROMPT_VERSION, SCHEMA_VERSION
from kg.extract.schema import ExtractionResult
from kg.sqlite_cache import SqliteCache

__all__ = ["ExtractionCache", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS extractions (
    key TEXT PRIMARY KEY,
    chunk_sha256 TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    schema_version TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""


def cache_key(chunk_sha256: str, model: str, ontology: Ontology | None = None) -> str:
    """The identity of one extraction: same text, model, prompts, schema and ontology."""
    fingerprint = ontology.fingerprint if ontology is not None else "none"
    parts = [chunk_sha256, model, PROMPT_VERSION, SCHEMA_VERSION, fingerprint]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class ExtractionCache:
    """Opens its file lazily (constructors do no I/O); use ``close()`` or ``with``."""

    def __init__(self, path: Path, *, refresh: bool = False) -> None:
        self._db = SqliteCache(path, schema=_SCHEMA, what="extraction cache")
        self.path = self._db.path
        # refresh (``kg ingest --reextract``): every lookup misses, new results replace old.
        self.refresh = refresh

    def _connection(self) -> sqlite3.Connection:
        return self._db.connection()

    def get(
        self, chunk_sha256: str, model: str, ontology: Ontology | None = None
    ) -> ExtractionResult | None:
        """The cached result, or None (a row that no longer validates counts as a miss)."""
        if self.refresh:
            return None
        key = cache_key(chunk_sha256, model, ontology)
        row = self._db.fetchone("SELECT value FROM extractions WHERE key = ?", (key,))
        if row is None:
            return None
        try:
            return ExtractionResult.model_validate(
                json.loads(row[0]), context={"ontology": ontology}
            )
        except (ValueError, ValidationError):
            return None

    def contains(self, chunk_sha256: str, model: str, ontology: Ontology | None = None) -> bool:
        if self.refresh:
            return False
        key = cache_key(chunk_sha256, model, ontology)
        return self._db.fetchone("SELECT 1 FROM extractions WHERE key = ?", (key,)) is not None

    def put(
        self,
        chunk_sha256: str,
        model: str,
        result: ExtractionResult,
        ontology: Ontology | None = None,
    ) -> None:
        key = cache_key(chunk_sha256, model, ontology)
        value = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
        now = datetime.now(UTC).isoformat()
        self._db.write(
            "INSERT OR REPLACE INTO extractions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, chunk_sha256, model, PROMPT_VERSION, SCHEMA_VERSION, value, now),
        )

    async def aget(
        self, chunk_sha256: str, model: str, ontology: Ontology | None = None
    ) -> ExtractionResult | None:
        return await asyncio.to_thread(self.get, chunk_sha256, model, ontology)

    async def aput(
        self,
        chunk_sha256: str,
        model: str,
        result: ExtractionResult,
        ontology: Ontology | None = None,
    ) -> None:
        await asyncio.to_thread(self.put, chunk_sha256, model, result, ontology)

    def __len__(self) -> int:
        row = self._db.fetchone("SELECT COUNT(*) FROM extractions")
        return int(row[0]) if row is not None else 0

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ExtractionCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
