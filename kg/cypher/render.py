"""Cypher text of the templates, assembled from constant fragments only.

Hop counts cannot be Cypher parameters, so every depth in :data:`DEPTHS` gets its own text,
rendered once at import by repeating constant fragments. Nothing here takes a value that a
caller supplied: the only inputs are the whitelisted depths, and the functions refuse others.
"""

from __future__ import annotations

from typing import LiteralString

from kg.cypher.params import DEPTHS


# The scope (kg/scope.py, graph model 7): ``$namespaces`` null reads the whole graph, else a
# chunk is in scope when its namespace is listed, an entity, relation or fact when one of its
# namespaces is. An entity or relation shared with a namespace outside the scope shows that
# caller only the aliases and description its own namespaces gave (the writer records whose
# text gave each: alias_sources, description_source).
def in_scope(var: LiteralString) -> LiteralString:
    """``var`` (an entity, relation or fact) has a namespace in ``$namespaces``."""
    return (
        "($namespaces IS NULL OR any(x IN coalesce(" + var + ".namespaces, [])"
        " WHERE x IN $namespaces))"
    )


def chunk_in_scope(var: LiteralString) -> LiteralString:
    """The chunk ``var``'s namespace is in ``$namespaces``."""
    return "($namespaces IS NULL OR " + var + ".namespace IN $namespaces)"


def described(var: LiteralString) -> LiteralString:
    """``var``'s description when the namespace whose text gave it is in the scope."""
    return (
        "CASE WHEN $namespaces IS NULL OR " + var + ".description_source IN $namespaces"
        " THEN " + var + ".description ELSE null END"
    )


def aliased(var: LiteralString) -> LiteralString:
    """``var``'s aliases that a namespace in the scope gave (``alias_sources`` runs parallel)."""
    return (
        "CASE WHEN $namespaces IS NULL THEN " + var + ".aliases"
        " ELSE [i IN range(0, size(coalesce(" + var + ".aliases, [])) - 1)"
        " WHERE " + var + ".alias_sources[i] IN $namespaces | " + var + ".aliases[i]] END"
    )


def named(var: LiteralString, pattern: LiteralString) -> LiteralString:
    """Scoped, ``var``'s name or an alias a namespace in the scope gave matches ``pattern``
    (kg.cypher.lucene: the words the fulltext query searched). The entity index holds every
    alias in one document, so a hit alone may come from another namespace's alias: such a hit
    is none for this caller."""
    return (
        "($namespaces IS NULL OR " + var + ".name =~ " + pattern + " OR any(i IN range(0,"
        " size(coalesce(" + var + ".aliases, [])) - 1) WHERE " + var + ".alias_sources[i] IN"
        " $namespaces AND " + var + ".aliases[i] =~ " + pattern + "))"
    )


def cited(var: LiteralString, most: LiteralString) -> LiteralString:
    """The first ``most`` chunk ids of ``var`` (a relation or fact) in the scope."""
    return (
        "CASE WHEN $namespaces IS NULL THEN " + var + ".chunk_ids[.." + most + "]"
        " ELSE [cid IN coalesce(" + var + ".chunk_ids, []) WHERE EXISTS {"
        " MATCH (k:Chunk {id: cid}) WHERE k.namespace IN $namespaces }][.." + most + "] END"
    )


def mention_count(var: LiteralString) -> LiteralString:
    """How many chunks (in the scope) mention the entity ``var``; unscoped it is the stored
    degree, no expansion of a supernode's relationships."""
    return (
        "CASE WHEN $namespaces IS NULL THEN COUNT { (" + var + ")<-[:MENTIONS]-() }"
        " ELSE COUNT { (" + var + ")<-[:MENTIONS]-(k:Chunk) WHERE k.namespace IN $namespaces }"
        " END"
    )


# Relation filter on the relationship variable ``r``: it names facts' predicates, which every
# relation carries whatever Neo4j type stores it (docs/architecture.md, "Open vocabulary").
TYPE_FILTER: LiteralString = "($relation_types IS NULL OR r.predicate IN $relation_types)"


