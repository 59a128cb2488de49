"""Issue 39: ``kg migrate`` on hostile data in an old-model graph, against the real server.

Each old graph is written directly with Cypher, as an older kg (or something else) could have
left it. Migrate either converts it into a clean current-model graph, or refuses before it changes
anything, in one line naming what it cannot convert; run again, it does nothing. Hostile text
only ever travels as parameters, and every write is batched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, LiteralString

import pytest
from neo4j import Driver

from kg.documents import document_id
from kg.errors import StoreError
from kg.extract.predicates import normalize_predicate
from kg.graph.facts import UPSERT_FACTS
from kg.graph.meta import MODEL_VERSION, read_model
from kg.graph.migrate import (
    _UPSERT_FACTS_BY_RELATION,
    UNNAMED_PREDICATE,
    MigrationReport,
    migrate,
)
from kg.graph.schema import apply_schema
from kg.graph.type_labels import type_label
from kg.ingest import make_writer
from kg.languages import BY_CODE
from kg.settings import Settings
from tests.clienv import cli_env
from tests.conftest import EMBEDDING_DIM

REPO = Path(__file__).resolve().parents[2]

# -- helpers ------------------------------------------------------------------------------------

_CREATE_NODES: LiteralString = """
UNWIND $nodes AS node
CALL (node) { CREATE (n:$(node.labels)) SET n = node.props }
"""
_CREATE_RELATIONS: LiteralString = """
UNWIND $rels AS rel
MATCH (a:$(rel.from_label) {id: rel.from})
MATCH (b:$(rel.to_label) {id: rel.to})
CALL (a, b, rel) { CREATE (a)-[r:$(rel.type)]->(b) SET r = rel.props }
"""


def _node(labels: str, **props: Any) -> dict[str, Any]:
    return {"labels": labels.split(":"), "props": props}


def _rel(
    source: str, rel_type: str, target: str, frm: str = "Entity", to: str = "Entity", **props: Any
) -> dict[str, Any]:
    return {"from_label": frm, "from": source, "type": rel_type, "to_label": to, "to": target,
            "props": props}  # fmt: skip


def _write(driver: Driver, nodes: list[dict[str, Any]], rels: list[dict[str, Any]]) -> None:
    """An old graph from parameters: hostile text is data here too, never query text."""
    driver.execute_query(_CREATE_NODES, nodes=nodes)
    driver.execute_query(_CREATE_RELATIONS, rels=rels)


def _frozen(props: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in props.items()))


def _snapshot(driver: Driver) -> tuple[frozenset[Any], frozenset[Any]]:
    """Every node and relationship with its element id, labels or type, and properties (but
    when the stamp was last written: migrate() writes it again on a current graph)."""
    nodes = driver.execute_query(
        "MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels,"
        " CASE WHEN n:KgMeta THEN n {.*, updated_at: null} ELSE properties(n) END AS props"
    ).records
    rels = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN elementId(r) AS id, type(r) AS type, elementId(a) AS a,"
        " elementId(b) AS b, properties(r) AS props"
    ).records
    return (
        frozenset((r["id"], tuple(sorted(r["labels"])), _frozen(r["props"])) for r in nodes),
        frozenset((r["id"], r["type"], r["a"], r["b"], _frozen(r["props"])) for r in rels),
    )


def _run(settings: Settings, driver: Driver) -> MigrationReport:
    return migrate(driver, settings.neo4j.database, make_writer(settings, driver))


def _kg_migrate(settings: Settings) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "migrate", "--json"],
        cwd=REPO, env=cli_env(settings), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


# What a current graph never holds; each query counts its offenders. (valueType, not a type
# predicate: Neo4j 5.26 plans `NOT x IS :: STRING NOT NULL` as a scan of x's index, which misses
# the nodes without x.)
_TYPES = {"string": "STRING NOT NULL",
          "strings": ["LIST<STRING NOT NULL> NOT NULL", "LIST<NOTHING> NOT NULL"]}  # fmt: skip
_NOT_CURRENT: dict[str, LiteralString] = {
    "relations without a catalogued predicate stored under its type": """
        MATCH (:Entity)-[r]->(:Entity)
        OPTIONAL MATCH (p:Predicate {name: r.predicate})
        WITH r, p WHERE valueType(r.predicate) <> $string OR p IS NULL
                     OR p.stored_as <> type(r)
        RETURN count(*) AS n""",
    "documents without a source, or with a hash or no extraction record": """
        MATCH (d:Document)
        WHERE valueType(d.source) <> $string OR d.sha256 IS NOT NULL OR d.extraction IS NULL
        RETURN count(*) AS n""",
    "chunks without a title, a language and its label, or a namespace": """
        MATCH (c:Chunk)
        WHERE c.title IS NULL OR valueType(c.namespace) <> $string
           OR NOT c.language IN $languages OR NOT (c:ChunkEn OR c:ChunkRu)
        RETURN count(*) AS n""",
    "entities without namespaces, or whose alias_sources do not run parallel to aliases": """
        MATCH (e:Entity)
        WHERE NOT valueType(e.namespaces) IN $strings
           OR NOT valueType(e.alias_sources) IN $strings
           OR size(e.alias_sources) <> size(coalesce(e.aliases, []))
        RETURN count(*) AS n""",
    # Each fact's ends read from the fact (two ABOUT links): an EXISTS pattern may be planned
    # from the entity instead, which on a 10k-degree hub read the hub's 10k facts per relation
    # and ran past the server's 60 s bound on a loaded machine.
    "keyed relations without namespaces or a fact about both ends": """
        MATCH (a:Entity)-[r]->(b:Entity) WHERE r.key IS NOT NULL
        OPTIONAL MATCH (f:Fact {id: r.key})
        WITH a, r, b, f, [(f)-[:ABOUT]->(x) | elementId(x)] AS ends
        WHERE NOT valueType(r.namespaces) IN $strings OR f IS NULL
           OR NOT elementId(a) IN ends OR NOT elementId(b) IN ends
           OR NOT coalesce(f.namespaces = r.namespaces, false)
        RETURN count(*) AS n""",
}


def _assert_current(driver: Driver, database: str) -> None:
    """The graph is a clean current-model graph: stamped, and every element in its new form."""
    assert read_model(driver, database).version == MODEL_VERSION
    offenders = {
        what: int(driver.execute_query(query, _TYPES, languages=sorted(BY_CODE)).records[0]["n"])
        for what, query in _NOT_CURRENT.items()
    }
    assert offenders == dict.fromkeys(_NOT_CURRENT, 0)
    documents = driver.execute_query("MATCH (d:Document) RETURN d.path AS p, d.source AS s,"
                                     " d.id AS id").records  # fmt: skip
    assert all(r["id"] == document_id(r["p"], r["s"]) for r in documents)
    meta = driver.execute_query("MATCH (m:KgMeta {id: 'kg'}) RETURN m.type_labels AS l").records
    types = driver.execute_query("MATCH (e:Entity) RETURN collect(DISTINCT e.type) AS t").records
    allowed = {type_label(t) for t in types[0]["t"] if isinstance(t, str)}
    assert set(meta[0]["l"] or []) <= allowed - {None}  # a label only for a type that spells one


# -- hostile text: converted, kept byte for byte, never query text -------------------------------

INJECTION = "X]->(n) DETACH DELETE n //"
LONG = "word " * 20_000  # 100k characters
LONG_RUN = "x" * 100_000  # one 100k-character token
HOSTILE = [
    "'; MATCH (n) DETACH DELETE n //",
    '"quoted" `back`ticked` \\ backslash $param {map: 1}',
    'title:(a OR b)~2 AND c* +d -e "f g"^3 \\/ [x TO y] <script>',
    "tab\tnew\nline\rbell\x07esc\x1b[31mred\x1b[0m del\x7f",
    "\u202egnp.exe\u202c user \u2066isolate\u2069 zero\u200bwidth",
]


def _hostile_graph() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [
        _node(
            "Document",
            id="doc_v1",
            path="dir/\u202e\"q'`.md",
            root="/corpus/`x`'\x1b",
            title=HOSTILE[1],
            sha256="h",
        ),
        _node("Document", id="doc_v2", path="b.md", root="", title=LONG),
        _node("Chunk", id="c1", document_id="doc_v1", text=" ".join(HOSTILE)),
        _node("Chunk", id="c2", document_id="doc_v1", text=LONG + LONG_RUN),
        _node("Chunk", id="c3", document_id="doc_v2", text="Каппа вызывает Лямбду. " + HOSTILE[0]),
        *(
            _node(
                "Entity",
                id=f"h{i}",
                name=name,
                type=HOSTILE[i % len(HOSTILE)],
                aliases=[*HOSTILE, LONG, LONG_RUN],
                description=LONG,
            )
            for i, name in enumerate(HOSTILE)
        ),
        _node("Entity", id="k", name="Kappa", type="Service", aliases=["K"]),
        _node("Entity", id="l", name="Lambda"),  # no type: it is given no label
        _node("Entity:Fact", id="fact-typed", name="A fact", type="fact"),
    ]
    rels = [
        _rel("c1", "PART_OF", "doc_v1", "Chunk", "Document"),
        _rel("c2", "PART_OF", "doc_v1", "Chunk", "Document"),
        _rel("c3", "PART_OF", "doc_v2", "Chunk", "Document"),
        *(_rel("c1", "MENTIONS", f"h{i}", "Chunk") for i in range(len(HOSTILE))),
        _rel("c3", "MENTIONS", "k", "Chunk"),
        _rel("c2", "MENTIONS", "k", "Chunk"),
        _rel("c3", "MENTIONS", "l", "Chunk"),
        # Relationship types that look like query text, with predicates that do too.
        _rel("h0", INJECTION, "h1", key="a", predicate=INJECTION, chunk_ids=["c1"]),
        _rel(
            "h1",
            "depends_on",
            "h2",
            key="b",
            predicate=HOSTILE[0],
            chunk_ids=["c1"],
            description=LONG,
            weight=0.9,
        ),
        _rel("h2", "has `tick`", "h3", key="c", chunk_ids=["c1", "c3"]),
        _rel("h3", HOSTILE[4], "h4", key="d", chunk_ids=["c1"]),
        _rel("h4", "t" * 100_000, "k", key="e", chunk_ids=["c2"]),
        _rel("k", "long", "l", key="f", predicate=LONG, chunk_ids=["c3"]),
        # Unknown and structural types between entities; a type with no letter.
        _rel("k", "RELATED", "l", key="g", chunk_ids=["c3"]),
        _rel("k", "IN_COMMUNITY", "l", key="h", chunk_ids=["c3"]),
        _rel("l", "ABOUT", "k", key="i", chunk_ids=["c3"]),
        _rel("l", "123 !!", "k", key="j", chunk_ids=["c3"]),
        _rel("l", "9" * 100_000, "k", key="j2", chunk_ids=["c3"]),
        _rel("l", "USES", "fact-typed", key="k2", chunk_ids=["c3"]),
        # Relationships of unknown types outside entities: not the migration's, left alone.
        _rel("c1", "weird link", "doc_v2", "Chunk", "Document", note=HOSTILE[3]),
        _rel("doc_v1", "CITES", "k", "Document", note=HOSTILE[0]),
    ]
    return nodes, rels


_TEXT: LiteralString = """
MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases,
       e.description AS description ORDER BY id
