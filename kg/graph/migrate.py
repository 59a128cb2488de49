"""In-place migration of a graph written by an older kg to :data:`kg.graph.meta.MODEL_VERSION`.

Model 1 -> 2:
1. every Entity-to-Entity relation gets ``predicate`` = its type, normalized like an extracted
   predicate (a type made outside kg, such as ``X Y`` or ``depends_on``, becomes ``X_Y`` or
   ``DEPENDS_ON``; a type with no letter, ``RELATED_TO``, named in the report);
2. each predicate gets its storage decided by the writer's rule (its own type for the ones
   that matter, ``RELATED`` for the long tail and for names kg reserves for structure), and
   relations stored under another type are moved there with all their properties (types are
   parameters, never query text);
3. documents get ``source`` (their old ``root``) and the source-scoped id, their chunks follow,
   and their hash is cleared, so the next ``kg ingest`` rewrites each one in the new form
   instead of reporting it unchanged;
4. the graph is stamped with the new version.

Model 2 -> 3:
1. every chunk gets its document's title (``Chunk.title``, searched with the text);
2. chunks are re-embedded with the configured chunk embedder (WordLlama by default; model 2
   embedded them with the entity embedder), and both embedders' identities are recorded.

Model 3 -> 4:
1. every chunk gets its language (``Chunk.language``, :func:`kg.languages.detect` of its text)
   and that language's label (``ChunkEn``, ``ChunkRu``), which its language's fulltext index
   covers;
2. the old single fulltext index ``chunk_text`` is dropped (the schema has already created
   ``chunk_text_en`` and ``chunk_text_ru``);
3. entities get their type's label (``:Entity:Service``, :mod:`kg.graph.type_labels`), within
   ``write.max_type_labels``.

Model 4 -> 5:
1. every Entity-to-Entity relation with a key gets its ``(:Fact)`` node (kg/graph/facts.py): its
   text embedded with the chunk embedder, ``ABOUT`` its subject and object. Subjects are read
   in keyset pages (entity id order), and only relations without a fact yet, so a migration
   that stops midway resumes where it stood;
2. ``Fact`` is now a structural label: entities of a type ``fact`` that model 4 labelled
   ``:Entity:Fact`` lose that label (and the stamp's list of granted labels loses it), so the
   fact index and constraint never cover an entity.

Model 5 -> 6:
1. every document without an extraction record gets one: ``llm`` (model and prompt version
   unrecorded, so any LLM run takes it as its own) when a relation cites one of its chunks,
   else ``metadata`` (the document graph alone: the next plain ``kg ingest`` extracts it, the
   extraction cache making documents already extracted under the same model free).

Model 6 -> 7:
1. every chunk gets its document's source as ``namespace``;
2. every entity gets ``namespaces``, those of the chunks that mention it;
3. every Entity-to-Entity relation and its fact get ``namespaces``, those of the chunks their
   ``chunk_ids`` name;
4. whose text gave each alias and description (``alias_sources``, ``description_source``):
   the one namespace of an entity or relation in one, else unknown (``''``, shown to no
   scoped caller);
5. every community gets the namespaces of its members.
Each step reads only what has no namespace yet (in transactions of a few thousand rows), so a
migration that stops midway resumes where it stood.

Before anything changes, an older graph is checked for values that no kg wrote and that the
migration cannot convert (a name that is a number, an id that is missing, a ``validFrom`` that is
text: :func:`refuse_unconvertible`); such a graph is refused with the elements named, unchanged.
What it can convert it does: a model 1 predicate that is not a string gives way to its type, and
namespace properties of another shape than a list of strings are computed again.

On a current graph, ``kg migrate`` re-embeds the chunks (and facts, which share the chunk
embedder) or entities whose recorded embedder differs from the configured one (the fix
:func:`kg.graph.meta.refuse_other_embedders` names).
Every step is idempotent, so a migration that stops midway can simply be run again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, LiteralString

from neo4j import Driver, Record, Session

from kg.documents import document_id
from kg.errors import StoreError
from kg.extract.predicates import normalize_predicate
from kg.graph.driver import repeat_batches
from kg.graph.facts import UPSERT_FACTS, fact_rows
from kg.graph.facts import pages as fact_pages
from kg.graph.meta import (
    MODEL_VERSION,
    read_embedders,
    read_model,
    read_state,
    stamp,
    stamp_embedders,
)
from kg.graph.type_labels import grant as grant_type_labels
from kg.graph.writer import GraphWriter
from kg.languages import BY_CODE, detect
from kg.limits import MAX_FACT_KEY_CHARS
from kg.resolve.embed import Embedder, embedder_identity

_REEMBED_BATCH = 1000

_PREDICATE_COUNTS: LiteralString = """
MATCH (:Entity)-[r]->(:Entity)
RETURN r.predicate AS predicate, type(r) AS type, count(*) AS n
"""

# One batch of the relations of one (type, predicate) group is given its normalized predicate
# and moved to the type that stores it. Both types are parameters (dynamic types): a model 1
# type such as `X Y` or `depends_on` never reaches query text. Repeated until nothing is left.
# The properties are set as one map: the old predicate, of any length, never reaches the new
# type's predicate index (RELATED's refuses values past its key size).
_MOVE_RELATIONS: LiteralString = """
MATCH (a:Entity)-[r:$($type)]->(b:Entity)
WHERE (r.predicate IS NULL AND $old IS NULL) OR r.predicate = $old
WITH a, r, b LIMIT 5000
CREATE (a)-[n:$($to)]->(b)
SET n = r {.*, predicate: $new}
DELETE r
RETURN count(*) AS moved
"""

# The same where the type stays: only the predicate changes.
_RENAME_PREDICATES: LiteralString = """
MATCH (:Entity)-[r:$($type)]->(:Entity)
WHERE (r.predicate IS NULL AND $old IS NULL) OR r.predicate = $old
WITH r LIMIT 5000
SET r.predicate = $new
RETURN count(*) AS moved
"""

# A model 1 type with no letter at all cannot be a predicate; its facts keep their edge under
# this predicate, and the migration report says so.
UNNAMED_PREDICATE = "RELATED_TO"

# A model 1 predicate that is not a string (no kg wrote one) names nothing: its type does.
_ODD_PREDICATES: LiteralString = """
MATCH (:Entity)-[r]->(:Entity) WHERE r.predicate IS NOT NULL AND NOT r.predicate IS :: STRING
CALL (r) { REMOVE r.predicate } IN TRANSACTIONS OF 5000 ROWS
"""

_OLD_DOCUMENTS: LiteralString = """
MATCH (d:Document) WHERE d.source IS NULL
RETURN elementId(d) AS element, d.id AS id, d.path AS path, coalesce(d.root, '') AS root
"""

# Documents that already hold an id a model 1 document is to get.
_TAKEN_IDS: LiteralString = """
UNWIND $rows AS row
MATCH (d:Document {id: row.new}) WHERE elementId(d) <> row.element
RETURN row.path AS path, row.source AS source, d.path AS holder
LIMIT 5
"""

_REID_DOCUMENTS: LiteralString = """
UNWIND $rows AS row
MATCH (d:Document {id: row.old})
SET d.id = row.new, d.source = row.source, d.sha256 = null
WITH d, row
MATCH (c:Chunk {document_id: row.old})
SET c.document_id = row.new
"""


_CHUNK_TITLES: LiteralString = """
MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE c.title IS NULL
CALL (c, d) { SET c.title = coalesce(d.title, '') } IN TRANSACTIONS OF 10000 ROWS
"""

# Keyset pages (id order) of what to re-embed: chunks by their text, entities by their name.
_CHUNK_PAGE: LiteralString = """
MATCH (c:Chunk) WHERE c.id > $after
RETURN c.id AS id, coalesce(c.text, '') AS text ORDER BY c.id LIMIT $limit
"""
_ENTITY_PAGE: LiteralString = """
MATCH (e:Entity) WHERE e.id > $after
RETURN e.id AS id, coalesce(e.name, '') AS text ORDER BY e.id LIMIT $limit
"""
_SET_CHUNK_VECTORS: LiteralString = """
UNWIND $rows AS row MATCH (c:Chunk {id: row.id}) SET c.embedding = row.embedding
"""
_SET_CHUNK_LANGUAGES: LiteralString = """
UNWIND $rows AS row MATCH (c:Chunk {id: row.id})
SET c.language = row.language
REMOVE c:ChunkEn:ChunkRu
SET c:$(row.label)
"""
# Only LLM extraction and imports write facts; a document any fact cites was one of those.
_RECORD_EXTRACTION: LiteralString = """
MATCH (d:Document) WHERE d.extraction IS NULL
CALL (d) {
  WITH d, EXISTS {
    MATCH (c:Chunk {document_id: d.id})-[:MENTIONS]->(:Entity)-[r]-(:Entity)
    WHERE c.id IN r.chunk_ids
  } AS cited
  SET d.extraction = CASE WHEN cited THEN 'llm' ELSE 'metadata' END,
      d.extraction_model = '', d.extraction_prompt = ''
} IN TRANSACTIONS OF 1000 ROWS
"""
# Model 7: namespaces from the documents down (chunks), then up from the chunks (entities,
# relations and their facts). Only rows without namespaces (of the right shape) are read: a
# rerun resumes.
# A namespace property of another shape (no kg wrote one) is computed again like a missing one.
# (`NOT x IS :: STRING NOT NULL` would be planned as a scan of x's index, which holds no null:
# Neo4j 5.26 then misses the nodes without x. Hence `x IS NULL OR NOT x IS :: STRING`.)
_CHUNK_NAMESPACES: LiteralString = """
MATCH (c:Chunk) WHERE c.namespace IS NULL OR NOT c.namespace IS :: STRING
CALL (c) {
  OPTIONAL MATCH (d:Document {id: c.document_id})
  SET c.namespace = coalesce(d.source, d.root, '')
} IN TRANSACTIONS OF 5000 ROWS
"""
# Whose text gave an alias or a description was not recorded before model 7: an entity of one
# namespace gets that one; a shared one gets '' (unknown), which no scoped caller sees.
_ENTITY_NAMESPACES: LiteralString = """
MATCH (e:Entity)
WHERE e.namespaces IS NULL OR NOT e.namespaces IS :: LIST<STRING NOT NULL>
   OR e.alias_sources IS NULL OR NOT e.alias_sources IS :: LIST<STRING NOT NULL>
   OR size(e.alias_sources) <> size(coalesce(e.aliases, []))
