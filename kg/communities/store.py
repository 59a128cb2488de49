"""Reads of the entity graph and writes of communities, in bounded, parameterized batches.

Every statement is a constant; data arrives only as parameters. The entity graph is read with
keyset pagination over ``Entity.id`` (``read_batch`` source entities per query), so no read
holds the whole graph in one result, and pairs come back in id order: with a fixed seed the
clustering is the same on every run over the same graph.

Only facts count: all facts go Entity -> Entity and carry ``predicate``; MENTIONS, PART_OF and
NEXT (chunk structure), IN_COMMUNITY and PARENT (this module's own) never join two entities
with a predicate, and are also excluded by type in case a future model changes that.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, LiteralString

from neo4j import Driver, Query, RoutingControl

from kg.communities.cluster import Community, Pair
from kg.models import GENERIC_RELATION_TYPE, STRUCTURAL_TYPES

__all__ = ["CommunityStore", "ReportContext", "StoredReport"]

# Structure, never a fact; RELATED is the long tail of facts and stays in.
_NOT_FACTS = sorted(STRUCTURAL_TYPES - {GENERIC_RELATION_TYPE})

# A pair's weight: each fact adds its weight (0.5 when unset) times 1 + ln(1 + the chunks that
# state it), so a pair related by many, often-stated, confident facts binds tightest.
_PAIRS: LiteralString = """
MATCH (a:Entity) WHERE a.id > $after
WITH a ORDER BY a.id LIMIT $batch
CALL (a) {
    MATCH (a)-[r]->(b:Entity)
    WHERE r.predicate IS NOT NULL AND NOT type(r) IN $not_facts AND b <> a
    WITH b, sum(coalesce(r.weight, 0.5) * (1.0 + log(1.0 + size(coalesce(r.chunk_ids, [])))))
         AS weight
    ORDER BY b.id
    RETURN collect(b.id) AS targets, collect(weight) AS weights
}
RETURN a.id AS a, targets, weights
ORDER BY a
"""

_CONTEXTS: LiteralString = """
UNWIND $rows AS row
CALL (row) {
    UNWIND row.members AS member
    MATCH (e:Entity {id: member})
    WITH e, COUNT { (e)-[r]-(:Entity) WHERE r.predicate IS NOT NULL } AS degree
    ORDER BY degree DESC, e.id LIMIT $max_entities
    RETURN collect({id: e.id, name: e.name, type: e.type,
                    description: left(coalesce(e.description, ''), 300), degree: degree})
           AS entities
}
CALL (row) {
    UNWIND row.members AS member
    MATCH (a:Entity {id: member})-[r]->(b:Entity)
    WHERE r.predicate IS NOT NULL AND NOT type(r) IN $not_facts AND b.id IN row.members
    WITH a, r, b
    ORDER BY coalesce(r.weight, 0.5) * (1.0 + log(1.0 + size(coalesce(r.chunk_ids, [])))) DESC,
             r.key
    LIMIT $max_relations
    RETURN collect({id: r.key, source: a.name, target: b.name, predicate: r.predicate,
                    description: left(coalesce(r.description, ''), 300),
                    weight: coalesce(r.weight, 0.5),
                    chunk_ids: coalesce(r.chunk_ids, [])[..5]}) AS relations
}
CALL (row) {
    UNWIND row.members AS member
    MATCH (c:Chunk)-[:MENTIONS]->(:Entity {id: member})
    WITH c, count(*) AS hits
    ORDER BY hits DESC, c.id LIMIT $max_chunks
    RETURN collect({id: c.id, text: left(c.text, $chunk_chars), hits: hits}) AS chunks
}
RETURN row.id AS id, entities, relations, chunks
"""

_STORED_REPORTS: LiteralString = """
MATCH (c:Community)
RETURN c.id AS id, c.members_hash AS members_hash, c.report_key AS report_key
"""

# updated_at moves only when the community's members or report changed.
_UPSERT_COMMUNITIES: LiteralString = """
UNWIND $rows AS row
MERGE (c:Community {id: row.id})
SET c.updated_at = CASE WHEN c.members_hash = row.members_hash AND c.summary = row.summary
                        AND c.title = row.title THEN c.updated_at ELSE $now END
SET c.level = row.level, c.size = row.size, c.rank = row.rank, c.title = row.title,
    c.summary = row.summary, c.findings = row.findings, c.rating = row.rating,
    c.report_kind = row.report_kind, c.report_key = row.report_key,
    c.members_hash = row.members_hash, c.build = $build
"""

_MEMBERSHIPS: LiteralString = """
UNWIND $rows AS row
MATCH (c:Community {id: row.community})
MATCH (e:Entity {id: row.entity})
MERGE (e)-[:IN_COMMUNITY]->(c)
"""

# A report embeds text of its members: it carries their namespaces (graph model 7), and a
# caller scoped to some namespaces reads only reports whose namespaces all lie in them.
_SCOPE_COMMUNITIES: LiteralString = """
UNWIND $rows AS row
MATCH (c:Community {id: row.id})
SET c.namespaces = COLLECT {
    UNWIND row.members AS eid
    MATCH (e:Entity {id: eid})
    UNWIND coalesce(e.namespaces, []) AS ns
    RETURN DISTINCT ns ORDER BY ns
}
"""

_PARENTS: LiteralString = """
UNWIND $rows AS row
MATCH (c:Community {id: row.child})
MATCH (p:Community {id: row.parent})
MERGE (c)-[:PARENT]->(p)
"""

# Communities of an earlier build, a bounded batch per transaction (DETACH takes their edges).
_DELETE_STALE: LiteralString = """
MATCH (c:Community) WHERE c.build IS NULL OR c.build <> $build
WITH c LIMIT $batch
DETACH DELETE c
RETURN count(*) AS deleted
"""


@dataclass(frozen=True)
class ReportContext:
    """What a community's report may use and cite: its top entities, relations and chunks."""

    community: Community
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def citable(self) -> frozenset[str]:
        """Relation and chunk ids the report may cite."""
        return frozenset(
            [str(r["id"]) for r in self.relations] + [str(c["id"]) for c in self.chunks]
        )


