"""Local search: text, dense and graph signals over chunks, alone or fused.

Four modes share one response shape (:class:`~kg.search_models.SearchResponse`):

- ``text``: Lucene BM25 over chunk text and document title, in each language's fulltext index
  (``chunk_text_en``, ``chunk_text_ru``: :mod:`kg.languages`), rankings fused.
- ``vector``: chunks nearest to the question's embedding (the chunk embedder, WordLlama).
- ``graph``: the question linked to entities (its longest word n-grams equal to names or
  aliases, weighted by specificity; the entity indexes' fuzzy hits only when it names none);
  the seeds expanded 1..3 hops through relations (``seed_expansion``) and through passages
  (``passage_hop``: chunks that mention an entity, entities those chunks mention); chunks
  ranked by personalized PageRank over that subgraph of entities and chunks, restarting at the
  seeds. Entities and relations are ranked by seed weight x edge weight x type weight /
  (hop + 1), counting only relations valid at ``as_of`` (default: now).
- ``hybrid``: the three chunk rankings fused by weighted reciprocal rank fusion; entities and
  relations as in ``graph``.

Every query goes through :class:`~kg.cypher.guard.Guard`; this module builds no Cypher.
docs/search.md explains the scoring and the measurements behind each choice.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from neo4j import AsyncDriver

from kg.cypher.guard import Guard
from kg.cypher.lucene import escape_lucene
from kg.cypher.params import MAX_FUZZY_WORDS, MAX_TEXT_CHARS
from kg.cypher.templates import REGISTRY, Registry
from kg.errors import ConfigError, KGError, NotFoundError, QueryRejected
from kg.graph.meta import check_current_async
from kg.languages import LANGUAGES, LanguageCode, detect, index_weights
from kg.models import NO_NUL, has_nul
from kg.resolve import Embedder
from kg.resolve.embed import embedder_identity, make_chunk_embedder
from kg.resolve.normalize import transliterate
from kg.retrieval import (
    MAX_PHRASES,
    asked_types,
    cognate_stems,
    fuse,
    longest_links,
    personalized_pagerank,
    question_ngrams,
    specificity,
    spellings,
)
from kg.search_models import (
    DEPTHS,
    ChunkHit,
    EntityDetail,
    EntityHit,
    Neighborhood,
    RelationHit,
    SearchMode,
    SearchRequest,
    SearchResponse,
    TemplateInfo,
    TemplateResult,
    TranslatedQuestion,
)
from kg.settings import SearchSettings, Settings
from kg.translate import Translator
from kg.words import form, words

logger = logging.getLogger(__name__)

# Candidates fetched from each index per seed kept: fusion needs some depth to work with.
_CANDIDATES_PER_SEED = 4
# Most seeds and most entities one passage hop starts from (the templates' id bounds).
_MAX_SEEDS = 50
MAX_HOP_IDS = 200
# What each mode reports as its template(s).
_TEMPLATES: dict[SearchMode, str] = {
    "text": "chunks_by_text",
    "vector": "chunks_by_vector",
    "graph": "seed_expansion",
    "hybrid": "chunks_by_text+chunks_by_vector+seed_expansion",
}
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
            # model_construct: the values are built right here with their types; validating
            # hundreds of hits per search was 5% of the API's CPU under load.
            RelationHit.model_construct(
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
        EntityHit.model_construct(
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


def boost_asked_types(ranked: Ranked, types: set[str], boost: float) -> None:
    """Entities the expansion reached whose type the question asks for, and the relations that
    reach them, score ``boost`` times more; both lists are sorted again."""
    if not types or boost == 1.0:
        return
    wanted = {e.id for e in ranked.entities if e.hops > 0 and e.type in types}
    if not wanted:
        return
    ranked.entities = [
        e.model_copy(update={"score": e.score * boost}) if e.id in wanted else e
        for e in ranked.entities
    ]
    ranked.entities.sort(key=lambda e: (-e.score, e.hops, e.name))
    ranked.relations = [
        r.model_copy(update={"score": r.score * boost}) if {r.source, r.target} & wanted else r
        for r in ranked.relations
    ]
    ranked.relations.sort(key=lambda r: (-r.score, r.hops))


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


def graph_chunks(
    scored: Sequence[tuple[str, float]], rows: Sequence[Mapping[str, Any]]
) -> list[ChunkHit]:
    """Chunks in PageRank order, scores scaled so the best is 1.0."""
    by_id = {str(row["id"]): row for row in rows}
    top = scored[0][1] if scored and scored[0][1] > 0 else 1.0
    return [
        ChunkHit(
            id=cid,
            text=str(by_id[cid].get("text") or ""),
            document_id=str(by_id[cid].get("document_id") or ""),
            document_path=str(by_id[cid].get("document_path") or ""),
            score=score / top,
        )
        for cid, score in scored
        if cid in by_id
    ]


def fuse_chunks(
    rankings: Mapping[str, Sequence[ChunkHit]], weights: Mapping[str, float], k: int
) -> list[ChunkHit]:
    """Hybrid mode: one chunk list, ranked by weighted RRF of the signals' rankings."""
    fused = fuse({name: [c.id for c in hits] for name, hits in rankings.items()}, weights, k)
    by_id = {c.id: c for hits in rankings.values() for c in hits}
    hits = [by_id[cid].model_copy(update={"score": score}) for cid, score in fused.items()]
    hits.sort(key=lambda c: (-c.score, c.id))
    return hits


