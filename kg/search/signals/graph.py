"""The graph signal: link the question to entities, expand, propagate to chunks.

Link: the question's longest word n-grams equal to names or aliases, weighted by specificity
(the entity indexes' fuzzy hits only when it names none). Expand: the seeds 1..3 hops through
relations (``seed_expansion``) and through passages (``passage_hop``: chunks that mention an
entity, entities those chunks mention). Propagate: personalized PageRank over that subgraph of
entities and chunks, restarting at the seeds. Entities and relations are ranked by
:mod:`kg.search.ranking`. docs/search.md gives the measurements behind each step.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from kg import scope
from kg.cypher.lucene import escape_lucene
from kg.cypher.params import (
    MAX_TEXT_CHARS,
    ChunksByVectorParams,
    EntityLinksParams,
    EntitySeedsParams,
    FactsByVectorParams,
    PassageHopParams,
    SeedExpansionParams,
)
from kg.docgraph import SECTION, STRUCTURE_TYPES
from kg.search.entity_vectors import EntityVectors
from kg.search.facts import Facts
from kg.search.fusion import rrf
from kg.search.kept import Stamp
from kg.search.models import ChunkHit
from kg.search.names import may_name, stamp_of
from kg.search.passages import PassageGraph, distinct
from kg.search.ranking import Ranked, boost_asked_types, rank_expansion
from kg.search.relations import RelationGraph, Relations
from kg.search.retrieval import (
    MAX_NGRAMS,
    MAX_PHRASES,
    asked_types,
    longest_links,
    pagerank,
    personalized_pagerank,
    question_ngrams,
    shortest,
    specificity,
    spellings,
)
from kg.search.seeding import fact_seeds, passage_restarts
from kg.search.signals.base import (
    QuestionVectors,
    SignalContext,
    SignalQuery,
    SignalResult,
    by_score,
    id_hits,
)
from kg.search.signals.text import TextSignal
from kg.words import form, words

# Candidates fetched from each index per seed kept: fusion needs some depth to work with.
CANDIDATES_PER_SEED = 4
# Most seeds and most entities one passage hop starts from (the templates' id bounds).
MAX_SEEDS = 50
MAX_HOP_IDS = 200
# Most entities one spelling of the question links (the kept index or the fulltext index).
LINKS_PER_PHRASE = 5


def graph_chunks(scored: Sequence[tuple[str, float]]) -> list[ChunkHit]:
    """Chunks in PageRank order, scores scaled so the best is 1.0; ids and scores only (the
    service reads the texts of those it returns)."""
    top = scored[0][1] if scored and scored[0][1] > 0 else 1.0
    return id_hits((cid, score / top) for cid, score in scored)


# The same names and titles recur on many rows and across searches: each is put in its form
# once per process (a pure function of the string; bounded).
_cached_form = functools.lru_cache(maxsize=65_536)(form)


def _mask(size: int, picked: list[int]) -> npt.NDArray[np.bool_]:
    mask = np.zeros(size, dtype=np.bool_)
    mask[picked] = True
    return mask


def _subgraph_pagerank(
    s: npt.NDArray[np.int64],
    d: npt.NDArray[np.int64],
    w: npt.NDArray[np.float64],
    seed_nodes: npt.NDArray[np.int64],
    seed_mass: npt.NDArray[np.float64],
    *,
    damping: float,
    iterations: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """PageRank over the nodes these edges and seeds touch only, renumbered 0..n: the nodes
    (their global numbers) and their scores."""
    keep = (s != d) & (w > 0) & np.isfinite(w)
    s, d, w = s[keep], d[keep], w[keep]
    # the nodes in order, and each one's local number (marked, not sorted as np.unique would)
    size = 1 + max((int(a.max()) for a in (s, d, seed_nodes) if len(a)), default=-1)
    nodes = distinct(np.concatenate([s, d, seed_nodes]).astype(np.int64, copy=False), size)
    local = np.empty(size, dtype=np.int64)
    local[nodes] = np.arange(len(nodes), dtype=np.int64)
    restart = np.bincount(local[seed_nodes], weights=seed_mass, minlength=len(nodes)).astype(
        np.float64
    )
    scores = pagerank(local[s], local[d], w, restart, damping=damping, iterations=iterations)
    return nodes, scores


def _tell_stamp(query: SignalQuery, stamp: Stamp | None) -> None:
    """Hand the vector signal of this search the counts linking read (once)."""
    waiting = query.linked_stamp
    if waiting is not None and not waiting.done():
        waiting.set_result(stamp)


def _chunk_node(chunk_id: str) -> str:
    return "c:" + chunk_id


def _entity_node(entity_id: str) -> str:
    return "e:" + entity_id


class GraphSignal:
    """Chunks by personalized PageRank from the entities the question names."""

    template = "seed_expansion"

    def __init__(self, context: SignalContext) -> None:
        self._guard = context.guard
        self._search = context.settings.search
        self._embedder = context.embedder
        self._dim = context.settings.resolve.embedding_dim
        self._chunk_embedder = context.chunk_embedder
        self._chunk_dim = context.settings.chunks.embedding_dim
        self._weights = context.weights
        self._names = context.names
        self._passage_graph = context.passages
        self._relation_graph = Relations(context.guard)
        self._facts = Facts(context.guard, self._chunk_dim)
        self._chunk_vectors = context.chunk_vectors
        self._entity_vectors = EntityVectors(context.guard, self._dim)
        self._text = TextSignal(context)

    async def search(self, query: SignalQuery) -> SignalResult:
        link_text = "\n".join([query.request.query, *query.translations.values()])
        # The chunk embedder (WordLlama) is English-centric: facts get the English question.
        question = query.translations.get("en", query.request.query)
        try:
            ranked, chunks, named, subjects = await self._graph(query, link_text, question)
        finally:
            _tell_stamp(query, None)  # the vector signal must never wait on a search that ended
        # Fuzzy seeds are guesses: measured, at full weight they cost hybrid 8 points of R@5
        # on XQuAD (docs/search.md, "Languages").
        scale = None if named else self._search.unlinked_graph_weight
        return SignalResult(
            chunks=chunks, ranked=ranked, fusion_scale=scale, texts=False, subjects=subjects
        )

    async def _seeds(
        self, query: str, embedding: list[float] | None
    ) -> dict[str, tuple[float, Mapping[str, Any]]]:
        """Fuzzy candidates: the entities nearest to the question (the kept entity vectors,
        else the vector index) and the entity names its words match (the fulltext index),
        fused by RRF."""
        if embedding is None and not escape_lucene(query):
            return {}
        k = self._search.seeds * CANDIDATES_PER_SEED
        # The question with its translations and their names may outgrow what the template
        # takes; only its first 64 words are searched anyway (kg.cypher.lucene).
        text = query[:MAX_TEXT_CHARS]
        # The vector half from the kept entity vectors (exact, in the scope), the read asks
        # the fulltext index only; without them both indexes are asked.
        nearest: list[dict[str, Any]] | None = None
        if embedding is not None:
            stamp = await self._names.last_stamp()
            matrix = await self._entity_vectors.for_stamp(stamp)
            if matrix is not None:
                nearest = matrix.nearest(embedding, k, scope.current())
        row: Mapping[str, Any] = {"vector": [], "fulltext": []}
        if nearest is None or escape_lucene(text):
            params = EntitySeedsParams.model_construct(
                embedding=embedding if nearest is None else None, text=text, k=k
            )
            result = await self._guard.run("entity_seeds", params)
            row = result.rows[0] if result.rows else row
        if nearest is not None:
            row = {**row, "vector": nearest}
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

    async def _link(
        self, query: str
    ) -> tuple[dict[str, tuple[float, Mapping[str, Any]]], set[int], set[str], set[str]]:
        """Seeds: entities the question names (longest n-gram matches), each weighted by its
        specificity (a Cyrillic n-gram also in Latin transliteration: ``Кафка`` names
        ``Kafka``). Also returns the positions of the question's words that the links
        consumed, the seeds linked through a one-word section heading only (weak), and those
        linked through one word to any entity of the document graph (a title, a heading, a
        folder: a word that is usually an ordinary word of the corpus)."""
        grams = question_ngrams(query, self._search.link_max_words)
        lookups = spellings(grams, MAX_NGRAMS)
        exact_rows = await self._exact(list(lookups)) if lookups else []
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
        # One word linking a title, heading or folder of the document graph: usually an
        # ordinary word of the corpus (what `graph` mode's text restarts stand in for).
        one_word = {
            eid
            for eid, gram in links.items()
            if gram.end - gram.start == 1 and info[eid].get("type") in STRUCTURE_TYPES
        }
        # A one-word section heading ("Application", «Объявление») is mentioned by its own
        # section only, so it looks as specific as a name; the link is weak evidence
        # (docs/search.md, "Headings").
        weak = {eid for eid in one_word if info[eid].get("type") == SECTION}
        seeds = {
            eid: specificity(mentions[eid])
            * (self._search.heading_link_weight if eid in weak else 1.0)
            for eid in links
        }
        # a link weighed 0 (a weak one, at heading_link_weight 0) links nothing: its word
        # stays free for asked types
        consumed = {
            i for eid, gram in links.items() if seeds[eid] > 0 for i in range(gram.start, gram.end)
        }
        best = sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_SEEDS]
        kept = {eid: (weight, info[eid]) for eid, weight in best if weight > 0}
        return kept, consumed, weak & kept.keys(), one_word & kept.keys()

    async def _fuzzy(
        self, query: str, vectors: QuestionVectors
    ) -> dict[str, tuple[float, Mapping[str, Any]]]:
        """Seeds for a question that names no entity and matches no fact: the fuzzy
        candidates, weighted by their fused score."""
        embedding = await vectors.get(self._embedder, query, self._dim)
        found = await self._seeds(query, embedding)
        best = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))[:MAX_SEEDS]
        return {eid: (weight, hit) for eid, (weight, hit) in best if weight > 0}

    async def _anchors(
        self, question: str, vectors: QuestionVectors
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The facts and the chunks nearest to the question's chunk embedding (graph model
        5's ``fact_embedding`` and ``chunk_embedding``), for fact seeds and passage restarts;
        nothing when both are off or the question embeds to nothing."""
        search = self._search
        if not search.fact_seeds and not search.passage_reset:
            return [], []
        vector = await vectors.get(self._chunk_embedder, question, self._chunk_dim)
        if vector is None:
            return [], []

        async def facts() -> list[dict[str, Any]]:
            if not search.fact_seeds:
                return []
            # the counts of the last search: a fact written since is matched from the next one
            matrix = await self._facts.for_stamp(await self._names.last_stamp())
            if matrix is not None:  # scoped: the facts with a namespace in the scope
                return matrix.nearest(vector, search.fact_seeds, scope.current())
            params = FactsByVectorParams.model_construct(embedding=vector, k=search.fact_seeds)
            return (await self._guard.run("facts_by_vector", params)).rows

        async def chunks() -> list[dict[str, Any]]:
            if not search.passage_reset:
                return []
            # as the facts: the kept vectors of the last search's counts (exact nearest, in
            # the scope when scoped), else the vector index
            matrix = await self._chunk_vectors.for_stamp(await self._names.last_stamp())
            if matrix is not None:
                nearest = matrix.nearest(vector, search.passage_reset, scope.current())
                return [{"id": cid, "score": score} for cid, score in nearest]
            params = ChunksByVectorParams.model_construct(embedding=vector, k=search.passage_reset)
            return by_score((await self._guard.run("chunks_by_vector", params)).rows)

        found, nearest = await asyncio.gather(facts(), chunks())
        return found, nearest

    async def _text_anchors(self, query: SignalQuery) -> list[dict[str, Any]]:
        """The text signal's first chunks (``search.text_reset``) that PageRank restarts at, in
        ``graph`` mode only: ``hybrid`` fuses the text ranking itself (restarting there too
        cost HotpotQA's ``hybrid`` 10 points of R@5; docs/search.md, "Text restarts")."""
        k = self._search.text_reset
        if not k or query.request.mode != "graph":
            return []
        hits = await self._text.ranking(query, k)
        return [{"id": hit.id, "score": hit.score} for hit in hits]

    async def _exact(self, lookups: list[tuple[str, ...]]) -> list[dict[str, Any]]:
        """``entity_links`` rows for the spellings that some name or alias equals (the others
        cannot link; kg.search.names): from the kept name index when it is kept, else from
        the templates. The graph's counts are read alongside, and when they moved since the
        names were read, the names are read again (and the links asked again)."""

        async def links(forms: frozenset[tuple[str, ...]] | None) -> list[dict[str, Any]]:
            asked = shortest(may_name(lookups, forms), MAX_PHRASES)
            if not asked:
                return []
            result = await self._guard.run(
                "entity_links",
                EntityLinksParams.model_construct(
                    phrases=[list(spelling) for spelling in asked], per_phrase=LINKS_PER_PHRASE
                ),
            )
            return result.rows

        stamp, forms = self._names.last()
        in_memory = await self._memory_links(lookups, stamp)
        if in_memory is not None:
            return in_memory
        if stamp is None:
            return await links(await self._names.current())
        asked = shortest(may_name(lookups, forms), MAX_PHRASES)
        if asked:
            # One round trip for both: the links in the scope, the whole graph's counts.
            result = await self._guard.run(
                "counted_links",
                EntityLinksParams.model_construct(
                    phrases=[list(spelling) for spelling in asked], per_phrase=LINKS_PER_PHRASE
                ),
            )
            head = result.rows[0] if result.rows else {}
            now, rows = stamp_of(head), [r for r in result.rows if r.get("kind") == "link"]
        else:
            now, rows = await self._names.counts(), []
        if now == stamp:
            return list(rows)
        return await links(await self._names.for_stamp(now))

    async def _memory_links(
        self, lookups: list[tuple[str, ...]], stamp: Stamp | None
    ) -> list[dict[str, Any]] | None:
        """``entity_links`` rows from the kept name index: the graph's counts are one cheap
        read (``graph_counts``), the names are read again when they moved. None when the
        index is not kept, or a scoped search has no kept passage graph to count its
        mentions in (the templates answer then)."""
        namespaces = scope.current()
        if stamp is not None and (  # as far as known, the templates answer: no counts read
            self._names.index() is None  # too many names to keep
            or (namespaces is not None and await self._passage_graph.for_stamp(stamp) is None)
        ):
            return None
        now = await self._names.counts()
        if now != stamp:
            await self._names.for_stamp(now)
        index = self._names.index()
        if index is None:
            return None
        counted: Callable[[str], int] | None = None
        if namespaces is not None:
            graph = await self._passage_graph.for_stamp(now)
            if graph is None:
                return None
            within = graph.within(namespaces)
            if within is not graph:  # else every chunk is in scope: the whole graph's counts
                counted = within.mention_count
        return index.links(lookups, namespaces, LINKS_PER_PHRASE, counted)

    # Long on purpose: the graph signal's steps (link and match, expand, propagate, rank) in
    # the order docs/search.md gives them, each a call.
    async def _graph(
        self, query: SignalQuery, link_text: str, question: str
    ) -> tuple[Ranked, list[ChunkHit], bool, frozenset[str]]:
        """Link (``link_text``: the question and its translations) and match facts and
        passages (``question``: in English when translated), expand (relations and passages),
        propagate, rank; see docs/search.md. The flag says whether the question named an
        entity or matched a fact (else the seeds are fuzzy candidates, or one-word headings'
        weak links)."""
        req, k, vectors = query.request, query.k, query.vectors
        (linked, consumed, weak, one_word), (facts, dense) = await asyncio.gather(
            self._link(link_text), self._anchors(question, vectors)
        )
        stamp, _ = self._names.last()
        _tell_stamp(query, stamp)
        # The passage and relation graphs in memory are the whole graph's: a scoped search
        # walks the part of them in its scope (PassageGraph.within, RelationGraph.allowed), as
        # the scoped passage_hop and seed_expansion would read.
        counts = stamp or await self._names.counts()
        graph = await self._passage_graph.for_stamp(counts)
        # the relations are walked in memory only beside a kept passage graph
        relations = None if graph is None else await self._relation_graph.for_stamp(counts)
        namespaces = scope.current()
        if graph is not None and namespaces is not None:
            graph = graph.within(namespaces)
        seeds = dict(linked)
        matched = fact_seeds(facts, linked, graph, self._search.fact_weight)
        for eid, weight in matched.items():
            old, info = seeds.get(eid, (0.0, {"id": eid}))
            seeds[eid] = (old + weight, info)
        # named: some seed is more than a one-word heading's link (a fact match counts)
        subjects = frozenset(eid for eid in linked if eid not in one_word)
        named = any(eid not in weak or eid in matched for eid in seeds)
        if not seeds:
            seeds = await self._fuzzy(link_text, vectors)
        # `graph` mode's text restarts weigh as much as the weak seeds: the fuzzy ones, and the
        # one-word links to the document graph's titles, headings and folders (the walk from
        # those reaches their documents' chunks alike; BM25 knows which holds the question's
        # words). A name of more words, a relation or a fact leaves the walk its own, and the
        # text index is not asked (linking is in memory: asking after it costs little).
        named_any = bool(linked or matched)
        weak_mass = sum(w for eid, (w, _) in seeds.items() if not named_any or eid in one_word)
        texted = await self._text_anchors(query) if weak_mass > 0 or not seeds else []
        if not seeds and not texted:
            return Ranked(), [], named, subjects
        # Relations are walked from the names the question links (else from the fact seeds):
        # fact ends add rows to rank, not passages (those come from PageRank's restarts).
        walk = linked or seeds
        mass = sum(w for w, _ in seeds.values())
        restarts = passage_restarts(dense, mass, self._search.passage_reset_weight)
        if texted:
            more = passage_restarts(texted, weak_mass, self._search.text_reset_weight)
            for cid, weight in more.items():
                restarts[cid] = restarts.get(cid, 0.0) + weight
        expansion = SeedExpansionParams.model_construct(
            # strongest first: the frontier cap keeps their neighbours
            entity_ids=sorted(walk, key=lambda eid: -walk[eid][0])[:MAX_SEEDS],
            depth=req.depth,
            as_of=req.as_of or datetime.now(UTC),
            relation_types=req.relation_types,
            fanout=self._search.fanout,
            frontier_cap=self._search.frontier_cap,
            hub_degree=self._search.hub_degree,
            limit=min(self._search.expansion_limit, self._search.row_cap),
        )
        if graph is None:  # too large to keep: the passages are read hop by hop
            # depth counts entity hops; the chunks of the last entities reached come too.
            result, (links, expanded) = await asyncio.gather(
                self._guard.run("seed_expansion", expansion),
                self._passages(list(seeds), req.depth + 1),
            )
            rows = result.rows
        else:
            links, expanded = [], set[str]()
            rows = await self._expand(expansion, relations, graph)
        ranked = rank_expansion(walk, rows, self._weights)
        free = [w for i, w in enumerate(words(link_text)) if i not in consumed]
        boost_asked_types(
            ranked, asked_types(free, {e.type for e in ranked.entities}),
            self._search.asked_type_boost,
        )  # fmt: skip
        seed_weights = {eid: weight for eid, (weight, _) in seeds.items()}
        if graph is None:
            best = await self._hop_scores(seed_weights, restarts, ranked, links, expanded)
        else:
            best = self._memory_scores(
                graph, seed_weights, restarts, ranked, req.depth, min(k, 1000)
            )
        return ranked, graph_chunks(best[: min(k, 1000)]), named, subjects

    async def _expand(
        self, params: SeedExpansionParams, relations: RelationGraph | None, graph: PassageGraph
    ) -> list[dict[str, Any]]:
        """``seed_expansion``'s rows: from the relation graph in memory when it is kept, else
        from the template."""
        if relations is None:
            return (await self._guard.run("seed_expansion", params)).rows
        if params.relation_types:  # an unknown type is refused as the template's read refuses it
            await self._guard.check_relation_types(params.relation_types)
        namespaces = scope.current()
        allowed = relations.allowed(params.relation_types, params.as_of, namespaces)
        found = relations.expand(
            params.entity_ids, allowed, depth=params.depth, fanout=params.fanout,
            frontier_cap=params.frontier_cap, hub_degree=params.hub_degree,
            limit=params.limit, scope=namespaces,
        )  # fmt: skip
        in_scope = graph.namespaces.mask(namespaces) if namespaces is not None else None

        def cited(chunk_id: str) -> bool:
            at = graph.chunk_at.get(chunk_id)
            return at is not None and in_scope is not None and bool(in_scope[at])

        return relations.rows(found, namespaces, cited)

    # Long on purpose: the subgraph's edges (mentions, relations, provenance) and restarts in
    # one numbering, so PageRank runs on integer arrays.
    def _memory_scores(
        self,
        graph: PassageGraph,
        seeds: Mapping[str, float],
        restarts: Mapping[str, float],
        ranked: Ranked,
        depth: int,
        limit: int,
    ) -> list[tuple[str, float]]:
        """Chunks by PageRank over the passage graph kept in memory: the seeds' chunks within
        depth + 1 passage hops (the restart chunks count as reached at the first), the chunks
        of the entities relations reached, the relations and their provenance."""
        at, search = graph.entity_at, self._search
        order = sorted(seeds, key=lambda eid: (-seeds[eid], eid))
        cap = min(search.frontier_cap, MAX_HOP_IDS)
        starts = [at[e] for e in order if e in at]
        picked = [graph.chunk_at[c] for c in restarts if c in graph.chunk_at]
        if picked:  # the entities of the restart chunks start the walk too, after the seeds
            _, first, _ = graph.links(_mask(len(graph.chunk_ids), picked))
            starts += [int(e) for e in first]
        chunks, expanded = graph.expand(
            starts, depth + 1, per_entity=search.passages_per_entity, frontier_cap=cap
        )
        chunks[picked] = True
        reached = [at[e.id] for e in ranked.entities if e.id in at and not expanded[at[e.id]]]
        if reached:
            more, _ = graph.expand(
                reached[:MAX_HOP_IDS], 1, per_entity=search.passages_per_entity, frontier_cap=cap
            )
            chunks = chunks | more
        owner, ends, about = graph.links(chunks)
        n_entities, n_chunks = len(graph.entity_ids), len(graph.chunk_ids)
        extra: dict[str, int] = {}

        def entity(eid: str) -> int:
            found = at.get(eid)
            if found is not None:
                return found
            return extra.setdefault("e:" + eid, n_entities + n_chunks + len(extra))

        def chunk(cid: str) -> int:
            found = graph.chunk_at.get(cid)
            if found is not None:
                return n_entities + found
            return extra.setdefault("c:" + cid, n_entities + n_chunks + len(extra))

        src, dst = [n_entities + owner], [ends]
        weight = [np.where(about, search.about_weight, 1.0)]
        rel_src: list[int] = []
        rel_dst: list[int] = []
        rel_weight: list[float] = []
        scale = search.relation_edge_weight
        for rel in ranked.relations if scale > 0 else ():
            a, b = entity(rel.source), entity(rel.target)
            rel_src.append(a)
            rel_dst.append(b)
            rel_weight.append(scale * rel.weight * self._weights.of(rel.type))
            for cid in rel.chunk_ids:
                c = chunk(cid)
                rel_src += [c, c]
                rel_dst += [a, b]
                rel_weight += [scale, scale]
        src.append(np.array(rel_src, dtype=np.int64))
        dst.append(np.array(rel_dst, dtype=np.int64))
        weight.append(np.array(rel_weight, dtype=np.float64))
        seed_nodes = np.array(
            [entity(e) for e in seeds] + [chunk(c) for c in restarts], dtype=np.int64
        )
        seed_mass = np.array([*seeds.values(), *restarts.values()], dtype=np.float64)
        nodes, scores = _subgraph_pagerank(
            np.concatenate(src), np.concatenate(dst), np.concatenate(weight),
            seed_nodes, seed_mass, damping=search.ppr_damping,
            iterations=search.ppr_iterations,
        )  # fmt: skip
        chunk_node = (nodes >= n_entities) & (nodes < n_entities + n_chunks)
        outside = {index: key[2:] for key, index in extra.items() if key.startswith("c:")}
        if outside:
            chunk_node |= np.isin(nodes, np.array(list(outside), dtype=np.int64))
        scored = np.flatnonzero(chunk_node & (scores > 0))
        # best first, then by id: the same order the hop-by-hop path gives
        if not outside and len(graph.chunk_rank) == n_chunks:
            at_chunk = nodes[scored] - n_entities
            values = scores[scored]
            best = np.lexsort((graph.chunk_rank[at_chunk], -values))[:limit]
            return [(graph.chunk_ids[int(at_chunk[i])], float(values[i])) for i in best]
        ids = [
            graph.chunk_ids[node - n_entities] if node < n_entities + n_chunks else outside[node]
            for node in (int(v) for v in nodes[scored])
        ]
        values = scores[scored]
        ranked_at = sorted(range(len(ids)), key=lambda i: (-values[i], ids[i]))[:limit]
        return [(ids[i], float(values[i])) for i in ranked_at]

    async def _hop_scores(
        self,
        seeds: Mapping[str, float],
        restarts: Mapping[str, float],
        ranked: Ranked,
        links: list[tuple[str, str, float]],
        expanded: set[str],
    ) -> list[tuple[str, float]]:
        """Chunks by PageRank over passages read hop by hop (a graph too large to keep)."""
        # Entities the relations reached: their passages join the graph too (one more hop).
        reached = [e.id for e in ranked.entities if e.id not in expanded][:MAX_HOP_IDS]
        if reached:
            more, _ = await self._passages(reached, 1)
            links = links + more
        edges = [(_chunk_node(c), _entity_node(e), w) for c, e, w in links]
        scale = self._search.relation_edge_weight
        for rel in ranked.relations if scale > 0 else ():
            ends = (_entity_node(rel.source), _entity_node(rel.target))
            edges.append((*ends, scale * rel.weight * self._weights.of(rel.type)))
            edges += [(_chunk_node(c), end, scale) for c in rel.chunk_ids for end in ends]
        scores = personalized_pagerank(
            edges,
            {_entity_node(eid): weight for eid, weight in seeds.items()}
            | {_chunk_node(cid): weight for cid, weight in restarts.items()},
            damping=self._search.ppr_damping,
            iterations=self._search.ppr_iterations,
        )
        return sorted(
            ((node[2:], score) for node, score in scores.items() if node.startswith("c:")),
            key=lambda kv: (-kv[1], kv[0]),
        )

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
            result = await self._guard.run(
                "passage_hop",
                PassageHopParams.model_construct(
                    entity_ids=frontier,
                    per_entity=self._search.passages_per_entity,
                    per_chunk=self._search.fanout,
                    limit=self._search.row_cap,
                ),
            )
            expanded.update(frontier)
            new: dict[str, int] = {}
            for row in result.rows:
                chunk, title = str(row["chunk"]), form_of(str(row.get("title") or ""))
                reached = row.get("reached") or []
                for e in reached:
                    links.append((chunk, str(e["id"]), weight(e.get("name"), title)))
                # Once per entity that reached the chunk: parallel edges add up in PageRank.
                times = len(reached)
                for m in row.get("mentioned") or []:
                    links.append((chunk, str(m["id"]), times * weight(m.get("name"), title)))
                    if m["id"] not in expanded:
                        new[str(m["id"])] = int(m.get("mentions") or 0)
            cap = min(self._search.frontier_cap, MAX_HOP_IDS)
            frontier = sorted(new, key=lambda e: (new[e], e))[:cap]
        return links, expanded