def _bound(prop: LiteralString, op: LiteralString, var: LiteralString = "r") -> LiteralString:
    """``r.<prop> <op> as-of``, comparing each stored temporal type with a parameter of its type."""
    value: LiteralString = var + "." + prop
    return (
        "(" + value + " IS NULL OR CASE"
        " WHEN " + value + " IS :: DATE THEN " + value + " " + op + " $as_of_date"
        " WHEN " + value + " IS :: ZONED DATETIME THEN " + value + " " + op + " $as_of_dt"
        " WHEN " + value + " IS :: LOCAL DATETIME THEN " + value + " " + op + " $as_of_local"
        " WHEN " + value + " IS :: STRING THEN " + value + " " + op + " $as_of_text"
        " ELSE false END)"
    )


# validFrom <= as_of AND (validTo IS NULL OR validTo > as_of); no as_of: every relation counts.
VALID_AT: LiteralString = (
    "($as_of_dt IS NULL OR (" + _bound("validFrom", "<=") + " AND " + _bound("validTo", ">") + "))"
)

# The same two filters on ``p``, a map of the relation's properties read once.
_P_TYPE_FILTER: LiteralString = "($relation_types IS NULL OR p.predicate IN $relation_types)"
_P_SCOPE: LiteralString = in_scope("p")
_P_VALID_AT: LiteralString = (
    "($as_of_dt IS NULL OR ("
    + _bound("validFrom", "<=", "p")
    + " AND "
    + _bound("validTo", ">", "p")
    + "))"
)

# Early stop: rows come out ordered by hop, so once the relations already found fill $limit,
# no relation of a later hop can be returned, and the hop reads nothing.
_HOP_EDGES: LiteralString = (
    "CALL (edges) {\n"
    "  UNWIND edges AS e\n"
    "  RETURN count(DISTINCT e.r) AS found\n"
    "}\n"
    "CALL (frontier, found, hop) {\n"
    "  UNWIND CASE WHEN found < $limit THEN frontier ELSE [] END AS f\n"
    # Hubs past the seeds are reached, not expanded: their degree is one lookup, a read of
    # their relations is not (docs/search.md, "Hubs").
    "  WITH f WHERE hop = 1 OR $hub_degree IS NULL OR COUNT { (f)--() } <= $hub_degree\n"
    "  CALL (f) {\n"
    # Not (f)-[r:!MENTIONS&...]-: measured, the negated types double the db hits.
    "    MATCH (f)-[r]-(n:Entity)\n"
    "    WITH r, n, r {.predicate, .validFrom, .validTo, .weight, .namespaces} AS p\n"
    "    WHERE " + _P_TYPE_FILTER + " AND " + _P_SCOPE + "\n"
    "      AND " + _P_VALID_AT + "\n"
    "    RETURN r, n\n"
    "    ORDER BY coalesce(p.weight, 0.0) DESC\n"
    "    LIMIT $fanout\n"
    "  }\n"
)

# A middle hop: keep the relations read, and the first $frontier_cap not-yet-seen nodes as the
# next frontier (the scan of reached nodes stops there).
_HOP: LiteralString = (
    _HOP_EDGES + "  RETURN collect(r) AS rels, collect(DISTINCT n) AS reached\n"
    "}\n"
    "CALL (reached, seen) {\n"
    "  UNWIND reached AS x\n"
    "  WITH x WHERE NOT x IN seen\n"
    "  LIMIT $frontier_cap\n"
    "  RETURN collect(x) AS next\n"
    "}\n"
    "WITH seen + next AS seen, next AS frontier,\n"
    "     edges + [x IN rels | {r: x, hop: hop}] AS edges, hop + 1 AS hop\n"
)

# The last hop needs no next frontier.
_LAST_HOP: LiteralString = (
    _HOP_EDGES + "  RETURN collect(r) AS rels\n"
    "}\n"
    "WITH edges + [x IN rels | {r: x, hop: hop}] AS edges\n"
)

# The seeds in the order given (the strongest first, from search), so the frontier cap keeps
# the neighbours of the stronger seeds.
_EXPANSION_HEAD: LiteralString = (
    "UNWIND $entity_ids AS seed_id\n"
    "MATCH (seed:Entity {id: seed_id}) WHERE " + in_scope("seed") + "\n"
    "WITH collect(DISTINCT seed) AS frontier\n"
    "WITH frontier, frontier AS seen, [] AS edges, 1 AS hop\n"
)

