"""Batched, parameterized, idempotent writes of the graph model.

Every statement is a constant ``UNWIND $rows AS row MERGE ...``; data only ever arrives as
parameters. Relations are open-vocabulary: every fact keeps its predicate in the ``predicate``
property, and its Neo4j type is either the predicate itself (for the predicates that matter:
single-valued, configured, ontology, and the most frequent up to a cap) or the generic
``RELATED``. The choice is made once per predicate and recorded on a ``(:Predicate)`` node, so
the number of relationship types, and of distinct write-statement texts, stays bounded whatever
an extractor emits (docs/architecture.md, "Open vocabulary"). A type name reaches query text
only after :func:`kg.models.is_relation_type`, and is checked again where the text is rendered.

Crash safety rests on one rule: a document's ``sha256`` is cleared before anything of it
changes and written last, after everything that came from it. A document without it is redone
on the next run, after :meth:`GraphWriter.remove_document_contents` has removed what only it
supported. Every list the writer grows (aliases, chunk ids) is bounded, and every statement
runs with a transaction timeout, so a hostile input fails fast instead of exhausting memory.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, LiteralString, TypeVar, cast

from neo4j import Driver, ManagedTransaction, Session, unit_of_work

from kg.errors import StoreError
from kg.graph.facts import UPSERT_FACTS, fact_rows, pages
from kg.graph.type_labels import grant as grant_type_labels
from kg.languages import BY_CODE, LanguageCode
from kg.limits import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, cut_key, cut_name
from kg.models import GENERIC_RELATION_TYPE, STRUCTURAL_TYPES, KnownEntity, is_relation_type
from kg.resolve.vectors import Embedder

T = TypeVar("T")

# The hash is cleared here, before any of the document's contents change, and set again only by
# _COMPLETE_DOCUMENTS: a run that fails in between leaves a document the next run redoes.
_UPSERT_DOCUMENTS: LiteralString = """
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
SET d.path = row.path, d.title = row.title, d.root = row.root, d.source = row.source,
    d.date = date(row.date), d.sha256 = null
"""

# An unchanged document loaded from another folder (a moved folder) is that folder's now: the
# next run judges whether its file is gone there (kg.ingest._gone).
_SET_DOCUMENT_ROOTS: LiteralString = """
UNWIND $ids AS id
MATCH (d:Document {id: id})
SET d.root = $root
"""

_COMPLETE_DOCUMENTS: LiteralString = """
UNWIND $rows AS row
MATCH (d:Document {id: row.id})
SET d.sha256 = row.sha256, d.ingested_at = $now, d.extraction = row.extraction,
    d.extraction_model = row.extraction_model, d.extraction_prompt = row.extraction_prompt
"""

_UPSERT_CHUNKS: LiteralString = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
MERGE (c:Chunk {id: row.id})
SET c.index = row.index, c.text = row.text, c.sha256 = row.sha256,
    c.document_id = row.document_id, c.embedding = row.embedding, c.title = row.title,
    c.language = row.language, c.namespace = d.source
REMOVE c:ChunkEn:ChunkRu
SET c:$(row.label)
MERGE (c)-[:PART_OF]->(d)
"""

_LINK_CHUNKS: LiteralString = """
UNWIND $rows AS row
MATCH (a:Chunk {id: row.previous})
MATCH (b:Chunk {id: row.next})
MERGE (a)-[:NEXT]->(b)
"""

# Each alias, and the description, remembers the namespace whose text gave it
# (alias_sources runs parallel to aliases; description_source): a caller scoped to other
# namespaces never sees them, and forgetting that namespace removes them (graph model 7).
_UPSERT_ENTITIES: LiteralString = """
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.name = row.name, e.type = row.type, e.first_seen = $now,
    e.description = row.description, e.embedding = row.embedding,
    e.description_source = CASE WHEN coalesce(row.description, '') = '' THEN null
                                ELSE row.namespace END
ON MATCH SET
    e.description_source = CASE
        WHEN coalesce(e.description, '') = '' AND coalesce(row.description, '') <> ''
        THEN row.namespace ELSE e.description_source END,
    e.description = CASE WHEN coalesce(e.description, '') = '' THEN row.description
                         ELSE e.description END,
    e.embedding = coalesce(row.embedding, e.embedding)
WITH e, row, reduce(
    acc = {aliases: coalesce(e.aliases, []),
           sources: coalesce(e.alias_sources, [x IN coalesce(e.aliases, []) | ''])},
    a IN row.aliases |
    CASE WHEN a IN acc.aliases OR size(acc.aliases) >= $max_aliases THEN acc
         ELSE {aliases: acc.aliases + a, sources: acc.sources + row.namespace} END) AS merged
SET e.aliases = merged.aliases, e.alias_sources = merged.sources
WITH e, row WHERE row.label IS NOT NULL AND e.type = row.type
SET e:$(row.label)
"""

