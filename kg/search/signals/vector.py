"""The vector signal: the chunks nearest to the question's embedding."""

from __future__ import annotations

from kg import scope
from kg.cypher.params import ChunksByVectorParams
from kg.search.signals.base import (
    SignalContext,
    SignalQuery,
    SignalResult,
    by_score,
    chunk_hits,
    id_hits,
)


class VectorSignal:
    """The chunk embedder's nearest chunks: in hybrid from the chunk vectors kept per process
    (kg/search/chunk_vectors.py), ids and scores only, those in the scope when it has one;
    otherwise, or when they are too many to keep, from the vector index ``chunk_embedding``."""

    template = "chunks_by_vector"

    def __init__(self, context: SignalContext) -> None:
        self._guard = context.guard
        self._embedder = context.chunk_embedder
        self._dim = context.settings.chunks.embedding_dim
        self._kept = context.chunk_vectors

    async def search(self, query: SignalQuery) -> SignalResult:
        # The chunk embedder (WordLlama) is English-centric: it gets the English translation,
        # else the service's dense text (a Russian question's English gloss), else the question.
        text = query.translations.get("en") or query.dense_text or query.request.query
        embedding = await query.vectors.get(self._embedder, text, self._dim)
        if embedding is None:
            return SignalResult(chunks=[])
        # Alone, the index is one round trip with the texts; beside the graph signal, which
        # reads the graph's counts anyway, the kept vectors need none.
        if query.linked_stamp is not None:
            stamp = await query.linked_stamp
            matrix = None if stamp is None else await self._kept.for_stamp(stamp)
            if matrix is not None:  # scoped: the chunks in the scope
                nearest = matrix.nearest(embedding, query.k, scope.current())
                return SignalResult(chunks=id_hits(nearest), texts=False)
        result = await self._guard.run(
            "chunks_by_vector", ChunksByVectorParams.model_construct(embedding=embedding, k=query.k)
        )
        return SignalResult(chunks=chunk_hits(by_score(result.rows)))