# Packed (see kg.cypher.templates.Template.packed): one record whose ``rows`` list the guard
# unpacks, at most $read_rows of them.
_EXPANSION_TAIL: LiteralString = (
    "UNWIND edges AS e\n"
    "WITH e.r AS r, min(e.hop) AS hop\n"
    "ORDER BY hop, coalesce(r.weight, 0.0) DESC\n"
    "LIMIT $limit\n"
    "WITH r, hop, startNode(r) AS s, endNode(r) AS t\n"
    "RETURN collect({type: r.predicate, source: s {.id, .name, .type},"
    " target: t {.id, .name, .type},\n"
    "       description: " + described("r") + ", weight: r.weight,\n"
    "       valid_from: r.validFrom, valid_to: r.validTo,\n"
    "       chunk_ids: " + cited("r", "10") + ", hop: hop})[..$read_rows] AS rows"
)


def _check(depth: int) -> None:
    if depth not in DEPTHS:
        raise ValueError(f"depth must be one of {DEPTHS}")


def expansion(depth: int) -> LiteralString:
    """Breadth-first expansion from ``$entity_ids``, both directions, ``depth`` hops.

    Per hop: at most ``$fanout`` relations per node (heaviest first, so a supernode with 100k
    relations costs one bounded top-k read) and at most ``$frontier_cap`` new nodes go on.
    Past the first hop, a node with more than ``$hub_degree`` relationships is not expanded.
    Seen nodes are not expanded again; each relation is reported once, at its first hop.
    """
    _check(depth)
    text: LiteralString = _EXPANSION_HEAD
    for _ in range(depth - 1):
        text = text + _HOP
    return text + _LAST_HOP + _EXPANSION_TAIL


_RANGES: dict[int, LiteralString] = {1: "{1,1}", 2: "{1,2}", 3: "{1,3}"}


def paths_between(depth: int) -> LiteralString:
    """Up to 10 shortest paths of at most ``depth`` hops (bidirectional search, not enumeration)."""
    _check(depth)
    return (
        "MATCH p = SHORTEST 10 (a:Entity {id: $source_id})"
        "(()-[r]-(:Entity) WHERE "
        + TYPE_FILTER
        + " AND "
        + VALID_AT
        + " AND "
        + in_scope("r")
        + ")"
        + _RANGES[depth]
        + "(b:Entity {id: $target_id})\n"
        "WITH p ORDER BY length(p) LIMIT $limit\n"
        "RETURN [n IN nodes(p) | n {.id, .name, .type}] AS nodes,\n"
        "       [x IN relationships(p) | {type: x.predicate, source: startNode(x).id,"
        " target: endNode(x).id, description: " + described("x") + ","
        " weight: x.weight, valid_from: x.validFrom, valid_to: x.validTo,"
        " chunk_ids: " + cited("x", "20") + "}]"
        " AS relations,\n"
        "       length(p) AS hops"
    )


# Scoped, the degree counts the entity's relations and mentions in the scope only.
ENTITY_BY_ID: LiteralString = (
    "MATCH (e:Entity {id: $entity_id}) WHERE " + in_scope("e") + "\n"
    "RETURN e {.id, .name, .type, description: " + described("e") + ",\n"
    "       aliases: " + aliased("e") + "} AS entity,\n"
    "       CASE WHEN $namespaces IS NULL THEN COUNT { (e)--() }\n"
    "            ELSE COUNT { (e)-[r]-(:Entity) WHERE " + in_scope("r") + " }\n"
    "                 + COUNT { (e)<-[:MENTIONS]-(k:Chunk) WHERE k.namespace IN $namespaces }\n"
    "       END AS degree,\n"
    "       " + mention_count("e") + " AS mentions\n"
    "LIMIT 1"
)

ENTITY_DETAILS: LiteralString = (
    "UNWIND $entity_ids AS eid\n"
    "MATCH (e:Entity {id: eid}) WHERE " + in_scope("e") + "\n"
    "WITH e LIMIT $limit\n"
    "RETURN collect({id: e.id, name: e.name, type: e.type,\n"
    "       description: " + described("e") + ",\n"
    "       aliases: " + aliased("e") + "[..20]})[..$read_rows] AS rows"
)

