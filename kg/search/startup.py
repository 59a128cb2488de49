"""Start-up: checks, EXPLAIN of every template, and warm-up, apart from the searches.

Run once per process before traffic (the API's lifespan, ``kg search``); without the warm-up
the first searches plan their templates and read a cold server (docs/benchmarks.md, "Local
search latency" and "First search").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from neo4j import AsyncDriver
from neo4j.api import BookmarkManager

from kg.cypher.guard import first_query_grace
from kg.cypher.params import ChunksByVectorParams, EntitySeedsParams
from kg.errors import ConfigError, KGError
from kg.graph.meta import check_current_async
from kg.resolve import Embedder
from kg.resolve.embed import embedder_identity
from kg.search.models import SearchMode, SearchRequest
from kg.search.relations import PAGE as RELATION_PAGE
from kg.search.relations import PER_ENTITY
from kg.search.signals.graph import CANDIDATES_PER_SEED
from kg.settings import SearchSettings

if TYPE_CHECKING:
    from kg.search.service import SearchService

logger = logging.getLogger(__name__)


async def start(service: SearchService) -> dict[str, str]:
    """EXPLAIN every template; ConfigError when one is not read-only."""
    settings, context = service.settings, service.context
    for embedder, dim, index, setting in (
        (context.embedder, settings.resolve.embedding_dim, "entity_embedding",
         "KG_RESOLVE__EMBEDDING_DIM"),
        (context.chunk_embedder, settings.chunks.embedding_dim, "chunk_embedding",
         "KG_CHUNKS__EMBEDDING_DIM"),
    ):  # fmt: skip
        if embedder.dim != dim:
            raise ConfigError(
                f"the embedder makes {embedder.dim}-d vectors but the {index} vector index "
                f"holds {dim}-d ones ({setting})"
            )
    await service.check_model()
    samples: dict[str, dict[str, Any]] = {}
    for name, params in _calls_of(service):
        prepared = service.guard.prepare(name, params)
        samples.setdefault(prepared.text, prepared.cypher_params())
    found = await service.guard.verify_read_only(samples)
    await service.warm_up()
    # The warm-up is what meets a cold server: its searches get the first-query grace.
    with first_query_grace(settings.search.first_query_timeout_s):
        await service.warm_searches()
    return found


def _calls_of(service: SearchService) -> list[tuple[str, dict[str, Any]]]:
    settings = service.settings
    return warm_up_calls(settings.search, settings.resolve.embedding_dim,
                         settings.chunks.embedding_dim)  # fmt: skip


async def warm_up(service: SearchService) -> int:
    """Plan the search templates for the parameter shapes searches send; how many calls.

    Without it the first search plans each of its templates, 5-10x slower than the next
    (docs/benchmarks.md, "Local search latency"). Only EXPLAINs: nothing is read.
    """
    calls = _calls_of(service)
    await service.guard.plan_all(calls)
    return len(calls)


async def warm_searches(service: SearchService) -> int:
    """Run a few real searches about entities sampled from the graph; how many ran.

    Planning alone left the first search 7x slower than the next on a just-started Neo4j
    (docs/benchmarks.md, "First search"): the server's JIT, index readers and page cache
    were still cold. The samples come from the entity vector index, so the chunk vector
    index is read too. Graph and text modes only, without translation: no embedding or
    LLM endpoint is called. A failure is logged, never raised: these only save time.
    """
    settings, guard = service.settings, service.guard
    count = settings.search.warm_up_searches
    if count == 0:
        return 0
    dim = settings.resolve.embedding_dim
    ran = 0
    try:
        sample = await guard.run(
            "entity_seeds",
            EntitySeedsParams.model_construct(embedding=[1.0] * dim, text="", k=count),
        )
        await guard.run(
            "chunks_by_vector",
            ChunksByVectorParams.model_construct(
                embedding=[1.0] * settings.chunks.embedding_dim, k=settings.search.candidates
            ),
        )
        found = sample.rows[0]["vector"] if sample.rows else []
        names = [str(row["name"]) for row in found if row.get("name")]
        for i, name in enumerate(names[:count]):
            depth, mode = _WARM_SEARCHES[i % len(_WARM_SEARCHES)]
            req = SearchRequest(query=f"What does {name} depend on?", depth=depth, mode=mode)
            await service.local_search(req, translate=False, rerank=False)
            ran += 1
    except (KGError, ValueError) as exc:  # ValueError: a sampled name no request takes
        logger.warning("start-up warm-up search stopped early: %s", exc)
    return ran


async def check_model(
    driver: AsyncDriver,
    database: str,
    embedder: Embedder,
    chunk_embedder: Embedder,
    *,
    bookmarks: BookmarkManager | None = None,
) -> None:
    """GraphModelError when another graph model or other embedders wrote the graph."""
    await check_current_async(
        driver,
        database,
        {"entity": embedder_identity(embedder), "chunk": embedder_identity(chunk_embedder)},
        bookmarks=bookmarks,
    )


# Neo4j caches a plan per list-size bucket (1, 2-10, 11-100 ... measured): one list of each.
_WARM_SIZES = (1, 10, 100)
# The depth and mode of each start-up search (warm_searches), in turn.
_WARM_SEARCHES: tuple[tuple[int, SearchMode], ...] = ((2, "graph"), (3, "graph"), (1, "text"))


def warm_up_calls(
    search: SearchSettings, entity_dim: int, chunk_dim: int
) -> list[tuple[str, dict[str, Any]]]:
    """One call per search template and list-size bucket, with the types searches send.
    ``seed_expansion`` is not among them: search expands in memory (kg.search.relations),
    and only a graph too large to keep plans it, at its first search."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("entity_seeds", {"embedding": [1.0] * entity_dim, "text": "kg",
                          "k": search.seeds * CANDIDATES_PER_SEED}),
        # with the kept entity vectors only the fulltext half is asked (no embedding)
        ("entity_seeds", {"text": "kg", "k": search.seeds * CANDIDATES_PER_SEED}),
        ("chunks_by_text", {"text": "kg", "k": search.candidates}),
        ("chunks_by_vector", {"embedding": [1.0] * chunk_dim, "k": search.candidates}),
        ("graph_counts", {}),
        ("name_page", {"after": "", "limit": 2000}),
        ("mention_page", {"after": "", "limit": 2000, "per_chunk": search.fanout}),
        ("relation_page", {"after": "", "limit": RELATION_PAGE, "per_entity": PER_ENTITY}),
        ("fact_page", {"after": "", "limit": 1000}),
        ("chunk_page", {"after": "", "limit": 2000}),
        ("entity_page", {"after": "", "limit": 2000}),
        ("facts_by_vector", {"embedding": [1.0] * chunk_dim, "k": search.fact_seeds or 5}),
    ]  # fmt: skip
    for size in _WARM_SIZES:
        ids = [f"kg-warm-up-{i}" for i in range(size)]
        calls.append(("entity_links", {"phrases": [["kg"]] * size, "per_phrase": 5}))
        calls.append(("counted_links", {"phrases": [["kg"]] * size, "per_phrase": 5}))
        hop = {"entity_ids": ids, "per_entity": search.passages_per_entity,
               "per_chunk": search.fanout, "limit": search.row_cap}  # fmt: skip
        calls.append(("passage_hop", hop))
        calls.append(("graph_evidence", {"chunk_ids": ids, "entity_ids": ids, "limit": size}))
        calls.append(("entity_details", {"entity_ids": ids}))
    return calls
