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
    """The chunk embedder's nearest chunks: from the chunk vectors kept per process
    (kg/search/chunk_vectors.py), exact, ids and scores only (the service reads the texts it
    shows), those in the scope when it has one; from the vector index ``chunk_embedding``
    only when they are too many to keep. Exact either way, a search scoped to every namespace
    ranks as an unscoped one; the approximate index, asked for more candidates when scoped,
    ranked a few questions apart (docs/search.md, "Scopes")."""

    template = "chunks_by_vector"

    def __init__(self, context: SignalContext) -> None:
        self._guard = context.guard
        self._embedder = context.chunk_embedder
        self._dim = context.settings.chunks.embedding_dim
        self._kept = context.chunk_vectors
        self._names = context.names

    async def search(self, query: SignalQuery) -> SignalResult:
        # The chunk embedder (WordLlama) is English-centric: it gets the English translation,
        # else the service's dense text (a Russian question's English gloss), else the question.
        text = query.translations.get("en") or query.dense_text or query.request.query
        embedding = await query.vectors.get(self._embedder, text, self._dim)
        if embedding is None:
            return SignalResult(chunks=[])
        # Beside the graph signal the stamp is the one it read; alone, the graph's counts
        # (kept for search.counts_ttl_s: usually no round trip).
        stamp = (
            await query.linked_stamp
            if query.linked_stamp is not None
            else await self._names.counts()
        )
        matrix = None if stamp is None else await self._kept.for_stamp(stamp)
        if matrix is not None:  # scoped: the chunks in the scope
            nearest = matrix.nearest(embedding, query.k, scope.current())
            return SignalResult(chunks=id_hits(nearest), texts=False)
        result = await self._guard.run(
            "chunks_by_vector", ChunksByVectorParams.model_construct(embedding=embedding, k=query.k)
        )
        return SignalResult(chunks=chunk_hits(by_score(result.rows)))