"""
_OUTSIDE: LiteralString = """
MATCH (a)-[r]->(b) WHERE NOT (a:Entity AND b:Entity) AND NOT type(r) IN ['PART_OF', 'MENTIONS']
       AND NOT a:Fact
RETURN type(r) AS type, properties(r) AS props ORDER BY type
"""


@pytest.mark.parametrize("surface", ["library", "cli"])
def test_hostile_text_migrates_to_a_clean_current_graph_and_a_rerun_does_nothing(
    clean_graph: Driver, settings: Settings, surface: str
) -> None:
    db = settings.neo4j.database
    _write(clean_graph, *_hostile_graph())
    text, outside = clean_graph.execute_query(_TEXT).records, clean_graph.execute_query(_OUTSIDE)
    counts = "MATCH (n) WHERE n:Entity OR n:Document OR n:Chunk RETURN count(n) AS n"
    nodes = clean_graph.execute_query(counts).records[0]["n"]
    if surface == "library":
        report = _run(settings, clean_graph).to_dict()
    else:
        proc = _kg_migrate(settings)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
    assert report["from_version"] == 1
    assert any("'123 !!'" in note and UNNAMED_PREDICATE in note for note in report["notes"])
    assert all(len(note) < 300 for note in report["notes"])  # a type is cut, not quoted whole
    _assert_current(clean_graph, db)
    # Nothing was lost, nothing was run: every node and text is there, byte for byte.
    assert clean_graph.execute_query(counts).records[0]["n"] == nodes
    assert clean_graph.execute_query(_TEXT).records == text
    assert clean_graph.execute_query(_OUTSIDE).records == outside.records
    stored = {
        r["key"]: r["predicate"]
        for r in clean_graph.execute_query(
            "MATCH (:Entity)-[r]->(:Entity) RETURN r.key AS key, r.predicate AS predicate"
        ).records
    }
    assert stored["a"] == normalize_predicate(INJECTION)
    assert stored["b"] == normalize_predicate(HOSTILE[0])
    assert stored["c"] == "HAS_TICK"
    assert stored["j"] == stored["j2"] == UNNAMED_PREDICATE
    assert len(stored["e"]) <= 64
    assert len(stored) == 12
    facts = clean_graph.execute_query("MATCH (f:Fact) WHERE NOT f:Entity RETURN count(f) AS n")
    assert facts.records[0]["n"] == 12
    typed = clean_graph.execute_query("MATCH (e:Entity:Fact) RETURN count(e) AS n").records
    assert typed[0]["n"] == 0  # `Fact` is a structural label now
    before = _snapshot(clean_graph)
    if surface == "library":
        assert _run(settings, clean_graph).notes == ["nothing to do"]
    else:
        again = _kg_migrate(settings)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["notes"] == ["nothing to do"]
    assert _snapshot(clean_graph) == before


# -- values of the wrong type: refused before anything changes -----------------------------------

_BASE = """
CREATE (d:Document {id: 'doc_v1', path: 'a.md', root: '/corpus', title: 'A', sha256: 'h'})
CREATE (c:Chunk {id: 'c1', document_id: 'doc_v1', text: 'Kappa calls Lambda.'})-[:PART_OF]->(d)
CREATE (k:Entity {id: 'k', name: 'Kappa', type: 'Service', aliases: ['K']})
CREATE (l:Entity {id: 'l', name: 'Lambda', type: 'Service'})
CREATE (c)-[:MENTIONS]->(k) CREATE (c)-[:MENTIONS]->(l)
CREATE (k)-[:USES {key: 'k|USES|l|', chunk_ids: ['c1'], weight: 0.5, validFrom: date('2024-01-01'),
                   first_seen: datetime()}]->(l)
