"""`kg ingest` end to end against the real server.

The LLM is the scripted OpenAI-compatible HTTP server in tests/fakellm.py (loopback), spoken to
through the real openai and instructor clients. Everything else is real.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.ingest import ingest
from kg.settings import Settings
from tests.clienv import cli_env, example_ingest_cmd
from tests.fakellm import Reply, ScriptedLLM
from tests.graphsnap import counts, snapshot

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


def run_example(settings: Settings, driver: Driver, **kw: Any):  # type: ignore[no-untyped-def]
    return ingest(settings, driver, EXAMPLE, triplets=TRIPLETS, **kw)


# -- the example corpus through --triplets -----------------------------------------------------


def test_example_ingest_builds_a_resolved_temporal_graph(
    clean_graph: Driver, settings: Settings
) -> None:
    summary = run_example(settings, clean_graph)
    assert summary.documents_new == 14
    assert summary.import_errors == []
    # 98: a Russian document restating an English fact ("работает в" / "runs on") adds its
    # evidence to the same relation now (kg/extract/predicates.py SYNONYMS), not a second one
    assert summary.relations_created > 90
    # Aliases from different documents became one node, with every surface form kept.
    rows = clean_graph.execute_query(
        "MATCH (e:Entity) WHERE e.name IN ['AuthService','auth-svc'] OR 'auth-svc' IN e.aliases "
        "RETURN e.name AS name, e.aliases AS aliases"
    ).records
    assert len(rows) == 1
    assert {"AuthService", "auth-svc", "OAuth Server"} <= {rows[0]["name"], *rows[0]["aliases"]}
    # ... and the hard negative stayed apart.
    authz = clean_graph.execute_query(
        "MATCH (e:Entity {name: 'AuthzService'}) RETURN e.aliases AS aliases"
    ).records
    assert len(authz) == 1
    assert "AuthService" not in authz[0]["aliases"]
    # Ownership changed on 2024-03-01: the old edge is closed, not deleted.
    owned = clean_graph.execute_query(
        "MATCH (s:Entity)-[r:OWNED_BY]->(t:Entity) WHERE s.name = 'AuthService' "
        "RETURN t.name AS team, toString(r.validFrom) AS since, toString(r.validTo) AS until"
    ).records
    history = {(r["team"], r["since"], r["until"]) for r in owned}
    assert ("Team Identity", None, "2024-03-01") in history
    assert ("Team Platform Security", "2024-03-01", None) in history
    # Every relation carries provenance that points at real chunks.
    dangling = clean_graph.execute_query(
        "MATCH ()-[r]->() WHERE r.chunk_ids IS NOT NULL "
        "UNWIND r.chunk_ids AS cid OPTIONAL MATCH (c:Chunk {id: cid}) "
        "WITH cid, c WHERE c IS NULL RETURN count(*) AS n"
    ).records[0]["n"]
    assert dangling == 0
    # Russian predicates join their English translations (kg/extract/predicates.py SYNONYMS):
    # "зависит от" in the Russian runbook is DEPENDS_ON, one predicate with the English facts.
    predicates = {r["p"] for r in clean_graph.execute_query(
        "MATCH ()-[r]->() WHERE r.predicate IS NOT NULL RETURN DISTINCT r.predicate AS p"
    ).records}  # fmt: skip
    assert {"DEPENDS_ON", "PART_OF", "RUNS_ON"} <= predicates
    assert not any(p.startswith(("ЗАВИСИТ", "ЯВЛЯЕТСЯ", "РАБОТАЕТ")) for p in predicates)
    from_russian = clean_graph.execute_query(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE d.path STARTS WITH 'ru/' "
        "MATCH ()-[r {predicate: 'DEPENDS_ON'}]->() WHERE c.id IN r.chunk_ids "
        "RETURN count(DISTINCT r) AS n"
    ).records[0]["n"]
    assert from_russian > 0


def test_ingesting_twice_changes_nothing(clean_graph: Driver, settings: Settings) -> None:
    run_example(settings, clean_graph)
    first = snapshot(clean_graph)
    again = run_example(settings, clean_graph)
    assert again.documents_unchanged == 14
    assert again.documents_new == again.documents_changed == 0
    assert snapshot(clean_graph) == first


def test_changed_document_replaces_its_old_chunks_and_prune_removes_gone_ones(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLE, folder)
    lines = [json.loads(x) for x in TRIPLETS.read_text().splitlines()]
    triplets = tmp_path / "t.jsonl"

    def write(docs: list[dict[str, Any]]) -> None:
        triplets.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n")

    write(lines)
    ingest(settings, clean_graph, folder, triplets=triplets)
    # Change one document: its text and its facts.
    changed = dict(lines[0])
    changed["text"] = "Checkout Web now calls Ledger Service directly.\n"
    changed["triplets"] = [{"subject": "Checkout Web", "predicate": "calls",
                            "object": "Ledger Service", "subject_type": "Service",
                            "object_type": "Service"}]  # fmt: skip
    write([changed, *lines[1:]])
    summary = ingest(settings, clean_graph, folder, triplets=triplets)
    assert (summary.documents_changed, summary.documents_unchanged) == (1, 13)
    texts = [r["t"] for r in clean_graph.execute_query(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document {path: $p}) RETURN c.text AS t",
        p=changed["id"]).records]  # fmt: skip
    assert texts == [changed["text"].strip()]
    # Prune: drop two documents from the import; they and what only they supported go.
    write([changed, *lines[1:12]])
    summary = ingest(settings, clean_graph, folder, triplets=triplets, prune=True)
    assert summary.documents_pruned == 2
    paths = {
        r["p"] for r in clean_graph.execute_query("MATCH (d:Document) RETURN d.path AS p").records
    }
    assert paths == {changed["id"], *(d["id"] for d in lines[1:12])}
    orphans = clean_graph.execute_query(
        "MATCH (e:Entity) WHERE NOT (e)--() RETURN count(e) AS n"
    ).records[0]["n"]
    assert orphans == 0


def test_malformed_import_lines_are_reported_and_the_rest_load(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    good = TRIPLETS.read_text().splitlines()[0]
    bad = tmp_path / "mixed.jsonl"
    bad.write_text(good + "\n{not json\n" + '{"title": "no text"}\n')
    summary = ingest(settings, clean_graph, tmp_path, triplets=bad)
    assert summary.documents_new == 1
    assert [e["line"] for e in summary.import_errors] == [2, 3]


# -- extraction through the scripted LLM --------------------------------------------------------

FACTS = {
    "AuthService": ("Service", [("DEPENDS_ON", "PostgreSQL")]),
    "PostgreSQL": ("Database", []),
    "Checkout": ("Service", [("CALLS", "AuthService")]),
}


def responder(request: dict[str, Any]) -> Reply:
    """Extract the known names a chunk mentions; fail on purpose for chunks saying BROKEN."""
    text = " ".join(str(m.get("content") or "") for m in request["messages"])
    if "BROKEN" in text:
        return Reply(payload="this is not json")
    names = [n for n in FACTS if n in text]
    entities = [{"name": n, "type": FACTS[n][0]} for n in names]
    relations = [
        {"source": n, "target": t, "predicate": p, "weight": 0.9}
        for n in names
        for p, t in FACTS[n][1]
        if t in names
    ]
    return Reply(payload={"entities": entities, "relations": relations})


@pytest.fixture
def llm_settings(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    with ScriptedLLM(responder=responder) as llm:
        s = settings.model_copy(deep=True)
        s.llm.base_url = llm.base_url
        s.extract.cache_path = tmp_path / "cache.sqlite"
        s.extract.max_retries = 1
        s.extract.backoff_base_s = 0.01
        s.extract.timeout_s = 5
        yield s, llm


def test_llm_ingest_counts_calls_and_reuses_the_cache(
    clean_graph: Driver, llm_settings: Any, tmp_path: Path
) -> None:
    settings, llm = llm_settings
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Auth\n\nAuthService keeps its sessions in PostgreSQL.\n")
    (docs / "b.md").write_text("# Checkout\n\nCheckout calls AuthService on every order.\n")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    summary = ingest(settings, clean_graph, docs)
    assert summary.documents_new == 2
    assert summary.llm_calls == llm.calls == 2
    assert [s["path"] for s in summary.skipped] == ["logo.png"]
    records = clean_graph.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name AS a, type(r) AS t, b.name AS b"
    ).records
    rels = {(r["a"], r["t"], r["b"]) for r in records}
    assert rels == {
        ("AuthService", "DEPENDS_ON", "PostgreSQL"),
        ("Checkout", "CALLS", "AuthService"),
    }
    # Same text again, even after the graph is wiped: the cache answers, zero LLM calls.
    clean_graph.execute_query("MATCH (n) DETACH DELETE n")
    llm.reset()
    again = ingest(settings, clean_graph, docs)
    assert llm.calls == 0
    assert again.cache_hits == 2
    assert again.documents_new == 2


def test_a_failed_chunk_is_written_without_facts_and_retried_next_run(
    clean_graph: Driver, llm_settings: Any, tmp_path: Path
) -> None:
    settings, _llm = llm_settings
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("AuthService keeps its sessions in PostgreSQL.\n")
    (docs / "bad.md").write_text("BROKEN Checkout calls AuthService.\n")
    summary = ingest(settings, clean_graph, docs)
    assert len(summary.failures) == 1
    assert summary.failures[0]["reason"]
    assert not summary.ok
    names = {
        r["n"] for r in clean_graph.execute_query("MATCH (e:Entity) RETURN e.name AS n").records
    }
    assert "Checkout" not in names
    # Its chunk is written (text and vector search find it: pipeline rule 4), with no facts:
    # what it mentions is the document graph's only (its document, names it states).
    chunks = clean_graph.execute_query(
        "MATCH (c:Chunk) WHERE c.text CONTAINS 'BROKEN'"
        " RETURN c.id AS id, [(c)-[:MENTIONS]->(e) | e.name] AS mentioned"
    ).records
    assert len(chunks) == 1
    assert "Checkout" not in chunks[0]["mentioned"]
    # The document is not marked complete, so the next run tries it again.
    (docs / "bad.md").write_text("Checkout calls AuthService.\n")
    again = ingest(settings, clean_graph, docs)
    assert (again.documents_unchanged, again.documents_changed) == (1, 1)
    assert again.failures == []


def test_dry_run_estimates_and_writes_nothing(
    clean_graph: Driver, llm_settings: Any, tmp_path: Path
) -> None:
    settings, llm = llm_settings
    summary = ingest(settings, clean_graph, EXAMPLE, dry_run=True)
    assert summary.estimated_calls == summary.chunks > 0
    assert summary.estimated_tokens > 0
    assert llm.calls == 0
    assert counts(clean_graph) == (0, 0)


# -- crash safety ------------------------------------------------------------------------------


def test_ingest_killed_mid_write_then_rerun_equals_an_uninterrupted_run(
    clean_graph: Driver, settings: Settings
) -> None:
    run_example(settings, clean_graph)
    reference = snapshot(clean_graph)
    clean_graph.execute_query("MATCH (n) DETACH DELETE n")

    cmd = example_ingest_cmd(EXAMPLE, TRIPLETS)
    env = cli_env(settings, KG_WRITE__BATCH_SIZE="2")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    killed_at: tuple[int, int] | None = None
    while time.monotonic() < deadline and proc.poll() is None:
        nodes, rels = counts(clean_graph)
        if rels > 40:  # chunks and entities are in, relations are being written
            proc.send_signal(signal.SIGKILL)
            killed_at = (nodes, rels)
            break
        time.sleep(0.02)
    proc.wait(timeout=30)
    assert killed_at is not None, "the ingest finished before it could be killed"
    assert proc.returncode == -signal.SIGKILL
    assert snapshot(clean_graph) != reference  # really interrupted
    complete = clean_graph.execute_query(
        "MATCH (d:Document) WHERE d.sha256 IS NOT NULL RETURN count(d) AS n"
    ).records[0]["n"]
    assert complete < 14

    rerun = subprocess.run(
        cmd, cwd=REPO, env=cli_env(settings), capture_output=True, text=True, timeout=300
    )
    assert rerun.returncode == 0, rerun.stderr
    assert snapshot(clean_graph) == reference
    # And a third run finds nothing to do.
    third = subprocess.run(
        cmd, cwd=REPO, env=cli_env(settings), capture_output=True, text=True, timeout=300
    )
    assert json.loads(third.stdout)["documents_unchanged"] == 14