def _embed(embedder: Embedder, text: str, dim: int) -> list[float] | None:
    """The text's embedding, or None when it has no signal (a zero vector)."""
    vector = embedder.embed([text])[0]
    if vector.shape[0] != dim:
        raise ConfigError(
            f"the embedder made a {vector.shape[0]}-d vector; its index holds {dim}-d"
        )
    values = [float(v) for v in vector]
    if not all(math.isfinite(v) for v in values) or not any(values):
        return None
    return values


# The same names and titles recur on many rows and across searches: each is put in its form
# once per process (a pure function of the string; bounded).
_cached_form = functools.lru_cache(maxsize=65_536)(form)


def _chunk_node(chunk_id: str) -> str:
    return "c:" + chunk_id


def _entity_node(entity_id: str) -> str:
    return "e:" + entity_id


async def _all(steps: Mapping[str, Coroutine[Any, Any, Any]]) -> dict[str, Any]:
    """Run the steps concurrently; on the first failure cancel the rest and raise it."""
    tasks = {name: asyncio.ensure_future(step) for name, step in steps.items()}
    try:
        await asyncio.gather(*tasks.values())
    except BaseException:
        for task in tasks.values():
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        raise
    return {name: task.result() for name, task in tasks.items()}


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
        chunk_embedder: Embedder | None = None,
    ) -> None:
        self._settings = settings
        self._search = settings.search
        self._embedder = embedder
        self._chunk_embedder = chunk_embedder or make_chunk_embedder(settings.chunks)
        self._weights = Weights.from_settings(settings.search)
        self._driver = driver
        self.guard = Guard(driver, settings, registry)
        self._translator = Translator(settings) if settings.search.translate else None
        self._languages: tuple[float, tuple[LanguageCode, ...]] = (-math.inf, ())

    async def startup(self) -> dict[str, str]:
        """EXPLAIN every template; ConfigError when one is not read-only."""
        for embedder, dim, index, setting in (
            (self._embedder, self._settings.resolve.embedding_dim, "entity_embedding",
             "KG_RESOLVE__EMBEDDING_DIM"),
            (self._chunk_embedder, self._settings.chunks.embedding_dim, "chunk_embedding",
             "KG_CHUNKS__EMBEDDING_DIM"),
        ):  # fmt: skip
            if embedder.dim != dim:
                raise ConfigError(
                    f"the embedder makes {embedder.dim}-d vectors but the {index} vector index "
                    f"holds {dim}-d ones ({setting})"
                )
        await self.check_model()
        samples: dict[str, dict[str, Any]] = {}
        for name, params in self._warm_up_calls():
            prepared = self.guard.prepare(name, params)
            samples.setdefault(prepared.text, prepared.cypher_params())
        found = await self.guard.verify_read_only(samples)
        await self.warm_up()
        await self.warm_searches()
        return found

    def _warm_up_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return _warm_up_calls(self._search, self._settings.resolve.embedding_dim,
                              self._settings.chunks.embedding_dim)  # fmt: skip

    async def warm_up(self) -> int:
        """Plan the search templates for the parameter shapes searches send; how many calls.

        Without it the first search plans each of its templates, 5-10x slower than the next
        (docs/benchmarks.md, "Local search latency"). Only EXPLAINs: nothing is read.
        """
        calls = self._warm_up_calls()
        await self.guard.plan_all(calls)
        return len(calls)

    async def warm_searches(self) -> int:
        """Run a few real searches about entities sampled from the graph; how many ran.

        Planning alone left the first search 7x slower than the next on a just-started Neo4j
        (docs/benchmarks.md, "First search"): the server's JIT, index readers and page cache
        were still cold. The samples come from the entity vector index, so the chunk vector
        index is read too. Graph and text modes only, without translation: no embedding or
        LLM endpoint is called. A failure is logged, never raised: these only save time.
        """
        count = self._search.warm_up_searches
        if count == 0:
            return 0
        dim = self._settings.resolve.embedding_dim
        ran = 0
        try:
            sample = await self.guard.run(
                "entity_seeds", {"embedding": [1.0] * dim, "text": "", "k": count}
            )
            await self.guard.run(
                "chunks_by_vector",
                {"embedding": [1.0] * self._settings.chunks.embedding_dim,
                 "k": self._search.candidates},
            )  # fmt: skip
            found = sample.rows[0]["vector"] if sample.rows else []
            names = [str(row["name"]) for row in found if row.get("name")]
            for i, name in enumerate(names[:count]):
                depth, mode = _WARM_SEARCHES[i % len(_WARM_SEARCHES)]
                req = SearchRequest(query=f"What does {name} depend on?", depth=depth, mode=mode)
                await self._local_search(req, translate=False)
                ran += 1
        except (KGError, ValueError) as exc:  # ValueError: a sampled name no request takes
            logger.warning("start-up warm-up search stopped early: %s", exc)
        return ran

    async def check_model(self) -> None:
        """GraphModelError when another graph model or other embedders wrote the graph."""
        await check_current_async(
            self._driver,
            self._settings.neo4j.database,
            {
                "entity": embedder_identity(self._embedder),
                "chunk": embedder_identity(self._chunk_embedder),
            },
        )

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
            "hub_degree": self._search.hub_degree,
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
        """Answer one question; see the module docstring for the modes."""
        return await self._local_search(req, translate=True)

    async def _local_search(self, req: SearchRequest, *, translate: bool) -> SearchResponse:
        started = time.perf_counter()
        self._check(req)
        if req.relation_types:
            await self.guard.check_relation_types(req.relation_types)
        n = max(req.limit, self._search.candidates) if req.mode == "hybrid" else req.limit
        translated, translation_error = (
            await self._translate(req.query) if translate else ({}, None)
        )
        texts = {code: " ".join([t.text, *t.entities]) for code, t in translated.items()}
        steps: dict[str, Coroutine[Any, Any, Any]] = {}
        if req.mode in ("text", "hybrid"):
            steps["text"] = self._text_chunks(req.query, n, texts)
        if req.mode in ("vector", "hybrid"):
            # The chunk embedder (WordLlama) is English-centric: it gets the English question.
            steps["vector"] = self._vector_chunks(texts.get("en", req.query), n)
        if req.mode in ("graph", "hybrid"):
            steps["graph"] = self._graph(req, n, "\n".join([req.query, *texts.values()]))
        done = await _all(steps)
        ranked, chunks, named = done.get("graph", (Ranked(), [], False))
        if req.mode in ("text", "vector"):
            chunks = done[req.mode]
        elif req.mode == "hybrid":
            weights = dict(self._search.fusion_weights)
            if not named:
                # Fuzzy seeds are guesses: measured, at full weight they cost hybrid 8 points
                # of R@5 on XQuAD (docs/search.md, "Languages").
                weights["graph"] = weights.get("graph", 0.0) * self._search.unlinked_graph_weight
            chunks = fuse_chunks(
                {"text": done["text"], "vector": done["vector"], "graph": chunks},
                weights,
                self._search.fusion_k,
            )
        return SearchResponse(
            entities=ranked.entities[: req.limit],
            relations=ranked.relations[: req.limit],
            chunks=chunks[: req.limit],
            template=_TEMPLATES[req.mode],
            took_ms=_ms(started),
            translations=list(translated.values()),
            translation_error=translation_error,
        )

    async def _translate(
        self, query: str
    ) -> tuple[dict[LanguageCode, TranslatedQuestion], str | None]:
        """The question in the corpus's other languages (kg.translate); nothing when
        ``search.translate`` is off or the corpus is all in the question's language. A failing
        LLM is reported, not raised: the search runs on the question alone."""
        if self._translator is None:
            return {}, None
        own = detect(query)
        targets = [code for code in await self._corpus_languages() if code != own]
        if not targets:
            return {}, None
        try:
            found, _usage = await self._translator.translate(query, targets)
        except KGError as exc:  # the endpoint's message names no secret (kg.llm)
            return {}, str(exc)[:400]
        return found, None

    async def _corpus_languages(self) -> tuple[LanguageCode, ...]:
        """Languages that have chunks, cached for ``search.relation_types_ttl_s``."""
        loaded_at, languages = self._languages
        if time.monotonic() - loaded_at < self._search.relation_types_ttl_s:
            return languages
        result = await self.guard.run("corpus_languages", {})
        row = result.rows[0] if result.rows else {}
        found = tuple(lang.code for lang in LANGUAGES if int(row.get(lang.code) or 0) > 0)
        self._languages = (time.monotonic(), found)
        return found

    # -- steps ----------------------------------------------------------------------------

    def _check(self, req: SearchRequest) -> None:
        """Settings may be stricter than the request model's own bounds."""
        errors: list[dict[str, str]] = []
        if len(req.query) > self._search.max_query_chars:
            errors.append(
                {"field": "query", "reason": f"at most {self._search.max_query_chars} characters"}
            )
        if has_nul(req.query):
            errors.append({"field": "query", "reason": NO_NUL})
        if req.depth not in DEPTHS:
            errors.append({"field": "depth", "reason": "must be 1, 2 or 3"})
        if not 1 <= req.limit <= self._search.max_limit:
            errors.append(
                {"field": "limit", "reason": f"must be between 1 and {self._search.max_limit}"}
            )
        if errors:
            fields = ", ".join(e["field"] for e in errors)
            raise QueryRejected(f"invalid search request: {fields}", errors=errors)

    async def _seeds(
        self, query: str, embedding: list[float] | None
    ) -> dict[str, tuple[float, Mapping[str, Any]]]:
        """Fuzzy candidates: the entity vector and fulltext indexes' hits fused by RRF."""
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

    async def _text_chunks(
        self, query: str, k: int, texts: Mapping[LanguageCode, str] | None = None
    ) -> list[ChunkHit]:
        """Lucene BM25 over chunk text and document title in each language's index, the
        rankings fused by how much of the question each language's script holds
        (:func:`kg.languages.index_weights`). ``texts`` gives a language its own text (a
        translation); without one, the English index gets a Russian question transliterated as
        well, and its transliterated stems as fuzzy terms (:func:`kg.retrieval.cognate_stems`),
        so ``Теслы`` meets ``Tesla``."""
        if not escape_lucene(query):
            return []
        # A translation with its names, or a question with its transliteration, may outgrow
        # what the template takes; only the first 64 words are searched anyway.
        texts = {code: text[:MAX_TEXT_CHARS] for code, text in (texts or {}).items()}
        weights = index_weights(query)
        for code in texts:
            weights[code] = 1.0
        fuzzy: dict[str, list[str]] = {}
        if "en" not in texts and weights["ru"] > weights["en"]:
            texts["en"] = f"{query} {transliterate(query.casefold())}"[:MAX_TEXT_CHARS]
            fuzzy["en"] = cognate_stems(query, MAX_FUZZY_WORDS)
        result = await self.guard.run(
            "chunks_by_text", {"text": query, "texts": texts, "fuzzy": fuzzy, "k": k}
        )
        by_language: dict[str, list[ChunkHit]] = {}
        for row, hit in zip(result.rows, vector_chunks(result.rows), strict=True):
            by_language.setdefault(str(row["language"]), []).append(hit)
        if len(by_language) <= 1:
            return next(iter(by_language.values()), [])[:k]
        return fuse_chunks(by_language, weights, self._search.fusion_k)[:k]

    async def _vector_chunks(self, query: str, k: int) -> list[ChunkHit]:
        """The chunk embedder's nearest chunks (vector index ``chunk_embedding``)."""
        embedding = await asyncio.to_thread(
            _embed, self._chunk_embedder, query, self._settings.chunks.embedding_dim
        )
        if embedding is None:
            return []
        result = await self.guard.run("chunks_by_vector", {"embedding": embedding, "k": k})
        return vector_chunks(result.rows)

    async def _link(
        self, query: str
    ) -> tuple[dict[str, tuple[float, Mapping[str, Any]]], set[int], bool]:
        """Seeds: entities the question names (longest n-gram matches), each weighted by its
        specificity (a Cyrillic n-gram also in Latin transliteration: ``Кафка`` names
        ``Kafka``); only when it names none, the fuzzy candidates of the entity vector and
        fulltext indexes, weighted by their fused score (measured: mixed in, they cost 4 to 14
        points of R@5, docs/search.md). Also returns the positions of the question's words
        that the links consumed, and whether the question named an entity at all."""
        grams = question_ngrams(query, self._search.link_max_words)
        lookups = spellings(grams, MAX_PHRASES)
        exact_rows: list[dict[str, Any]] = []
        if lookups:
            phrases = [list(spelling) for spelling in lookups]
            result = await self.guard.run("entity_links", {"phrases": phrases, "per_phrase": 5})
            exact_rows = result.rows
        hits: dict[tuple[str, ...], list[str]] = {}
        info: dict[str, Mapping[str, Any]] = {}
        mentions: dict[str, int] = {}
        for row in exact_rows:
            eid, phrase = str(row["id"]), tuple(words(str(row["phrase"])))
            info.setdefault(eid, row)
            mentions[eid] = int(row.get("mentions") or 0)
            names = [str(row.get("name") or ""), *(str(a) for a in row.get("aliases") or [])]
            if any(form(name) == phrase for name in names):
                for gram_words in lookups.get(phrase, ()):
                    hits.setdefault(gram_words, []).append(eid)
        links = longest_links(grams, hits)
        seeds = {eid: specificity(mentions[eid]) for eid in links}
        consumed = {i for gram in links.values() for i in range(gram.start, gram.end)}
        named = bool(seeds)
        if not seeds:
            embedding = await asyncio.to_thread(
                _embed, self._embedder, query, self._settings.resolve.embedding_dim
            )
            for eid, (score, hit) in (await self._seeds(query, embedding)).items():
                info.setdefault(eid, hit)
                seeds[eid] = score
        best = sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0]))[:_MAX_SEEDS]
        return {eid: (weight, info[eid]) for eid, weight in best if weight > 0}, consumed, named

    async def _graph(
        self, req: SearchRequest, k: int, link_text: str
    ) -> tuple[Ranked, list[ChunkHit], bool]:
        """Link (``link_text``: the question and its translations), expand (relations and
        passages), propagate, rank; see docs/search.md. The flag says whether the question
        named an entity (else the seeds are fuzzy candidates)."""
        seeds, consumed, named = await self._link(link_text)
        if not seeds:
            return Ranked(), [], named
        expansion, (links, expanded) = await asyncio.gather(
            self.guard.run(
                "seed_expansion",
                {
                    # strongest first: the frontier cap keeps their neighbours
                    "entity_ids": sorted(seeds, key=lambda eid: -seeds[eid][0]),
                    "depth": req.depth,
                    "as_of": req.as_of or datetime.now(UTC),
                    "relation_types": req.relation_types,
                    "fanout": self._search.fanout,
                    "frontier_cap": self._search.frontier_cap,
                    "hub_degree": self._search.hub_degree,
                    "limit": min(self._search.expansion_limit, self._search.row_cap),
                },
            ),
            # depth counts entity hops; the chunks of the last entities reached come too.
            self._passages(list(seeds), req.depth + 1),
        )
        ranked = rank_expansion(seeds, expansion.rows, self._weights)
        free = [w for i, w in enumerate(words(link_text)) if i not in consumed]
        boost_asked_types(
            ranked, asked_types(free, {e.type for e in ranked.entities}),
            self._search.asked_type_boost,
        )  # fmt: skip
        # Entities the relations reached: their passages join the graph too (one more hop).
        reached = [e.id for e in ranked.entities if e.id not in expanded][:MAX_HOP_IDS]
        if reached:
            more, _ = await self._passages(reached, 1)
            links += more
        edges = [(_chunk_node(c), _entity_node(e), w) for c, e, w in links]
        for rel in ranked.relations:
            ends = (_entity_node(rel.source), _entity_node(rel.target))
            edges.append((*ends, rel.weight * self._weights.of(rel.type)))
            edges += [(_chunk_node(c), end, 1.0) for c in rel.chunk_ids for end in ends]
        scores = personalized_pagerank(
            edges,
            {_entity_node(eid): weight for eid, (weight, _) in seeds.items()},
            damping=self._search.ppr_damping,
            iterations=self._search.ppr_iterations,
        )
        best = sorted(
            ((node[2:], score) for node, score in scores.items() if node.startswith("c:")),
            key=lambda kv: (-kv[1], kv[0]),
        )[: min(k, 1000)]
        top_entities = [e.id for e in ranked.entities[: req.limit]]
        evidence, details = await asyncio.gather(
            self._chunk_rows([cid for cid, _ in best]),
            self._details(top_entities),
        )
        ranked.entities = [
            e.model_copy(update=details[e.id]) if e.id in details else e for e in ranked.entities
        ]
        return ranked, graph_chunks(best, evidence), named

    async def _passages(
        self, entity_ids: list[str], depth: int
    ) -> tuple[list[tuple[str, str, float]], set[str]]:
        """Chunk-entity MENTIONS links within ``depth`` hops of the entities (passage_hop per
        hop), weighted ``search.about_weight`` where the chunk's document is titled with the
        entity's name; the next frontier is the most specific entities the chunks mention."""
        frontier, expanded = entity_ids[:MAX_HOP_IDS], set[str]()
        links: list[tuple[str, str, float]] = []
        form_of = _cached_form
        about = self._search.about_weight

        def weight(name: object, title: tuple[str, ...] | None) -> float:
            # An untitled chunk (most, in some corpora) needs no name put in its form; a name
            # with no form is about no title.
            if title is None or form_of(str(name or "")) != title:
                return 1.0
            return about

        for _ in range(depth):
            if not frontier:
                break
            result = await self.guard.run(
                "passage_hop",
                {
                    "entity_ids": frontier,
                    "per_entity": self._search.passages_per_entity,
                    "per_chunk": self._search.fanout,
                    "limit": self._search.row_cap,
                },
            )
            expanded.update(frontier)
            new: dict[str, int] = {}
            for row in result.rows:
                chunk, title = str(row["chunk"]), form_of(str(row.get("title") or ""))
                links.append((chunk, str(row["entity"]), weight(row.get("name"), title)))
                for m in row.get("mentioned") or []:
                    links.append((chunk, str(m["id"]), weight(m.get("name"), title)))
                    if m["id"] not in expanded:
                        new[str(m["id"])] = int(m.get("mentions") or 0)
            cap = min(self._search.frontier_cap, MAX_HOP_IDS)
            frontier = sorted(new, key=lambda e: (new[e], e))[:cap]
        return links, expanded

    async def _chunk_rows(self, chunk_ids: list[str]) -> list[dict[str, Any]]:
        """Text and document of chunks by id (evidence_chunks, no entity filter)."""
        if not chunk_ids:
            return []
        result = await self.guard.run(
            "evidence_chunks",
            {"chunk_ids": chunk_ids, "entity_ids": [], "limit": len(chunk_ids)},
        )
        return result.rows

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


