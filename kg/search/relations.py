"""The relation graph (entities and the relations between them), kept per process.

The graph signal expands its seeds through relations (docs/search.md, "Graph"). Read from
Neo4j (``seed_expansion``), that expansion was a round trip of its own in every graph search,
its largest Neo4j cost, and the most expensive text of all to plan: planning was 56 % of a
test server's CPU and a graph's statistics moving sends every search back to it
(docs/benchmarks.md, "Where a graph search's milliseconds go"). The relations are few next to
what they save (17k on the MuSiQue graph), so each process reads them once through the guard
(``relation_page``, one bounded page of entities per call) into compressed adjacency arrays, and
expands in memory the way ``seed_expansion`` does in Cypher, filter for filter: relation types,
namespaces, validity at ``as_of``, ``fanout`` heaviest per node, ``frontier_cap`` new nodes per
hop, hubs past the first hop reached and not expanded, ``limit`` relations.

Like the passage graph (:mod:`kg.search.passages`), the reading belongs to the graph's counts
(``graph_counts``) and is read again when they move, and at the latest after
:data:`~kg.search.kept.MAX_AGE_S`. A graph with more than :data:`MAX_RELATIONS` relations, or
an entity with more than :data:`PER_ENTITY` outgoing ones, is not read: search then runs
``seed_expansion``, as before.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from kg.cypher.guard import Guard
from kg.cypher.params import RelationPageParams, as_of_params
from kg.search.kept import Kept, RowNamespaces, listed
from kg.search.passages import spans

#: Most relations kept per process; past it, ``seed_expansion`` is asked.
MAX_RELATIONS = 500_000
#: Most outgoing relations of one entity read; an entity with more (a supernode) sends the
#: whole graph to ``seed_expansion``, whose reads stay bounded on it.
PER_ENTITY = 2000
#: Entities per ``relation_page`` call.
PAGE = 500
#: Most chunk ids a relation row cites (``seed_expansion``'s ``cited(r, 10)``).
CITED = 10

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

# How a stored validFrom / validTo compares with an instant: by the kind of value it is, as
# the template's CASE does (kg.cypher.render._bound); any other type compares false.
_NULL, _DATE, _ZONED, _LOCAL, _TEXT, _OTHER = range(6)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = datetime(1970, 1, 1)


def _nanos(moment: datetime) -> int:
    """Nanoseconds since the epoch (an aware moment) or since a naive epoch (a naive one)."""
    delta = moment - (_EPOCH if moment.tzinfo is not None else _EPOCH_NAIVE)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


# A datetime as the guard writes it (neo4j.time's iso_format): nanoseconds, an offset if zoned.
_ISO_DATETIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
    r"(?:(Z)|([+-])(\d\d):(\d\d)(?::(\d\d))?)?"
)


def _time_key(kind: int, value: object) -> tuple[int, int, int]:
    """(kind, comparable key, UTC offset in seconds) of a stored validFrom / validTo the page
    read as ISO text: a date's ordinal day, a datetime's nanoseconds since the epoch (a local
    one's wall time as if UTC, as ``as_of_local`` is). A value that does not read is another
    kind (compares false)."""
    if kind in (_NULL, _TEXT) and (value is None or isinstance(value, str)):
        return kind, 0, 0
    if kind not in (_DATE, _ZONED, _LOCAL) or not isinstance(value, str):
        return _OTHER, 0, 0
    try:
        if kind == _DATE:
            return _DATE, date.fromisoformat(value).toordinal(), 0
        match = _ISO_DATETIME.fullmatch(value)
        if match is None:
            return _OTHER, 0, 0
        y, mo, d, h, mi, sec, frac, zulu, sign, oh, om, osec = match.groups()
        wall = datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec))
        nanos = _nanos(wall) + int((frac or "0").ljust(9, "0"))
        if kind == _LOCAL:
            return _LOCAL, nanos, 0
        if not sign:
            return (_ZONED, nanos, 0) if zulu else (_OTHER, 0, 0)
        offset = (int(oh) * 3600 + int(om) * 60 + int(osec or 0)) * (1 if sign == "+" else -1)
        return _ZONED, nanos - offset * 1_000_000_000, offset
    except ValueError:
        return _OTHER, 0, 0


@dataclass(frozen=True)
class _Times:
    """One end of every relation's validity: its kind, its key, a zoned one's UTC offset, and
    the texts among them."""

    kind: npt.NDArray[np.int8]
    key: Ints
    offset: Ints
    text: dict[int, str]

    @classmethod
    def of(cls, kinds: Sequence[object], values: Sequence[object]) -> _Times:
        keys = [_time_key(int(k) if isinstance(k, int) else _OTHER, v)
                for k, v in zip(kinds, values, strict=True)]  # fmt: skip
        return cls(
            kind=np.array([k[0] for k in keys], dtype=np.int8),
            key=np.array([k[1] for k in keys], dtype=np.int64),
            offset=np.array([k[2] for k in keys], dtype=np.int64),
            text={
                i: v
                for i, (k, v) in enumerate(zip(keys, values, strict=True))
                if k[0] == _TEXT and isinstance(v, str)
            },
        )

    def holds(self, as_of: dict[str, Any], after: bool) -> Bools:
        """Rows whose value is null or compares true with the instant: ``<=`` for validFrom,
        ``>`` for validTo (``after``). Neo4j orders two zoned datetimes of one instant by
        their offsets, so ``10:30+02:00`` is after ``08:30Z``; the instant's offset is 0."""
        instant: datetime = as_of["as_of_dt"]
        day = int(as_of["as_of_date"].toordinal())
        nanos = _nanos(instant)  # the local shape is the same instant as UTC wall time
        kind, key = self.kind, self.key
        if after:
            dates, walls = key > day, key > nanos
            zoned = walls | ((key == nanos) & (self.offset > 0))
        else:
            dates, walls = key <= day, key <= nanos
            zoned = (key < nanos) | ((key == nanos) & (self.offset <= 0))
        ok: Bools = (kind == _NULL) | ((kind == _DATE) & dates) | ((kind == _LOCAL) & walls)
        ok |= (kind == _ZONED) & zoned
        text = str(as_of["as_of_text"])
        for i, value in self.text.items():
            ok[i] = value > text if after else value <= text
        return ok


@dataclass(frozen=True)
class RelationGraph:
    """Entities and relations by index. Relation ``r`` goes from ``source[r]`` to
    ``target[r]``; entity ``e``'s relations, both directions, heaviest first, are
    ``incident[ptr[e]:ptr[e + 1]]``."""

    entity_ids: tuple[str, ...]
    entity_at: dict[str, int]
    entity_names: tuple[object, ...]
    entity_types: tuple[object, ...]
    degree: Ints
    entity_namespaces: RowNamespaces
    source: Ints
    target: Ints
    predicate_codes: Ints
    predicates: tuple[str, ...]
    order_weight: npt.NDArray[np.float64]  # coalesce(weight, 0.0)
    weights: tuple[object, ...]
    valid_from: tuple[object, ...]
    valid_to: tuple[object, ...]
    starts: _Times
    ends: _Times
    namespaces: RowNamespaces
    descriptions: tuple[object, ...]
    description_sources: tuple[object, ...]
    chunk_ids: tuple[tuple[str, ...], ...]
    ptr: Ints
    incident: Ints

    def allowed(
        self,
        relation_types: Sequence[str] | None,
        as_of: date | datetime | None,
        scope: Sequence[str] | None,
    ) -> Bools:
        """The relations an expansion may cross: of the types (predicates), in the scope,
        valid at ``as_of`` (the filters of ``seed_expansion``'s hop)."""
        ok = np.ones(len(self.source), dtype=np.bool_)
        if relation_types is not None:
            wanted = [i for i, p in enumerate(self.predicates) if p in set(relation_types)]
            ok &= np.isin(self.predicate_codes, np.array(wanted, dtype=np.int64))
        if scope is not None:
            ok &= self.namespaces.mask(scope)
        if as_of is not None:
            instant = as_of_params(as_of)
            ok &= self.starts.holds(instant, after=False) & self.ends.holds(instant, after=True)
        return ok

    # Long on purpose: seed_expansion's hops (kg.cypher.render.expansion) in one place.
    def expand(
        self,
        seeds: Sequence[str],
        allowed: Bools,
        *,
        depth: int,
        fanout: int,
        frontier_cap: int,
        hub_degree: int | None,
        limit: int,
        scope: Sequence[str] | None,
    ) -> list[tuple[int, int]]:
        """(relation, hop) of the expansion from ``seeds`` (strongest first; those in the
        scope), each relation at the first hop that reached it, by hop then weight, at most
        ``limit``."""
        in_scope = None if scope is None else self.entity_namespaces.mask(scope)
        frontier = [
            at
            for at in dict.fromkeys(self.entity_at[s] for s in seeds if s in self.entity_at)
            if in_scope is None or in_scope[at]
        ]
        seen = np.zeros(len(self.entity_ids), dtype=np.bool_)
        seen[frontier] = True
        first_hop: dict[int, int] = {}
        for hop in range(1, depth + 1):
            if not frontier or len(first_hop) >= limit:
                break  # once the relations found fill the limit, no later hop can add one
            nodes = np.array(frontier, dtype=np.int64)
            if hop > 1 and hub_degree is not None:
                nodes = nodes[self.degree[nodes] <= hub_degree]  # hubs are reached, not expanded
            starts = self.ptr[nodes]
            lens = self.ptr[nodes + 1] - starts
            owner = np.repeat(np.arange(len(nodes), dtype=np.int64), lens)
            rels = self.incident[spans(starts, lens)]
            keep = allowed[rels]
            rels, owner = rels[keep], owner[keep]
            # each node's first `fanout` allowed relations (they are heaviest first)
            group_start = np.searchsorted(owner, owner, side="left")
            picked = (np.arange(len(rels)) - group_start) < fanout
            rels, owner = rels[picked], owner[picked]
            for rel in rels.tolist():
                first_hop.setdefault(rel, hop)
            if hop == depth:
                break
            near = nodes[owner]
            far = np.where(self.source[rels] == near, self.target[rels], self.source[rels])
            _, first = np.unique(far, return_index=True)
            reached = far[np.sort(first)]
            frontier = reached[~seen[reached]][:frontier_cap].tolist()
            seen[frontier] = True
        ordered = sorted(first_hop, key=lambda r: (first_hop[r], -self.order_weight[r], r))
        return [(rel, first_hop[rel]) for rel in ordered[:limit]]

    def rows(
        self,
        found: Sequence[tuple[int, int]],
        scope: Sequence[str] | None,
        chunk_in_scope: Callable[[str], bool],
    ) -> list[dict[str, Any]]:
        """``seed_expansion``'s rows for the relations found: a scoped caller sees the
        description its namespaces gave and the chunks in its scope only."""
        wanted = None if scope is None else set(scope)
        rows = []
        for rel, hop in found:
            description = self.descriptions[rel]
            cited = self.chunk_ids[rel]
            if wanted is not None:
                if self.description_sources[rel] not in wanted:
                    description = None
                cited = tuple(c for c in cited if chunk_in_scope(c))
            rows.append(
                {"type": self.predicates[self.predicate_codes[rel]],
                 "source": self._entity(int(self.source[rel])),
                 "target": self._entity(int(self.target[rel])),
                 "description": description, "weight": self.weights[rel],
                 "valid_from": self.valid_from[rel], "valid_to": self.valid_to[rel],
                 "chunk_ids": list(cited[:CITED]), "hop": hop}
            )  # fmt: skip
        return rows

    def _entity(self, at: int) -> dict[str, object]:
        return {"id": self.entity_ids[at], "name": self.entity_names[at],
                "type": self.entity_types[at]}  # fmt: skip


def _number(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
        return float(value)
    return 0.0


# Long on purpose: the page rows into one numbering of entities and relations.
def build(rows: Sequence[dict[str, Any]]) -> RelationGraph:
    """The graph of ``relation_page`` rows (every entity once, each with its outgoing
    relations)."""
    entity_ids = [str(r["id"]) for r in rows]
    entity_at = {eid: i for i, eid in enumerate(entity_ids)}
    rels = [
        (i, entity_at[str(rel["to"])], rel)
        for i, row in enumerate(rows)
        for rel in row.get("out") or []
        if str(rel.get("to")) in entity_at
    ]
    predicate_at: dict[str, int] = {}
    codes = [predicate_at.setdefault(str(rel.get("predicate") or ""), len(predicate_at))
             for _, _, rel in rels]  # fmt: skip
    source = np.array([s for s, _, _ in rels], dtype=np.int64)
    target = np.array([t for _, t, _ in rels], dtype=np.int64)
    weight = np.array([_number(rel.get("weight")) for _, _, rel in rels], dtype=np.float64)
    # incidence both ways (a self-loop once), each entity's heaviest first, then by index
    index = np.arange(len(rels), dtype=np.int64)
    loop = source == target
    ends = np.concatenate([source, target[~loop]])
    incident = np.concatenate([index, index[~loop]])
    order = np.lexsort((incident, -weight[incident], ends))
    valid_from = tuple(rel.get("valid_from") for _, _, rel in rels)
    valid_to = tuple(rel.get("valid_to") for _, _, rel in rels)
    return RelationGraph(
        entity_ids=tuple(entity_ids),
        entity_at=entity_at,
        entity_names=tuple(r.get("name") for r in rows),
        entity_types=tuple(r.get("type") for r in rows),
        degree=np.array([int(r.get("degree") or 0) for r in rows], dtype=np.int64),
        entity_namespaces=RowNamespaces.of(listed(r.get("namespaces")) for r in rows),
        source=source,
        target=target,
        predicate_codes=np.array(codes, dtype=np.int64),
        predicates=tuple(predicate_at),
        order_weight=weight,
        weights=tuple(rel.get("weight") for _, _, rel in rels),
        valid_from=valid_from,
        valid_to=valid_to,
        starts=_Times.of([rel.get("from_kind") for _, _, rel in rels], valid_from),
        ends=_Times.of([rel.get("to_kind") for _, _, rel in rels], valid_to),
        namespaces=RowNamespaces.of(listed(rel.get("namespaces")) for _, _, rel in rels),
        descriptions=tuple(rel.get("description") for _, _, rel in rels),
        description_sources=tuple(rel.get("description_source") for _, _, rel in rels),
        chunk_ids=tuple(tuple(str(c) for c in rel.get("chunk_ids") or ()) for _, _, rel in rels),
        ptr=np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=len(entity_ids)))]).astype(
            np.int64
        ),
        incident=incident[order],
    )


class Relations(Kept[RelationGraph]):
    """The relation graph for the graph's current counts, read again when they change; None
    when it is too large to keep (the caller runs ``seed_expansion``). Kept's caching, with
    its own reader: the bound is on relations, not on page rows."""

    def __init__(self, guard: Guard) -> None:
        super().__init__(
            guard,
            "relation_page",
            lambda after, limit: RelationPageParams.model_construct(
                after=after, limit=limit, per_entity=PER_ENTITY
            ),
            build,
            page_size=PAGE,
            most=MAX_RELATIONS,
        )

    async def _read(self) -> RelationGraph | None:
        rows: list[dict[str, Any]] = []
        relations = 0
        after = ""
        while True:
            result = await self._guard.run(self._template, self._page(after, self._page_size))
            for row in result.rows:
                out = row.get("out") or []
                if len(out) > PER_ENTITY:
                    return None
                relations += len(out)
            if relations > self._most:
                return None
            rows += result.rows
            # Rows come in id order, so a page the row cap cut short goes on after its last.
            if not result.rows or (len(result.rows) < self._page_size and not result.truncated):
                return await asyncio.to_thread(build, rows)
            after = str(result.rows[-1]["id"])
