"""The resolver: mentions in, one canonical entity id per mention out.

How (see docs/resolution.md for the why and the measurements):

1. Group mentions by (normalized key, type): spelling variants collapse for free.
2. Embed one surface form per group and per known entity; find each row's k nearest rows
   with FAISS (exact below ``approximate_above`` rows, HNSW above).
3. Visit groups in first-mention order. A group joins a cluster on an exact key (its name or
   one of its listed aliases equal to a name/alias already in the cluster), else on the best
   score against the anchor of a candidate cluster (candidates: FAISS neighbours seen earlier,
   plus dictionary hits on the core key, the spelling key and acronyms), else founds a cluster.
   Scores in the uncertain band go to the LLM adjudicator when one is configured.
4. Pick canonical names and deterministic ids; record every join for audit.

Types never mix: every lookup is keyed by the casefolded type.
"""

from __future__ import annotations

import gc
import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kg.errors import ResolutionError
from kg.models import KnownEntity, Mention, MergeRecord, ResolvedEntity
from kg.resolve.abbreviations import load_table
from kg.resolve.adjudicate import Adjudicator, Side
from kg.resolve.cluster import Cluster, entity_id, type_key
from kg.resolve.embed import Embedder
from kg.resolve.index import knn_by_label
from kg.resolve.normalize import Form, Normalizer, letterwise
from kg.resolve.persons import surname_keys
from kg.resolve.score import Score, score_pair
from kg.settings import ResolveSettings

log = logging.getLogger(__name__)

CANDIDATE_FLOOR = 0.3  # neighbours less similar than this are not worth scoring


@dataclass(frozen=True)
class ResolutionStats:
    """What one ``resolve`` call did, for logs and benchmarks."""

    mentions: int
    groups: int
    known: int
    entities: int
    new_entities: int
    index: str
    adjudicated: int
    seconds: dict[str, float] = field(default_factory=dict)  # per phase


@dataclass
class Resolution:
    """The answer: ids per mention (input order), entities touched, and the audit trail."""

    entity_ids: list[str]
    entities: dict[str, ResolvedEntity]
    merges: list[MergeRecord]
    new_ids: set[str]
    stats: ResolutionStats


@dataclass
class _Group:
    """All mentions sharing one (normalized key, type)."""

    form: Form
    type: str
    tkey: str
    order: int
    counts: Counter[str] = field(default_factory=Counter)
    first_seen: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, None] = field(default_factory=dict)
    description: str = ""
    cluster: int = -1
    score: float = 1.0
    method: str = "new"


@dataclass
class _Indexes:
    """Dictionary lookups, all keyed by (key, type); values are cluster numbers."""

    exact: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    core: dict[tuple[str, str], int] = field(default_factory=dict)
    spelling: dict[tuple[str, str], int] = field(default_factory=dict)
    stem: dict[tuple[str, str], int] = field(default_factory=dict)
    skeleton: dict[tuple[str, str], int] = field(default_factory=dict)  # key: script + skeleton
    derived: dict[tuple[str, str], int] = field(default_factory=dict)
    concept: dict[tuple[str, str], int] = field(default_factory=dict)
    surname: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # person types only
    long_acronym: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    short_form: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    letterwise: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # РЖД ~ RZD

    def register_exact(self, form: Form, tkey: str, cluster: int, via: str) -> None:
        self.exact.setdefault((form.compact, tkey), (cluster, via))

    def register_anchor(self, form: Form, tkey: str, cluster: int, person: bool = False) -> None:
        for table, key in (
            (self.core, form.core_compact),
            (self.spelling, form.phonetic),
            (self.stem, form.stem_key),
            (self.skeleton, _script(form.cyrillic) + form.skeleton),
            (self.derived, form.derived),
            (self.concept, "|".join(form.concept)),
        ):
            if not key:
                continue
            current = table.get((key, tkey))
            if current is None:
                table[(key, tkey)] = cluster
            elif current != cluster:
                table[(key, tkey)] = -1  # two clusters share it: no longer evidence
        for acronym in form.acronyms:
            self.long_acronym.setdefault((acronym, tkey), set()).add(cluster)
        if form.short is not None:
            self.short_form.setdefault((form.short, tkey), set()).add(cluster)
            self.letterwise.setdefault((letterwise(form.short), tkey), set()).add(cluster)
        if person:
            for surname in surname_keys(form.text):
                self.surname.setdefault((surname, tkey), set()).add(cluster)


