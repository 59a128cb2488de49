"""The graph signal's restarts beyond linked names: fact seeds and passage restarts.

Pure functions over rows the guard returned (``facts_by_vector``, ``chunks_by_vector``).
HippoRAG 2's finding, measured again on MuSiQue dev (bench/research/graph_signal_proto.md,
docs/search.md "Facts"): matching the question against *facts* (relations as text) finds the
entities a multi-hop question is about even when it names none of them, and restarting part of
the walk at the passages nearest to the question keeps the dense signal's best passages in view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kg.search.passages import PassageGraph
from kg.search.retrieval import specificity


def fact_seeds(
    facts: Sequence[Mapping[str, Any]],
    linked: Mapping[str, tuple[float, Mapping[str, Any]]],
    graph: PassageGraph | None,
    weight: float,
) -> dict[str, float]:
    """Each matched fact's subject and object at (its cosine / the best cosine) x the entity's
    specificity (the best over facts), scaled so that together they weigh ``weight`` times the
    linked names (``weight`` alone when no name links). Specificity keeps OpenIE's noisy ends
    (a pronoun, a bare year, a generic noun: entities many passages mention) weak."""
    scores = [float(f.get("score") or 0.0) for f in facts]
    best = max(scores, default=0.0)
    if best <= 0 or weight <= 0:
        return {}
    found: dict[str, float] = {}
    for fact, score in zip(facts, scores, strict=True):
        for key in ("subject_id", "object_id"):
            eid = fact.get(key)
            if not eid:
                continue
            mentions = 0
            if graph is not None and (at := graph.entity_at.get(str(eid))) is not None:
                mentions = int(graph.mentions[at])
            value = score / best * specificity(mentions)
            found[str(eid)] = max(found.get(str(eid), 0.0), value)
    total = sum(found.values())
    if total <= 0:
        return {}
    names = sum(w for w, _ in linked.values())
    target = weight * (names if names > 0 else 1.0)
    return {eid: value / total * target for eid, value in found.items()}


def passage_restarts(
    chunks: Sequence[Mapping[str, Any]], seed_mass: float, weight: float
) -> dict[str, float]:
    """The nearest chunks at (cosine / best cosine), scaled to ``weight`` x the entity seeds'
    total (``weight`` alone without seeds)."""
    scores = {str(c["id"]): float(c.get("score") or 0.0) for c in chunks}
    best = max(scores.values(), default=0.0)
    if best <= 0 or weight <= 0:
        return {}
    found = {cid: score / best for cid, score in scores.items() if score > 0}
    total = sum(found.values())
    target = weight * (seed_mass if seed_mass > 0 else 1.0)
    return {cid: value / total * target for cid, value in found.items()}