CALL (e) {
  SET e.namespaces = COLLECT { MATCH (c:Chunk)-[:MENTIONS]->(e) RETURN DISTINCT c.namespace }
  WITH e, CASE WHEN size(e.namespaces) = 1 THEN e.namespaces[0] ELSE '' END AS only
  SET e.alias_sources = [a IN coalesce(e.aliases, []) | only],
      e.description_source = CASE WHEN coalesce(e.description, '') = '' THEN null ELSE only END
} IN TRANSACTIONS OF 5000 ROWS
"""
_RELATION_NAMESPACES: LiteralString = """
MATCH (:Entity)-[r]->(:Entity)
WHERE r.key IS NOT NULL
  AND (r.namespaces IS NULL OR NOT r.namespaces IS :: LIST<STRING NOT NULL>
       OR EXISTS { MATCH (f:Fact {id: r.key})
                   WHERE f.namespaces IS NULL OR NOT f.namespaces IS :: LIST<STRING NOT NULL> })
CALL (r) {
  SET r.namespaces = COLLECT {
    MATCH (c:Chunk) WHERE c.id IN coalesce(r.chunk_ids, []) RETURN DISTINCT c.namespace
  }
  SET r.description_source = CASE WHEN coalesce(r.description, '') <> ''
                                  AND size(r.namespaces) = 1 THEN r.namespaces[0] END
  WITH r
  OPTIONAL MATCH (f:Fact {id: r.key})
  SET f.namespaces = r.namespaces
} IN TRANSACTIONS OF 5000 ROWS
"""
_COMMUNITY_NAMESPACES: LiteralString = """
MATCH (c:Community) WHERE c.namespaces IS NULL OR NOT c.namespaces IS :: LIST<STRING NOT NULL>
CALL (c) {
  SET c.namespaces = COLLECT {
    MATCH (e:Entity)-[:IN_COMMUNITY]->(c) UNWIND coalesce(e.namespaces, []) AS ns
    RETURN DISTINCT ns ORDER BY ns
  }
} IN TRANSACTIONS OF 1000 ROWS
"""
_UNSCOPED_CHUNKS: LiteralString = """
MATCH (c:Chunk) WHERE c.namespace IS NULL OR NOT c.namespace IS :: STRING RETURN count(c) AS n
"""
_UNRECORDED: LiteralString = "MATCH (d:Document) WHERE d.extraction IS NULL RETURN count(d) AS n"
_DROP_CHUNK_TEXT: LiteralString = "DROP INDEX chunk_text IF EXISTS"
# Only a type can be a label: an entity without one gets none (not a label "None").
_ENTITY_TYPES: LiteralString = """
MATCH (e:Entity) WHERE e.type IS :: STRING NOT NULL RETURN DISTINCT e.type AS type LIMIT 100000
"""
_SET_TYPE_LABELS: LiteralString = """
UNWIND $rows AS row
MATCH (e:Entity) WHERE e.type = row.type
CALL (e, row) { SET e:$(row.label) } IN TRANSACTIONS OF 10000 ROWS
"""
_FACT_PAGE: LiteralString = """
MATCH (f:Fact) WHERE f.id > $after
RETURN f.id AS id, coalesce(f.text, '') AS text ORDER BY f.id LIMIT $limit
"""
_SET_FACT_VECTORS: LiteralString = """
UNWIND $rows AS row MATCH (f:Fact {id: row.id}) SET f.embedding = row.embedding
"""
# A page of subjects (entity id order, the uniqueness index gives it) with their relations that
# have no fact yet: what model 4 -> 5 embeds. Relations without a key (none that kg wrote) and
# structural edges (IN_COMMUNITY ends at a Community) are not facts.
_FACTLESS_PAGE: LiteralString = """
MATCH (a:Entity) WHERE a.id > $after
WITH a ORDER BY a.id LIMIT $limit
OPTIONAL MATCH (a)-[r]->(b:Entity)
WHERE r.key IS NOT NULL AND NOT EXISTS { MATCH (:Fact {id: r.key}) }
RETURN a.id AS id,
       collect({key: r.key, subject_id: a.id, subject: a.name, predicate: r.predicate,
                object_id: b.id, object: b.name, relation: elementId(r)}) AS relations
