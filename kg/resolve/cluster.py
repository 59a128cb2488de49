"""Clusters of surface forms: anchors, the canonical-name rule and deterministic ids.

Why anchors: a new form joins a cluster only by its score against the cluster's anchor (the
founding form, or the graph's name for an existing entity), never against any member. So a
chain A~B~C of individually plausible links cannot glue A to C, and one weak link never merges
two clusters: the resolver never merges existing clusters at all. The one exception is the
anchor's acronym partner (``IAM`` for ``Identity and Access Management``, joined by the acronym
rule): it is scored too, but never by the acronym rule again, so one acronym cannot collect a
second expansion through it.

Canonical name rule (documented in docs/resolution.md):
1. an entity already in the graph keeps its name;
2. otherwise a name a reader would choose: a nominative form («сервис платежей», not
   «сервиса платежей»), in one script (not «сервис auth-svc»), in the preferred script when
   ``resolve.canonical_language`` names one;
3. among those, the most used: the spelling whose normalized form most mentions share (the
   inflected «сервиса платежей» counts for «сервис платежей»), then the surface form seen most;
4. ties: the longest (most descriptive) form, then the one seen first.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from kg.models import KnownEntity
from kg.resolve.normalize import Form


def entity_id(key: str, type_key: str, salt: int = 0) -> str:
    """``ent_`` + sha1(normalized key | type)[:16]; ``salt`` separates the rare collision."""
    text = f"{key}|{type_key}" if salt == 0 else f"{key}|{type_key}|{salt}"
    return "ent_" + hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]


def type_key(entity_type: str) -> str:
    """Types compare casefolded and trimmed: ``Service`` and ``service`` are one type."""
    return entity_type.strip().casefold()


def reader_rank(form: Form, prefer: str = "any") -> int:
    """0 for a name a reader would choose; higher for an inflected, mixed or other-script one."""
    rank = 0 if form.nominative else 4
    rank += 2 if form.mixed else 0
    if (prefer == "ru" and not form.cyrillic) or (prefer == "en" and form.cyrillic):
        rank += 1
    return rank


@dataclass
class Cluster:
    """One entity being assembled; mutable only inside a single ``resolve`` call."""

    anchor: Form
    anchor_row: int
    type: str
    known: KnownEntity | None = None
    partner: Form | None = None  # the anchor's acronym counterpart (IAM <-> Identity and ...)
    counts: Counter[str] = field(default_factory=Counter)
    first_seen: dict[str, int] = field(default_factory=dict)
    # per surface form: (rank by rule 2, lower is better; its normalized key)
    kinds: dict[str, tuple[int, str]] = field(default_factory=dict)
    key_counts: Counter[str] = field(default_factory=Counter)
    aliases: dict[str, None] = field(default_factory=dict)  # ordered set of extra names
    descriptions: list[str] = field(default_factory=list)
    touched: bool = False

    def add_surface(
        self, text: str, count: int, order: int, form: Form | None = None, prefer: str = "any"
    ) -> None:
        self.counts[text] += count
        self.first_seen.setdefault(text, order)
        if form is not None:
            self.kinds[text] = (reader_rank(form, prefer), form.compact)
            self.key_counts[form.compact] += count
        self.touched = True

    def canonical(self) -> str:
        """Apply the canonical-name rule (module docstring)."""
        if self.known is not None:
            return self.known.name

        def order(s: str) -> tuple[int, int, int, int, int, str]:
            rank, key = self.kinds.get(s, (0, s))
            return (rank, -self.key_counts[key], -self.counts[s], -len(s), self.first_seen[s], s)

        return min(self.counts, key=order)

    def description(self) -> str:
        """The graph's description if it has one, else the longest mention description."""
        if self.known is not None and self.known.description:
            return self.known.description
        best = ""
        for text in self.descriptions:
            if len(text) > len(best):
                best = text
        return best

    def all_aliases(self, canonical: str) -> list[str]:
        """Every surface form and listed alias except the canonical name itself."""
        names: dict[str, None] = {}
        if self.known is not None:
            names.update(dict.fromkeys(self.known.aliases))
            names[self.known.name] = None
        names.update(dict.fromkeys(sorted(self.counts, key=lambda s: self.first_seen[s])))
        names.update(self.aliases)
        names.pop(canonical, None)
        return [n for n in names if n.strip()]