# One row per entity with the chunks that mention it. An entity's namespaces are those of the
# chunks that mention it (graph model 7), read by the writer before (_CHUNK_NAMESPACES) and
# added once per row: two rows of one entity in a statement would each read the list as it was
# before either wrote. (A per-row subquery collecting them cost a nested plan per entity.)
_UPSERT_MENTIONS: LiteralString = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.entity_id})
SET e.namespaces = reduce(acc = coalesce(e.namespaces, []), n IN row.namespaces |
    CASE WHEN n IN acc THEN acc ELSE acc + n END)
WITH e, row
UNWIND row.chunk_ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
MERGE (c)-[:MENTIONS]->(e)
"""

_MATCH_ENDS: LiteralString = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source})
MATCH (b:Entity {id: row.target})
"""

# A new edge gets every property of its row, set one by one (a map set, `r += row.props`, makes
# the planner order the statement with Eager), and the namespaces of its chunks, which the writer
# read before (_CHUNK_NAMESPACES: a per-row subquery here cost another Eager and planning time).
# An edge that existed is only marked (its created flag is false): _RESTATE_RELATIONS updates it
# and its fact, in one text for every type. So this text, rendered once per stored type, stays
# small: planning it is what a cold server pays per type (docs/architecture.md, "Writes").
_CREATE_RELATION: LiteralString = """
ON CREATE SET r.predicate = row.props.predicate, r.description = row.props.description,
    r.weight = row.props.weight, r.validFrom = row.props.validFrom,
    r.validTo = row.props.validTo, r.chunk_ids = row.props.chunk_ids,
    r.description_source = row.props.description_source,
    r.namespaces = reduce(acc = [], ns IN row.namespaces |
        CASE WHEN ns IN acc THEN acc ELSE acc + ns END),
    r.first_seen = $now, r.last_seen = $now
RETURN elementId(r) AS rel, r.first_seen = $now AS created, r.key AS key, a.id AS subject_id,
       a.name AS subject, r.predicate AS predicate, b.id AS object_id, b.name AS object
"""

# Restating a fact: provenance grows (bounded), the weight is the highest, the first non-empty
# description stays, validTo is the latest given, namespaces are a union. The relation's fact
# (kg/graph/facts.py) follows it in the same transaction: provenance and validity are copied; a
# relation without a fact yet is returned, for the writer to embed its text and write the fact.
# SET on a missing (null) fact does nothing.
_RESTATE_RELATIONS: LiteralString = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source})
MATCH (b:Entity {id: row.target})
MATCH (a)-[r]->(b) WHERE elementId(r) = row.rel
SET r.description_source = CASE WHEN coalesce(r.description, '') = ''
                                THEN row.props.description_source
                                ELSE r.description_source END,
    r.description = CASE WHEN coalesce(r.description, '') = '' THEN row.props.description
                         ELSE r.description END,
    r.weight = CASE WHEN row.props.weight > r.weight THEN row.props.weight ELSE r.weight END,
    r.chunk_ids = (r.chunk_ids
                   + [c IN row.props.chunk_ids WHERE NOT c IN r.chunk_ids])[..$max_chunk_ids],
    r.validTo = coalesce(row.props.validTo, r.validTo),
    r.last_seen = $now
SET r.namespaces = reduce(acc = coalesce(r.namespaces, []), ns IN row.namespaces |
        CASE WHEN ns IN acc THEN acc ELSE acc + ns END)
WITH a, r, b
OPTIONAL MATCH (f:Fact {id: r.key})
SET f.chunk_ids = r.chunk_ids, f.validTo = r.validTo, f.namespaces = r.namespaces
WITH a, r, b WHERE f IS NULL
RETURN r.key AS key, a.id AS subject_id, a.name AS subject, r.predicate AS predicate,
       b.id AS object_id, b.name AS object
"""

# The namespace of each chunk a write names (its document's source), for the rows above and
# the mentions: only chunks that exist count.
_CHUNK_NAMESPACES: LiteralString = """
UNWIND $ids AS id
MATCH (c:Chunk {id: id})
RETURN c.id AS id, c.namespace AS namespace
"""

# Measured on Neo4j 5.26 (docs/architecture.md): MERGE with a dynamic type `[r:$(row.type)]`
# ran ~15x slower than a static type, so rows are grouped by stored type and each group runs
# this text with __TYPE__ replaced by a name that passed the allowlist. Stored types are
# bounded (see _predicate_storage), so the texts, and the server's plan cache, stay bounded.
_UPSERT_RELATIONS_TEMPLATE = (
    _MATCH_ENDS + "MERGE (a)-[r:`__TYPE__` {key: row.props.key}]->(b)" + _CREATE_RELATION
)

# Small groups of a typed predicate share this one text (the type is a parameter here, after
# the same allowlist): planning a new text costs ~200 ms on the server, more than a dynamic-type
# MERGE of a few dozen rows (docs/architecture.md, "Open vocabulary").
_UPSERT_RELATIONS_DYNAMIC: LiteralString = (
    _MATCH_ENDS + "MERGE (a)-[r:$(row.type) {key: row.props.key}]->(b)" + _CREATE_RELATION
)

# The predicate catalogue: one node per predicate ever written, with the type that stores it.
_PREDICATES: LiteralString = """
UNWIND $names AS name
MATCH (p:Predicate {name: name})
RETURN p.name AS name, p.stored_as AS stored_as
"""

_PROMOTED_COUNT: LiteralString = """
MATCH (p:Predicate) WHERE p.promoted = true
RETURN count(p) AS promoted
"""

_UPSERT_PREDICATES: LiteralString = """
UNWIND $rows AS row
MERGE (p:Predicate {name: row.name})
ON CREATE SET p.stored_as = row.stored_as, p.promoted = row.promoted, p.first_seen = $now
RETURN p.name AS name, p.stored_as AS stored_as
"""

# Open edges (validTo IS NULL) of single-valued predicates, for deciding which newer fact
# closes which older one (see close_superseded).
_OPEN_EDGES: LiteralString = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source})-[r]->(b:Entity)
WHERE r.predicate = row.predicate AND r.validTo IS NULL
RETURN row.source AS source, row.predicate AS predicate, elementId(r) AS rel, b.id AS target,
       r.validFrom AS valid_from, r.first_seen AS first_seen, r.key AS key,
       coalesce(r.namespaces, []) AS namespaces
"""