ORDER BY id
"""
# The writer's fact statement finds each relation from its subject, which costs the subject's
# degree per fact: a hub's facts cost its degree squared (12k relations, 520 s). The migration
# reads each relation's element id and seeks it; what a fact copies stays defined once.
_UPSERT_FACTS_BY_RELATION: LiteralString = UPSERT_FACTS.replace(
    """MATCH (a:Entity {id: row.subject_id})
MATCH (b:Entity {id: row.object_id})
MATCH (a)-[r]->(b) WHERE r.key = row.key""",
    "MATCH (a:Entity)-[r]->(b:Entity) WHERE elementId(r) = row.relation AND r.key = row.key",
)
_UNLABEL_FACT_ENTITIES: LiteralString = """
MATCH (e:Entity:Fact)
CALL (e) { REMOVE e:Fact } IN TRANSACTIONS OF 10000 ROWS
"""
_UNGRANT_FACT_LABEL: LiteralString = """
MATCH (m:KgMeta {id: 'kg'}) WHERE 'Fact' IN coalesce(m.type_labels, [])
SET m.type_labels = [label IN m.type_labels WHERE label <> 'Fact']
"""
_SET_ENTITY_VECTORS: LiteralString = """
UNWIND $rows AS row MATCH (e:Entity {id: row.id}) SET e.embedding = row.embedding
"""

# What an older graph's properties may hold (as valueType() names them) for the migration to
# convert it: what every kg wrote. Anything else came from outside kg and is refused, unchanged.
_STRING = ("STRING NOT NULL",)
_TEXT = ("STRING NOT NULL", "NULL")
_STRINGS = ("LIST<STRING NOT NULL> NOT NULL", "LIST<NOTHING> NOT NULL", "NULL")
_NUMBER = ("INTEGER NOT NULL", "FLOAT NOT NULL", "NULL")
_TIME = ("DATE NOT NULL", "LOCAL DATETIME NOT NULL", "ZONED DATETIME NOT NULL", "NULL")
_WANTS = {
    _STRING: "a string",
    _TEXT: "a string or nothing",
    _STRINGS: "a list of strings or nothing",
    _NUMBER: "a number or nothing",
    _TIME: "a date, a datetime or nothing",
}
_RULES: dict[str, dict[str, tuple[str, ...]]] = {
    "Document": {"id": _STRING, "path": _STRING, "root": _TEXT, "source": _TEXT, "title": _TEXT},
    "Chunk": {"id": _STRING, "document_id": _TEXT, "text": _TEXT, "title": _TEXT},
    "Entity": {"id": _STRING, "name": _STRING, "type": _TEXT, "description": _TEXT,
               "aliases": _STRINGS},
    "relation": {"key": _TEXT, "chunk_ids": _STRINGS, "description": _TEXT, "weight": _NUMBER,
                 "validFrom": _TIME, "validTo": _TIME, "first_seen": _TIME},
}  # fmt: skip
# Model 2 put a predicate on every relation (model 1's type was its predicate: any value will do).
_PREDICATE_RULE = {"predicate": _STRING}
_WRONG: LiteralString = """
WITH n, [rule IN $rules WHERE NOT valueType(n[rule.property]) IN rule.types | rule.property]
     AS wrong