CREATE (l)-[:`depends on` {key: 'l|depends on|k|', chunk_ids: ['c1']}]->(k)
"""

_ENTITY = "MATCH (e:Entity {id: 'k'}) "
_DOC = "MATCH (d:Document {id: 'doc_v1'}) "
_CHUNK = "MATCH (c:Chunk {id: 'c1'}) "
_REL = "MATCH (:Entity)-[r:USES]->(:Entity) "

WRONG_TYPES = {
    "entity name int": (_ENTITY + "SET e.name = 9", "name"),
    "entity name null": (_ENTITY + "REMOVE e.name", "name"),
    "entity id null": (_ENTITY + "REMOVE e.id", "id"),
    "entity id int": (_ENTITY + "SET e.id = 5", "id"),
    "entity type list": (_ENTITY + "SET e.type = ['Service']", "type"),
    "aliases of ints": (_ENTITY + "SET e.aliases = [1, 2]", "aliases"),
    "aliases a string": (_ENTITY + "SET e.aliases = 'K'", "aliases"),
    "description int": (_ENTITY + "SET e.description = 7", "description"),
    "document id null": (_DOC + "REMOVE d.id", "id"),
    "document path null": (_DOC + "REMOVE d.path", "path"),
    "document path int": (_DOC + "SET d.path = 7", "path"),
    "document root int": (_DOC + "SET d.root = 3", "root"),
    "document title list": (_DOC + "SET d.title = ['A']", "title"),
    "chunk id int": (_CHUNK + "SET c.id = 1", "id"),
    "chunk text int": (_CHUNK + "SET c.text = 12", "text"),
    "chunk_ids a string": (_REL + "SET r.chunk_ids = 'c1'", "chunk_ids"),
    "chunk_ids of ints": (_REL + "SET r.chunk_ids = [1, 2]", "chunk_ids"),
    "key int": (_REL + "SET r.key = 3", "key"),
    "key list": (_REL + "SET r.key = ['k']", "key"),
    "validFrom string": (_REL + "SET r.validFrom = 'yesterday'", "validFrom"),
    "validFrom int": (_REL + "SET r.validFrom = 20240101", "validFrom"),
    "validTo string": (_REL + "SET r.validTo = '2024-02-01'", "validTo"),
    "first_seen string": (_REL + "SET r.first_seen = 'now'", "first_seen"),
    "weight string": (_REL + "SET r.weight = 'heavy'", "weight"),
    "relation description list": (_REL + "SET r.description = ['d']", "description"),
    "predicate int in a model 4 graph": (
        _REL + "SET r.predicate = 5 MERGE (m:KgMeta {id: 'kg'}) SET m.model_version = 4",
        "predicate",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_values_of_the_wrong_type_are_refused_before_anything_changes(
    clean_graph: Driver, settings: Settings, case: str
) -> None:
    mutation, prop = WRONG_TYPES[case]
    clean_graph.execute_query(_BASE)
    clean_graph.execute_query(mutation)
    before = _snapshot(clean_graph)
    with pytest.raises(StoreError, match=rf"\b{prop} is ") as refused:
        _run(settings, clean_graph)
    assert "changed nothing" in str(refused.value)
    assert _snapshot(clean_graph) == before  # not a property moved, not a stamp written


def test_kg_migrate_refuses_hostile_values_in_one_line_without_a_traceback(
    clean_graph: Driver, settings: Settings
) -> None:
    clean_graph.execute_query(_BASE)
    # (An id of 1,000 characters: the id index holds no longer one.)
    hostile_id = "\u202ek\x1b[2J" + "i" * 1_000
    clean_graph.execute_query(_ENTITY + "SET e.name = 9, e.id = $id", id=hostile_id)
    clean_graph.execute_query(_REL + "SET r.validFrom = 'yesterday'")
    before = _snapshot(clean_graph)
    proc = _kg_migrate(settings)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    err = " ".join(proc.stderr.split())  # as one line: the console wraps it at its width
    assert "name is INTEGER" in err
    assert "validFrom is STRING" in err
    assert "'k|USES|l|'" in err  # the relation is named by its key
    assert "\x1b" not in err
    assert "\u202e" not in err  # shown escaped, never as a control character
    assert "i" * 100 not in err  # a long id is cut in the message
    assert _snapshot(clean_graph) == before


# -- shapes an older model could not have: recomputed -------------------------------------------

_MODEL_6 = """
CREATE (:KgMeta {id: 'kg', model_version: 6})
CREATE (d:Document {id: $doc, path: 'a.md', root: '/a', source: 'alpha', title: 'A',
                    extraction: 'llm', extraction_model: '', extraction_prompt: ''})
