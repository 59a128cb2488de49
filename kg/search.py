"""Local search: match the question to entities, expand them through a template, rank.

Three modes share one response shape (:class:`~kg.search_models.SearchResponse`):

- ``graph``: seeds from the entity vector index and the fulltext index, fused by reciprocal
  rank fusion (RRF); the seeds expanded 1..3 hops by ``seed_expansion``; entities and
  relations ranked by seed similarity x edge weight x type weight / (hop + 1), counting only
  relations valid at ``as_of`` (default: now); the chunks that support them (relation
  ``chunk_ids`` and MENTIONS) ranked by the scores they support.
- ``vector``: chunks nearest to the question's embedding, nothing else (the baseline).
- ``hybrid``: both; the two chunk rankings fused by RRF.

Every query goes through :class:`~kg.cypher.guard.Guard`; this module builds no Cypher.
docs/search.md explains the ranking.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from neo4j import AsyncDriver

from kg.cypher.guard import Guard
from kg.cypher.lucene import escape_lucene
from kg.cypher.templates import REGISTRY, Registry
from kg.errors import ConfigError, NotFoundError, QueryRejected
from kg.graph.meta import check_current_async
from kg.resolve import Embedder
from kg.search_models import (
    DEPTHS,
    ChunkHit,
    EntityDetail,
    EntityHit,
    Neighborhood,
    RelationHit,
    SearchRequest,
    SearchResponse,
    TemplateInfo,
    TemplateResult,
)
from kg.settings import SearchSettings, Settings

# Candidates fetched from each index per seed kept: fusion needs some depth to work with.
_CANDIDATES_PER_SEED = 4
# Relations whose chunk_ids are fetched, as a multiple of the response limit.
_EVIDENCE_RELATIONS = 3
_DEFAULT_WEIGHT = 0.5


# -- pure ranking ---------------------------------------------------------------------------


def rrf(rankings: Sequence[Sequence[str]], k: int) -> dict[str, float]:
    """Reciprocal rank fusion, scaled to 0..1 (1.0: first in every ranking)."""
    if not rankings:
        return {}
    raw: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            raw[key] = raw.get(key, 0.0) + 1.0 / (k + rank)
    best = len(rankings) / (k + 1)
    return {key: score / best for key, score in raw.items()}


@dataclass(frozen=True)
class Weights:
    """How much a relation of each type counts; MENTIONS weighs chunk-to-entity support."""

    by_type: Mapping[str, float]
    default: float

    @classmethod
    def from_settings(cls, search: SearchSettings) -> Weights:
        return cls(by_type=dict(search.type_weights), default=search.default_type_weight)

    def of(self, rel_type: str) -> float:
        return self.by_type.get(rel_type, self.default)


@dataclass
class _Node:
    info: dict[str, Any]
    hop: int
    strength: float


@dataclass
class Ranked:
    """Entities and relations of one expansion, best first."""

    entities: list[EntityHit] = field(default_factory=list)
    relations: list[RelationHit] = field(default_factory=list)


def _weight(row: Mapping[str, Any]) -> float:
    value = row.get("weight")
    if isinstance(value, int | float) and math.isfinite(value):
        return min(max(float(value), 0.0), 1.0)
    return _DEFAULT_WEIGHT


# Long on purpose: the scoring formula of docs/search.md in one place, hop by hop.
def rank_expansion(
    seeds: Mapping[str, tuple[float, Mapping[str, Any]]],
    rows: Sequence[Mapping[str, Any]],
    weights: Weights,
) -> Ranked:
    """Score what ``seed_expansion`` returned.

    A seed's strength is its similarity; crossing a relation multiplies the strength by its
    weight and type weight. An entity at ``hop`` scores strength / (hop + 1); a relation
    reached at hop ``L`` scores the strength it hands to its far end, / (L + 1). With one
    relation that is exactly seed similarity x edge weight x type weight / (hop + 1).
    Rows arrive ordered by hop, so a relation's near end is always known already.
    """
    nodes: dict[str, _Node] = {
        sid: _Node(info=dict(info), hop=0, strength=sim) for sid, (sim, info) in seeds.items()
    }
    relations: list[RelationHit] = []
    for row in sorted(rows, key=lambda r: int(r["hop"])):
        hop = int(row["hop"])
        source, target = row["source"] or {}, row["target"] or {}
        sid, tid = str(source.get("id")), str(target.get("id"))
        near, far = _near_far(nodes, sid, tid, hop)
        if near is None:
            continue
        far_info = target if far == tid else source
        strength = nodes[near].strength * _weight(row) * weights.of(str(row["type"]))
        node = nodes.get(far)
        if node is None:
            nodes[far] = _Node(info=dict(far_info), hop=hop, strength=strength)
        elif node.hop == hop and strength > node.strength:
            node.strength = strength
        relations.append(
            RelationHit(
                source=sid,
                source_name=str(source.get("name") or sid),
                target=tid,
                target_name=str(target.get("name") or tid),
                type=str(row["type"]),
                description=str(row.get("description") or ""),
                weight=_weight(row),
                valid_from=_text(row.get("valid_from")),
                valid_to=_text(row.get("valid_to")),
                chunk_ids=[str(c) for c in row.get("chunk_ids") or []],
                hops=hop,
                score=strength / (hop + 1),
            )
        )
    entities = [
        EntityHit(
            id=eid,
            name=str(node.info.get("name") or eid),
            type=str(node.info.get("type") or ""),
            description=str(node.info.get("description") or ""),
            aliases=[str(a) for a in node.info.get("aliases") or []],
            score=node.strength / (node.hop + 1),
            hops=node.hop,
        )
        for eid, node in nodes.items()
    ]
    entities.sort(key=lambda e: (-e.score, e.hops, e.name))
    # Newest-valid first among equals, then best score first (the sort is stable).
    relations.sort(key=lambda r: r.valid_from or "", reverse=True)
    relations.sort(key=lambda r: (-r.score, r.hops))
    return Ranked(entities=entities, relations=relations)


def _near_far(nodes: Mapping[str, _Node], sid: str, tid: str, hop: int) -> tuple[str | None, str]:
    """Which end the expansion came from (reached one hop earlier) and which it went to."""
    candidates = [n for n in (sid, tid) if n in nodes and nodes[n].hop == hop - 1]
    if not candidates:
        candidates = [n for n in (sid, tid) if n in nodes and nodes[n].hop < hop]
    if not candidates:
        return None, tid
    near = max(candidates, key=lambda n: nodes[n].strength)
    return near, (tid if near == sid else sid)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def score_chunks(
    rows: Sequence[Mapping[str, Any]], ranked: Ranked, weights: Weights
) -> list[ChunkHit]:
    """A chunk scores the relations citing it plus its MENTIONS of ranked entities."""
    cited: dict[str, float] = {}
    for rel in ranked.relations:
        for cid in rel.chunk_ids:
            cited[cid] = cited.get(cid, 0.0) + rel.score
    entity_score = {e.id: e.score for e in ranked.entities}
    mention = weights.of("MENTIONS")
    hits = [
        ChunkHit(
            id=str(row["id"]),
            text=str(row.get("text") or ""),
            document_id=str(row.get("document_id") or ""),
            document_path=str(row.get("document_path") or ""),
            score=cited.get(str(row["id"]), 0.0)
            + mention * sum(entity_score.get(str(m), 0.0) for m in row.get("mentions") or []),
        )
        for row in rows
    ]
    hits.sort(key=lambda c: (-c.score, c.document_path, c.id))
    return hits


def vector_chunks(rows: Sequence[Mapping[str, Any]]) -> list[ChunkHit]:
    return [
        ChunkHit(
            id=str(row["id"]),
            text=str(row.get("text") or ""),
            document_id=str(row.get("document_id") or ""),
            document_path=str(row.get("document_path") or ""),
            score=float(row.get("score") or 0.0),
        )
        for row in rows
    ]


def fuse_chunks(graph: Sequence[ChunkHit], vector: Sequence[ChunkHit], k: int) -> list[ChunkHit]:
    """Hybrid mode: one chunk list, ranked by RRF of the graph and vector rankings."""
    fused = rrf([[c.id for c in graph], [c.id for c in vector]], k)
    by_id = {c.id: c for c in [*vector, *graph]}
    hits = [by_id[cid].model_copy(update={"score": score}) for cid, score in fused.items()]
    hits.sort(key=lambda c: (-c.score, c.id))
    return hits


# -- the use case ---------------------------------------------------------------------------


class SearchService:
    """Guarded local search over one Neo4j database. The constructor does no I/O."""

    def __init__(
        self,
        driver: AsyncDriver,
        settings: Settings,
        embedder: Embedder,
        *,
        registry: Registry = REGISTRY,
    ) -> None:
        self._settings = settings
        self._search = settings.search
        self._embedder = embedder
        self._weights = Weights.from_settings(settings.search)
        self._driver = driver
        self.guard = Guard(driver, settings, registry)

    async def startup(self) -> dict[str, str]:
        """EXPLAIN every template; ConfigError when one is not read-only."""
        if self._embedder.dim != self._settings.resolve.embedding_dim:
            raise ConfigError(
                f"the embedder makes {self._embedder.dim}-d vectors but the vector indexes "
                f"hold {self._settings.resolve.embedding_dim}-d ones (KG_RESOLVE__EMBEDDING_DIM)"
            )
        await self.check_model()
        return await self.guard.verify_read_only()

    async def check_model(self) -> None:
        """GraphModelError when the graph was written by another graph model (kg migrate)."""
        await check_current_async(self._driver, self._settings.neo4j.database)

    def templates(self) -> list[TemplateInfo]:
        return self.guard.registry.infos()

    async def health(self) -> bool:
        return await self.guard.health()

    async def run_template(self, name: str, params: Mapping[str, Any]) -> TemplateResult:
        """Run one registry template by name with validated parameters."""
        return await self.guard.run(name, params)

    async def get_entity(self, entity_id: str) -> EntityDetail:
        """The entity with its degree and mention count; NotFoundError when absent."""
        result = await self.guard.run("entity_by_id", {"entity_id": entity_id})
        if not result.rows:
            raise NotFoundError(f"no entity with id {entity_id[:200]!r}")
        row = result.rows[0]
        entity = {k: v for k, v in row["entity"].items() if v is not None}
        return EntityDetail(**entity, degree=row["degree"], mentions=row["mentions"])

    async def neighborhood(
        self,
        entity_id: str,
        depth: int = 1,
        *,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        limit: int | None = None,
    ) -> Neighborhood:
        """An entity's ranked neighbourhood within ``depth`` hops."""
        params: dict[str, Any] = {
            "entity_id": entity_id,
            "depth": depth,
            "as_of": as_of,
            "relation_types": relation_types,
            "fanout": self._search.fanout,
            "frontier_cap": self._search.frontier_cap,
            "limit": min(limit or self._search.row_cap, self._search.row_cap),
        }
        result = await self.guard.run("entity_neighborhood", params)
        entity = await self.get_entity(entity_id)
        ranked = rank_expansion({entity_id: (1.0, entity.model_dump())}, result.rows, self._weights)
        others = [e for e in ranked.entities if e.id != entity_id]
        details = await self._details([e.id for e in others[:200]])
        return Neighborhood(
            entity=entity,
            entities=[
                EntityHit.model_validate(e.model_dump() | details.get(e.id, {})) for e in others
            ],
            relations=ranked.relations,
            truncated=result.truncated,
        )

    async def local_search(self, req: SearchRequest) -> SearchResponse:
        """Answer one question; see the module docstring for the three modes."""
        started = time.perf_counter()
        self._check(req)
        if req.relation_types:
            await self.guard.check_relation_types(req.relation_types)
        embedding = await asyncio.to_thread(self._embed, req.query)
        vector_task = None
        if req.mode in ("vector", "hybrid") and embedding is not None:
            k = req.limit if req.mode == "vector" else max(req.limit, self._search.seeds * 4)
            vector_task = asyncio.ensure_future(
                self.guard.run("chunks_by_vector", {"embedding": embedding, "k": k})
            )
        try:
            if req.mode == "vector":
                rows = (await vector_task).rows if vector_task else []
                return SearchResponse(
                    entities=[],
                    relations=[],
                    chunks=vector_chunks(rows)[: req.limit],
                    template="chunks_by_vector",
                    took_ms=_ms(started),
                )
            ranked, chunks = await self._graph(req, embedding)
            template = "seed_expansion"
            if vector_task is not None:
                vec = vector_chunks((await vector_task).rows)
                chunks = fuse_chunks(chunks, vec, self._search.rrf_k)
                template = "seed_expansion+chunks_by_vector"
        finally:
            if vector_task is not None:
                if not vector_task.done():
                    vector_task.cancel()
                elif not vector_task.cancelled():
                    vector_task.exception()  # retrieved: no "never retrieved" log line
        return SearchResponse(
            entities=ranked.entities[: req.limit],
            relations=ranked.relations[: req.limit],
            chunks=chunks[: req.limit],
            template=template,
            took_ms=_ms(started),
        )

    # -- steps ----------------------------------------------------------------------------

    def _check(self, req: SearchRequest) -> None:
        """Settings may be stricter than the request model's own bounds."""
        errors: list[dict[str, str]] = []
        if len(req.query) > self._search.max_query_chars:
            errors.append(
                {"field": "query", "reason": f"at most {self._search.max_query_chars} characters"}
            )
        if "\x00" in req.query:
            errors.append({"field": "query", "reason": "must not contain NUL characters"})
        if req.depth not in DEPTHS:
            errors.append({"field": "depth", "reason": "must be 1, 2 or 3"})
        if not 1 <= req.limit <= self._search.max_limit:
            errors.append(
                {"field": "limit", "reason": f"must be between 1 and {self._search.max_limit}"}
            )
        if errors:
            fields = ", ".join(e["field"] for e in errors)
            raise QueryRejected(f"invalid search request: {fields}", errors=errors)

    def _embed(self, text: str) -> list[float] | None:
        """The question's embedding, or None when it has no signal (a zero vector)."""
        vector = self._embedder.embed([text])[0]
        if vector.shape[0] != self._settings.resolve.embedding_dim:
            raise ConfigError(
                f"the embedder made a {vector.shape[0]}-d vector; the indexes hold "
                f"{self._settings.resolve.embedding_dim}-d ones"
            )
        values = [float(v) for v in vector]
        if not all(math.isfinite(v) for v in values) or not any(values):
            return None
        return values

    async def _seeds(
        self, query: str, embedding: list[float] | None
    ) -> dict[str, tuple[float, Mapping[str, Any]]]:
        """Top entities for the question: vector and fulltext candidates fused by RRF."""
        if embedding is None and not escape_lucene(query):
            return {}
        k = self._search.seeds * _CANDIDATES_PER_SEED
        result = await self.guard.run(
            "entity_seeds", {"embedding": embedding, "text": query, "k": k}
        )
        row = result.rows[0] if result.rows else {"vector": [], "fulltext": []}
        info: dict[str, Mapping[str, Any]] = {}
        rankings: list[list[str]] = []
        for key in ("vector", "fulltext"):
            hits = row.get(key) or []
            if key == "vector" and hits:
                # Embeddings always return k neighbours; far ones are noise, not seeds.
                best_score = max(float(h["score"]) for h in hits)
                floor = best_score * self._search.seed_relative_cutoff
                hits = [h for h in hits if float(h["score"]) >= floor]
            rankings.append([str(h["id"]) for h in hits])
            for hit in hits:
                info.setdefault(str(hit["id"]), hit)
        fused = rrf([r for r in rankings if r], self._search.rrf_k)
        best = sorted(fused.items(), key=lambda kv: -kv[1])[: self._search.seeds]
        return {eid: (score, info[eid]) for eid, score in best}

    async def _graph(
        self, req: SearchRequest, embedding: list[float] | None
    ) -> tuple[Ranked, list[ChunkHit]]:
        seeds = await self._seeds(req.query, embedding)
        if not seeds:
            return Ranked(), []
        expansion = await self.guard.run(
            "seed_expansion",
            {
                "entity_ids": list(seeds),
                "depth": req.depth,
                "as_of": req.as_of or datetime.now(UTC),
                "relation_types": req.relation_types,
                "fanout": self._search.fanout,
                "frontier_cap": self._search.frontier_cap,
                "limit": min(self._search.expansion_limit, self._search.row_cap),
            },
        )
        ranked = rank_expansion(seeds, expansion.rows, self._weights)
        top_relations = ranked.relations[: req.limit * _EVIDENCE_RELATIONS]
        chunk_ids = list(dict.fromkeys(c for r in top_relations for c in r.chunk_ids))[:1000]
        entity_ids = [e.id for e in ranked.entities[: req.limit]]
        evidence, details = await asyncio.gather(
            self.guard.run(
                "evidence_chunks",
                {
                    "chunk_ids": chunk_ids,
                    "entity_ids": entity_ids,
                    "per_entity": 10,
                    "limit": min(5000, max(req.limit * 10, 100)),
                },
            ),
            self._details([e.id for e in ranked.entities[: req.limit] if e.id not in seeds]),
        )
        ranked.entities = [
            e.model_copy(update=details[e.id]) if e.id in details else e for e in ranked.entities
        ]
        return ranked, score_chunks(evidence.rows, ranked, self._weights)

    async def _details(self, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Descriptions and aliases, read only for the entities a response shows."""
        if not entity_ids:
            return {}
        result = await self.guard.run("entity_details", {"entity_ids": entity_ids})
        return {
            str(row["id"]): {
                "description": str(row.get("description") or ""),
                "aliases": [str(a) for a in row.get("aliases") or []],
            }
            for row in result.rows
        }


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