WHERE wrong <> []
RETURN elementId(n) AS element, [p IN wrong | [p, valueType(n[p])]] AS found,
"""
_NAMED = 5  # elements named per kind
_WRONG_VALUES: dict[str, LiteralString] = {
    "Document": "MATCH (n:Document)" + _WRONG + "n.id AS name LIMIT $limit",
    "Chunk": "MATCH (n:Chunk)" + _WRONG + "n.id AS name LIMIT $limit",
    "Entity": "MATCH (n:Entity)" + _WRONG + "n.id AS name LIMIT $limit",
    "relation": "MATCH (:Entity)-[n]->(:Entity)" + _WRONG + "n.key AS name LIMIT $limit",
}


@dataclass
class MigrationReport:
    from_version: int | None
    to_version: int = MODEL_VERSION
    relations_retyped: int = 0
    predicates: int = 0
    documents_reset: int = 0
    chunks_reembedded: int = 0
    entities_reembedded: int = 0
    chunks_labelled: int = 0
    entities_labelled: int = 0
    facts_created: int = 0
    facts_reembedded: int = 0
    documents_recorded: int = 0  # documents given an extraction record (model 6)
    chunks_scoped: int = 0  # chunks given their namespace (model 7)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _session(driver: Driver, database: str) -> Session:
    """An auto-commit session (``IN TRANSACTIONS`` needs one) in the driver's ``execute_query``
    bookmark chain, so the graph's reads see what it wrote (docs/architecture.md)."""
    return driver.session(database=database, bookmark_manager=driver.execute_query_bookmark_manager)