# Neo4j caches a plan per list-size bucket (1, 2-10, 11-100 ... measured): one list of each.
_WARM_SIZES = (1, 10, 100)
# The depth and mode of each start-up search (SearchService.warm_searches), in turn.
_WARM_SEARCHES: tuple[tuple[int, SearchMode], ...] = ((2, "graph"), (3, "graph"), (1, "text"))


def _warm_up_calls(
    search: SearchSettings, entity_dim: int, chunk_dim: int
) -> list[tuple[str, dict[str, Any]]]:
    """One call per search template and list-size bucket, with the types searches send."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("entity_seeds", {"embedding": [1.0] * entity_dim, "text": "kg",
                          "k": search.seeds * _CANDIDATES_PER_SEED}),
        ("chunks_by_text", {"text": "kg", "k": search.candidates}),
        ("chunks_by_vector", {"embedding": [1.0] * chunk_dim, "k": search.candidates}),
    ]  # fmt: skip
    for size in _WARM_SIZES:
        ids = [f"kg-warm-up-{i}" for i in range(size)]
        calls.append(("entity_links", {"phrases": [["kg"]] * size, "per_phrase": 5}))
        calls += [
            ("seed_expansion", {"entity_ids": ids[:_MAX_SEEDS], "depth": depth,
                                "as_of": datetime.now(UTC), "fanout": search.fanout,
                                "frontier_cap": search.frontier_cap,
                                "hub_degree": search.hub_degree,
                                "limit": min(search.expansion_limit, search.row_cap)})
            for depth in DEPTHS
        ]  # fmt: skip
        hop = {"entity_ids": ids, "per_entity": search.passages_per_entity,
               "per_chunk": search.fanout, "limit": search.row_cap}  # fmt: skip
        calls.append(("passage_hop", hop))
        calls.append(("evidence_chunks", {"chunk_ids": ids, "entity_ids": [], "limit": size}))
        calls.append(("entity_details", {"entity_ids": ids}))
    return calls


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