CREATE (c:Chunk:ChunkEn {id: 'c1', document_id: $doc, text: 'Kappa uses Lambda.', title: 'A',
                         language: 'en', namespace: 5})-[:PART_OF]->(d)
CREATE (c2:Chunk:ChunkEn {id: 'c2', document_id: $doc, text: 'More.', title: 'A',
                          language: 'en'})-[:PART_OF]->(d)
CREATE (k:Entity {id: 'k', name: 'Kappa', type: 'Service', aliases: ['K', 'KK'],
                  namespaces: 'alpha', alias_sources: ['x']})
CREATE (l:Entity {id: 'l', name: 'Lambda', type: 'Service', aliases: ['L'],
                  namespaces: ['alpha'], alias_sources: ['alpha', 'beta', 'gamma']})
CREATE (m:Entity {id: 'm', name: 'Mu', type: 'Service', namespaces: ['alpha'],
                  alias_sources: 'alpha'})
CREATE (c)-[:MENTIONS]->(k) CREATE (c)-[:MENTIONS]->(l) CREATE (c2)-[:MENTIONS]->(m)
CREATE (k)-[:RELATED {key: 'k|USES|l|', predicate: 'USES', chunk_ids: ['c1'],
                      namespaces: 'alpha'}]->(l)
CREATE (:Predicate {name: 'USES', stored_as: 'RELATED', promoted: false})
CREATE (f:Fact {id: 'k|USES|l|', text: 'kappa uses lambda', predicate: 'USES', namespaces: 'alpha'})
CREATE (f)-[:ABOUT]->(k) CREATE (f)-[:ABOUT]->(l)
"""


def test_namespace_shapes_no_kg_wrote_are_recomputed_from_the_chunks(
    clean_graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    clean_graph.execute_query(_MODEL_6, doc=document_id("a.md", "alpha"))
    report = _run(settings, clean_graph)
    assert report.from_version == 6
    _assert_current(clean_graph, db)
    entities = {
        r["id"]: (r["ns"], r["sources"])
        for r in clean_graph.execute_query(
            "MATCH (e:Entity) RETURN e.id AS id, e.namespaces AS ns, e.alias_sources AS sources"
        ).records
    }
    assert entities == {
        "k": (["alpha"], ["alpha", "alpha"]),
        "l": (["alpha"], ["alpha"]),
        "m": (["alpha"], []),
    }
    chunks = clean_graph.execute_query("MATCH (c:Chunk) RETURN collect(c.namespace) AS ns")
    assert chunks.records[0]["ns"] == ["alpha", "alpha"]
    rel = clean_graph.execute_query(
        "MATCH ()-[r:RELATED]->() MATCH (f:Fact {id: r.key})"
        " RETURN r.namespaces AS r, f.namespaces AS f"
    ).records[0]
    assert (rel["r"], rel["f"]) == (["alpha"], ["alpha"])
    before = _snapshot(clean_graph)
    assert _run(settings, clean_graph).notes == ["nothing to do"]
    assert _snapshot(clean_graph) == before


def test_model_1_predicates_that_are_not_strings_give_way_to_their_type(
    clean_graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    clean_graph.execute_query(_BASE)
    values: list[Any] = [5, 2.5, [1, 2], "uses it", True]
    clean_graph.execute_query(
        "MATCH (k:Entity {id: 'k'}), (l:Entity {id: 'l'}) UNWIND $rows AS row"
        " CREATE (k)-[:USES {key: row.key, predicate: row.value, chunk_ids: ['c1']}]->(l)",
        rows=[{"key": f"k|{json.dumps(v)}|l|", "value": v} for v in values],
    )
    clean_graph.execute_query(
        "MATCH (k:Entity {id: 'k'}), (l:Entity {id: 'l'})"
        " CREATE (k)-[:USES {key: 'k|nan|l|', predicate: 0.0 / 0.0, chunk_ids: ['c1']}]->(l)"
    )
    report = _run(settings, clean_graph)
    _assert_current(clean_graph, db)
    stored = {
        r["key"]: r["p"]
        for r in clean_graph.execute_query(
            "MATCH (:Entity)-[r]->(:Entity) RETURN r.key AS key, r.predicate AS p"
        ).records
    }
    assert stored == {
        "k|USES|l|": "USES", "k|5|l|": "USES", "k|2.5|l|": "USES", "k|[1, 2]|l|": "USES",
        "k|true|l|": "USES", "k|nan|l|": "USES", 'k|"uses it"|l|': "USES_IT",
        "l|depends on|k|": "DEPENDS_ON",
    }  # fmt: skip
    assert any("not a string" in note for note in report.notes)
    assert _run(settings, clean_graph).notes == ["nothing to do"]


# -- ids that collide ---------------------------------------------------------------------------


def test_documents_whose_new_ids_collide_are_refused_before_anything_changes(
    clean_graph: Driver, settings: Settings
) -> None:
    clean_graph.execute_query(_BASE)
    clean_graph.execute_query(
        "CREATE (:Document {id: 'doc_copy', path: 'a.md', root: '/corpus', title: 'A copy'})"
    )
    before = _snapshot(clean_graph)
    with pytest.raises(StoreError, match=r"'a\.md'.*'/corpus'") as refused:
        _run(settings, clean_graph)
    assert "changed nothing" in str(refused.value)
    assert _snapshot(clean_graph) == before


@pytest.fixture
def no_entity_id_constraint(clean_graph: Driver, settings: Settings) -> Iterator[Driver]:
    """A graph from before the entity id constraint existed; the schema is whole again after."""
    db = settings.neo4j.database
    clean_graph.execute_query("DROP CONSTRAINT entity_id IF EXISTS", database_=db)
    try:
        yield clean_graph
    finally:
        with clean_graph.session(database=db) as session:
            session.run(
                "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
            ).consume()
        apply_schema(clean_graph, database=db, dimension=EMBEDDING_DIM)


def test_kg_migrate_refuses_duplicate_entity_ids_in_one_line_and_changes_nothing(
    no_entity_id_constraint: Driver, settings: Settings
) -> None:
    driver = no_entity_id_constraint
    driver.execute_query(_BASE)
    driver.execute_query("CREATE (:Entity {id: 'k', name: 'Kappa again', type: 'Service'})")
    before = _snapshot(driver)
    proc = _kg_migrate(settings)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    err = " ".join(proc.stderr.split())
    assert "ConstraintCreationFailed" in err
    assert "property `id` = 'k'" in err  # the duplicate, named
    assert _snapshot(driver) == before
    assert read_model(driver, settings.neo4j.database).version is None  # still model 1


# -- the model stamp itself ---------------------------------------------------------------------


@pytest.mark.parametrize("version", ["x", [7], "7.5"])
def test_a_model_stamp_that_is_no_version_is_refused_in_one_line(
    clean_graph: Driver, settings: Settings, version: Any
) -> None:
    clean_graph.execute_query(_BASE)
    clean_graph.execute_query("CREATE (:KgMeta {id: 'kg', model_version: $v})", v=version)
    before = _snapshot(clean_graph)
    with pytest.raises(StoreError, match="model_version"):
        _run(settings, clean_graph)
    proc = _kg_migrate(settings)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "model_version" in " ".join(proc.stderr.split())
    assert _snapshot(clean_graph) == before


# -- a supernode: batched, and linear in its degree ---------------------------------------------


def test_the_migrations_fact_statement_seeks_each_relation_by_its_element_id(
    driver: Driver, settings: Settings
) -> None:
    # Derived from the writer's statement (what a fact copies is defined once): if that one
    # changes how it finds the relation, the derivation must change with it.
    assert _UPSERT_FACTS_BY_RELATION != UPSERT_FACTS
    plan = driver.execute_query(
        "EXPLAIN " + _UPSERT_FACTS_BY_RELATION, rows=[], database_=settings.neo4j.database
    ).summary.plan
    operators: list[str] = []
    todo = [plan]
    while todo:
        step = todo.pop()
        operators.append(step["operatorType"])
        todo.extend(step.get("children", []))
    assert any(op.startswith("DirectedRelationshipByElementIdSeek") for op in operators)
    assert not any(op.startswith("Expand(All)") for op in operators)


DEGREE = 10_000
MENTIONS = 2_000


class RecordingDriver:
    """The real driver, recording the size of every batch of rows sent to the server."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self.batches: list[int] = []
        self.queries: list[str] = []

    def execute_query(self, query: Any, parameters: Any = None, *args: Any, **kwargs: Any) -> Any:
        rows = (parameters or {}).get("rows", kwargs.get("rows"))
        if isinstance(rows, list):
            self.batches.append(len(rows))
        self.queries.append(str(query))
        return self._driver.execute_query(query, parameters, *args, **kwargs)

    def session(self, *args: Any, **kwargs: Any) -> Any:
        return self._driver.session(*args, **kwargs)

    @property
    def execute_query_bookmark_manager(self) -> Any:
        return self._driver.execute_query_bookmark_manager