def already_current(
    driver: Driver, database: str, identities: Mapping[str, str]
) -> MigrationReport | None:
    """A report of nothing done when the graph has the current model and records exactly
    ``identities`` (``{"entity": ..., "chunk": ...}``), read in one query; else None.

    So ``kg migrate`` on a current graph is one round trip: no schema pass, no writer, no
    embedder loaded, no stamp rewritten.
    """
    try:
        model, stored = read_state(driver, database)
    except (TypeError, ValueError) as exc:
        raise _unreadable_stamp(exc) from exc
    if model.version != MODEL_VERSION or any(stored.get(k) != v for k, v in identities.items()):
        return None
    return MigrationReport(from_version=MODEL_VERSION, notes=["nothing to do"])


# Long on purpose: the model steps in order, each one line of "if older than N", read as the
# list of what every model added.
def migrate(
    driver: Driver,
    database: str,
    writer: GraphWriter,
    *,
    entity_embedder: Embedder | None = None,
    chunk_embedder: Embedder | None = None,
) -> MigrationReport:
    """Bring the graph to the current model and the configured embedders.

    Without an embedder, vectors of that kind are left as they are (and not recorded).
    """
    try:
        found = read_model(driver, database).effective
    except (TypeError, ValueError) as exc:
        raise _unreadable_stamp(exc) from exc
    report = MigrationReport(from_version=found)
    if found is not None and found > MODEL_VERSION:
        raise StoreError(f"graph model {found} is newer than this kg ({MODEL_VERSION})")
    if found is not None and found < MODEL_VERSION:
        refuse_unconvertible(driver, database, found)
    if found is not None and found < 2:
        _model_1_to_2(driver, database, writer, report)
    if found is not None and found < 3:
        with _session(driver, database) as session:
            session.run(_CHUNK_TITLES).consume()  # IN TRANSACTIONS needs an auto-commit run
    if found is not None and found < 4:
        report.chunks_labelled = label_chunk_languages(driver, database)
        driver.execute_query(_DROP_CHUNK_TEXT, database_=database)
        report.entities_labelled = label_entity_types(
            driver, database, writer.bounds.max_type_labels
        )
    if found is not None and found < 5:
        with _session(driver, database) as session:  # IN TRANSACTIONS: auto-commit
            session.run(_UNLABEL_FACT_ENTITIES).consume()
        driver.execute_query(_UNGRANT_FACT_LABEL, database_=database)
        report.facts_created = create_facts(driver, database, writer, chunk_embedder)
    if found is not None and found < 6:
        records, _, _ = driver.execute_query(_UNRECORDED, database_=database)
        report.documents_recorded = int(records[0]["n"])
        with _session(driver, database) as session:  # IN TRANSACTIONS: auto-commit
            session.run(_RECORD_EXTRACTION).consume()
    if found is not None and found < 7:
        report.chunks_scoped = scope_namespaces(driver, database)
    stored = read_embedders(driver, database)
    wanted = {"entity": entity_embedder, "chunk": chunk_embedder}
    for kind, embedder in wanted.items():
        if embedder is None:
            continue
        identity = embedder_identity(embedder)
        # Model 2 embedded chunks with the entity embedder and recorded nothing: redo them.
        stale = stored[kind] not in (None, identity) or (
            kind == "chunk" and found is not None and found < 3
        )
        if stale:
            done = _reembed(driver, database, kind, embedder)
            if kind == "chunk":
                report.chunks_reembedded = done
                # Facts share the chunk embedder (all of them: simple, and always right).
                report.facts_reembedded = _reembed(driver, database, "fact", embedder)
            else:
                report.entities_reembedded = done
        stamp_embedders(driver, database, {kind: identity})
    if found in (None, MODEL_VERSION) and not (
        report.chunks_reembedded or report.entities_reembedded
    ):
        report.notes.append("nothing to do")
    stamp(driver, database)
    return report


