"""The passage graph (chunks and the entities they mention), kept per process.

The graph signal's PageRank runs over passages and entities (docs/search.md, "Graph"). Read
hop by hop from Neo4j (``passage_hop``: depth + 1 round trips one after another, each reading
up to 200 entities' chunks and every mention of those chunks), that expansion was most of a
graph search's time on an LLM-extracted graph: 17x a ``text`` search on MuSiQue
(docs/benchmarks.md, "Latency on an LLM-extracted graph"). The MENTIONS links are few next to
the chunks' text (20k for 1,890 passages there), so each process reads them once, through the
guard (``mention_page``, one bounded page of chunks per call), into two compressed adjacency
arrays, and expands and ranks in memory.

Like the linking filter (:mod:`kg.search.names`), the reading belongs to the graph's counts
(``graph_counts``: entities, MENTIONS links, relationships) and is read again when they move,
and at the latest after :data:`MAX_AGE_S`. A graph with more than :data:`MAX_LINKS` MENTIONS
links is not read: the graph signal then reads its passages hop by hop, as before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import MentionPageParams
from kg.search.kept import MAX_AGE_S, RowNamespaces, Stamp, per_scope
from kg.words import form

#: Most MENTIONS links read into memory (about 12 bytes each, twice); past it, hop by hop.
MAX_LINKS = 2_000_000
#: Most chunks read (pages x page size); a graph with more is read hop by hop.
MAX_CHUNKS = 1_000_000
#: Chunks per ``mention_page`` call.
PAGE = 2000

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class PassageGraph:
    """Chunks and entities by index, with MENTIONS both ways in CSR form.

    ``chunk_about[i]`` says whether link ``i`` (in chunk order) joins a chunk to the entity its
    document's title names. ``namespaces`` holds each chunk's namespace: :meth:`within` is the
    graph a scoped search walks.
    """

    chunk_ids: tuple[str, ...]
    entity_ids: tuple[str, ...]
    chunk_at: dict[str, int]
    entity_at: dict[str, int]
    chunk_ptr: Ints  # chunk i's links: chunk_entity[chunk_ptr[i]:chunk_ptr[i + 1]]
    chunk_entity: Ints
    chunk_about: Bools
    entity_ptr: Ints  # entity j's links: entity_chunk[entity_ptr[j]:entity_ptr[j + 1]]
    entity_chunk: Ints
    entity_about: Bools  # chunk_about in entity order: whether entity_chunk[i] is about it
    namespaces: RowNamespaces
    # chunk i's place in id order: a ranking's ties break by id without comparing strings
    chunk_rank: Ints = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _views: dict[tuple[str, ...], PassageGraph] = field(
        default_factory=dict, compare=False, repr=False
    )

    def within(self, scope: Sequence[str]) -> PassageGraph:
        """The graph with the MENTIONS links of the chunks in ``scope`` only, under the same
        indexes: a walk reaches chunks in the scope only, through entities they mention, and
        an entity's mention count is its count in the scope (what ``passage_hop`` reads for a
        scoped caller). A scope that holds every chunk's namespace gives this graph itself, so
        such a search ranks exactly as an unscoped one. Remembered per scope."""
        return per_scope(self._views, scope, self._within)

    def _within(self, scope: tuple[str, ...]) -> PassageGraph:
        keep = self.namespaces.mask(scope)
        if keep.all():
            return self
        per_chunk = np.diff(self.chunk_ptr)
        kept_links = np.repeat(keep, per_chunk)
        kept_pairs = keep[self.entity_chunk]
        entity_of = np.repeat(
            np.arange(len(self.entity_ids), dtype=np.int64), np.diff(self.entity_ptr)
        )
        counts = np.bincount(entity_of[kept_pairs], minlength=len(self.entity_ids))
        return dataclasses.replace(
            self,
            chunk_ptr=_offsets(np.where(keep, per_chunk, 0)),
            chunk_entity=self.chunk_entity[kept_links],
            chunk_about=self.chunk_about[kept_links],
            entity_ptr=_offsets(counts),
            entity_chunk=self.entity_chunk[kept_pairs],
            entity_about=self.entity_about[kept_pairs],
            _views={},
        )

    @property
    def mentions(self) -> Ints:
        """How many chunks mention each entity."""
        return np.diff(self.entity_ptr)

    def mention_count(self, entity_id: str) -> int:
        """How many chunks mention the entity (in this graph's scope)."""
        at = self.entity_at.get(entity_id)
        return 0 if at is None else int(self.entity_ptr[at + 1] - self.entity_ptr[at])

    def expand(
        self, entities: Iterable[int], hops: int, *, per_entity: int, frontier_cap: int
    ) -> tuple[Bools, Bools]:
        """Chunks within ``hops`` passage hops of the entities: each hop reads the first
        ``per_entity`` chunks of each frontier entity; the next frontier is the
        ``frontier_cap`` most specific (fewest mentions) entities those chunks mention that
        were not expanded yet. The same walk ``passage_hop`` makes, in memory. Also returns the
        entities expanded (both as masks over the indexes)."""
        mentions = self.mentions
        expanded = np.zeros(len(self.entity_ids), dtype=np.bool_)
        seen = np.zeros(len(self.chunk_ids), dtype=np.bool_)
        frontier = np.array(list(dict.fromkeys(entities))[:frontier_cap], dtype=np.int64)
        for _ in range(hops):
            if not len(frontier):
                break
            expanded[frontier] = True
            starts = self.entity_ptr[frontier]
            lens = np.minimum(self.entity_ptr[frontier + 1] - starts, per_entity)
            reached = distinct(self.entity_chunk[spans(starts, lens)], len(seen))
            fresh = reached[~seen[reached]]
            if not len(fresh):
                break
            seen[fresh] = True
            starts = self.chunk_ptr[fresh]
            ends = distinct(
                self.chunk_entity[spans(starts, self.chunk_ptr[fresh + 1] - starts)], len(expanded)
            )
            new = ends[~expanded[ends]]
            # most specific first (fewest mentions), then by index: deterministic
            frontier = new[np.lexsort((new, mentions[new]))][:frontier_cap]
        return seen, expanded

    def next_hop(
        self, chunk_id: str, about_weight: float, limit: int, skip: frozenset[str] = frozenset()
    ) -> list[tuple[str, float]]:
        """The chunks one passage hop onward from ``chunk_id``, best first, at most ``limit``:
        each scores the sum, over the names it shares with the chunk, of 1 / (the chunk's
        names x the name's chunks), ``about_weight`` times that where the name titles its
        document. The chunk's own title and the names in ``skip`` (those the question gives)
        lead nowhere: back to pages that name this one, or to what the question already
        found. A multi-hop question's next passage shares a name with the passage that
        answers its first hop, most often it is the page of that name (docs/search.md,
        "Next hop")."""
        at = self.chunk_at.get(chunk_id)
        if at is None or limit <= 0:
            return []
        start, end = self.chunk_ptr[at], self.chunk_ptr[at + 1]
        # onward only: not through the chunk's own title, nor through the names in ``skip``
        entities = self.chunk_entity[start:end][~self.chunk_about[start:end]]
        if skip:
            entities = entities[[self.entity_ids[int(e)] not in skip for e in entities]]
        if not len(entities):
            return []
        starts = self.entity_ptr[entities]
        lens = self.entity_ptr[entities + 1] - starts
        links = spans(starts, lens)
        weight = np.where(self.entity_about[links], about_weight, 1.0)
        # each entity an equal share, over its chunks alike; its own page's chunks count
        # about_weight times (not normalized away: a name with a page of its own leads on
        # more strongly than one without, measured on MuSiQue, docs/benchmarks.md)
        share = np.repeat(1.0 / (len(entities) * lens), lens)
        # summed over the chunks reached only (not an array of every chunk: a large graph)
        found, inverse = np.unique(self.entity_chunk[links], return_inverse=True)
        scores = np.bincount(inverse, weights=weight * share)
        keep = found != at
        found, scores = found[keep], scores[keep]
        best = np.lexsort((self.chunk_rank[found], -scores))[:limit]
        return [(self.chunk_ids[int(found[i])], float(scores[i])) for i in best]

    def links(self, chunks: Bools) -> tuple[Ints, Ints, Bools]:
        """The MENTIONS links of the chunks (a mask): chunk index, entity index, about flag."""
        picked = np.flatnonzero(chunks).astype(np.int64)
        starts = self.chunk_ptr[picked]
        lens = self.chunk_ptr[picked + 1] - starts
        at = spans(starts, lens)
        return np.repeat(picked, lens), self.chunk_entity[at], self.chunk_about[at]


def distinct(values: Ints, size: int) -> Ints:
    """The distinct values (each below ``size``), ascending: what ``np.unique`` gives, by
    marking instead of sorting (a walk's hop had it as most of its time; PageRank's subgraph
    numbers its nodes with it)."""
    marked = np.zeros(size, dtype=np.bool_)
    marked[values] = True
    return np.flatnonzero(marked).astype(np.int64, copy=False)


def _offsets(counts: npt.NDArray[np.integer]) -> Ints:
    """CSR row pointers for rows of ``counts`` entries."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def spans(starts: Ints, lens: Ints) -> Ints:
    """The positions ``starts[i] .. starts[i] + lens[i]``, concatenated."""
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, np.int64)
    offsets = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return offsets + np.arange(total, dtype=np.int64)


def build(
    rows: Sequence[tuple[str, object, Sequence[tuple[str, object]]]],
    namespaces: Sequence[str | None] | None = None,
) -> PassageGraph:
    """The graph of ``(chunk id, title, [(entity id, entity name), ...])`` rows, with each
    chunk's namespace (none: in no scope)."""
    chunk_ids: list[str] = []
    entity_at: dict[str, int] = {}
    ptr = [0]
    ends: list[int] = []
    about: list[bool] = []
    for chunk_id, title, mentioned in rows:
        chunk_ids.append(chunk_id)
        title_form = form(str(title)) if title else None
        for entity_id, name in dict(mentioned).items():
            ends.append(entity_at.setdefault(entity_id, len(entity_at)))
            about.append(title_form is not None and form(str(name or "")) == title_form)
        ptr.append(len(ends))
    chunk_ptr = np.array(ptr, dtype=np.int64)
    chunk_entity = np.array(ends, dtype=np.int64)
    owners = np.repeat(np.arange(len(chunk_ids), dtype=np.int64), np.diff(chunk_ptr))
    order = np.argsort(chunk_entity, kind="stable")
    counts = np.bincount(chunk_entity, minlength=len(entity_at))
    chunk_namespaces = namespaces if namespaces is not None else [None] * len(chunk_ids)
    return PassageGraph(
        chunk_ids=tuple(chunk_ids),
        entity_ids=tuple(entity_at),
        chunk_at={cid: i for i, cid in enumerate(chunk_ids)},
        entity_at=entity_at,
        chunk_ptr=chunk_ptr,
        chunk_entity=chunk_entity,
        chunk_about=np.array(about, dtype=np.bool_),
        entity_ptr=_offsets(counts),
        entity_chunk=owners[order],
        entity_about=np.array(about, dtype=np.bool_)[order],
        namespaces=RowNamespaces.of([] if n is None else [n] for n in chunk_namespaces),
        chunk_rank=id_ranks(chunk_ids),
    )


def id_ranks(ids: Sequence[str]) -> Ints:
    """Each id's place among the ids sorted (Python's string order). The pages come in the
    server's id order, which is Python's for every id kg writes, so this is mostly a check."""
    n = len(ids)
    if all(ids[i] < ids[i + 1] for i in range(n - 1)):
        return np.arange(n, dtype=np.int64)
    ranks = np.empty(n, dtype=np.int64)
    ranks[sorted(range(n), key=ids.__getitem__)] = np.arange(n, dtype=np.int64)
    return ranks


class Passages:
    """The passage graph for the graph's current counts, read again when they change."""

    def __init__(self, guard: Guard, per_chunk: int) -> None:
        self._guard = guard
        self._per_chunk = per_chunk
        self._graph: PassageGraph | None = None
        self._stamp: Stamp | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()

    async def for_stamp(self, stamp: Stamp) -> PassageGraph | None:
        """The passage graph of a graph whose counts are ``stamp``; None when it is too large
        to keep (the caller reads hop by hop)."""
        if stamp[1] > MAX_LINKS:
            return None
        if self._fresh(stamp):
            return self._graph
        async with self._lock:
            if not self._fresh(stamp):
                self._graph = await self._read()
                self._stamp, self._read_at = stamp, time.monotonic()
        return self._graph

    def _fresh(self, stamp: Stamp) -> bool:
        return self._stamp == stamp and time.monotonic() - self._read_at < MAX_AGE_S

    async def _read(self) -> PassageGraph | None:
        rows: list[tuple[str, object, list[tuple[str, object]]]] = []
        namespaces: list[str | None] = []
        links = 0
        after = ""
        for _ in range(MAX_CHUNKS // PAGE + 1):
            result = await self._guard.run(
                "mention_page",
                MentionPageParams.model_construct(
                    after=after, limit=PAGE, per_chunk=self._per_chunk
                ),
            )
            for row in result.rows:
                mentioned = [(str(m["id"]), m.get("name")) for m in row.get("mentioned") or []]
                links += len(mentioned)
                rows.append((str(row["id"]), row.get("title"), mentioned))
                namespace = row.get("namespace")
                namespaces.append(None if namespace is None else str(namespace))
            if links > MAX_LINKS:
                return None
            # Rows come in id order, so a page the row cap cut short goes on after its last.
            if not result.rows or (len(result.rows) < PAGE and not result.truncated):
                return await asyncio.to_thread(build, rows, namespaces)
            after = str(result.rows[-1]["id"])
        return None
