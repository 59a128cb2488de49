"""Scoring an expansion: which entities and relations a seed set reaches, best first.

The formula of docs/search.md ("Graph"), kept apart because the graph signal and an entity's
neighbourhood (:mod:`kg.search.entities`) both rank with it. No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg.search.models import EntityHit, RelationHit
from kg.settings import SearchSettings

_DEFAULT_WEIGHT = 0.5


@dataclass(frozen=True)
class Weights:
    """How much a relation of each type counts; MENTIONS weighs chunk-to-entity support."""

    by_type: Mapping[str, float]
    default: float

    @classmethod
    def from_settings(cls, search: SearchSettings) -> Weights:
        return cls(by_type=dict(search.type_weights), default=search.default_type_weight)

    def of(self, rel_type: str) -> float:
        return self.by_type.get(rel_type, self.default)


@dataclass
class _Node:
    info: dict[str, Any]
    hop: int
    strength: float


@dataclass(slots=True)
class EntityScore:
    """An entity an expansion reached, as ranking sees it: a search ranks hundreds and shows
    a few, so the response's :class:`EntityHit` is built (:meth:`hit`) only for those shown
    (pydantic hits for all of them were a millisecond of a graph search)."""

    id: str
    name: str
    type: str
    description: str
    aliases: list[str]
    score: float
    hops: int

    def hit(self) -> EntityHit:
        # model_construct: the values are built here with their types; validating hundreds
        # of hits per search was 5% of the API's CPU under load.
        return EntityHit.model_construct(
            id=self.id, name=self.name, type=self.type, description=self.description,
            aliases=list(self.aliases), score=self.score, hops=self.hops,
        )  # fmt: skip


@dataclass(slots=True)
class RelationScore:
    """A relation an expansion crossed, as ranking sees it (:meth:`hit`: as a response shows
    it)."""

    source: str
    source_name: str
    target: str
    target_name: str
    type: str
    description: str
    weight: float
    valid_from: str | None
    valid_to: str | None
    chunk_ids: list[str]
    hops: int
    score: float

    def hit(self) -> RelationHit:
        return RelationHit.model_construct(
            source=self.source, source_name=self.source_name, target=self.target,
            target_name=self.target_name, type=self.type, description=self.description,
            weight=self.weight, valid_from=self.valid_from, valid_to=self.valid_to,
            chunk_ids=list(self.chunk_ids), hops=self.hops, score=self.score,
        )  # fmt: skip


@dataclass
class Ranked:
    """Entities and relations of one expansion, best first."""

    entities: list[EntityScore] = field(default_factory=list)
    relations: list[RelationScore] = field(default_factory=list)

    def entity_hits(self, limit: int) -> list[EntityHit]:
        """The first ``limit`` entities as a response shows them."""
        return [e.hit() for e in self.entities[: max(limit, 0)]]

    def relation_hits(self, limit: int) -> list[RelationHit]:
        """The first ``limit`` relations as a response shows them."""
        return [r.hit() for r in self.relations[: max(limit, 0)]]


def _weight(row: Mapping[str, Any]) -> float:
    value = row.get("weight")
    if isinstance(value, int | float) and math.isfinite(value):
        return min(max(float(value), 0.0), 1.0)
    return _DEFAULT_WEIGHT


# Long on purpose: the scoring formula of docs/search.md in one place, hop by hop.
def rank_expansion(
    seeds: Mapping[str, tuple[float, Mapping[str, Any]]],
    rows: Sequence[Mapping[str, Any]],
    weights: Weights,
) -> Ranked:
    """Score what ``seed_expansion`` returned.

    A seed's strength is its similarity; crossing a relation multiplies the strength by its
    weight and type weight. An entity at ``hop`` scores strength / (hop + 1); a relation
    reached at hop ``L`` scores the strength it hands to its far end, / (L + 1). With one
    relation that is exactly seed similarity x edge weight x type weight / (hop + 1).
    Rows arrive ordered by hop, so a relation's near end is always known already.
    """
    nodes: dict[str, _Node] = {
        sid: _Node(info=dict(info), hop=0, strength=sim) for sid, (sim, info) in seeds.items()
    }
    relations: list[RelationScore] = []
    for row in sorted(rows, key=lambda r: int(r["hop"])):
        hop = int(row["hop"])
        source, target = row["source"] or {}, row["target"] or {}
        sid, tid = str(source.get("id")), str(target.get("id"))
        near, far = _near_far(nodes, sid, tid, hop)
        if near is None:
            continue
        far_info = target if far == tid else source
        strength = nodes[near].strength * _weight(row) * weights.of(str(row["type"]))
        node = nodes.get(far)
        if node is None:
            nodes[far] = _Node(info=dict(far_info), hop=hop, strength=strength)
        elif node.hop == hop and strength > node.strength:
            node.strength = strength
        relations.append(
            RelationScore(
                source=sid,
                source_name=str(source.get("name") or sid),
                target=tid,
                target_name=str(target.get("name") or tid),
                type=str(row["type"]),
                description=str(row.get("description") or ""),
                weight=_weight(row),
                valid_from=_text(row.get("valid_from")),
                valid_to=_text(row.get("valid_to")),
                chunk_ids=[str(c) for c in row.get("chunk_ids") or []],
                hops=hop,
                score=strength / (hop + 1),
            )
        )
    entities = [
        EntityScore(
            id=eid,
            name=str(node.info.get("name") or eid),
            type=str(node.info.get("type") or ""),
            description=str(node.info.get("description") or ""),
            aliases=[str(a) for a in node.info.get("aliases") or []],
            score=node.strength / (node.hop + 1),
            hops=node.hop,
        )
        for eid, node in nodes.items()
    ]
    entities.sort(key=lambda e: (-e.score, e.hops, e.name))
    # Newest-valid first among equals, then best score first (the sort is stable).
    relations.sort(key=lambda r: r.valid_from or "", reverse=True)
    relations.sort(key=lambda r: (-r.score, r.hops))
    return Ranked(entities=entities, relations=relations)


def boost_asked_types(ranked: Ranked, types: set[str], boost: float) -> None:
    """Entities the expansion reached whose type the question asks for, and the relations that
    reach them, score ``boost`` times more; both lists are sorted again."""
    if not types or boost == 1.0:
        return
    wanted = {e.id for e in ranked.entities if e.hops > 0 and e.type in types}
    if not wanted:
        return
    for e in ranked.entities:
        if e.id in wanted:
            e.score *= boost
    ranked.entities.sort(key=lambda e: (-e.score, e.hops, e.name))
    for r in ranked.relations:
        if r.source in wanted or r.target in wanted:
            r.score *= boost
    ranked.relations.sort(key=lambda r: (-r.score, r.hops))


def _near_far(nodes: Mapping[str, _Node], sid: str, tid: str, hop: int) -> tuple[str | None, str]:
    """Which end the expansion came from (reached one hop earlier) and which it went to."""
    candidates = [n for n in (sid, tid) if n in nodes and nodes[n].hop == hop - 1]
    if not candidates:
        candidates = [n for n in (sid, tid) if n in nodes and nodes[n].hop < hop]
    if not candidates:
        return None, tid
    near = max(candidates, key=lambda n: nodes[n].strength)
    return near, (tid if near == sid else sid)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