def _unreadable_stamp(exc: Exception) -> StoreError:
    return StoreError(
        f"the graph's model stamp is unreadable ({_cut(str(exc), 120)}): KgMeta.model_version "
        "holds no graph model number. Set it to the model of the kg that wrote the graph "
        "(MATCH (m:KgMeta {id: 'kg'}) SET m.model_version = <model>), then run kg migrate again"
    )


def refuse_unconvertible(driver: Driver, database: str, found: int) -> None:
    """Refuse, before anything changes, a graph of model ``found`` holding values that no kg
    wrote and the migration cannot convert (:data:`_RULES`), naming up to :data:`_NAMED`
    elements of each kind (their values shown escaped and cut: they may be anything)."""
    problems: list[str] = []
    for kind, query in _WRONG_VALUES.items():
        rules = _RULES[kind] | (_PREDICATE_RULE if kind == "relation" and found >= 2 else {})
        records, _, _ = driver.execute_query(
            query,
            rules=[{"property": p, "types": list(types)} for p, types in rules.items()],
            limit=_NAMED,
            database_=database,
        )
        for r in records:
            wrong = ", ".join(
                f"{p} is {_type_name(t)} (wants {_WANTS[rules[p]]})" for p, t in r["found"]
            )
            problems.append(f"{kind} {_cut(repr(r['name']), 60)} [{r['element']}]: {wrong}")
    if problems:
        raise StoreError(
            "kg migrate changed nothing: the graph holds values that no kg wrote, which it "
            "cannot convert. Fix or remove these (element ids in brackets), then run it again: "
            + "; ".join(problems)
        )


