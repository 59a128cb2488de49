"""The text signal: Lucene BM25 over chunk text and document title, per language."""

from __future__ import annotations

from collections.abc import Mapping

from kg.cypher.lucene import escape_lucene
from kg.cypher.params import MAX_FUZZY_WORDS, MAX_TEXT_CHARS, ChunksByTextParams
from kg.glossary import gloss
from kg.languages import LanguageCode, index_weights
from kg.resolve.normalize import transliterate
from kg.search.fusion import fuse_chunks, fused_order
from kg.search.models import ChunkHit
from kg.search.retrieval import cognate_stems
from kg.search.signals.base import (
    SignalContext,
    SignalQuery,
    SignalResult,
    by_score,
    chunk_hits,
    id_hits,
)


class TextSignal:
    """Each language's fulltext index (``chunk_text_en``, ``chunk_text_ru``: kg.languages)."""

    template = "chunks_by_text"

    def __init__(self, context: SignalContext) -> None:
        self._guard = context.guard
        self._search = context.settings.search

    async def search(self, query: SignalQuery) -> SignalResult:
        # In hybrid the fused list shows a few of the ~100 chunks ranked here: they are
        # ranked by id and score, and the service reads the texts of those it shows.
        ranked_only = query.request.mode == "hybrid"
        chunks = await self._text_chunks(
            query.request.query, query.k, query.translations, ranked_only=ranked_only
        )
        return SignalResult(chunks=chunks, texts=not ranked_only)

    async def _text_chunks(
        self,
        query: str,
        k: int,
        texts: Mapping[LanguageCode, str] | None = None,
        *,
        ranked_only: bool = False,
    ) -> list[ChunkHit]:
        """Lucene BM25 over chunk text and document title in each language's index, the
        rankings fused by how much of the question each language's script holds
        (:func:`kg.languages.index_weights`). ``texts`` gives a language its own text (a
        translation); without one, the English index gets a Russian question with its gloss
        (:func:`kg.glossary.gloss`: «белок» -> protein), its transliteration, and its
        transliterated stems as fuzzy terms (:func:`kg.search.retrieval.cognate_stems`), so
        ``Теслы`` meets ``Tesla``; the Russian index gets an English question with its gloss."""
        if not escape_lucene(query):
            return []
        # A translation with its names, or a question with its transliteration, may outgrow
        # what the template takes; only the first 64 words are searched anyway.
        texts = {code: text[:MAX_TEXT_CHARS] for code, text in (texts or {}).items()}
        weights = index_weights(query)
        for code in texts:
            weights[code] = 1.0
        fuzzy: dict[LanguageCode, list[str]] = {}
        if "en" not in texts and weights["ru"] > weights["en"]:
            glossed = " ".join(gloss(query, "en"))
            texts["en"] = f"{query} {glossed} {transliterate(query.casefold())}"[:MAX_TEXT_CHARS]
            fuzzy["en"] = cognate_stems(query, MAX_FUZZY_WORDS)
        elif "ru" not in texts and weights["en"] > weights["ru"]:
            texts["ru"] = f"{query} {' '.join(gloss(query, 'ru'))}"[:MAX_TEXT_CHARS]
        result = await self._guard.run(
            "chunks_by_text",
            ChunksByTextParams.model_construct(
                text=query, texts=texts, fuzzy=fuzzy, k=k, ranked_only=ranked_only
            ),
        )
        rows = by_score(result.rows)
        if ranked_only:  # the same fusion on ids, hits made for the k kept only
            ids: dict[str, list[str]] = {}
            for row in rows:
                ids.setdefault(str(row["language"]), []).append(str(row["id"]))
            if len(ids) <= 1:
                return id_hits((str(r["id"]), float(r.get("score") or 0.0)) for r in rows[:k])
            return id_hits(fused_order(ids, weights, self._search.rrf_k, k))
        by_language: dict[str, list[ChunkHit]] = {}
        for row, hit in zip(rows, chunk_hits(rows), strict=True):
            by_language.setdefault(str(row["language"]), []).append(hit)
        if len(by_language) <= 1:
            return next(iter(by_language.values()), [])[:k]
        return fuse_chunks(by_language, weights, self._search.rrf_k, k)