ENTITY_SOURCES: LiteralString = (
    "MATCH (e:Entity {id: $entity_id}) WHERE " + in_scope("e") + "\n"
    "CALL (e) {\n"
    "  MATCH (c:Chunk)-[:MENTIONS]->(e) WHERE " + chunk_in_scope("c") + "\n"
    "  RETURN c\n"
    "  LIMIT $limit\n"
    "}\n"
    "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)\n"
    "RETURN e.id AS entity_id, e.name AS entity_name, c.id AS chunk_id, c.index AS chunk_index,\n"
    "       c.text AS text, d.id AS document_id, d.path AS document_path,"
    " d.title AS document_title\n"
    "ORDER BY document_path, chunk_index\n"
    "LIMIT $limit"
)

RELATIONS_VALID_AT: LiteralString = (
    "MATCH (e:Entity {id: $entity_id}) WHERE " + in_scope("e") + "\n"
    "CALL (e) {\n"
    "  MATCH (e)-[r]-(:Entity)\n"
    "  WHERE " + TYPE_FILTER + " AND " + in_scope("r") + "\n"
    "    AND " + VALID_AT + "\n"
    "  RETURN r\n"
    "  ORDER BY r.validFrom DESC, coalesce(r.weight, 0.0) DESC\n"
    "  LIMIT $limit\n"
    "}\n"
    "WITH r, startNode(r) AS s, endNode(r) AS t\n"
    "RETURN r.predicate AS type, s.id AS source, s.name AS source_name,\n"
    "       t.id AS target, t.name AS target_name,\n"
    "       " + described("r") + " AS description,\n"
    "       r.weight AS weight, r.validFrom AS valid_from, r.validTo AS valid_to,\n"
    "       " + cited("r", "50") + " AS chunk_ids"
)

# Scoped, the indexes are asked for $fetch candidates (more than $k: neither index can filter
# first in Neo4j 5.26) and the first $k in the scope kept. The names' fulltext index is asked
# for as many scoped or not ($text_fetch, kg.cypher.params), and equal scores go by id.
_SEED: LiteralString = (
    "node {.id, .name, .type, description: " + described("node") + ",\n"
    "       aliases: " + aliased("node") + ", score: score}"
)
# The first $k hits in the scope, then their maps: scoped, the indexes are asked for ten times
# $k, and building every candidate's map (description, aliases) before keeping $k doubled a
# scoped graph search on the docs set.
ENTITY_SEEDS: LiteralString = (
    "CALL () {\n"
    "  WITH $embedding AS v WHERE v IS NOT NULL\n"
    "  CALL db.index.vector.queryNodes('entity_embedding', $fetch, v) YIELD node, score\n"
    "  WITH node, score WHERE " + in_scope("node") + "\n"
    "  LIMIT $k\n"
    "  RETURN collect(" + _SEED + ") AS vector\n"
    "}\n"
    "CALL () {\n"
    "  WITH $text AS q WHERE q <> ''\n"
    "  CALL db.index.fulltext.queryNodes('entity_names', q, {limit: $text_fetch})"
    " YIELD node, score\n"
    "  WITH node, score WHERE " + in_scope("node") + " AND " + named("node", "$pattern") + "\n"
    "  WITH node, score ORDER BY score DESC, node.id\n"
    "  LIMIT $k\n"
    "  RETURN collect(" + _SEED + ") AS fulltext\n"
    "}\n"
    "RETURN vector, fulltext"
)

# The HNSW index is asked for $candidates (4 x $k) neighbours and the best $k kept: measured,
# that returns 99.6% of the exact cosine top 5 where asking for k returned 93%.
CHUNKS_BY_VECTOR: LiteralString = (
    "CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $embedding)"
    " YIELD node AS c, score\n"
    "WITH c, score WHERE " + chunk_in_scope("c") + "\n"
    "WITH c, score ORDER BY score DESC LIMIT $k\n"
    "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)\n"
    "RETURN collect({id: c.id, text: c.text, chunk_index: c.index,\n"
    "       document_id: d.id, document_path: d.path, score: score})[..$read_rows] AS rows"
)

# The graph signal's fact seeds (graph model 5): the relations whose text ("subject predicate
# object", kg/graph/facts.py) is nearest to the question, with both ends and their provenance.
FACTS_BY_VECTOR: LiteralString = (
    "CALL db.index.vector.queryNodes('fact_embedding', $candidates, $embedding)"
    " YIELD node AS f, score\n"
    "WITH f, score WHERE " + in_scope("f") + "\n"
    "RETURN f.id AS id, f.text AS text, f.subject_id AS subject_id, f.object_id AS object_id,\n"
    "       " + cited("f", "20") + " AS chunk_ids, score\n"
    "ORDER BY score DESC\n"
    "LIMIT $k"
)