def _type_name(value_type: str) -> str:
    return "missing" if value_type == "NULL" else value_type.removesuffix(" NOT NULL")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def scope_namespaces(driver: Driver, database: str) -> int:
    """Model 6 -> 7: chunks, entities, relations and facts get their namespaces; how many
    chunks had none."""
    records, _, _ = driver.execute_query(_UNSCOPED_CHUNKS, database_=database)
    count = int(records[0]["n"])
    with driver.session(database=database) as session:  # IN TRANSACTIONS: auto-commit
        for step in (
            _CHUNK_NAMESPACES,
            _ENTITY_NAMESPACES,
            _RELATION_NAMESPACES,
            _COMMUNITY_NAMESPACES,
        ):
            session.run(step).consume()
    return count


def _model_1_to_2(
    driver: Driver, database: str, writer: GraphWriter, report: MigrationReport
) -> None:
    """Predicates from model 1 types, normalized; each stored by the writer's rule.

    Any type the graph holds is handled, including ones that are not valid predicates
    (``X Y``, ``depends_on``, made outside kg): they go through the same normalization as
    extracted predicates, so a rerun never meets a type it refuses. A stored predicate that is
    not a string gives way to the type. Documents whose new ids would collide are refused
    before anything changes.
    """
    documents = _new_document_ids(driver, database, writer.batch_size)
    with _session(driver, database) as session:  # IN TRANSACTIONS: auto-commit
        dropped = session.run(_ODD_PREDICATES).consume().counters.properties_set
    if dropped:
        report.notes.append(
            f"{dropped} relations held a predicate that is not a string: their type names them"
        )
    records, _, _ = driver.execute_query(_PREDICATE_COUNTS, database_=database)
    groups: list[tuple[str, str | None, str]] = []  # (type, stored predicate, predicate)
    counts: dict[str, int] = {}
    for r in records:
        rel_type, old = str(r["type"]), r["predicate"]
        new = _normalized(old if old is not None else rel_type, report)
        groups.append((rel_type, old, new))
        counts[new] = counts.get(new, 0) + int(r["n"])
    storage = writer.predicate_storage(counts)
    report.predicates = len(storage)
    for rel_type, old, new in sorted(groups, key=lambda g: (g[0], g[1] or "", g[2])):
        to = storage[new]
        if to == rel_type and old == new:
            continue
        query = _RENAME_PREDICATES if to == rel_type else _MOVE_RELATIONS
        moved = repeat_batches(
            driver, database, query, "moved", type=rel_type, old=old, new=new, to=to
        )
        if to != rel_type:
            report.relations_retyped += moved
    report.documents_reset = _reid_documents(driver, database, documents, writer.batch_size)
    stamp(driver, database, 2)


def _normalized(name: str, report: MigrationReport) -> str:
    """A model 1 type (or predicate) as a predicate; one with no letter gets a stand-in."""
    try:
        return normalize_predicate(name)
    except ValueError:
        report.notes.append(
            f"relationship type {_cut(repr(name), 80)} has no letters: its facts are kept as "
            f"predicate {UNNAMED_PREDICATE}"
        )
        return UNNAMED_PREDICATE


def _pages(driver: Driver, database: str, page: LiteralString) -> Iterator[list[Record]]:
    """Keyset pages (id order) of ``page``'s rows: each page is read after the previous one
    was written, so a step that stops midway resumes where it stood."""
    after = ""
    while True:
        records, _, _ = driver.execute_query(
            page, after=after, limit=_REEMBED_BATCH, database_=database
        )
        if not records:
            return
        yield records
        after = records[-1]["id"]


def _reembed(driver: Driver, database: str, kind: str, embedder: Embedder) -> int:
    """Embed every chunk's text (or entity's name) again, a page per transaction."""
    page, write = {
        "chunk": (_CHUNK_PAGE, _SET_CHUNK_VECTORS),
        "fact": (_FACT_PAGE, _SET_FACT_VECTORS),
        "entity": (_ENTITY_PAGE, _SET_ENTITY_VECTORS),
    }[kind]
    total = 0
    for records in _pages(driver, database, page):
        vectors = embedder.embed([r["text"] for r in records])
        rows = [
            {"id": r["id"], "embedding": [float(x) for x in vec]}
            for r, vec in zip(records, vectors, strict=True)
        ]
        driver.execute_query(write, rows=rows, database_=database)
        total += len(rows)
    return total


