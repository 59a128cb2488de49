"""Rank fusion: one ranking out of several, by (weighted) reciprocal rank.

Apart from the signals so that a new signal only has to return a ranking: the service fuses
whatever the registered signals return (docs/search.md explains the weights).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kg.search.models import ChunkHit


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


def fuse_chunks(
    rankings: Mapping[str, Sequence[ChunkHit]], weights: Mapping[str, float], k: int
) -> list[ChunkHit]:
    """Hybrid mode: one chunk list, ranked by weighted RRF of the signals' rankings."""
    fused = fuse({name: [c.id for c in hits] for name, hits in rankings.items()}, weights, k)
    by_id = {c.id: c for hits in rankings.values() for c in hits}
    hits = [by_id[cid].model_copy(update={"score": score}) for cid, score in fused.items()]
    hits.sort(key=lambda c: (-c.score, c.id))
    return hits