# The per-process fact matrix's pages (kg/search/facts.py): facts in id order (the fact_id
# constraint's index serves the order and the seek past $after), with both ends and the vector.
FACT_PAGE: LiteralString = (
    "MATCH (f:Fact) WHERE f.id > $after\n"
    "WITH f ORDER BY f.id\n"
    "LIMIT $limit\n"
    "RETURN collect({id: f.id, subject_id: f.subject_id, object_id: f.object_id,\n"
    "       embedding: f.embedding, namespaces: f.namespaces})[..$read_rows] AS rows"
)

# The per-process chunk vectors (kg/search/chunk_vectors.py): chunks in id order (the
# chunk_id constraint's index serves the order and the seek past $after), one page per call.
CHUNK_PAGE: LiteralString = (
    "MATCH (c:Chunk) WHERE c.id > $after\n"
    "WITH c ORDER BY c.id\n"
    "LIMIT $limit\n"
    "RETURN collect({id: c.id, embedding: c.embedding, namespace: c.namespace,\n"
    "       document: c.document_id})[..$read_rows] AS rows"
)

# The per-process entity vectors (kg/search/entity_vectors.py): the fuzzy seeds' vector half
# in memory. Entities in id order (the entity_id constraint's index serves the order and the
# seek past $after), with name and type (a seed is ranked by its type), one page per call.
ENTITY_PAGE: LiteralString = (
    "MATCH (e:Entity) WHERE e.id > $after\n"
    "WITH e ORDER BY e.id\n"
    "LIMIT $limit\n"
    "RETURN collect({id: e.id, name: e.name, type: e.type, embedding: e.embedding,\n"
    "       namespaces: e.namespaces})[..$read_rows] AS rows"
)

EVIDENCE_CHUNKS: LiteralString = (
    "CALL () {\n"
    "  UNWIND $chunk_ids AS cid\n"
    "  MATCH (c:Chunk {id: cid}) WHERE " + chunk_in_scope("c") + "\n"
    "  RETURN c\n"
    "  UNION\n"
    "  UNWIND $entity_ids AS eid\n"
    "  CALL (eid) {\n"
    "    MATCH (c:Chunk)-[:MENTIONS]->(:Entity {id: eid}) WHERE " + chunk_in_scope("c") + "\n"
    "    RETURN c\n"
    "    LIMIT $per_entity\n"
    "  }\n"
    "  RETURN c\n"
    "}\n"
    "WITH DISTINCT c\n"
    "LIMIT $limit\n"
    "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)\n"
    "RETURN collect({id: c.id, text: c.text, chunk_index: c.index,\n"
    "       document_id: d.id, document_path: d.path,\n"
    "       mentions: [(c)-[:MENTIONS]->(m:Entity) WHERE m.id IN $entity_ids | m.id][..50]})"
    "[..$read_rows] AS rows"
)

# The graph signal's last read, one round trip: its passages' texts with their documents, and
# the description and aliases of the entities the response shows (each row says its kind).
# Measured on the MuSiQue graph, the two reads as one took 8% off a hybrid search
# (docs/benchmarks.md, "Latency on an LLM-extracted graph").
GRAPH_EVIDENCE: LiteralString = (
    "CALL () {\n"
    "  UNWIND $chunk_ids AS cid\n"
    "  MATCH (c:Chunk {id: cid}) WHERE " + chunk_in_scope("c") + "\n"
    "  WITH DISTINCT c LIMIT $limit\n"
    "  OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)\n"
    "  RETURN collect({kind: 'chunk', id: c.id, text: c.text, chunk_index: c.index,\n"
    "         document_id: d.id, document_path: d.path}) AS chunks\n"
    "}\n"
    "CALL () {\n"
    "  UNWIND $entity_ids AS eid\n"
    "  MATCH (e:Entity {id: eid}) WHERE " + in_scope("e") + "\n"
    "  WITH e LIMIT $limit\n"
    "  RETURN collect({kind: 'entity', id: e.id, name: e.name, type: e.type,\n"
    "         description: " + described("e") + ",\n"
    "         aliases: " + aliased("e") + "[..20]}) AS entities\n"
    "}\n"
    "RETURN (chunks + entities)[..$read_rows] AS rows"
)

