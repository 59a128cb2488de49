"""Staged facts: what an ingest worker extracted, kept in the graph until one pass resolves it.

Workers (``kg ingest --workers N`` or ``--shard I/N``, docs/architecture.md "Parallel ingest")
write their documents and chunks, then stage each document's validated facts on its node
(``Document.staged``, one JSON string, with ``staged_token``), mark documents whose files are
gone (``staged_gone``), and record the entities whose old mentions they removed
(``(:KgStaged {id, source, touched})``). The finish pass reads all of it in one canonical
order, resolves and writes entities, mentions and relations, then clears exactly what it read
(by token and id), so a worker staging again meanwhile loses nothing.

``(:KgShardDone {source, index, count})`` records which shards of a ``--shard I/N`` run have
staged since the last finish, so the last one knows to finish.

Every query is parameterized text; data never becomes Cypher. Writes are managed
transactions (retried with backoff on transient errors).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, LiteralString

from neo4j import Driver, RoutingControl

from kg.graph.tx import write
from kg.models import Chunk

_UNSTAGE: LiteralString = """
UNWIND $ids AS id MATCH (d:Document {id: id})
REMOVE d.staged, d.staged_token, d.staged_gone
"""
_STAGE: LiteralString = """
UNWIND $rows AS row MATCH (d:Document {id: row.id})
SET d.staged = row.payload, d.staged_token = row.token
"""
_STAGE_GONE: LiteralString = """
UNWIND $ids AS id MATCH (d:Document {id: id}) SET d.staged_gone = true
"""
_TOUCHED: LiteralString = """
CREATE (:KgStaged {id: $id, source: $source, touched: $touched})
"""
_STAGED: LiteralString = """
MATCH (d:Document {source: $source}) WHERE d.staged IS NOT NULL
RETURN d.id AS id, d.staged AS payload, d.staged_token AS token
ORDER BY d.path, d.id
"""
_GONE: LiteralString = """
MATCH (d:Document {source: $source}) WHERE d.staged_gone = true
RETURN d.id AS id ORDER BY d.id
"""
_PENDING_TOUCHED: LiteralString = """
MATCH (p:KgStaged {source: $source}) RETURN p.id AS id, p.touched AS touched ORDER BY p.id
"""
_CHUNKS: LiteralString = """
UNWIND $ids AS id MATCH (c:Chunk {document_id: id})
RETURN c.id AS id, c.document_id AS document_id, c.index AS index, c.text AS text,
       c.sha256 AS sha256
ORDER BY c.document_id, c.index
"""
_CLEAR: LiteralString = """
UNWIND $rows AS row MATCH (d:Document {id: row.id}) WHERE d.staged_token = row.token
REMOVE d.staged, d.staged_token
"""
_CLEAR_GONE: LiteralString = """
UNWIND $ids AS id MATCH (d:Document {id: id}) REMOVE d.staged_gone
"""
_CLEAR_TOUCHED: LiteralString = "UNWIND $ids AS id MATCH (p:KgStaged {id: id}) DELETE p"
_MARK_SHARD: LiteralString = """
MERGE (s:KgShardDone {source: $source, index: $index, count: $count})
WITH s MATCH (t:KgShardDone {source: $source, count: $count})
RETURN count(DISTINCT t.index) AS done
"""
_CLEAR_SHARDS: LiteralString = "MATCH (s:KgShardDone {source: $source}) DELETE s"


@dataclass(frozen=True)
class StagedDocument:
    """One document's staged payload (see :func:`payload`) and the token that names it."""

    id: str
    token: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Staged:
    """Everything a finish pass consumes for one source, in canonical order."""

    documents: list[StagedDocument]
    gone: list[str]
    touched: list[str]  # entity ids whose old mentions workers removed: settled at the end
    touched_ids: list[str]  # the KgStaged nodes read (deleted after the finish)

    def __bool__(self) -> bool:
        return bool(self.documents or self.gone or self.touched)