_CLOSE_EDGES: LiteralString = """
UNWIND $rows AS row
MATCH ()-[r]->() WHERE elementId(r) = row.rel
SET r.validTo = row.valid_to, r.closed_by = row.closed_by
WITH r
OPTIONAL MATCH (f:Fact {id: r.key})
SET f.validTo = r.validTo
"""

_EXISTING_DOCUMENTS: LiteralString = """
MATCH (d:Document)
RETURN d.id AS id, d.path AS path, d.sha256 AS sha256, d.root AS root, d.source AS source,
       d.extraction AS extraction, coalesce(d.extraction_model, '') AS extraction_model,
       coalesce(d.extraction_prompt, '') AS extraction_prompt
"""

_KNOWN_ENTITIES: LiteralString = """
MATCH (e:Entity)
RETURN e.id AS id, e.name AS name, e.type AS type, coalesce(e.aliases, []) AS aliases,
       coalesce(e.description, '') AS description, e.embedding AS embedding
"""

# Removing a document's contents: its chunks go; relations keep only chunk ids of other
# documents and disappear when none remain, their facts with them; entities nothing mentions
# or relates go too. (DETACH DELETE of a missing fact, null, does nothing.)
_DETACH_CHUNK_IDS: LiteralString = """
UNWIND $ids AS doc_id
MATCH (c:Chunk {document_id: doc_id})-[:MENTIONS]->(e:Entity)-[r]-(:Entity)
WITH DISTINCT r, collect(DISTINCT c.id) AS gone
SET r.chunk_ids = [x IN r.chunk_ids WHERE NOT x IN gone]
SET r.namespaces = COLLECT {
    MATCH (k:Chunk) WHERE k.id IN r.chunk_ids AND NOT k.id IN gone RETURN DISTINCT k.namespace
}
SET r.description = CASE WHEN coalesce(r.description_source, '') IN r.namespaces
                         THEN r.description ELSE '' END,
    r.description_source = CASE WHEN coalesce(r.description_source, '') IN r.namespaces
                                THEN r.description_source END
WITH r
OPTIONAL MATCH (f:Fact {id: r.key})
SET f.chunk_ids = r.chunk_ids, f.namespaces = r.namespaces
WITH r, f WHERE size(r.chunk_ids) = 0
DETACH DELETE f
DELETE r
"""

_DELETE_CHUNKS: LiteralString = """
UNWIND $ids AS doc_id
MATCH (c:Chunk {document_id: doc_id})
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
WITH collect(DISTINCT c) AS chunks, collect(DISTINCT e.id) AS touched
FOREACH (c IN chunks | DETACH DELETE c)
RETURN touched
"""

# Community membership does not keep an entity alive: it is derived, and rebuilt from the rest.
_DELETE_ORPHANS: LiteralString = """
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id})
WHERE NOT EXISTS { (e)-[r]-() WHERE type(r) <> 'IN_COMMUNITY' }
DETACH DELETE e
RETURN count(*) AS deleted
"""

# What stays of an entity a removal touched is scoped by the chunks still mentioning it.
# Aliases and a description that came from a namespace the entity is no longer in go with it.
_RESCOPE_ENTITIES: LiteralString = """
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id})
SET e.namespaces = COLLECT { MATCH (c:Chunk)-[:MENTIONS]->(e) RETURN DISTINCT c.namespace }
WITH e, [i IN range(0, size(coalesce(e.aliases, [])) - 1)
         WHERE coalesce(e.alias_sources[i], '') IN e.namespaces] AS kept
SET e.aliases = [i IN kept | e.aliases[i]], e.alias_sources = [i IN kept | e.alias_sources[i]],
    e.description = CASE WHEN coalesce(e.description_source, '') IN e.namespaces
                         THEN e.description ELSE '' END,
    e.description_source = CASE WHEN coalesce(e.description_source, '') IN e.namespaces
                                THEN e.description_source END
"""

