"""Local search: the registered signals over chunks, alone or fused.

Four modes share one response shape (:class:`~kg.search.models.SearchResponse`):

- ``text``: Lucene BM25 over chunk text and document title, in each language's fulltext index
  (``chunk_text_en``, ``chunk_text_ru``: :mod:`kg.languages`), rankings fused.
- ``vector``: chunks nearest to the question's embedding (the chunk embedder, WordLlama). In
  ``hybrid`` they are ranked from the chunk vectors kept per process (kg.search.chunk_vectors).
- ``graph``: the question linked to entities (its longest word n-grams equal to names or
  aliases, weighted by specificity; the entity indexes' fuzzy hits only when it names none);
  the seeds expanded 1..3 hops through relations (``seed_expansion``) and through passages
  (``passage_hop``: chunks that mention an entity, entities those chunks mention); chunks
  ranked by personalized PageRank over that subgraph of entities and chunks, restarting at the
  seeds. Entities and relations are ranked by seed weight x edge weight x type weight /
  (hop + 1), counting only relations valid at ``as_of`` (default: now).
- ``hybrid``: the three chunk rankings fused by weighted reciprocal rank fusion, each signal's
  weight scaled by its confidence for the question (:func:`kg.search.fusion.confidence_weights`);
  entities and relations as in ``graph``.

A request's path: :meth:`SearchService.local_search` checks it, translates the question
(:mod:`kg.search.translate`), runs the mode's signals (:mod:`kg.search.signals`) concurrently,
fuses their rankings (:mod:`kg.search.fusion`), reads the texts of the chunks it shows and the
details of the entities it shows in one read (the signals rank ids; :meth:`_evidence`), lets
the optional rerank stage reorder the top (:mod:`kg.search.rerank`, off by default) and
builds the response. Start-up and warm-up live in :mod:`kg.search.startup`, lookups by id in
:mod:`kg.search.entities`.

Every query goes through :class:`~kg.cypher.guard.Guard`; this package builds no Cypher.
docs/search.md explains the scoring and the measurements behind each choice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from neo4j import AsyncDriver
from neo4j.api import BookmarkManager
from pydantic import ValidationError

from kg import observe, scope
from kg.cypher.guard import Guard
from kg.cypher.params import (
    MAX_TEXT_CHARS,
    ChunksDatedAfterParams,
    GraphEvidenceParams,
    NoParams,
)
from kg.cypher.templates import REGISTRY, Registry
from kg.errors import KGError, QueryRejected, ScopeDenied, only_sent
from kg.glossary import english_reading
from kg.languages import LANGUAGES, LanguageCode, detect, index_weights
from kg.models import NO_NUL, has_nul
from kg.resolve import Embedder
from kg.resolve.embed import make_chunk_embedder
from kg.search import startup
from kg.search.chunk_vectors import ChunkVectors
from kg.search.entities import Entities, entity_detail
from kg.search.fusion import as_hits, confidence_weights, fused_ids, vector_floor
from kg.search.models import (
    DEPTHS,
    ChunkHit,
    EntityDetail,
    EntityHit,
    Neighborhood,
    RerankOutcome,
    SearchRequest,
    SearchResponse,
    TemplateInfo,
    TemplateResult,
    TranslatedQuestion,
)
from kg.search.names import NameForms
from kg.search.passages import Passages
from kg.search.ranking import Ranked, Weights
from kg.search.rerank import Reranker
from kg.search.signals import SIGNALS
from kg.search.signals.base import (
    Signal,
    SignalContext,
    SignalQuery,
    SignalResult,
    chunk_hits,
    id_hits,
)
from kg.search.translate import Translator
from kg.settings import Settings
from kg.words import form

#: Hybrid's ranking of the chunks one passage hop from its first (:meth:`SearchService._next_hop`).
NEXT_HOP = "next_hop"
#: Chunks the next hop ranks before one is kept a document, and the chunks it keeps: fused
#: at k = 2, its 20th counts 1/22 of its weight (measured: the same figures as 50, at half
#: the cost; docs/benchmarks.md, "Next hop").
HOP_READ = 200
HOP_KEPT = 20


@dataclasses.dataclass(frozen=True, slots=True)
class _Evidence:
    """One ``graph_evidence`` read: chunk hits with texts and entity details by id, and the
    entities it was asked for (one it found no details for keeps its hit as it is)."""

    chunks: dict[str, ChunkHit]
    entities: dict[str, dict[str, Any]]
    entity_ids: frozenset[str]


async def _until_done(
    tasks: Sequence[asyncio.Future[Any]], also_failing: Sequence[asyncio.Future[Any]]
) -> None:
    """Until every one of ``tasks`` is done; the first failure among them or
    ``also_failing`` is raised at once (a text read refused in a millisecond must not wait
    for the graph signal)."""
    waiting = {*tasks, *also_failing}
    while any(not task.done() for task in tasks):
        finished, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            if not task.cancelled() and (failure := task.exception()) is not None:
                raise failure
    for task in tasks:
        task.result()  # a failure or cancellation among them, raised


def _settle(early: asyncio.Future[Any] | None) -> None:
    """An early read the search no longer needs: cancelled when still running, its failure
    taken when it failed (asyncio would otherwise log it as never retrieved)."""
    if early is None:
        return
    if not early.done():
        early.cancel()
    elif not early.cancelled():
        early.exception()


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
        bookmarks: BookmarkManager | None = None,
    ) -> None:
        self.settings = settings
        self._search = settings.search
        self._vector_floor = vector_floor(settings.search, settings.chunks)
        self._driver = driver
        self.guard = Guard(driver, settings, registry, bookmarks=bookmarks)
        self.started = False  # set by a successful startup(): the server was warmed
        weights = Weights.from_settings(settings.search)
        self.context = SignalContext(
            guard=self.guard,
            settings=settings,
            embedder=embedder,
            chunk_embedder=chunk_embedder or make_chunk_embedder(settings.chunks),
            weights=weights,
            names=NameForms(self.guard, settings.search.counts_ttl_s),
            chunk_vectors=ChunkVectors(self.guard, settings.chunks.embedding_dim),
            passages=Passages(self.guard, settings.search.fanout),
        )
        self._signals: dict[str, Signal] = {
            name: build(self.context) for name, build in SIGNALS.items()
        }
        self._entities = Entities(self.guard, settings.search, weights)
        self._translator = Translator(settings) if settings.search.translate else None
        rerank = settings.search.rerank
        self._reranker = Reranker(rerank) if rerank.enabled else None
        self._languages: tuple[float, dict[LanguageCode, int]] = (-math.inf, {})

    # -- start-up (kg.search.startup) ------------------------------------------------------

    async def startup(self) -> dict[str, str]:
        """EXPLAIN every template; ConfigError when one is not read-only. Then warm the server:
        after it, searches need no first-query grace (``started``)."""
        found = await startup.start(self)
        self.started = True
        return found

    async def warm_up(self) -> int:
        """Plan the search templates (see :func:`kg.search.startup.warm_up`)."""
        return await startup.warm_up(self)

    async def warm_searches(self) -> int:
        """A few real searches at start-up (see :func:`kg.search.startup.warm_searches`)."""
        return await startup.warm_searches(self)

    async def check_model(self) -> None:
        """GraphModelError when another graph model or other embedders wrote the graph."""
        await startup.check_model(
            self._driver,
            self.settings.neo4j.database,
            self.context.embedder,
            self.context.chunk_embedder,
            bookmarks=self.guard.bookmarks,
        )

    # -- reads by name or id ---------------------------------------------------------------

    def templates(self) -> list[TemplateInfo]:
        return self.guard.registry.infos()

    async def health(self) -> bool:
        return await self.guard.health()

    async def run_template(self, name: str, params: Mapping[str, Any]) -> TemplateResult:
        """Run one registry template by name with validated parameters. A caller scoped to
        some namespaces may not run a template that reads the whole graph."""
        template = self.guard.registry.get(name)
        if template.whole_graph and (scope.current() is not None or scope.ceiling() is not None):
            raise ScopeDenied(
                f"template {name} reads the whole graph: a caller scoped to namespaces "
                "cannot run it"
            )
        return await self.guard.run(name, params)

    async def naming_phrases(self, phrases: Sequence[str]) -> list[str]:
        """The phrases that could be some entity's name or alias: the router's linking asks
        the fulltext index about these only. A phrase whose words no name has (by the linking
        filter's forms for the graph as it is now, kg.search.names) cannot link; one without a
        form (a bare number, say) is kept, and so is every phrase when the graph has too many
        names to keep their forms."""
        forms = await self.context.names.current()
        if forms is None:
            return list(phrases)
        return [p for p in phrases if (f := form(p)) is None or f in forms]

    async def get_entity(self, entity_id: str) -> EntityDetail:
        """The entity with its degree and mention count; NotFoundError when absent."""
        return await self._entities.get(entity_id)

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
        return await self._entities.neighborhood(
            entity_id, depth, as_of=as_of, relation_types=relation_types, limit=limit
        )

    # -- the question search ---------------------------------------------------------------

    async def local_search(
        self, req: SearchRequest, *, translate: bool = True, rerank: bool = True
    ) -> SearchResponse:
        """Answer one question; see the module docstring for the modes. Start-up searches
        pass ``translate=False`` and ``rerank=False``: they must never call an LLM or a
        rerank endpoint."""
        observe.note_request(mode=req.mode)
        with observe.span("kg.search", mode=req.mode, limit=req.limit) as search:
            response = await self._local_search(req, translate=translate, rerank=rerank)
            search.set(chunks=len(response.chunks), entities=len(response.entities))
            return response

    async def _local_search(
        self, req: SearchRequest, *, translate: bool, rerank: bool
    ) -> SearchResponse:
        started = time.perf_counter()
        self._check(req)
        if req.relation_types:
            await self.guard.check_relation_types(req.relation_types)
        n = max(req.limit, self._search.candidates) if req.mode == "hybrid" else req.limit
        reranker = self._reranker if rerank else None
        shown = max(req.limit, self._search.rerank.top_n if reranker is not None else 0)
        if reranker is not None:  # the rerank stage (kg.search.rerank) sees the top N
            n = max(n, self._search.rerank.top_n)
        if req.as_of is not None:  # room for the chunks of documents dated after it
            n += req.limit
        translated, translation_error = (
            await self._translate(req.query) if translate else ({}, None)
        )
        # hybrid runs every registered signal; any other mode the signal of its name.
        names = list(self._signals) if req.mode == "hybrid" else [req.mode]
        dense_text = (
            await self._dense_text(req.query)
            if "vector" in names and "en" not in translated
            else None
        )
        query = SignalQuery(
            request=req,
            k=n,
            # a translation with its names is cut to what one fulltext query takes
            translations={
                code: " ".join([t.text, *t.entities])[:MAX_TEXT_CHARS]
                for code, t in translated.items()
            },
            dense_text=dense_text,
            linked_stamp=(
                asyncio.get_running_loop().create_future()
                if {"graph", "vector"} <= set(names)
                else None
            ),
            shown=shown,
            shares=await self._corpus_shares() if {"text", "graph"} & set(names) else {},
        )
        chunks, entities, ranked = await self._ranked(query, names, shown)
        reranked: RerankOutcome | None = None
        if reranker is not None:
            chunks, reranked = await reranker.rerank(req.query, chunks)
        return SearchResponse(
            entities=entities,
            relations=ranked.relation_hits(req.limit),
            chunks=chunks[: req.limit],
            template="+".join(self._signals[name].template for name in names),
            took_ms=round((time.perf_counter() - started) * 1000, 3),
            translations=list(translated.values()),
            translation_error=translation_error,
            rerank=reranked,
        )

    async def _ranked(
        self, query: SignalQuery, names: Sequence[str], shown: int
    ) -> tuple[list[ChunkHit], list[EntityHit], Ranked]:
        """The signals' rankings, fused in hybrid, the first ``shown`` chunks and the shown
        entities with their texts and details, and the ranking of entities and relations."""
        req = query.request
        try:
            done, early = await self._run_signals(query, names, req.limit)
        except QueryRejected as exc:
            raise only_sent(exc, SearchRequest.model_fields, "local search") from exc
        try:
            if req.as_of is not None:
                done = await self._dated(done, req.as_of)
            ranked = next((r.ranked for r in done.values() if r.ranked is not None), Ranked())
            if req.mode == "hybrid":
                chunks = await self._fuse(done, shown, await self._documents(), req.as_of)
            else:
                chunks = done[req.mode].chunks
            chunks, entities = await self._evidence(
                chunks[:shown], ranked.entity_hits(req.limit), done.values(), early
            )
        finally:
            _settle(early)
        return chunks, entities, ranked

    async def _dated(
        self, done: dict[str, SignalResult], as_of: date | datetime
    ) -> dict[str, SignalResult]:
        """Every signal's ranking without the chunks of documents dated after ``as_of`` (a
        document's own date; undated documents always stay): one read, before fusion, so
        every mode leaves out the same chunks (docs/search.md, "as_of")."""
        ids = list(dict.fromkeys(hit.id for r in done.values() for hit in r.chunks))
        later: set[str] = set()
        for start in range(0, len(ids), ChunksDatedAfterParams.max_ids()):
            part = ids[start : start + ChunksDatedAfterParams.max_ids()]
            result = await self.guard.run(
                "chunks_dated_after", ChunksDatedAfterParams(chunk_ids=part, as_of=as_of)
            )
            later.update(str(r["id"]) for r in result.rows)
        if not later:
            return done
        return {
            name: dataclasses.replace(r, chunks=[h for h in r.chunks if h.id not in later])
            for name, r in done.items()
        }

    async def _run_signals(
        self, query: SignalQuery, names: Sequence[str], entity_limit: int
    ) -> tuple[dict[str, SignalResult], asyncio.Future[_Evidence] | None]:
        """Every signal's result, run concurrently, and the early evidence read when one
        started. In hybrid the graph and vector signals rank in memory and are done while
        the text signal's read runs: then the texts of their first chunks and the details of
        the entities the response shows are read at once, beside it, not after fusion."""
        tasks = {name: asyncio.ensure_future(self._signal(name, query)) for name in names}
        early: asyncio.Future[_Evidence] | None = None
        try:
            text = tasks.get("text")
            in_memory = [task for name, task in tasks.items() if name != "text"]
            if text is not None and in_memory:
                await _until_done(in_memory, also_failing=[text])
                if not text.done():
                    results = [task.result() for task in in_memory]
                    early = self._early_evidence(results, query.shown, entity_limit)
            await asyncio.gather(*tasks.values())
        except BaseException:
            pending: list[asyncio.Future[Any]] = [*tasks.values()]
            if early is not None:
                pending.append(early)
            for task in pending:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            raise
        return {name: task.result() for name, task in tasks.items()}, early

    def _early_evidence(
        self, results: list[SignalResult], shown: int, entity_limit: int
    ) -> asyncio.Future[_Evidence] | None:
        """The evidence read for what the finished signals would show: their first ``shown``
        chunks without texts, and the ranked entities; None when there is nothing to read."""
        chunk_ids = list(
            dict.fromkeys(hit.id for r in results if not r.texts for hit in r.chunks[:shown])
        )
        ranked = next((r.ranked for r in results if r.ranked is not None), Ranked())
        entity_ids = [e.id for e in ranked.entities[: max(entity_limit, 0)]]
        if not chunk_ids and not entity_ids:
            return None
        return asyncio.ensure_future(self._read_evidence(chunk_ids, entity_ids))

    async def _read_evidence(self, chunk_ids: list[str], entity_ids: list[str]) -> _Evidence:
        """One ``graph_evidence`` read: chunk hits with their texts, entity details, by id."""
        result = await self.guard.run(
            "graph_evidence",
            GraphEvidenceParams.model_construct(
                chunk_ids=chunk_ids,
                entity_ids=entity_ids,
                limit=max(1, len(chunk_ids), len(entity_ids)),
            ),
        )
        return _Evidence(
            chunks={
                hit.id: hit
                for hit in chunk_hits([r for r in result.rows if r.get("kind") == "chunk"])
            },
            entities={
                str(r["id"]): entity_detail(r) for r in result.rows if r.get("kind") == "entity"
            },
            entity_ids=frozenset(entity_ids),
        )

    async def _signal(self, name: str, query: SignalQuery) -> SignalResult:
        """One signal's ranking, observed (``kg.search.signal``)."""
        with observe.span("kg.search.signal", signal=name) as signal:
            result = await self._signals[name].search(query)
            signal.set(chunks=len(result.chunks))
            return result

    async def _documents(self) -> Mapping[str, str] | None:
        """Chunk id -> document id from the kept chunk vectors (the vector signal has just
        read them for these counts), for hybrid's document evidence; None when it is off or
        the graph is past their size bound."""
        if self._search.fusion_document_weight <= 0:
            return None
        stamp = await self.context.names.last_stamp()
        matrix = await self.context.chunk_vectors.for_stamp(stamp)
        return None if matrix is None else matrix.document_of

    async def _fuse(
        self,
        done: Mapping[str, SignalResult],
        shown: int,
        documents: Mapping[str, str] | None,
        as_of: date | datetime | None,
    ) -> list[ChunkHit]:
        """Hybrid's one ranking, its first ``shown``: each signal's weight scaled by its
        confidence for this question (kg.search.fusion), then weighted reciprocal rank
        fusion, of chunks and of their ``documents``; then once more with the next hop from
        the first chunk (:meth:`_next_hop`) as one more ranking."""
        with observe.span("kg.search.fusion", signals=len(done)) as fusion:
            rankings, weights = self._fusion_weights(done)
            order = self._fused_ids(rankings, weights, documents)
            subjects = done["graph"].subjects if "graph" in done else frozenset()
            hop = await self._next_hop(order, subjects, documents, as_of) if order else None
            if hop is not None:  # the signals' weights stand; the hop's is its own
                more = {NEXT_HOP: hop.chunks}
                rankings = {**rankings, **more}
                weights |= self._confident(more, {NEXT_HOP: self._search.next_hop_weight})
                order = self._fused_ids(rankings, weights, documents)
            fused = as_hits(rankings, order, shown)
            fusion.set(chunks=len(fused), next_hop=hop is not None)
            return fused

    async def _next_hop(
        self,
        order: Sequence[tuple[str, float]],
        subjects: frozenset[str],
        documents: Mapping[str, str] | None,
        as_of: date | datetime | None,
    ) -> SignalResult | None:
        """The chunks one passage hop onward from the fused first chunk (kg.search.passages'
        ``next_hop``), one a document and none of its own: where a multi-hop question's next
        passage is. Only for a question that names an entity (``subjects``, from the graph
        signal): a question that names none asked no chain of names (without this condition
        the Starlette docs' how-to questions fell from hit@1 88.9 to 44.4). In memory, from the
        passage graph the graph signal walks; None when it is off, the graph is past the
        passage graph's size bound, or nothing is a hop away."""
        if self._search.next_hop_weight <= 0 or not subjects:
            return None
        graph = await self.context.passages.for_stamp(await self.context.names.last_stamp())
        if graph is None:
            return None
        first = order[0][0]
        namespaces = scope.current()
        if namespaces is not None:
            graph = graph.within(namespaces)
        # one chunk a document (its best), and none of the first chunk's: the next hop is
        # another page, and a page of many chunks must not count once per chunk in fusion
        seen = {documents.get(first)} if documents else set()
        scored: list[tuple[str, float]] = []
        # equal scores (common: chunks that share one name) in the order fusion put them
        place = {cid: i for i, (cid, _) in enumerate(order)}
        found = graph.next_hop(first, self._search.about_weight, HOP_READ, subjects)
        found.sort(key=lambda kv: (-round(kv[1], 12), place.get(kv[0], len(place))))
        for cid, score in found:
            document = documents.get(cid) if documents else None
            if document is not None:
                if document in seen:
                    continue
                seen.add(document)
            scored.append((cid, score))
        if not scored:
            return None
        hop = SignalResult(chunks=id_hits(scored[:HOP_KEPT]), texts=False)
        if as_of is not None:
            hop = (await self._dated({NEXT_HOP: hop}, as_of))[NEXT_HOP]
        return hop if hop.chunks else None

    def _fusion_weights(
        self, done: Mapping[str, SignalResult]
    ) -> tuple[dict[str, list[ChunkHit]], dict[str, float]]:
        """Each ranking and its weight for this question: the set weight, the signal's own
        scale, its confidence (kg.search.fusion.confidence_weights)."""
        weights = dict(self._search.fusion_weights)
        for name, result in done.items():
            if result.fusion_scale is not None:
                weights[name] = weights.get(name, 0.0) * result.fusion_scale
        rankings = {name: result.chunks for name, result in done.items()}
        return rankings, self._confident(rankings, weights)

    def _confident(
        self, rankings: Mapping[str, Sequence[ChunkHit]], weights: Mapping[str, float]
    ) -> dict[str, float]:
        return confidence_weights(
            rankings,
            weights,
            lead_rank=self._search.fusion_lead_rank,
            anchor=self._search.fusion_anchor,
            anchor_floor=self._search.fusion_anchor_floor,
            floors={"vector": self._vector_floor},
        )

    def _fused_ids(
        self,
        rankings: Mapping[str, Sequence[ChunkHit]],
        weights: Mapping[str, float],
        documents: Mapping[str, str] | None,
    ) -> list[tuple[str, float]]:
        return fused_ids(
            rankings,
            weights,
            self._search.fusion_k,
            documents=documents,
            document_weight=self._search.fusion_document_weight,
        )

    async def _evidence(
        self,
        chunks: list[ChunkHit],
        entities: list[EntityHit],
        results: Iterable[SignalResult],
        early: asyncio.Future[_Evidence] | None = None,
    ) -> tuple[list[ChunkHit], list[EntityHit]]:
        """The chunks with their texts and documents, and the entities with their description
        and aliases: the signals rank ids (the graph and the kept chunk vectors read no text),
        and only what the response shows is read, in one ``graph_evidence`` read, or none when
        the early read (:meth:`_run_signals`) and the text signal's texts hold it all. A chunk a
        text-carrying signal brought needs no read; one the graph no longer holds is dropped."""
        known: dict[str, ChunkHit] = {}
        for r in results:
            known.update({hit.id: hit for hit in r.chunks} if r.texts else r.texted)
        details: dict[str, dict[str, Any]] = {}
        entities_read = not entities
        if early is not None:
            read = await early
            known.update(read.chunks)
            if read.entity_ids.issuperset(e.id for e in entities):
                details, entities_read = read.entities, True
        missing = [c.id for c in chunks if c.id not in known]
        if missing or not entities_read:
            wanted = [] if entities_read else [e.id for e in entities]
            later = await self._read_evidence(missing, wanted)
            known.update(later.chunks)
            details = details if entities_read else later.entities
        filled = [
            hit.model_copy(
                update={
                    "text": known[hit.id].text,
                    "document_id": known[hit.id].document_id,
                    "document_path": known[hit.id].document_path,
                }
            )
            for hit in chunks
            if hit.id in known
        ]
        return filled, [
            e.model_copy(update=details[e.id]) if e.id in details else e for e in entities
        ]

    async def _translate(
        self, query: str
    ) -> tuple[dict[LanguageCode, TranslatedQuestion], str | None]:
        """The question in the corpus's other languages (kg.search.translate); nothing when
        ``search.translate`` is off or the corpus is all in the question's language. A failing
        or slow LLM is reported, not raised: past ``search.translate_timeout_s`` the search
        runs on the question alone."""
        if self._translator is None:
            return {}, None
        own = detect(query)
        targets = [code for code in await self._corpus_languages() if code != own]
        if not targets:
            return {}, None
        deadline = self._search.translate_timeout_s
        try:
            async with asyncio.timeout(deadline):
                found, _usage = await self._translator.translate(query, targets)
        except TimeoutError:
            return {}, f"translation took longer than {deadline:g} s (search.translate_timeout_s)"
        except (KGError, ValidationError) as exc:  # the endpoint's message names no secret
            return {}, str(exc)[:400]
        return found, None

    async def _corpus_languages(self) -> tuple[LanguageCode, ...]:
        """Languages that have chunks."""
        counts = await self._corpus_counts()
        return tuple(lang.code for lang in LANGUAGES if counts.get(lang.code, 0) > 0)

    async def _corpus_shares(self) -> dict[LanguageCode, float]:
        """Each language's share of the graph's chunks (empty for an empty graph)."""
        counts = await self._corpus_counts()
        total = sum(counts.values())
        return {code: n / total for code, n in counts.items()} if total else {}

    async def _corpus_counts(self) -> dict[LanguageCode, int]:
        """How many chunks each language has in the whole graph (the count store), cached for
        ``search.relation_types_ttl_s``."""
        loaded_at, counts = self._languages
        if time.monotonic() - loaded_at < self._search.relation_types_ttl_s:
            return counts
        result = await self.guard.run("corpus_languages", NoParams())
        row = result.rows[0] if result.rows else {}
        counts = {lang.code: int(row.get(lang.code) or 0) for lang in LANGUAGES}
        self._languages = (time.monotonic(), counts)
        return counts

    async def _dense_text(self, query: str) -> str | None:
        """For a question written mostly in Cyrillic, its English gloss and its names
        (kg.glossary.english_reading), when the
        chunk embedder is WordLlama (it reads English; the gloss alone embedded better than the
        question with it: XQuAD ru->en dense R@5 71.4 against 66.8) and the corpus is mostly
        English (over a mostly Russian one the gloss pulled it towards the few English chunks:
        docs/search.md, "Languages"). None: the question as written."""
        if self.settings.chunks.embedder != "wordllama":  # e5 or a served model reads Russian
            return None
        weights = index_weights(query)
        if weights["ru"] <= weights["en"]:
            return None
        counts = await self._corpus_counts()
        if counts.get("en", 0) < counts.get("ru", 0):
            return None
        return english_reading(query) or None

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
