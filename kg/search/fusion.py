"""Rank fusion: one ranking out of several, by (weighted) reciprocal rank.

Apart from the signals so that a new signal only has to return a ranking: the service fuses
whatever the registered signals return (docs/search.md explains the weights).

In hybrid mode each signal's weight is scaled, per question, by its confidence
(:func:`confidence_weights`): how far its top scores stand out from the rest of its own
ranking (:func:`lead`). A signal whose scores are flat (a dense signal that cannot read the
question's language, a graph seeded by lookalikes) then hardly moves the fused order, a peaked
one counts fully, and a signal that found nothing is left out. The anchor signal (``text``)
keeps at least ``fusion_anchor_floor`` (3/4) of its weight, so its hits are kept when the
others are noise, while a flat text ranking gives way a little to a peaked graph. Measured on
the four dev sets in docs/search.md, "Hybrid".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kg.search.models import ChunkHit
from kg.settings import ChunkSettings, SearchSettings


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


def fuse(
    rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int
) -> dict[str, float]:
    """Weighted reciprocal rank fusion: sum of ``weight / (k + rank)``, scaled so that first in
    every weighted ranking is 1.0. A ranking whose weight is missing or 0 does not count."""
    raw: dict[str, float] = {}
    best = 0.0
    for name, ranking in rankings.items():
        weight = weights.get(name, 0.0)
        if weight <= 0:
            continue
        best += weight / (k + 1)
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            raw[key] = raw.get(key, 0.0) + weight / (k + rank)
    if best <= 0:
        return {}
    return {key: score / best for key, score in raw.items()}


def lead(scores: Sequence[float], rank: int) -> float:
    """A ranking's confidence, 0..1: how far its top score stands above its score at ``rank``,
    as a share of how far it stands above its last. Scale-free, so BM25, cosine and PageRank
    scores compare. 0 for an empty or flat ranking; 1 for a single hit, or when everything
    from ``rank`` down scores as low as the last."""
    if not scores:
        return 0.0
    if len(scores) == 1:
        return 1.0
    top, last = scores[0], scores[-1]
    if top <= last:
        return 0.0
    at = scores[min(rank, len(scores)) - 1]
    return min(1.0, max(0.0, (top - at) / (top - last)))


def confidence_weights(
    rankings: Mapping[str, Sequence[ChunkHit]],
    weights: Mapping[str, float],
    *,
    lead_rank: int | None,
    anchor: str | None,
    anchor_floor: float = 1.0,
    floors: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Each signal's fusion weight for one question: its set weight times its :func:`lead` at
    ``lead_rank`` (None: the set weight); the ``anchor`` signal's lead counts no lower than
    ``anchor_floor`` (1: its set weight as is), another signal's no lower than its entry in
    ``floors`` (default 0). A signal that found nothing, or weighs 0, is left out."""
    out: dict[str, float] = {}
    for name, hits in rankings.items():
        weight = weights.get(name, 0.0)
        if not hits or weight <= 0:
            continue
        if lead_rank is not None:
            confidence = lead([hit.score for hit in hits], lead_rank)
            floor = anchor_floor if name == anchor else (floors or {}).get(name, 0.0)
            weight *= max(floor, confidence)
        if weight > 0:
            out[name] = weight
    return out


def fused_order(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    k: int,
    limit: int | None = None,
) -> list[tuple[str, float]]:
    """:func:`fuse`'s keys with their scores, best first, then by key; the first ``limit``
    only when given."""
    order = sorted(fuse(rankings, weights, k).items(), key=lambda kv: (-kv[1], kv[0]))
    return order if limit is None else order[: max(limit, 0)]


def fuse_chunks(
    rankings: Mapping[str, Sequence[ChunkHit]],
    weights: Mapping[str, float],
    k: int,
    limit: int | None = None,
    *,
    documents: Mapping[str, str] | None = None,
    document_weight: float = 0.0,
) -> list[ChunkHit]:
    """Hybrid mode: one chunk list, ranked by weighted RRF of the signals' rankings; its first
    ``limit`` only when given (a hit is copied with its fused score: only those shown are).

    With ``documents`` (chunk id -> document id) and a ``document_weight``, a chunk also
    gains that many times its document's fused score: the same fusion over each signal's
    ranking of documents, each placed by its best chunk (:func:`document_evidence`)."""
    order = fused_ids(rankings, weights, k, documents=documents, document_weight=document_weight)
    return as_hits(rankings, order, limit)


def fused_ids(
    rankings: Mapping[str, Sequence[ChunkHit]],
    weights: Mapping[str, float],
    k: int,
    *,
    documents: Mapping[str, str] | None = None,
    document_weight: float = 0.0,
) -> list[tuple[str, float]]:
    """:func:`fuse_chunks`' order as chunk ids and fused scores, every candidate (no hit is
    copied: a caller that needs only the first, or the order, pays for no more)."""
    ids = {name: [c.id for c in hits] for name, hits in rankings.items()}
    order = fused_order(ids, weights, k)
    if documents and document_weight > 0:
        order = document_evidence(order, ids, weights, k, documents, document_weight)
    return order


def as_hits(
    rankings: Mapping[str, Sequence[ChunkHit]],
    order: Sequence[tuple[str, float]],
    limit: int | None = None,
) -> list[ChunkHit]:
    """The first ``limit`` of ``order`` (all without it) as the rankings' hits, each with its
    fused score."""
    by_id = {c.id: c for hits in rankings.values() for c in hits}
    picked = order if limit is None else order[: max(limit, 0)]
    return [by_id[cid].model_copy(update={"score": score}) for cid, score in picked]


def document_evidence(
    order: Sequence[tuple[str, float]],
    ids: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    k: int,
    documents: Mapping[str, str],
    weight: float,
) -> list[tuple[str, float]]:
    """``order`` ranked again with each chunk's score raised by ``weight`` times its
    document's fused score, the sum scaled back to 0..1. Signals often find one document
    through different chunks of it (`text` the paragraph with the words, `vector` the one
    with the meaning): chunk-level fusion counts each chunk once and ranks a document that
    every signal found below one chunk that two signals share. Passages that are their own
    documents rank as before. docs/search.md, "Documents"."""
    by_document = {
        name: [documents[cid] for cid in ranking if documents.get(cid)]
        for name, ranking in ids.items()
    }
    of_document = fuse(by_document, weights, k)
    scored = [
        (cid, (score + weight * of_document.get(documents.get(cid, ""), 0.0)) / (1 + weight))
        for cid, score in order
    ]
    return sorted(scored, key=lambda kv: (-kv[1], kv[0]))


def vector_floor(search: SearchSettings, chunks: ChunkSettings) -> float:
    """The least share of its weight the vector signal keeps in ``hybrid``: the setting, or
    when unset, 1 with the e5 chunk embedder (its dense ranking is the strongest part on every
    dev set: a flat-looking ranking is still right) and 0 with the others (WordLlama's is the
    weakest: it counts only when it stands out). docs/search.md, "The chunk embedder"."""
    if search.fusion_vector_floor is not None:
        return search.fusion_vector_floor
    return 1.0 if chunks.embedder == "e5" else 0.0
