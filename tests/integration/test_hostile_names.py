"""Issue 26 (round 3 outside test): hostile names, ids and lines never block a folder.

Real Neo4j, real ingest; no LLM (``--graph metadata`` or triplets files). Each test's hostile
item is cut or refused and reported alone; everything else of the folder is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.errors import ConfigError
from kg.graph.meta import MODEL_VERSION, read_model
from kg.graph.migrate import migrate
from kg.ingest import ingest, make_writer
from kg.limits import MAX_DESCRIPTION_CHARS, MAX_KEY_CHARS, MAX_NAME_CHARS
from kg.settings import Settings
from tests.clienv import cli_env


def _jsonl(path: Path, *lines: str | dict[str, Any]) -> Path:
    rows = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(rows) + "\n")
    return path


def _documents(driver: Driver) -> dict[str, str | None]:
    records = driver.execute_query("MATCH (d:Document) RETURN d.path AS p, d.sha256 AS h").records
    return {r["p"]: r["h"] for r in records}


def _longest(driver: Driver, query: str) -> int:
    return int(driver.execute_query(query).records[0]["n"] or 0)


# -- break 1: every value that reaches an indexed property is bounded ---------------------------


def test_oversized_headings_titles_and_ids_are_cut_and_the_folder_completes(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.md").write_text(
        "# " + "Ж" * 9_100 + "\n\nLong heading body.\n\n## " + "h" * 9_000
    )
    (docs / "good.md").write_text("# Good\n\nAuthService keeps its sessions in PostgreSQL.\n")
    first = ingest(settings, clean_graph, docs, graph="metadata")
    assert first.ok
    assert first.documents_new == 2
    stored = _documents(clean_graph)
    assert set(stored) == {"long.md", "good.md"}
    assert all(stored.values())  # every document has its hash: complete
    longest_name = "MATCH (e:Entity) RETURN max(size(e.name)) AS n"
    assert _longest(clean_graph, longest_name) == MAX_NAME_CHARS
    assert ingest(settings, clean_graph, docs, graph="metadata").documents_unchanged == 2

    long_id = "i" * 10_000
    triplets = _jsonl(
        tmp_path / "t.jsonl",
        {"id": long_id, "title": "T" * 9_000, "text": "Alpha uses Beta.",
         "triplets": [{"subject": "Alpha", "predicate": "uses", "object": "Beta"}]},
        {"id": long_id + "x", "title": "Other", "text": "Gamma uses Delta."},
        {"id": "ok", "title": "Fine", "text": "Epsilon uses Zeta.",
         "triplets": [{"subject": "Epsilon", "predicate": "uses", "object": "Zeta"}]},
    )  # fmt: skip
    imported = ingest(settings, clean_graph, tmp_path, triplets=triplets, namespace="t")
    assert imported.ok
    assert imported.documents_new == 3
    assert not imported.import_errors
    paths = [p for p in _documents(clean_graph) if p.startswith("i")]
    # Two ids sharing their first 10,000 characters stay two documents (hash suffix).
    assert len(paths) == 2
    assert len(set(paths)) == 2
    assert all(len(p) == MAX_KEY_CHARS for p in paths)
    assert all(_documents(clean_graph).values())
    again = ingest(settings, clean_graph, tmp_path, triplets=triplets, namespace="t")
    assert again.documents_unchanged == 3
    assert again.documents_new == 0


def test_an_oversized_namespace_is_refused_and_nothing_is_written(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    with pytest.raises(ConfigError, match="namespace"):
        ingest(settings, clean_graph, tmp_path, graph="metadata", namespace="n" * 10_000)
    assert _documents(clean_graph) == {}


# -- break 8: one deeply nested line ------------------------------------------------------------


def test_a_deeply_nested_triplets_line_is_skipped_and_reported_the_rest_loads(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    deep = '{"id": "deep", "title": "Deep", "text": "x", "meta": ' + "[" * 2_000 + "]" * 2_000
    triplets = _jsonl(
        tmp_path / "t.jsonl",
        {"id": "a", "title": "A", "text": "Alpha uses Beta.",
         "triplets": [{"subject": "Alpha", "predicate": "uses", "object": "Beta"}]},
        deep + "}",
        '{"id": "s", "title": "S", "text": "bad \\ud800 surrogate"}',
        {"id": "b", "title": "B", "text": "Gamma uses Delta."},
    )  # fmt: skip
    summary = ingest(settings, clean_graph, tmp_path, triplets=triplets)
    assert sorted(_documents(clean_graph)) == ["a", "b"]
    assert all(_documents(clean_graph).values())
    reasons = {e["line"]: e["reason"] for e in summary.import_errors}
    assert set(reasons) == {2, 3}
    assert "nested too deeply" in reasons[2]
    assert "Unicode" in reasons[3]


# -- break 9: a file name that is not valid UTF-8 -----------------------------------------------


def test_a_file_name_that_is_not_utf8_is_skipped_and_the_rest_is_ingested(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nAuthService keeps its sessions.\n")
    with open(os.path.join(os.fsencode(docs), b"bad\xff.md"), "wb") as fh:
        fh.write(b"# Bad\n\nText.\n")
    os.mkdir(os.path.join(os.fsencode(docs), b"dir\xfe"))
    with open(os.path.join(os.fsencode(docs), b"dir\xfe", b"inside.md"), "wb") as fh:
        fh.write(b"# Inside\n\nText.\n")
    summary = ingest(settings, clean_graph, docs, graph="metadata")
    assert summary.ok
    assert _documents(clean_graph).keys() == {"good.md"}
    skipped = {s["path"]: s["reason"] for s in summary.skipped}
    assert set(skipped) == {"bad\\xff.md", "dir\\xfe"}
    assert all("not valid UTF-8" in reason for reason in skipped.values())
    json.dumps(summary.to_dict(), ensure_ascii=False).encode("utf-8")  # printable as --json


# -- break 10: names printed by the CLI are inert -----------------------------------------------

_HOSTILE_NAMES = [
    "clear\x1b[2J\x1b[31mred.png",
    "title\x1b]0;pwned\x07.png",
    "row\nFAKE ROW skipped ok.md.png",
    "[link=mailto:a@example.com]click.png",  # no closing tag: a name holds no '/'
    "[bold red]markup.png",
]


def test_file_names_cannot_rewrite_the_cli_output(settings: Settings, tmp_path: Path) -> None:
    docs = tmp_path / "docs\x1b]8;;mailto:x@example.com\x1b\\"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nText.\n")
    for name in _HOSTILE_NAMES:  # unsupported type: skipped, so the summary names each
        (docs / name).write_bytes(b"\x89PNG\r\n")
    with open(os.path.join(os.fsencode(docs), b"bad\xff.png"), "wb") as fh:
        fh.write(b"x")
    env = cli_env(settings, FORCE_COLOR="1", COLUMNS="400", TERM="xterm-256color")
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", os.fsencode(docs), "--graph", "metadata"],
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )
    out = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert "\x1b[2J" not in out
    assert "\x1b]" not in out
    assert "\x07" not in out
    assert "\nFAKE ROW" not in out  # no forged row
    assert "[link=mailto:a@example.com]click" in out  # markup shown, not interpreted
    assert "[bold red]markup" in out
    assert "clear\\x1b[2J\\x1b[31mred.png" in out
    assert "bad\\xff.png" in out
    # --json is unchanged: the names, JSON-escaped.
    as_json = subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", os.fsencode(docs), "--graph", "metadata",
         "--json"],
        capture_output=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    skipped = {s["path"] for s in json.loads(as_json.stdout)["skipped"]}
    assert set(_HOSTILE_NAMES) <= skipped


# -- minor: kg migrate meets model 1 types that are not predicates ------------------------------

_V1_ODD_TYPES = """
CREATE (d:Document {id: 'doc_v1', path: 'a.md', root: '/corpus', title: 'A', sha256: 'h'})
CREATE (k:Entity {id: 'k', name: 'Kappa', type: 'Service'})
CREATE (l:Entity {id: 'l', name: 'Lambda', type: 'Service'})
CREATE (k)-[:`X Y` {key: 'k|X Y|l|', weight: 0.5, chunk_ids: ['c']}]->(l)
CREATE (k)-[:depends_on {key: 'k|depends_on|l|', weight: 0.9, chunk_ids: ['c']}]->(l)
CREATE (l)-[:`uses it` {key: 'l|uses it|k|', predicate: 'uses it', chunk_ids: ['c']}]->(k)
"""


def test_migrate_converts_model_1_types_that_are_not_predicates(
    clean_graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    clean_graph.execute_query(_V1_ODD_TYPES, database_=db)
    report = migrate(clean_graph, db, make_writer(settings, clean_graph))
    assert report.from_version == 1
    assert read_model(clean_graph, db).version == MODEL_VERSION
    stored = {
        (r["p"], r["t"], r["w"])
        for r in clean_graph.execute_query(
            "MATCH (:Entity)-[r]->(:Entity) RETURN r.predicate AS p, type(r) AS t, r.weight AS w"
        ).records
    }
    # Normalized like any extracted predicate; DEPENDS_ON is configured as typed; properties kept.
    assert stored == {("X_Y", "RELATED", 0.5), ("DEPENDS_ON", "DEPENDS_ON", 0.9),
                      ("USES_IT", "RELATED", None)}  # fmt: skip
    assert migrate(clean_graph, db, make_writer(settings, clean_graph)).notes == ["nothing to do"]


# -- issue 39: a description is bounded as a name is ---------------------------------------------


def test_a_million_character_description_is_stored_and_returned_cut(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    huge = "Alpha " + "описание " * 120_000  # over 1,000,000 characters
    triplets = _jsonl(
        tmp_path / "t.jsonl",
        {"id": "d", "title": "D", "text": "Alpha uses Beta.",
         "entities": [{"name": "Alpha", "type": "Service", "description": huge}],
         "triplets": [{"subject": "Alpha", "predicate": "uses", "object": "Beta",
                       "description": huge}]},
    )  # fmt: skip
    summary = ingest(settings, clean_graph, tmp_path, triplets=triplets)
    assert summary.ok
    assert not summary.import_errors
    stored = clean_graph.execute_query(
        "MATCH (e:Entity {name: 'Alpha'})-[r]->(:Entity {name: 'Beta'})"
        " RETURN e.description AS e, r.description AS r"
    ).records[0]
    for text in (stored["e"], stored["r"]):
        assert len(text) == MAX_DESCRIPTION_CHARS
        assert text.startswith("Alpha описание")
        assert text.endswith("…")
    from kg import KnowledgeGraph

    with KnowledgeGraph(settings) as graph:
        found = graph.search("Alpha", mode="graph")
    shown = [e.description or "" for e in found.entities] + [
        r.description or "" for r in found.relations
    ]
    assert any(shown)
    assert max(len(t) for t in shown) <= MAX_DESCRIPTION_CHARS