_DELETE_DOCUMENTS: LiteralString = """
UNWIND $ids AS doc_id
MATCH (d:Document {id: doc_id})
DETACH DELETE d
"""


@dataclass(frozen=True)
class Extraction:
    """How a document's facts were made: ``llm`` (with its model and prompt version),
    ``metadata`` (the document graph alone) or ``triplets`` (imported). An empty model or
    prompt means "not recorded" (a graph migrated from before records were kept)."""

    method: str
    model: str = ""
    prompt: str = ""


@dataclass(frozen=True)
class DocumentRow:
    id: str
    path: str
    title: str
    sha256: str
    root: str = ""
    source: str = ""
    extraction: Extraction = Extraction("metadata")
    date: str | None = None  # the document's own date, ISO YYYY-MM-DD (kg.docdates)


@dataclass(frozen=True)
class StoredDocument:
    path: str | None
    sha256: str | None  # None: its last ingest did not finish
    root: str | None
    source: str | None = None
    extraction: Extraction | None = None  # None: written by a kg that kept no record


@dataclass(frozen=True)
class ChunkRow:
    id: str
    document_id: str
    index: int
    text: str
    sha256: str
    embedding: list[float] | None = None
    title: str = ""  # the document's title, searched with the text (its language's index)
    language: LanguageCode = "en"  # kg.languages: which fulltext index holds the chunk


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    type: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    embedding: list[float] | None = None
    namespace: str = ""  # whose text gave the aliases and description (graph model 7)


@dataclass(frozen=True)
class RelationRow:
    """One fact; ``predicate`` is the normalized predicate, whatever type ends up storing it."""

    source: str
    target: str
    predicate: str
    description: str = ""
    weight: float = 0.5
    valid_from: date | datetime | None = None
    valid_to: date | datetime | None = None
    chunk_ids: tuple[str, ...] = ()
    namespace: str = ""  # whose text gave the description (graph model 7)

    @property
    def key(self) -> str:
        """One edge per source, predicate, target and start of validity."""
        since = self.valid_from.isoformat() if self.valid_from else ""
        return f"{self.source}|{self.predicate}|{self.target}|{since}"


@dataclass
class WriteCounts:
    nodes_created: int = 0
    relationships_created: int = 0
    relations_written: int = 0
    relations_closed: int = 0
    facts_written: int = 0
    properties_set: int = 0
    batches: int = 0
    entities_deleted: int = 0

    def add(self, other: WriteCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True)
class Bounds:
    """Limits on what one write may grow; see WriteSettings for the documented defaults."""

    max_aliases: int = 64
    max_alias_chars: int = MAX_NAME_CHARS
    max_chunk_ids: int = 200
    timeout_s: float = 120.0
    max_type_labels: int = 24


@dataclass(frozen=True)
class TypePolicy:
    """Which predicates get a relationship type of their own (the rest are RELATED)."""

    always: frozenset[str] = frozenset()  # single-valued, configured and ontology predicates
    max_promoted: int = 32  # promoted by frequency, at most this many in the graph
    min_count: int = 3  # a new predicate needs this many facts in one write to be promoted