# Chunks of documents dated after the as-of date (a document's own date, kg/docdates.py; the
# writer stores it as a DATE): a search as of then leaves them out. Undated documents never are.
CHUNKS_DATED_AFTER: LiteralString = (
    "UNWIND $chunk_ids AS cid\n"
    "MATCH (c:Chunk {id: cid}) WHERE " + chunk_in_scope("c") + "\n"
    "MATCH (c)-[:PART_OF]->(d:Document)\n"
    "WHERE d.date IS :: DATE AND d.date > $as_of_date\n"
    "RETURN DISTINCT c.id AS id LIMIT $limit"
)

# The predicates facts use (the writer's catalogue), whatever types store them.
# Scoped: the predicates with a fact in the scope (one fact_predicate index lookup each).
RELATION_TYPES: LiteralString = (
    "MATCH (p:Predicate)\n"
    "WHERE $namespaces IS NULL OR EXISTS {\n"
    "  MATCH (f:Fact) WHERE f.predicate = p.name AND " + in_scope("f") + "\n"
    "}\n"
    "RETURN p.name AS type, p.stored_as AS stored_as ORDER BY type LIMIT 10000"
)

# Text retrieval: Lucene BM25 over each chunk's text and its document's title, in every
# language's index (kg/languages.py), each asked its own (escaped) text; a row says which.
# Equal scores go by id: the index orders them by how many hits it was asked for, and a scoped
# read asks for more (a search scoped to every namespace ranked one HotpotQA question apart).
_CHUNKS_BY_TEXT_RANKED: LiteralString = (
    "UNWIND $queries AS q\n"
    "CALL (q) {\n"
    "  CALL db.index.fulltext.queryNodes(q.index, q.text, {limit: $fetch}) YIELD node AS c, score\n"
    "  WITH c, score WHERE " + chunk_in_scope("c") + "\n"
    "  RETURN c, score\n"
    "  ORDER BY score DESC, c.id\n"
    "  LIMIT $k\n"
    "}\n"
    "WITH q, c, score ORDER BY score DESC, c.id LIMIT $limit\n"
)
CHUNKS_BY_TEXT: LiteralString = (
    _CHUNKS_BY_TEXT_RANKED + "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)\n"
    "RETURN collect({language: q.language, id: c.id, text: c.text, chunk_index: c.index,\n"
    "       document_id: d.id, document_path: d.path, score: score})[..$read_rows] AS rows"
)
# The same ranking with the texts and documents of each language's first $texted chunks only:
# hybrid ranks ids, and the chunks it shows are nearly always among them (on the docs set, 50
# chunks a language with every text took 7.9 ms, with none 5.5). The rest of what it shows it
# reads with the entities (graph_evidence), while this query runs.
CHUNKS_BY_TEXT_RANKED: LiteralString = (
    _CHUNKS_BY_TEXT_RANKED + "WITH q, collect({c: c, score: score}) AS found\n"
    "UNWIND range(0, size(found) - 1) AS i\n"
    "WITH q, found[i].c AS c, found[i].score AS score, i < $texted AS texted\n"
    "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document) WHERE texted\n"
    "RETURN collect({language: q.language, id: c.id, score: score,\n"
    "       text: CASE WHEN texted THEN c.text END,\n"
    "       chunk_index: CASE WHEN texted THEN c.index END,\n"
    "       document_id: d.id, document_path: d.path})[..$read_rows] AS rows"
)

# Which languages the chunks are in (kg/languages.py labels): counts from the count store.
CORPUS_LANGUAGES: LiteralString = (
    "CALL () { MATCH (c:ChunkEn) RETURN count(c) AS en }\n"
    "CALL () { MATCH (c:ChunkRu) RETURN count(c) AS ru }\n"
    "RETURN en, ru\n"
    "LIMIT 1"
)

# Question linking: each phrase (a quoted n-gram of the question) against names and aliases,
# with how many chunks mention each hit (its specificity). The mention counts have no label on
# the far end: only chunks MENTION, and without a label the count is the node's stored degree
# (no expansion of a supernode's relationships).
ENTITY_LINKS: LiteralString = (
    "UNWIND $phrases AS phrase\n"
    "CALL (phrase) {\n"
    "  CALL db.index.fulltext.queryNodes('entity_names', phrase, {limit: $fetch})"
    " YIELD node, score\n"
    "  WITH node, score\n"
    "  WHERE " + in_scope("node") + " AND " + named("node", "$patterns[phrase]") + "\n"
    "  RETURN node, score\n"
    "  ORDER BY score DESC, node.id\n"
    "  LIMIT $per_phrase\n"
    "}\n"
    "RETURN phrase, node.id AS id, node.name AS name, node.type AS type,\n"
    "       " + aliased("node") + "[..64] AS aliases, score,\n"
    "       " + mention_count("node") + " AS mentions\n"
    "LIMIT $limit"
)