def _script(cyrillic: bool) -> str:
    """Skeletons are looked up in the other script only (see ``score.skeletons_match``)."""
    return "c:" if cyrillic else "l:"


class Resolver:
    """Resolves mentions against each other and against entities already in the graph.

    ``resolve`` is a pure function of the known entities and the mentions: call ``add_known``
    with what the graph holds (a second ingest then joins the first). The constructor does no
    I/O; the abbreviations file is read on first use.
    """

    def __init__(
        self,
        settings: ResolveSettings,
        embedder: Embedder,
        adjudicator: Adjudicator | None = None,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.adjudicator = adjudicator
        self._known: list[KnownEntity] = []
        self._normalizer: Normalizer | None = None

    @property
    def normalizer(self) -> Normalizer:
        if self._normalizer is None:
            self._normalizer = Normalizer(load_table(self.settings.abbreviations_file))
        return self._normalizer

    def add_known(self, entities: Iterable[KnownEntity]) -> None:
        """Entities already in the graph (Neo4j is the source of truth); they keep their ids."""
        self._known.extend(entities)

    def resolve(self, mentions: Sequence[Mention]) -> Resolution:
        """One canonical entity id per mention, in input order."""
        run = _Run(self, mentions)
        # A million mentions allocate millions of small objects; the cyclic GC would rescan
        # them over and over (none of them form cycles that need it during the run).
        enabled = gc.isenabled()
        gc.disable()
        try:
            return run.execute()
        finally:
            if enabled:
                gc.enable()


class _Run:
    """State of one ``resolve`` call."""

    def __init__(self, resolver: Resolver, mentions: Sequence[Mention]) -> None:
        self.settings = resolver.settings
        self.embedder = resolver.embedder
        self.adjudicator = resolver.adjudicator if resolver.settings.llm_adjudication else None
        self.normalizer = resolver.normalizer
        self.known = resolver._known
        self.mentions = mentions
        self._forms: dict[str, Form] = {}
        self.clusters: list[Cluster] = []
        self.cluster_tkeys: list[str] = []  # casefolded type of each cluster
        self.indexes = _Indexes()
        self.person_types = frozenset(type_key(t) for t in resolver.settings.person_types)
        self.adjudicated = 0
        self.seconds: dict[str, float] = {}

    def form(self, name: str) -> Form:
        found = self._forms.get(name)
        if found is None:
            if not name.strip():
                raise ResolutionError("a mention or alias has an empty name")
            found = self.normalizer.form(name)
            self._forms[name] = found
        return found

    def execute(self) -> Resolution:
        clock = time.perf_counter()

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            self.seconds[phase] = round(now - clock, 3)
            clock = now

        groups, mention_group = self._group()
        lap("group")
        vectors = self._vectors(groups)
        lap("embed")
        self._seed_known()
        n_known = len(self.known)
        type_numbers: dict[str, int] = {}
        labels = [
            type_numbers.setdefault(tkey, len(type_numbers))
            for tkey in [type_key(e.type) for e in self.known] + [g.tkey for g in groups]
        ]
        neighbours, kind = knn_by_label(
            vectors, labels, self.settings.candidates + 1, self.settings.approximate_above
        )
        lap("index")
        row_cluster = np.full(len(vectors), -1, dtype=np.int64)
        row_cluster[:n_known] = np.arange(n_known)
        for number, group in enumerate(groups):
            row = n_known + number
            self._place(
                group, row, vectors, neighbours.ids[row], neighbours.scores[row], row_cluster
            )
            row_cluster[row] = group.cluster
        lap("cluster")
        resolution = self._finish(groups, mention_group, vectors, n_known, kind)
        lap("finish")
        return resolution

    # -- 1. grouping ------------------------------------------------------------------------
    def _group(self) -> tuple[list[_Group], list[int]]:
        groups: list[_Group] = []
        by_key: dict[tuple[str, str], int] = {}
        mention_group: list[int] = []
        keys: dict[str, str] = {}  # most names only need their key; founders get a full Form
        tkeys: dict[str, str] = {}
        for order, mention in enumerate(self.mentions):
            compact = keys.get(mention.name)
            if compact is None:
                if not mention.name.strip():
                    raise ResolutionError(f"mention {order} has an empty name")
                compact = keys[mention.name] = self.normalizer.key(mention.name)
            tkey = tkeys.get(mention.type)
            if tkey is None:
                tkey = tkeys[mention.type] = type_key(mention.type)
            number = by_key.get((compact, tkey))
            if number is None:
                number = len(groups)
                by_key[(compact, tkey)] = number
                groups.append(_Group(self.form(mention.name), mention.type, tkey, order))
            group = groups[number]
            group.counts[mention.name] += 1
            group.first_seen.setdefault(mention.name, order)
            for alias in mention.aliases:
                if alias.strip() and alias != mention.name:
                    group.aliases.setdefault(alias, None)
            if len(mention.description) > len(group.description):
                group.description = mention.description
            mention_group.append(number)
        return groups, mention_group

    # -- 2. vectors -------------------------------------------------------------------------
    def _vectors(self, groups: list[_Group]) -> npt.NDArray[np.float32]:
        dim = self.embedder.dim
        vectors = np.zeros((len(self.known) + len(groups), dim), dtype=np.float32)
        missing: list[int] = []
        for row, entity in enumerate(self.known):
            if entity.embedding is not None and len(entity.embedding) == dim:
                vec = np.asarray(entity.embedding, dtype=np.float32)
                norm = float(np.linalg.norm(vec))
                vectors[row] = vec / norm if norm > 0 else vec
            else:
                missing.append(row)
        if missing:
            vectors[missing] = self.embedder.embed([self.known[r].name for r in missing])
        if groups:
            texts = [g.form.text for g in groups]
            vectors[len(self.known) :] = self.embedder.embed(texts)
        return vectors

    def _seed_known(self) -> None:
        for row, entity in enumerate(self.known):
            form = self.form(entity.name)
            tkey = type_key(entity.type)
            cluster = Cluster(anchor=form, anchor_row=row, type=entity.type, known=entity)
            number = len(self.clusters)
            self.clusters.append(cluster)
            self.cluster_tkeys.append(tkey)
            self.indexes.register_exact(form, tkey, number, "known")
            self.indexes.register_anchor(form, tkey, number, tkey in self.person_types)
            for alias in entity.aliases:
                if alias.strip():
                    alias_form = self.form(alias)
                    self.indexes.register_exact(alias_form, tkey, number, "known")
                    if alias_form.short is not None:
                        self.indexes.short_form.setdefault((alias_form.short, tkey), set()).add(
                            number
                        )

    # -- 3. placing one group -----------------------------------------------------------------
    # Long on purpose: the no-chaining placement rules (anchor, score, adjudicate, join) are
    # one decision; docs/resolution.md walks through it in this order.
    def _place(
        self,
        group: _Group,
        row: int,
        vectors: npt.NDArray[np.float32],
        neighbour_ids: npt.NDArray[np.int64],
        neighbour_scores: npt.NDArray[np.float32],
        row_cluster: npt.NDArray[np.int64],
    ) -> None:
        tkey = group.tkey
        exact = self.indexes.exact
        hit = exact.get((group.form.compact, tkey))
        if hit is not None:
            method = (
                "known"
                if hit[1] == "known"
                else "alias"
                if hit[1] == "alias"
                else ("exact-normalized")
            )
            self._join(group, hit[0], Score(1.0, method))
            return
        for alias in group.aliases:
            hit = exact.get((self.form(alias).compact, tkey))
            if hit is not None:
                self._join(group, hit[0], Score(1.0, "alias"))
                return

        candidates: dict[int, None] = {}
        for table, key in (
            (self.indexes.core, group.form.core_compact),
            (self.indexes.spelling, group.form.phonetic),
            (self.indexes.stem, group.form.stem_key),
            (self.indexes.skeleton, _script(not group.form.cyrillic) + group.form.skeleton),
            (self.indexes.derived, group.form.derived),
            (self.indexes.concept, "|".join(group.form.concept)),
        ):
            found = table.get((key, tkey), -1) if key else -1
            if found >= 0:
                candidates[found] = None
        for acronym in group.form.acronyms:
            candidates.update(
                dict.fromkeys(sorted(self.indexes.short_form.get((acronym, tkey), ())))
            )
        if group.form.short is not None:
            found_set = self.indexes.long_acronym.get((group.form.short, tkey), set())
            candidates.update(dict.fromkeys(sorted(found_set)))
            found_set = self.indexes.letterwise.get((letterwise(group.form.short), tkey), set())
            candidates.update(dict.fromkeys(sorted(found_set)))
        person = tkey in self.person_types
        if person:
            for surname in surname_keys(group.form.text):
                found_set = self.indexes.surname.get((surname, tkey), set())
                candidates.update(dict.fromkeys(sorted(found_set)))
        for other, similarity in zip(
            neighbour_ids.tolist(), neighbour_scores.tolist(), strict=True
        ):
            if 0 <= other < row and similarity >= CANDIDATE_FLOOR:
                number = int(row_cluster[other])
                if number >= 0 and self.cluster_tkeys[number] == tkey:
                    candidates[number] = None

        best: tuple[float, int, Score] | None = None
        acronym_hits = person_hits = 0
        vec = vectors[row]
        for number in candidates:
            cluster = self.clusters[number]
            cosine = float(np.dot(vec, vectors[cluster.anchor_row]))
            threshold = self.settings.merge_threshold
            score = score_pair(group.form, cluster.anchor, cosine, threshold, person=person)
            partner = cluster.partner
            if partner is not None:
                if score.method == "acronym" and group.form.short is None:
                    # the anchor is an acronym that already stands for a long form: judge by it
                    score = score_pair(group.form, partner, cosine, threshold, person=person)
                else:
                    alt = score_pair(group.form, partner, cosine, threshold, person=person)
                    if alt.method != "acronym" and alt.value > score.value:
                        score = alt
            if score.method == "acronym":
                acronym_hits += 1
            if score.method == "person-name" and score.guarded:
                person_hits += 1
            if best is None or score.value > best[0]:
                best = (score.value, number, score)
        if best is not None and best[2].method == "acronym" and acronym_hits > 1:
            best = None  # one acronym, several expansions of this type: ambiguous
        if best is not None and best[2].method == "person-name" and person_hits > 1:
            best = None  # «Петров И.» and two people it could be: ambiguous
        if best is not None:
            value, number, score = best
            if value >= self.settings.merge_threshold:
                self._join(group, number, score)
                return
            if value >= self.settings.uncertain_threshold and self._adjudicate(
                group, number, value
            ):
                self._join(group, number, Score(value, "llm"))
                return
        self._found(group, row)

    def _adjudicate(self, group: _Group, number: int, value: float) -> bool:
        if self.adjudicator is None:
            return False
        cluster = self.clusters[number]
        self.adjudicated += 1
        known = cluster.known
        a = Side(group.form.text, group.type, group.description, tuple(group.aliases))
        b = Side(
            cluster.anchor.text,
            cluster.type,
            known.description if known is not None else "",
            tuple(known.aliases) if known is not None else (),
        )
        return self.adjudicator.same(a, b, value)

    def _join(self, group: _Group, number: int, score: Score) -> None:
        cluster = self.clusters[number]
        group.cluster, group.score, group.method = number, score.value, score.method
        self._absorb(group, number)
        if (
            score.method == "acronym"
            and cluster.partner is None
            and (cluster.anchor.short is None) != (group.form.short is None)
        ):
            cluster.partner = group.form
            self.indexes.register_anchor(
                group.form, group.tkey, number, group.tkey in self.person_types
            )

    def _found(self, group: _Group, row: int) -> None:
        number = len(self.clusters)
        self.clusters.append(Cluster(anchor=group.form, anchor_row=row, type=group.type))
        self.cluster_tkeys.append(group.tkey)
        group.cluster, group.score, group.method = number, 1.0, "new"
        self.indexes.register_anchor(
            group.form, group.tkey, number, group.tkey in self.person_types
        )
        self._absorb(group, number)

    def _absorb(self, group: _Group, number: int) -> None:
        cluster = self.clusters[number]
        prefer = self.settings.canonical_language
        for text, count in group.counts.items():
            cluster.add_surface(text, count, group.first_seen[text], self.form(text), prefer)
        self.indexes.register_exact(group.form, group.tkey, number, "name")
        for alias in group.aliases:
            cluster.aliases.setdefault(alias, None)
            self.indexes.register_exact(self.form(alias), group.tkey, number, "alias")
        if group.description:
            cluster.descriptions.append(group.description)

    # -- 4. output ----------------------------------------------------------------------------
    # Long on purpose: canonical names, aliases, audit rows and stats come out of one pass.
    def _finish(
        self,
        groups: list[_Group],
        mention_group: list[int],
        vectors: npt.NDArray[np.float32],
        n_known: int,
        kind: str,
    ) -> Resolution:
        used: set[str] = {entity.id for entity in self.known}
        ids: list[str] = []
        canonical: list[str] = []
        for cluster in self.clusters:
            name = cluster.canonical() if cluster.touched or cluster.known else ""
            canonical.append(name)
            if cluster.known is not None:
                ids.append(cluster.known.id)
                continue
            key, tkey, salt = self.form(name).compact, type_key(cluster.type), 0
            new_id = entity_id(key, tkey)
            while new_id in used:
                salt += 1
                new_id = entity_id(key, tkey, salt)
            used.add(new_id)
            ids.append(new_id)

        rows_by_text: dict[int, dict[str, int]] = {}
        for number, group in enumerate(groups):
            rows_by_text.setdefault(group.cluster, {})[group.form.text] = n_known + number
        touched = [n for n, c in enumerate(self.clusters) if c.touched]
        embeddings: dict[int, list[float]] = {}
        to_embed: list[int] = []
        for number in touched:
            cluster = self.clusters[number]
            if cluster.known is not None:
                embeddings[number] = vectors[cluster.anchor_row].tolist()
                continue
            row = rows_by_text.get(number, {}).get(canonical[number])
            if row is None:
                to_embed.append(number)
            else:
                embeddings[number] = vectors[row].tolist()
        if to_embed:
            fresh = self.embedder.embed([canonical[n] for n in to_embed])
            for number, vec in zip(to_embed, fresh, strict=True):
                embeddings[number] = vec.tolist()

        entities: dict[str, ResolvedEntity] = {}
        new_ids: set[str] = set()
        for number in touched:
            cluster = self.clusters[number]
            name = canonical[number]
            entities[ids[number]] = ResolvedEntity(
                id=ids[number],
                name=name,
                type=cluster.type,
                description=cluster.description(),
                aliases=cluster.all_aliases(name),
                embedding=embeddings[number],
            )
            if cluster.known is None:
                new_ids.add(ids[number])

        merges: list[MergeRecord] = []
        for group in groups:
            number = group.cluster
            for position, text in enumerate(group.counts):
                method, score = group.method, group.score
                if position > 0 and method == "new":
                    method = "exact-normalized"
                merges.append(
                    MergeRecord(text, group.type, ids[number], canonical[number], score, method)
                )
        group_ids = [ids[g.cluster] for g in groups]
        stats = ResolutionStats(
            mentions=len(self.mentions),
            groups=len(groups),
            known=n_known,
            entities=len(entities),
            new_entities=len(new_ids),
            index=kind,
            adjudicated=self.adjudicated,
            seconds=self.seconds,
        )
        return Resolution(
            entity_ids=[group_ids[g] for g in mention_group],
            entities=entities,
            merges=merges,
            new_ids=new_ids,
            stats=stats,
        )