def create_facts(
    driver: Driver, database: str, writer: GraphWriter, embedder: Embedder | None
) -> int:
    """Give every relation that has none its fact node (model 4 -> 5); how many were made.

    Embedded with ``embedder`` (the configured chunk embedder), else the writer's.
    """
    embedder = embedder or writer.fact_embedder
    if embedder is None:
        raise StoreError("graph model 5 embeds every relation as a fact: no chunk embedder given")
    total = 0
    for records in _pages(driver, database, _FACTLESS_PAGE):
        # Keys too long for the fact index get no fact, as in the writer (kg/limits.py).
        relations = [
            rel
            for r in records
            for rel in r["relations"]
            if rel["key"] is not None and len(rel["key"]) <= MAX_FACT_KEY_CHARS
        ]
        for page in fact_pages(relations, writer.batch_size):
            rows = [
                {**row, "relation": rel["relation"]}
                for row, rel in zip(fact_rows(page, embedder), page, strict=True)
            ]
            driver.execute_query(_UPSERT_FACTS_BY_RELATION, rows=rows, database_=database)
            total += len(rows)
    return total


def label_chunk_languages(driver: Driver, database: str) -> int:
    """Give every chunk its language and language label, a page per transaction."""
    total = 0
    for records in _pages(driver, database, _CHUNK_PAGE):
        rows = []
        for r in records:
            language = detect(r["text"])
            rows.append({"id": r["id"], "language": language, "label": BY_CODE[language].label})
        driver.execute_query(_SET_CHUNK_LANGUAGES, rows=rows, database_=database)
        total += len(rows)
    return total


def label_entity_types(driver: Driver, database: str, limit: int) -> int:
    """Give every entity its type's label where the type has (or now gets) one."""
    records, _, _ = driver.execute_query(_ENTITY_TYPES, database_=database)
    labels = grant_type_labels(driver, database, [str(r["type"]) for r in records], limit)
    if not labels:
        return 0
    rows = [{"type": t, "label": label} for t, label in sorted(labels.items())]
    with _session(driver, database) as session:  # IN TRANSACTIONS: auto-commit
        summary = session.run(_SET_TYPE_LABELS, rows=rows).consume()
    return summary.counters.labels_added


def _new_document_ids(driver: Driver, database: str, batch_size: int) -> list[dict[str, Any]]:
    """Model 1 documents with their source-scoped ids; refused, before anything changes, when
    two would get one id or one would get an id that another document holds."""
    records, _, _ = driver.execute_query(_OLD_DOCUMENTS, database_=database)
    rows = [
        {"element": r["element"], "old": r["id"], "new": document_id(r["path"], r["root"]),
         "source": r["root"], "path": r["path"]}
        for r in records
    ]  # fmt: skip
    twice = Counter(row["new"] for row in rows)
    clashes = [
        f"{_cut(repr(row['path']), 80)} of {_cut(repr(row['source']), 80)} (twice)"
        for row in rows
        if twice[row["new"]] > 1
    ]
    for start in range(0, len(rows), batch_size):
        taken, _, _ = driver.execute_query(
            _TAKEN_IDS, rows=rows[start : start + batch_size], database_=database
        )
        clashes += [
            f"{_cut(repr(r['path']), 80)} of {_cut(repr(r['source']), 80)} (the id of "
            f"{_cut(repr(r['holder']), 80)})"
            for r in taken
        ]
    if clashes:
        raise StoreError(
            "kg migrate changed nothing: these documents would get an id that another one has "
            "(one file recorded twice): "
            + "; ".join(sorted(set(clashes))[:_NAMED])
            + ". Remove the extra documents and their chunks, then run it again"
        )
    return rows


def _reid_documents(
    driver: Driver, database: str, rows: list[dict[str, Any]], batch_size: int
) -> int:
    for start in range(0, len(rows), batch_size):
        driver.execute_query(_REID_DOCUMENTS, rows=rows[start : start + batch_size],
                             database_=database)  # fmt: skip
    return len(rows)