@dataclass(frozen=True)
class StoredReport:
    """One community as the next build writes it."""

    community: Community
    title: str
    summary: str
    findings: list[dict[str, Any]]
    rating: float
    rank: float
    kind: str  # "extractive" or "llm"
    report_key: str
    members_hash: str


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass
class CommunityStore:
    """The driver is the caller's; every read is a READ transaction with a timeout."""

    driver: Driver
    database: str
    read_batch: int = 5000
    write_batch: int = 1000
    timeout_s: float = 120.0

    def _read(self, text: LiteralString, **params: Any) -> list[dict[str, Any]]:
        records, _, _ = self.driver.execute_query(
            Query(text, timeout=self.timeout_s),
            params,
            routing_=RoutingControl.READ,
            database_=self.database,
        )
        return [dict(r) for r in records]

    def _write(self, text: LiteralString, **params: Any) -> list[dict[str, Any]]:
        records, _, _ = self.driver.execute_query(
            Query(text, timeout=self.timeout_s),
            params,
            routing_=RoutingControl.WRITE,
            database_=self.database,
        )
        return [dict(r) for r in records]

    def pairs(self) -> list[Pair]:
        """Every pair of entities joined by facts, summed both ways, sorted by ids."""
        weights: dict[tuple[str, str], float] = {}
        after = ""
        while True:
            rows = self._read(_PAIRS, after=after, batch=self.read_batch, not_facts=_NOT_FACTS)
            if not rows:
                break
            # One row per source entity (lists of targets): far fewer records to decode.
            for row in rows:
                a = row["a"]
                for b, weight in zip(row["targets"], row["weights"], strict=True):
                    key = (a, b) if a < b else (b, a)
                    weights[key] = weights.get(key, 0.0) + float(weight)
            after = str(rows[-1]["a"])
        return [Pair(a, b, w) for (a, b), w in sorted(weights.items())]

    def contexts(
        self,
        communities: Sequence[Community],
        *,
        max_entities: int,
        max_relations: int,
        max_chunks: int,
        chunk_chars: int,
        batch: int = 50,
    ) -> list[ReportContext]:
        by_id = {c.id: c for c in communities}
        out: list[ReportContext] = []
        for part in _chunks(list(communities), batch):
            rows = self._read(
                _CONTEXTS,
                rows=[{"id": c.id, "members": list(c.members)} for c in part],
                max_entities=max_entities,
                max_relations=max_relations,
                max_chunks=max_chunks,
                chunk_chars=chunk_chars,
                not_facts=_NOT_FACTS,
            )
            for row in rows:
                out.append(
                    ReportContext(
                        by_id[row["id"]], row["entities"], row["relations"], row["chunks"]
                    )
                )
        return out

    def stored(self) -> dict[str, tuple[str | None, str | None]]:
        """Community id -> (members hash, report key) of what is in the graph now."""
        return {r["id"]: (r["members_hash"], r["report_key"]) for r in self._read(_STORED_REPORTS)}

    def write(self, reports: Sequence[StoredReport], build: str) -> int:
        """Write the communities of ``build``, then delete every other; returns deleted."""
        now = datetime.now(UTC)
        rows = [
            {
                "id": r.community.id,
                "level": r.community.level,
                "size": r.community.size,
                "rank": r.rank,
                "title": r.title,
                "summary": r.summary,
                "findings": json.dumps(r.findings, ensure_ascii=False),
                "rating": r.rating,
                "report_kind": r.kind,
                "report_key": r.report_key,
                "members_hash": r.members_hash,
            }
            for r in reports
        ]
        for part in _chunks(rows, self.write_batch):
            self._write(_UPSERT_COMMUNITIES, rows=list(part), now=now, build=build)
        members = [
            {"community": r.community.id, "entity": e} for r in reports for e in r.community.members
        ]
        for part in _chunks(members, self.write_batch):
            self._write(_MEMBERSHIPS, rows=list(part))
        scopes = [{"id": r.community.id, "members": list(r.community.members)} for r in reports]
        for part in _chunks(scopes, max(1, self.write_batch // 10)):
            self._write(_SCOPE_COMMUNITIES, rows=list(part))
        parents = [
            {"child": r.community.id, "parent": r.community.parent}
            for r in reports
            if r.community.parent is not None
        ]
        for part in _chunks(parents, self.write_batch):
            self._write(_PARENTS, rows=list(part))
        deleted = 0
        while True:
            (row,) = self._write(_DELETE_STALE, build=build, batch=200)
            if not row["deleted"]:
                return deleted
            deleted += int(row["deleted"])
