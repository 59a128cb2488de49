"""The vector signal: the chunks nearest to the question's embedding."""

from __future__ import annotations

from kg.cypher.params import ChunksByVectorParams
from kg.search.signals.base import (
    SignalContext,
    SignalQuery,
    SignalResult,
    by_score,
    chunk_hits,
)


class VectorSignal:
    """The chunk embedder's nearest chunks (vector index ``chunk_embedding``)."""

    template = "chunks_by_vector"

    def __init__(self, context: SignalContext) -> None:
        self._guard = context.guard
        self._embedder = context.chunk_embedder
        self._dim = context.settings.chunks.embedding_dim

    async def search(self, query: SignalQuery) -> SignalResult:
        # The chunk embedder (WordLlama) is English-centric: it gets the English question.
        text = query.translations.get("en", query.request.query)
        embedding = await query.vectors.get(self._embedder, text, self._dim)
        if embedding is None:
            return SignalResult(chunks=[])
        result = await self._guard.run(
            "chunks_by_vector", ChunksByVectorParams.model_construct(embedding=embedding, k=query.k)
        )
        return SignalResult(chunks=chunk_hits(by_score(result.rows)))
