"""Hierarchical Leiden over weighted entity pairs (graspologic-native, the Rust implementation).

Chosen over igraph after measuring both on a generated 100k-entity / 500k-relation graph
(docs/benchmarks.md, "Communities"): both cluster it in about 4 s here, but graspologic-native
gives the hierarchy itself (clusters larger than ``max_cluster_size`` are split again, level by
level, with a parent link), which with igraph would be our own recursion.

Determinism: the same edge list in the same order with the same seed gives the same clustering;
the reader returns pairs sorted by id. A community's id is a hash of its level, its parent's id
and its sorted members, so an unchanged community keeps its id (and its cached report) across
rebuilds.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Community", "Pair", "cluster", "member_hash"]


@dataclass(frozen=True)
class Pair:
    """Two entities (``a < b``) and the summed weight of the facts between them."""

    a: str
    b: str
    weight: float


@dataclass(frozen=True)
class Community:
    id: str
    level: int
    parent: str | None
    members: tuple[str, ...]  # entity ids, sorted

    @property
    def size(self) -> int:
        return len(self.members)


def member_hash(members: Sequence[str]) -> str:
    """The identity of a member set, whatever order it comes in."""
    return hashlib.sha256("\x1f".join(sorted(members)).encode("utf-8")).hexdigest()


def _community_id(level: int, parent: str | None, members: Sequence[str]) -> str:
    raw = f"{level}\x1e{parent or ''}\x1e{member_hash(members)}"
    return "c" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:20]


def cluster(
    pairs: Sequence[Pair],
    *,
    max_cluster_size: int = 10,
    resolution: float = 1.0,
    seed: int = 42,
    min_size: int = 2,
) -> list[Community]:
    """Communities of every level, parents before children, each level sorted by id.

    Communities smaller than ``min_size`` are dropped (their entities stay unassigned at that
    level); a dropped community's children are dropped with it.
    """
    edges = [(p.a, p.b, p.weight) for p in pairs if p.a != p.b and p.weight > 0]
    if not edges:
        return []
    import graspologic_native as gn  # here, not at import: only `kg communities build` needs it

    rows = gn.hierarchical_leiden(
        edges, resolution=resolution, max_cluster_size=max_cluster_size, seed=seed
    )
    members: dict[int, list[str]] = defaultdict(list)
    level_of: dict[int, int] = {}
    parent_of: dict[int, int | None] = {}
    for row in rows:
        members[row.cluster].append(row.node)
        level_of[row.cluster] = row.level
        parent_of[row.cluster] = row.parent_cluster
    ids: dict[int, str] = {}
    out: list[Community] = []
    for raw in sorted(members, key=lambda c: (level_of[c], min(members[c]))):
        parent_raw = parent_of[raw]
        if parent_raw is not None and parent_raw not in ids:
            continue  # its parent was dropped
        group = sorted(members[raw])
        if len(group) < min_size:
            continue
        parent = ids[parent_raw] if parent_raw is not None else None
        ids[raw] = _community_id(level_of[raw], parent, group)
        out.append(Community(ids[raw], level_of[raw], parent, tuple(group)))
    return out