@dataclass
class StagingStore:
    """Reads and writes the staged state; see the module docstring."""

    driver: Driver
    database: str
    batch_size: int = 1000

    # -- workers -----------------------------------------------------------------------------

    def unstage(self, document_ids: Sequence[str]) -> None:
        """Forget an earlier staging of documents about to be written again: a worker killed
        between removing their chunks and staging anew must not leave the old facts."""
        self._batched(_UNSTAGE, "ids", list(document_ids))

    def stage(
        self, rows: Sequence[tuple[str, dict[str, Any]]], chunks: Sequence[Chunk] = ()
    ) -> None:
        """Stage (document id, payload) pairs; the last write of a worker's document. The
        chunks are in the graph already (:meth:`chunks` reads them back)."""
        encoded = [
            {"id": doc_id, "payload": json.dumps(data, sort_keys=True), "token": _token()}
            for doc_id, data in rows
        ]
        self._batched(_STAGE, "rows", encoded)

    def stage_gone(self, document_ids: Sequence[str]) -> None:
        self._batched(_STAGE_GONE, "ids", list(document_ids))

    def record_touched(self, source: str, entity_ids: Sequence[str]) -> None:
        if entity_ids:
            self._write(_TOUCHED, id=_token(), source=source, touched=sorted(set(entity_ids)))

    def mark_shard(self, source: str, index: int, count: int) -> int:
        """Record that shard ``index`` of ``count`` staged; how many distinct shards have."""
        records = self._write(_MARK_SHARD, source=source, index=index, count=count)
        return int(records[0]["done"])

    # -- the finish pass ---------------------------------------------------------------------

    def staged(self, source: str) -> Staged:
        docs = canonical(
            StagedDocument(r["id"], r["token"], json.loads(r["payload"]))
            for r in self._read(_STAGED, source=source)
        )
        gone = [r["id"] for r in self._read(_GONE, source=source)]
        pending = self._read(_PENDING_TOUCHED, source=source)
        touched = sorted({eid for r in pending for eid in r["touched"]})
        return Staged(docs, gone, touched, [r["id"] for r in pending])

    def chunks(self, document_ids: Sequence[str]) -> dict[str, list[Chunk]]:
        """The chunks the workers wrote for these documents, by document, in index order."""
        out: dict[str, list[Chunk]] = {doc_id: [] for doc_id in document_ids}
        ids = list(document_ids)
        for start in range(0, len(ids), self.batch_size):
            for r in self._read(_CHUNKS, ids=ids[start : start + self.batch_size]):
                out[r["document_id"]].append(
                    Chunk(r["id"], r["document_id"], r["index"], r["text"], r["sha256"])
                )
        return out

    def clear(self, staged: Staged, source: str) -> None:
        """Remove what this finish consumed, and the shard marks of the round it ends."""
        self._batched(_CLEAR, "rows", [{"id": d.id, "token": d.token} for d in staged.documents])
        self._batched(_CLEAR_GONE, "ids", staged.gone)
        self._batched(_CLEAR_TOUCHED, "ids", staged.touched_ids)
        self._write(_CLEAR_SHARDS, source=source)

    # -- plumbing ----------------------------------------------------------------------------

    def _batched(self, query: LiteralString, key: str, rows: list[Any]) -> None:
        for start in range(0, len(rows), self.batch_size):
            self._write(query, **{key: rows[start : start + self.batch_size]})

    def _read(self, query: LiteralString, **params: Any) -> list[Any]:
        records, _, _ = self.driver.execute_query(
            query, params, routing_=RoutingControl.WRITE, database_=self.database
        )
        return list(records)

    def _write(self, query: LiteralString, **params: Any) -> list[Any]:
        return write(self.driver, self.database, query, params)


def _token() -> str:
    return uuid.uuid4().hex


def canonical(documents: Iterable[StagedDocument]) -> list[StagedDocument]:
    """Staged documents in the finish's order, by path then id, compared in Python: one
    order whichever store they came from (Cypher's string order is not Python's everywhere)."""
    return sorted(documents, key=lambda d: (str(d.data["path"]), d.id))


@dataclass
class LocalStaging:
    """A single ``kg ingest`` run's staging: kept in this process, over the graph's.

    One worker has no one to share its staged facts with, so writing them to the graph and
    reading them back would only cost time (the whole text and facts of every document, twice).
    The finish still sees the same values (each payload goes through the same JSON encoding)
    in the same order (:func:`canonical`), so one worker builds the graph N workers build.
    Whatever earlier ``--shard`` runs left staged for this source is finished with it, and a
    document staged in the graph but written again here is unstaged there first.
    """

    graph: StagingStore
    _documents: dict[str, StagedDocument] = field(default_factory=dict)
    _chunks: dict[str, list[Chunk]] = field(default_factory=dict)
    _gone: set[str] = field(default_factory=set)
    _touched: set[str] = field(default_factory=set)

    def unstage(self, document_ids: Sequence[str]) -> None:
        self.graph.unstage(document_ids)
        for doc_id in document_ids:
            self._documents.pop(doc_id, None)
            self._chunks.pop(doc_id, None)

    def stage(
        self, rows: Sequence[tuple[str, dict[str, Any]]], chunks: Sequence[Chunk] = ()
    ) -> None:
        for doc_id, data in rows:
            payload = json.loads(json.dumps(data, sort_keys=True))
            self._documents[doc_id] = StagedDocument(doc_id, "", payload)
            self._chunks[doc_id] = []
        for chunk in sorted(chunks, key=lambda c: (c.document_id, c.index)):
            if chunk.document_id in self._chunks:
                self._chunks[chunk.document_id].append(chunk)

    def stage_gone(self, document_ids: Sequence[str]) -> None:
        self._gone.update(document_ids)

    def record_touched(self, source: str, entity_ids: Sequence[str]) -> None:
        self._touched.update(entity_ids)

    def mark_shard(self, source: str, index: int, count: int) -> int:
        return self.graph.mark_shard(source, index, count)

    def staged(self, source: str) -> Staged:
        earlier = self.graph.staged(source)
        docs = [d for d in earlier.documents if d.id not in self._documents]
        return Staged(
            canonical([*docs, *self._documents.values()]),
            sorted(set(earlier.gone) | self._gone),
            sorted(set(earlier.touched) | self._touched),
            earlier.touched_ids,
        )

    def chunks(self, document_ids: Sequence[str]) -> dict[str, list[Chunk]]:
        elsewhere = self.graph.chunks([d for d in document_ids if d not in self._chunks])
        return {
            d: list(self._chunks[d]) if d in self._chunks else elsewhere[d] for d in document_ids
        }

    def clear(self, staged: Staged, source: str) -> None:
        in_graph = [d for d in staged.documents if d.token]
        self.graph.clear(Staged(in_graph, staged.gone, [], staged.touched_ids), source)
        self._documents.clear()
        self._chunks.clear()
        self._gone.clear()
        self._touched.clear()


#: Where an ingest stages: the graph's store (workers and shards) or one run's own.
Staging = StagingStore | LocalStaging
