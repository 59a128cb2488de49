"""The text signal: Lucene BM25 over chunk text and document title, per language."""

from __future__ import annotations

from collections.abc import Mapping

from kg.cypher.lucene import escape_lucene
from kg.cypher.params import MAX_FUZZY_WORDS, MAX_TEXT_CHARS, ChunksByTextParams
from kg.glossary import gloss
from kg.languages import MIN_WEIGHT, LanguageCode, index_weights
from kg.resolve.normalize import transliterate
from kg.search.fusion import fuse_chunks, fused_order
from kg.search.models import ChunkHit
from kg.search.retrieval import cognate_stems, latin_cognate_stems
from kg.search.signals.base import (
    SignalContext,
    SignalQuery,
    SignalResult,
    by_score,
    chunk_hits,
    id_hits,
)

#: The share of the corpus from which the English index's ranking of the question as written
#: counts fully; under it, in proportion. The English chunks of a mostly Russian corpus are
#: mostly code blocks (vue-ru: 94 of 863), whose identifiers share an English question's
#: words (`click`); the Russian chunks of a mostly English corpus are prose, and a Russian
#: question's words found there are the best evidence it has (tests/integration/test_search.py),
#: so the Russian index keeps its weight. docs/search.md, "Fusion"; 0.25 measured the same.
MAJORITY = 0.5


def language_queries(
    query: str, texts: Mapping[LanguageCode, str], shares: Mapping[LanguageCode, float]
) -> tuple[dict[LanguageCode, str], dict[LanguageCode, list[str]], dict[str, float]]:
    """Each language index's query text, its fuzzy terms, and how much its ranking counts.

    A language with a translation in ``texts`` gets that and counts fully; otherwise the
    question's script's share of its letters says how much each language's ranking counts,
    and the other language gets the question glossed. The corpus's own mix (``shares``, each
    language's share of the chunks) moves both: the glossed language counts at least its
    share, and an English question's own ranking, where English holds less than half the
    corpus, counts in proportion (its share / :data:`MAJORITY`). Over Vue's Russian guide,
    whose English index holds 11% of the chunks and mostly code, an English question's
    Russian ranking counts 0.89 (its script gave 0.1) and its English one 0.22; over a corpus
    of both languages alike nothing moves but the glossed language's floor (0.5)."""
    # A translation with its names, or a question with its transliteration, may outgrow what
    # the template takes; only the first 64 words are searched anyway.
    out = {code: text[:MAX_TEXT_CHARS] for code, text in texts.items()}
    weights = index_weights(query)
    for code in out:
        weights[code] = 1.0
    fuzzy: dict[LanguageCode, list[str]] = {}
    if "en" not in out and weights["ru"] > weights["en"]:
        glossed = " ".join(gloss(query, "en"))
        out["en"] = f"{query} {glossed} {transliterate(query.casefold())}"[:MAX_TEXT_CHARS]
        fuzzy["en"] = cognate_stems(query, MAX_FUZZY_WORDS)
    elif "ru" not in out and weights["en"] > weights["ru"]:
        out["ru"] = f"{query} {' '.join(gloss(query, 'ru'))}"[:MAX_TEXT_CHARS]
        fuzzy["ru"] = latin_cognate_stems(query, MAX_FUZZY_WORDS)
    for language, share in shares.items():
        if language in fuzzy:  # the glossed language
            weights[language] = max(weights[language], share)
        elif language == "en" and language not in out:  # see MAJORITY
            weights[language] = max(MIN_WEIGHT, weights[language] * min(1.0, share / MAJORITY))
    return out, fuzzy, weights


class TextSignal:
    """Each language's fulltext index (``chunk_text_en``, ``chunk_text_ru``: kg.languages)."""

    template = "chunks_by_text"

    def __init__(self, context: SignalContext) -> None:
        self._guard = context.guard
        self._search = context.settings.search

    async def search(self, query: SignalQuery) -> SignalResult:
        # In hybrid the fused list shows a few of the ~100 chunks ranked here: they are
        # ranked by id and score, each language's first `shown` with their texts; the service
        # reads the texts of the others it shows.
        if query.request.mode != "hybrid":
            chunks, _ = await self._text_chunks(
                query.request.query, query.k, query.translations, shares=query.shares
            )
            return SignalResult(chunks=chunks)
        chunks, texted = await self._text_chunks(
            query.request.query,
            query.k,
            query.translations,
            texted=query.shown or query.request.limit,
            shares=query.shares,
        )
        return SignalResult(chunks=chunks, texts=False, texted=texted)

    async def ranking(self, query: SignalQuery, k: int) -> list[ChunkHit]:
        """The first ``k`` chunks by BM25 as ``text`` mode ranks them, ids and scores only:
        what the graph signal restarts PageRank at (``search.text_reset``)."""
        chunks, _ = await self._text_chunks(
            query.request.query, k, query.translations, texted=0, shares=query.shares
        )
        return chunks

    async def _text_chunks(
        self,
        query: str,
        k: int,
        texts: Mapping[LanguageCode, str] | None = None,
        *,
        texted: int | None = None,
        shares: Mapping[LanguageCode, float] | None = None,
    ) -> tuple[list[ChunkHit], dict[str, ChunkHit]]:
        """Lucene BM25 over chunk text and document title in each language's index, the
        rankings fused by how much of the question each language's script holds
        (:func:`kg.languages.index_weights`). ``texts`` gives a language its own text (a
        translation); without one, the English index gets a Russian question with its gloss
        (:func:`kg.glossary.gloss`: «белок» -> protein), its transliteration, and its
        transliterated stems as fuzzy terms (:func:`kg.search.retrieval.cognate_stems`), so
        ``Теслы`` meets ``Tesla``; the Russian index gets an English question with its gloss and
        its words spelt as Russian loanwords, as fuzzy terms
        (:func:`kg.search.retrieval.latin_cognate_stems`: ``render`` meets «рендер»).

        The corpus's language mix (``shares``) moves those weights (:func:`language_queries`).

        ``texted`` (hybrid): the hits carry ids and scores, and the first ``texted`` of each
        language come with their texts too, by id."""
        if not escape_lucene(query):
            return [], {}
        texts, fuzzy, weights = language_queries(query, texts or {}, shares or {})
        result = await self._guard.run(
            "chunks_by_text",
            ChunksByTextParams.model_construct(
                text=query,
                texts=texts,
                fuzzy=fuzzy,
                k=k,
                ranked_only=texted is not None,
                texted=texted or 0,
            ),
        )
        rows = by_score(result.rows)
        if texted is not None:  # the same fusion on ids, hits made for the k kept only
            with_text = chunk_hits([r for r in rows if r.get("text") is not None])
            ids: dict[str, list[str]] = {}
            for row in rows:
                ids.setdefault(str(row["language"]), []).append(str(row["id"]))
            if len(ids) <= 1:
                order = [(str(r["id"]), float(r.get("score") or 0.0)) for r in rows[:k]]
            else:
                order = fused_order(ids, weights, self._search.rrf_k, k)
            return id_hits(order), {hit.id: hit for hit in with_text}
        by_language: dict[str, list[ChunkHit]] = {}
        for row, hit in zip(rows, chunk_hits(rows), strict=True):
            by_language.setdefault(str(row["language"]), []).append(hit)
        if len(by_language) <= 1:
            return next(iter(by_language.values()), [])[:k], {}
        return fuse_chunks(by_language, weights, self._search.rrf_k, k), {}