# The linking filter's stamp (kg/search/names.py): counts from the count store, no reads. Any
# import or resolution that adds or merges entities or mentions changes one of them.
GRAPH_COUNTS: LiteralString = (
    "CALL () { MATCH (e:Entity) RETURN count(e) AS entities }\n"
    "CALL () { MATCH ()-[r:MENTIONS]->() RETURN count(r) AS mentions }\n"
    "CALL () { MATCH ()-[r]->() RETURN count(r) AS relationships }\n"
    "RETURN entities, mentions, relationships\n"
    "LIMIT 1"
)

# entity_links and graph_counts in one round trip (kg/search/names.py): the first row holds the
# whole graph's counts (the stamp of what search keeps per process; never shown to a scoped
# caller, who may not run it by name), the others the links in the scope. Measured on the
# MuSiQue graph with graph_evidence, the two merges took 8% off a hybrid search
# (docs/benchmarks.md, "Latency on an LLM-extracted graph").
COUNTED_LINKS: LiteralString = (
    "CALL () { MATCH (e:Entity) RETURN count(e) AS entities }\n"
    "CALL () { MATCH ()-[r:MENTIONS]->() RETURN count(r) AS mentions }\n"
    "CALL () { MATCH ()-[r]->() RETURN count(r) AS relationships }\n"
    "CALL () {\n"
    "  UNWIND $phrases AS phrase\n"
    "  CALL (phrase) {\n"
    "    CALL db.index.fulltext.queryNodes('entity_names', phrase, {limit: $fetch})"
    " YIELD node, score\n"
    "    WITH node, score\n"
    "    WHERE " + in_scope("node") + " AND " + named("node", "$patterns[phrase]") + "\n"
    "    RETURN node, score\n"
    "    ORDER BY score DESC, node.id\n"
    "    LIMIT $per_phrase\n"
    "  }\n"
    "  WITH phrase, node, score LIMIT $limit\n"
    "  RETURN collect({kind: 'link', phrase: phrase, id: node.id, name: node.name,\n"
    "         type: node.type, aliases: " + aliased("node") + "[..64], score: score,\n"
    "         mentions: " + mention_count("node") + "}) AS links\n"
    "}\n"
    "RETURN ([{kind: 'counts', entities: entities, mentions: mentions,\n"
    "        relationships: relationships}] + links)[..$read_rows] AS rows"
)

# The linking filter's pages: names and aliases in id order (the entity_id constraint's index
# serves the order and the seek past $after), one page per call.
NAME_PAGE: LiteralString = (
    "MATCH (e:Entity) WHERE e.id > $after\n"
    "WITH e ORDER BY e.id\n"
    "LIMIT $limit\n"
    "RETURN collect({id: e.id, name: e.name, type: e.type, aliases: e.aliases[..64],\n"
    "       alias_sources: e.alias_sources[..64], namespaces: e.namespaces,\n"
    "       mentions: COUNT { (e)<-[:MENTIONS]-() }})[..$read_rows] AS rows"
)


def _temporal_kind(value: LiteralString) -> LiteralString:
    """Which of the shapes ``_bound`` compares ``value`` has: 0 none, 1 date, 2 zoned and 3
    local datetime, 4 text, 5 another (compares false). The rows carry temporals as ISO text,
    where a date and a text look alike."""
    return (
        "CASE WHEN " + value + " IS NULL THEN 0 WHEN " + value + " IS :: DATE THEN 1"
        " WHEN " + value + " IS :: ZONED DATETIME THEN 2"
        " WHEN " + value + " IS :: LOCAL DATETIME THEN 3"
        " WHEN " + value + " IS :: STRING THEN 4 ELSE 5 END"
    )