def test_a_supernode_migrates_in_bounded_batches_in_time_linear_in_its_degree(
    clean_graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    clean_graph.execute_query(
        """
        CREATE (d:Document {id: 'doc_v1', path: 'a.md', root: '/corpus', title: 'A'})
        CREATE (h:Entity {id: 'hub', name: 'Hub', type: 'Service'})
        WITH d, h UNWIND range(1, $degree) AS i
        CREATE (e:Entity {id: 'e' + i, name: 'Leaf ' + i, type: 'Service'})
        CREATE (h)-[:`links to` {key: 'hub|links to|e' + i + '|',
                                 chunk_ids: ['c' + (i % 100)]}]->(e)
        """,
        degree=DEGREE,
    )
    clean_graph.execute_query(
        "MATCH (d:Document), (h:Entity {id: 'hub'}) UNWIND range(0, $n - 1) AS i"
        " CREATE (c:Chunk {id: 'c' + i, document_id: 'doc_v1', text: 'The hub links leaves.'})"
        "-[:PART_OF]->(d) CREATE (c)-[:MENTIONS]->(h)",
        n=MENTIONS,
    )
    recording = RecordingDriver(clean_graph)
    writer = make_writer(settings, clean_graph)
    started = time.monotonic()
    report = migrate(recording, db, writer)  # type: ignore[arg-type]
    elapsed = time.monotonic() - started
    assert report.relations_retyped == DEGREE
    assert report.facts_created == DEGREE
    _assert_current(clean_graph, db)
    assert recording.batches
    assert max(recording.batches) <= 1_000  # every write a bounded transaction
    moves = [q for q in recording.queries if "DELETE r" in q]
    assert len(moves) >= 3  # 10k relations moved 5,000 at a time, then one that finds none
    # A fact found from its subject cost the hub's degree per fact (degree² in all: 520 s for
    # 12k relations); found by its relation, the whole migration takes seconds.
    assert elapsed < 90, f"{elapsed:.0f} s"
    assert migrate(clean_graph, db, writer).notes == ["nothing to do"]