@dataclass
class GraphWriter:
    """Writes rows in batches of ``batch_size``, one transaction per batch."""

    driver: Driver
    database: str
    batch_size: int = 1000
    single_valued: frozenset[str] = field(default_factory=frozenset)
    types: TypePolicy = field(default_factory=TypePolicy)
    bounds: Bounds = field(default_factory=Bounds)
    # A typed group this large gets its own statement text; smaller ones share the dynamic one.
    static_min_rows: int = 100
    # Embeds each new relation's fact text (kg/graph/facts.py): the chunk embedder, so the
    # fact index shares the chunk index's dimension and embedder. None writes no facts (a
    # model 4 graph, for tests of kg migrate); kg's own writers always have one.
    fact_embedder: Embedder | None = None
    # Predicates whose relations get no fact (kg.docgraph.FACTLESS: the document graph's
    # structure states no fact in words; docs/architecture.md, "The folder's structure").
    factless_predicates: frozenset[str] = frozenset()

    # -- reads the pipeline needs ------------------------------------------------------------

    def existing_documents(self) -> dict[str, StoredDocument]:
        records, _, _ = self.driver.execute_query(_EXISTING_DOCUMENTS, database_=self.database)
        return {
            r["id"]: StoredDocument(
                r["path"],
                r["sha256"],
                r["root"],
                r["source"],
                Extraction(r["extraction"], r["extraction_model"], r["extraction_prompt"])
                if r["extraction"] is not None
                else None,
            )
            for r in records
        }

    def has_communities(self) -> bool:
        """Whether communities were built (their reports summarize what they were built on)."""
        records, _, _ = self.driver.execute_query(
            "MATCH (c:Community) RETURN c LIMIT 1", database_=self.database
        )
        return bool(records)

    def known_entities(self) -> list[KnownEntity]:
        records, _, _ = self.driver.execute_query(_KNOWN_ENTITIES, database_=self.database)
        return [
            KnownEntity(
                id=r["id"],
                name=r["name"],
                type=r["type"],
                aliases=tuple(r["aliases"]),
                description=r["description"],
                embedding=tuple(r["embedding"]) if r["embedding"] is not None else None,
            )
            for r in records
        ]

    # -- writes ------------------------------------------------------------------------------

    def upsert_documents(self, docs: Sequence[DocumentRow]) -> WriteCounts:
        """Create or update documents and clear their hash: call before touching contents."""
        # Path and source are indexed; every value is bounded again here (kg/limits.py), so no
        # caller can fail a whole batch with one oversized value.
        rows = [
            {
                "id": cut_key(d.id),
                "path": cut_key(d.path),
                "title": cut_name(d.title),
                "root": d.root,
                "source": cut_key(d.source),
                "date": _iso_date(d.date),
            }
            for d in docs
        ]
        return self._batched(_UPSERT_DOCUMENTS, rows)

    def complete_documents(self, docs: Sequence[DocumentRow]) -> WriteCounts:
        """Set each document's hash and extraction record: the last write of a document."""
        rows = [
            {
                "id": d.id,
                "sha256": d.sha256,
                "extraction": d.extraction.method,
                "extraction_model": d.extraction.model,
                "extraction_prompt": d.extraction.prompt,
            }
            for d in docs
        ]
        return self._batched(_COMPLETE_DOCUMENTS, rows)

    def upsert_chunks(self, chunks: Sequence[ChunkRow]) -> WriteCounts:
        rows = [
            {
                "id": c.id,
                "document_id": c.document_id,
                "index": c.index,
                "text": c.text,
                "sha256": c.sha256,
                "embedding": c.embedding,
                "title": c.title,
                "language": c.language,
                "label": BY_CODE[c.language].label,
            }
            for c in chunks
        ]
        counts = self._batched(_UPSERT_CHUNKS, rows)
        ordered = sorted(chunks, key=lambda c: (c.document_id, c.index))
        links = [
            {"previous": a.id, "next": b.id}
            for a, b in itertools.pairwise(ordered)
            if a.document_id == b.document_id
        ]
        counts.add(self._batched(_LINK_CHUNKS, links))
        return counts

    def upsert_entities(self, entities: Sequence[EntityRow]) -> WriteCounts:
        """Merge entities; a new entity also gets its type's label (kg.graph.type_labels)."""
        labels = self._type_labels({e.type for e in entities})
        rows = [
            {
                "id": cut_key(e.id),
                "name": cut_name(e.name),  # indexed, like the type (kg/limits.py)
                "type": cut_name(e.type),
                "label": labels.get(e.type),
                "description": cut_name(e.description, MAX_DESCRIPTION_CHARS),
                "aliases": self._bounded_aliases(e.aliases),
                "embedding": e.embedding,
                "namespace": e.namespace,
            }
            for e in entities
        ]
        return self._batched(_UPSERT_ENTITIES, rows)

    def upsert_mentions(self, pairs: Iterable[tuple[str, str]]) -> WriteCounts:
        """MENTIONS links, about ``batch_size`` of them per transaction, one row per entity
        in each (an entity with more chunks than a batch spans several transactions)."""
        chunks: dict[str, list[str]] = {}
        for chunk_id, entity_id in sorted(set(pairs)):
            chunks.setdefault(entity_id, []).append(chunk_id)
        namespaces = self._chunk_namespaces(c for ids in chunks.values() for c in ids)
        counts = WriteCounts()
        batch: list[dict[str, Any]] = []
        size = 0
        for entity_id, ids in chunks.items():
            for part in _batches(ids, self.batch_size):
                if batch and size + len(part) > self.batch_size:
                    counts.add(self._batched(_UPSERT_MENTIONS, batch))
                    batch, size = [], 0
                found = (namespaces[c] for c in part if c in namespaces)
                names = list(dict.fromkeys(n for n in found if n is not None))
                batch.append({"entity_id": entity_id, "chunk_ids": part, "namespaces": names})
                size += len(part)
        if batch:
            counts.add(self._batched(_UPSERT_MENTIONS, batch))
        return counts

    def upsert_relations(self, relations: Sequence[RelationRow]) -> WriteCounts:
        """Merge relations (re-asserting updates provenance), then close superseded ones."""
        merged = _merge_duplicates(relations, self.bounds.max_chunk_ids)
        storage = self.predicate_storage(Counter(r.predicate for r in merged))
        by_type: dict[str, list[dict[str, Any]]] = {}
        for r in merged:
            by_type.setdefault(storage[r.predicate], []).append(
                {
                    "source": r.source,
                    "target": r.target,
                    "props": {
                        "key": r.key,
                        "predicate": r.predicate,
                        "description": cut_name(r.description, MAX_DESCRIPTION_CHARS),
                        "weight": r.weight,
                        "validFrom": r.valid_from,
                        "validTo": r.valid_to,
                        "chunk_ids": list(r.chunk_ids),
                        "description_source": r.namespace if r.description else None,
                    },
                }
            )
        namespaces = self._chunk_namespaces([c for r in merged for c in r.chunk_ids])
        for rows in by_type.values():
            for row in rows:
                found = (c for c in row["props"]["chunk_ids"] if c in namespaces)
                row["namespaces"] = [namespaces[c] for c in found]
        counts = WriteCounts()
        small: list[dict[str, Any]] = []
        factless: list[Any] = []  # relations written whose fact does not exist yet
        for rel_type, rows in sorted(by_type.items()):
            if rel_type != GENERIC_RELATION_TYPE and len(rows) < self.static_min_rows:
                _relations_query(rel_type)  # the same allowlist check as a rendered text
                small += [{**row, "type": rel_type} for row in rows]
            else:
                counts.add(self._upsert_relation_rows(_relations_query(rel_type), rows, factless))
        if small:
            counts.add(self._upsert_relation_rows(_UPSERT_RELATIONS_DYNAMIC, small, factless))
        counts.relations_written = len(merged)
        # Facts before closing: closing an edge then closes its fact too.
        factless = [r for r in factless if r["predicate"] not in self.factless_predicates]
        counts.facts_written = self.upsert_facts(factless)
        pairs = sorted(
            {(r.source, r.predicate) for r in merged if r.predicate in self.single_valued}
        )
        for batch in _batches([{"source": s, "predicate": p} for s, p in pairs], self.batch_size):
            counts.relations_closed += self._close_superseded(batch)
        return counts

    def _upsert_relation_rows(
        self, query: LiteralString, rows: list[dict[str, Any]], factless: list[Any]
    ) -> WriteCounts:
        """Per batch: create the new edges (``query``), then restate the ones that existed
        (and sync their facts); the records of edges still without a fact go to ``factless``."""
        counts = WriteCounts()
        for batch in _batches(rows, self.batch_size):
            records: list[Any] = []
            counts.add(_counts(self._write_summary(query, batch, records)))
            factless += [r for r in records if r["created"] is True]
            existed = {r["key"]: r["rel"] for r in records if r["created"] is not True}
            restate = [
                {**row, "rel": existed[row["props"]["key"]]}
                for row in batch
                if row["props"]["key"] in existed
            ]
            if restate:
                counts.add(_counts(self._write_summary(_RESTATE_RELATIONS, restate, factless)))
        return counts

    def _chunk_namespaces(self, chunk_ids: Iterable[str]) -> dict[str, str | None]:
        """The namespace of each of these chunks that exists (None: a chunk without one)."""
        found: dict[str, str | None] = {}
        for ids in _batches(sorted(set(chunk_ids)), self.batch_size):
            for r in self._read(_CHUNK_NAMESPACES, ids=ids):
                found[r["id"]] = r["namespace"]
        return found

    def upsert_facts(self, relations: Sequence[Mapping[str, Any]]) -> int:
        """Embed and write the facts of these relations (records with key, subject_id,
        subject, predicate, object_id, object); how many were written."""
        if self.fact_embedder is None:
            return 0
        embedder, written = self.fact_embedder, 0
        # The next page is embedded (Python) while this one is written (the server): the same
        # rows in the same order, one page ahead at most.
        todo = pages(relations, self.batch_size)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kg-facts") as pool:

            def embed_next() -> Future[list[dict[str, Any]]] | None:
                page = next(todo, None)
                return None if page is None else pool.submit(fact_rows, page, embedder)

            ahead = embed_next()
            while ahead is not None:
                rows = ahead.result()
                ahead = embed_next()
                if rows:
                    self._write_summary(UPSERT_FACTS, rows)
                    written += len(rows)
        return written

    def predicate_storage(self, counts: Mapping[str, int]) -> dict[str, str]:
        """The relationship type storing each predicate, deciding (once) for new ones.

        A predicate keeps the type it was first stored with. A new one gets its own type when
        it is single-valued, configured or in the ontology, or, while fewer than
        ``types.max_promoted`` predicates were promoted, when it is among the most frequent of
        this write (at least ``types.min_count`` facts); every other predicate is RELATED.
        """
        names = sorted(counts)
        storage: dict[str, str] = {}
        for batch in _batches(names, self.batch_size):
            records = self._read(_PREDICATES, names=batch)
            storage.update({r["name"]: r["stored_as"] for r in records})
        new = [n for n in names if n not in storage]
        if not new:
            return storage
        records = self._read(_PROMOTED_COUNT)
        room = max(0, self.types.max_promoted - int(records[0]["promoted"]))
        rows: list[dict[str, Any]] = []
        for name in sorted(new, key=lambda n: (-counts[n], n)):
            typeable = is_relation_type(name) and name not in STRUCTURAL_TYPES
            if typeable and (name in self.types.always or name in self.single_valued):
                rows.append({"name": name, "stored_as": name, "promoted": False})
            elif typeable and room > 0 and counts[name] >= self.types.min_count:
                room -= 1
                rows.append({"name": name, "stored_as": name, "promoted": True})
            else:
                rows.append({"name": name, "stored_as": GENERIC_RELATION_TYPE, "promoted": False})
        for chunk in _batches(rows, self.batch_size):
            # A concurrent ingest may have decided first: its choice wins (ON CREATE only).
            for r in self._write(_UPSERT_PREDICATES, chunk):
                storage[r["name"]] = r["stored_as"]
        return storage

    def _close_superseded(self, pairs: list[dict[str, str]]) -> int:
        """Close older open edges of single-valued types; returns how many were closed."""
        records = self._read(_OPEN_EDGES, rows=pairs)
        groups: dict[tuple[str, str], list[OpenEdge]] = {}
        for r in records:
            first_seen = r["first_seen"].to_native() if r["first_seen"] is not None else None
            valid_from = r["valid_from"].to_native() if r["valid_from"] is not None else None
            groups.setdefault((r["source"], r["predicate"]), []).append(
                OpenEdge(
                    r["rel"],
                    r["target"],
                    r["key"],
                    valid_from,
                    first_seen,
                    frozenset(r["namespaces"]),
                )
            )
        closing = [
            {"rel": old.rel, "valid_to": new_from, "closed_by": by}
            for edges in groups.values()
            for old, new_from, by in superseded(edges)
        ]
        if closing:
            self._write(_CLOSE_EDGES, closing)
        return len(closing)

    def remove_document_contents(
        self, document_ids: Sequence[str], *, touched: list[str] | None = None
    ) -> WriteCounts:
        """Remove chunks of these documents and whatever only they supported.

        With ``touched``, the entities the chunks mentioned are added to it instead of settled
        here: a re-ingest settles them (:meth:`settle_entities`) after it wrote the new
        contents, so an entity that only this document mentions, and that its new text
        mentions again (its title), is kept, not deleted under the mentions about to link it.
        """
        counts = WriteCounts()
        for batch in _batches(list(document_ids), max(1, self.batch_size // 10)):
            self._write(_DETACH_CHUNK_IDS, batch, key="ids")
            records = self._write(_DELETE_CHUNKS, batch, key="ids")
            found = [eid for r in records for eid in r["touched"]]
            if touched is not None:
                touched.extend(found)
            else:
                counts.entities_deleted += self.settle_entities(found)
        return counts

    def settle_entities(self, entity_ids: Sequence[str]) -> int:
        """Delete those of these entities left with no mention and no fact, and scope what
        stays of the others by the chunks still mentioning them; returns how many went."""
        deleted = 0
        for ids in _batches(list(dict.fromkeys(entity_ids)), self.batch_size):
            records = self._write(_DELETE_ORPHANS, ids, key="ids")
            deleted += sum(int(r["deleted"]) for r in records)
            self._write(_RESCOPE_ENTITIES, ids, key="ids")
        return deleted

    def set_document_roots(self, document_ids: Sequence[str], root: str) -> None:
        """Record ``root`` as the folder these (unchanged) documents were last loaded from."""
        for batch in _batches(list(document_ids), self.batch_size):
            self._write(_SET_DOCUMENT_ROOTS, batch, key="ids", root=root)

    def delete_documents(self, document_ids: Sequence[str]) -> WriteCounts:
        counts = self.remove_document_contents(document_ids)
        for batch in _batches(list(document_ids), self.batch_size):
            self._write(_DELETE_DOCUMENTS, batch, key="ids")
        return counts

    # -- plumbing ----------------------------------------------------------------------------

    def _bounded_aliases(self, aliases: Iterable[str]) -> list[str]:
        """First ``max_aliases`` distinct aliases, each at most ``max_alias_chars`` long."""
        kept: list[str] = []
        for alias in dict.fromkeys(aliases):
            if len(alias) <= self.bounds.max_alias_chars:
                kept.append(alias)
                if len(kept) >= self.bounds.max_aliases:
                    break
        return kept

    def _type_labels(self, types: set[str]) -> dict[str, str]:
        """Type -> label for the types that have (or now get) one (kg.graph.type_labels)."""
        return grant_type_labels(self.driver, self.database, types, self.bounds.max_type_labels)

    def _read(self, query: LiteralString, **params: Any) -> list[Any]:
        """The records of a read the writes depend on (predicate catalogue, open edges)."""
        records, _, _ = self.driver.execute_query(query, params, database_=self.database)
        return list(records)

    def _parameters(self, key: str, rows: list[Any]) -> dict[str, Any]:
        return {
            key: rows,
            "now": _now(),
            "max_aliases": self.bounds.max_aliases,
            "max_chunk_ids": self.bounds.max_chunk_ids,
        }

    def _batched(
        self, query: LiteralString, rows: list[dict[str, Any]], returned: list[Any] | None = None
    ) -> WriteCounts:
        """Run ``query`` per batch; what it returns is added to ``returned`` when given."""
        counts = WriteCounts()
        for batch in _batches(rows, self.batch_size):
            counts.add(_counts(self._write_summary(query, batch, returned)))
        return counts

    def _session(self) -> Session:
        """A write session on the driver's ``execute_query`` bookmark manager: every write,
        in a session or through ``execute_query``, lands in one causal chain, which the
        graph's reads wait for (docs/architecture.md, "Read-your-writes")."""
        return self.driver.session(
            database=self.database, bookmark_manager=self.driver.execute_query_bookmark_manager
        )

    def _write_summary(
        self, query: LiteralString, rows: list[Any], returned: list[Any] | None = None
    ) -> Any:
        params = self._parameters("rows", rows)

        @unit_of_work(timeout=self.bounds.timeout_s)
        def work(tx: ManagedTransaction) -> tuple[Any, list[dict[str, Any]]]:
            result = tx.run(query, params)
            records = [r.data() for r in result]
            return result.consume().counters, records

        with self._session() as session:
            counters, records = session.execute_write(work)
        if returned is not None:
            returned.extend(records)  # after the commit: a retried transaction adds once
        return counters

    def _write(
        self, query: LiteralString, rows: list[Any], *, key: str = "rows", **extra: Any
    ) -> list[Any]:
        params = self._parameters(key, rows) | extra

        @unit_of_work(timeout=self.bounds.timeout_s)
        def work(tx: ManagedTransaction) -> list[Any]:
            return list(tx.run(query, params))

        with self._session() as session:
            return session.execute_write(work)


@dataclass(frozen=True)
class OpenEdge:
    rel: str
    target: str
    key: str
    valid_from: date | datetime | None
    first_seen: datetime | None
    # Only a fact of a namespace the edge shares closes it (empty: a graph before model 7)
    namespaces: frozenset[str] = frozenset()

    def shares(self, other: OpenEdge) -> bool:
        return (
            not self.namespaces or not other.namespaces or bool(self.namespaces & other.namespaces)
        )


def _day(value: date | datetime) -> date:
    return value.date() if isinstance(value, datetime) else value


def superseded(edges: Sequence[OpenEdge]) -> list[tuple[OpenEdge, date | datetime, str]]:
    """Which open edges of one (source, single-valued type) a newer fact closes.

    Rules (docs/architecture.md, "Temporal edges"): only dated facts close anything, at their
    validFrom; a dated edge is closed by the next dated edge (by validFrom) with another target;
    an undated edge is closed by the earliest dated edge with another target that was learned
    no earlier than it (first_seen). Edges to the same target never close each other; kg never
    invents a date. A fact closes only edges it shares a namespace with: one corpus never
    ends another's facts.
    """
    dated = sorted(
        (e for e in edges if e.valid_from is not None),
        key=lambda e: (_day(e.valid_from or date.min), e.key),
    )
    result: list[tuple[OpenEdge, date | datetime, str]] = []
    for i, old in enumerate(dated):
        assert old.valid_from is not None
        for new in dated[i + 1 :]:
            assert new.valid_from is not None
            if (
                new.target != old.target
                and _day(new.valid_from) > _day(old.valid_from)
                and new.shares(old)
            ):
                result.append((old, new.valid_from, new.key))
                break
    for old in (e for e in edges if e.valid_from is None):
        for new in dated:
            assert new.valid_from is not None
            learned_later = (
                old.first_seen is None or new.first_seen is None or new.first_seen >= old.first_seen
            )
            if new.target != old.target and learned_later and new.shares(old):
                result.append((old, new.valid_from, new.key))
                break
    return result


def _relations_query(rel_type: str) -> LiteralString:
    """The relation upsert for one stored type; the type passed the allowlist (checked again)."""
    if not is_relation_type(rel_type) or (
        rel_type in STRUCTURAL_TYPES and rel_type != GENERIC_RELATION_TYPE
    ):
        raise StoreError(f"refusing relationship type {rel_type!r}: not an allowed type")
    return cast(LiteralString, _UPSERT_RELATIONS_TEMPLATE.replace("__TYPE__", rel_type))


def _counts(summary: Any) -> WriteCounts:
    """A batch's server counters as WriteCounts."""
    return WriteCounts(
        nodes_created=summary.nodes_created,
        relationships_created=summary.relationships_created,
        properties_set=summary.properties_set,
        batches=1,
    )


def _iso_date(value: str | None) -> str | None:
    """A calendar date Cypher's ``date()`` takes, or None (no date, or not one)."""
    if not value:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


def _now() -> datetime:
    return datetime.now(UTC)


def _batches(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _merge_duplicates(relations: Sequence[RelationRow], max_chunk_ids: int) -> list[RelationRow]:
    """Fold rows with the same key so one batch never merges the same edge twice."""
    folded: dict[str, RelationRow] = {}
    for rel in relations:
        seen = folded.get(rel.key)
        if seen is None:
            folded[rel.key] = rel
            continue
        folded[rel.key] = RelationRow(
            source=rel.source,
            target=rel.target,
            predicate=rel.predicate,
            description=seen.description or rel.description,
            weight=max(seen.weight, rel.weight),
            valid_from=seen.valid_from,
            valid_to=seen.valid_to or rel.valid_to,
            chunk_ids=tuple(dict.fromkeys(seen.chunk_ids + rel.chunk_ids))[:max_chunk_ids],
            namespace=seen.namespace if seen.description else rel.namespace,
        )
    return list(folded.values())