# The per-process relation graph (kg/search/relations.py): entities in id order with their
# degree (every relationship, as the expansion's hub test counts it) and their outgoing relations
# to entities, at most $per_entity each (one more says the entity has too many to keep).
RELATION_PAGE: LiteralString = (
    "MATCH (e:Entity) WHERE e.id > $after\n"
    "WITH e ORDER BY e.id\n"
    "LIMIT $limit\n"
    "RETURN collect({id: e.id, name: e.name, type: e.type, namespaces: e.namespaces,\n"
    "       degree: COUNT { (e)--() },\n"
    "       out: COLLECT { MATCH (e)-[r]->(t:Entity)\n"
    "                      RETURN {to: t.id, predicate: r.predicate, weight: r.weight,\n"
    "                              valid_from: r.validFrom, valid_to: r.validTo,\n"
    "                              from_kind: " + _temporal_kind("r.validFrom") + ",\n"
    "                              to_kind: " + _temporal_kind("r.validTo") + ",\n"
    "                              namespaces: r.namespaces, description: r.description,\n"
    "                              description_source: r.description_source,\n"
    "                              chunk_ids: r.chunk_ids}\n"
    "                      LIMIT $per_entity + 1 }})[..$read_rows] AS rows"
)

# One hop of the passage graph: chunks that mention each entity (at most $per_entity), and the
# entities each of those chunks mentions (at most $per_chunk) with their mention counts; names
# and titles tell which chunks are about an entity (their document is titled with its name).
# One row per distinct chunk, with the frontier entities that reached it (one per pair, so an
# entity that reached it twice is listed twice): measured on the MuSiQue graph, rows per pair
# repeated each chunk's mention list, and decoding them was half of a graph search.
# The per-process passage graph's pages (kg/search/passages.py): chunks in id order (the
# chunk_id constraint's index serves the order and the seek past $after), each with its title
# and the entities it mentions, with their names (a chunk is "about" the entity its title names).
MENTION_PAGE: LiteralString = (
    "MATCH (c:Chunk) WHERE c.id > $after\n"
    "WITH c ORDER BY c.id\n"
    "LIMIT $limit\n"
    "RETURN collect({id: c.id, title: c.title, namespace: c.namespace,\n"
    "       mentioned: [(c)-[:MENTIONS]->(m:Entity) | {id: m.id, name: m.name}][..$per_chunk]})"
    "[..$read_rows] AS rows"
)

PASSAGE_HOP: LiteralString = (
    "UNWIND $entity_ids AS eid\n"
    "MATCH (e:Entity {id: eid}) WHERE " + in_scope("e") + "\n"
    "CALL (e) {\n"
    "  MATCH (c:Chunk)-[:MENTIONS]->(e) WHERE " + chunk_in_scope("c") + "\n"
    "  RETURN c\n"
    "  LIMIT $per_entity\n"
    "}\n"
    "WITH e, c\n"
    "LIMIT $limit\n"
    "WITH c, collect({id: e.id, name: e.name}) AS reached\n"
    "CALL (c) {\n"
    "  MATCH (c)-[:MENTIONS]->(m:Entity)\n"
    "  WITH m LIMIT $per_chunk\n"
    "  RETURN collect({id: m.id, name: m.name, mentions: " + mention_count("m") + "})"
    " AS mentioned\n"
    "}\n"
    "RETURN collect({chunk: c.id, title: c.title, reached: reached, mentioned: mentioned})"
    "[..$read_rows] AS rows"
)

# The namespaces (document sources; kg/scope.py) with what each holds, in the scope. The
# fact and entity counts scan their labels once per namespace listed.
NAMESPACES: LiteralString = (
    "MATCH (d:Document)\n"
    "WITH d.source AS namespace, count(d) AS documents\n"
    "WHERE namespace IS NOT NULL AND ($namespaces IS NULL OR namespace IN $namespaces)\n"
    "WITH namespace, documents ORDER BY namespace LIMIT $limit\n"
    "CALL (namespace) {\n"
    "  MATCH (c:Chunk) WHERE c.namespace = namespace RETURN count(c) AS chunks\n"
    "}\n"
    "CALL (namespace) {\n"
    "  MATCH (f:Fact) WHERE namespace IN f.namespaces RETURN count(f) AS facts\n"
    "}\n"
    "CALL (namespace) {\n"
    "  MATCH (e:Entity) WHERE namespace IN e.namespaces RETURN count(e) AS entities\n"
    "}\n"
    "RETURN namespace, documents, chunks, facts, entities"
)
