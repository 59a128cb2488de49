"""Faults during ingest: Neo4j stopped mid-write; an LLM endpoint that only fails.

The LLM is the scripted OpenAI-compatible server on loopback (tests/fakellm.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.graph.driver import open_driver
from kg.ingest import ingest
from kg.localserver import LocalNeo4j, free_port
from kg.settings import Settings
from tests.clienv import cli_env, example_ingest_cmd
from tests.fakellm import Reply, ScriptedLLM
from tests.graphsnap import counts, snapshot

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


@pytest.mark.slow
def test_neo4j_stopped_during_ingest_then_rerun_after_restart(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    # The reference: one uninterrupted run on the session's server.
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    reference = snapshot(clean_graph)

    # A second, private server that this test may stop.
    password = "fault-test-password"
    own = Settings(
        neo4j={"password": password},
        server={"home": tmp_path / "neo4j", "bolt_port": free_port(), "http_port": free_port(),
                "heap": "512m", "pagecache": "128m"},
    )  # fmt: skip
    server = LocalNeo4j(own)
    status = server.start()
    own_settings = own.model_copy(deep=True)
    own_settings.neo4j.uri = status.bolt_uri
    try:
        cmd = example_ingest_cmd(EXAMPLE, TRIPLETS)
        env = cli_env(
            own_settings,
            KG_WRITE__BATCH_SIZE="2",
            KG_NEO4J__CONNECTION_TIMEOUT_S="2",
            KG_NEO4J__RETRY_S="2",  # the driver's retries give up sooner: the same failure
        )
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        with open_driver(
            Settings(neo4j={"uri": status.bolt_uri, "password": password}).neo4j
        ) as drv:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if counts(drv)[1] > 40:
                    break
                time.sleep(0.02)
        assert proc.poll() is None, "the ingest finished before Neo4j could be stopped"
        server.stop()
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 3, (out, err)  # kg.errors.EXIT_CODES: Neo4j unavailable
        assert "error:" in err
        assert "Neo4j" in err
        assert "Traceback" not in err
        assert password not in out + err

        server.start()
        rerun = subprocess.run(
            cmd,
            cwd=REPO,
            env=cli_env(own_settings),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert rerun.returncode == 0, rerun.stderr
        with open_driver(
            Settings(neo4j={"uri": status.bolt_uri, "password": password}).neo4j
        ) as drv:
            assert snapshot(drv) == reference
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "neo4j", ignore_errors=True)


def test_llm_that_only_fails_is_retried_then_reported_never_a_crash(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"d{i}.md").write_text(f"# Doc {i}\n\nAuthService number {i} uses PostgreSQL.\n")
    kinds = iter([Reply(status=500), Reply(status=503), Reply(payload="garbage, not json"),
                  Reply(delay_s=3.0, payload={})] * 100)  # fmt: skip

    def responder(_: dict[str, Any]) -> Reply:
        return next(kinds)

    with ScriptedLLM(responder=responder) as llm:
        env = cli_env(
            settings,
            KG_EXTRACT__BASE_URL=llm.base_url,
            KG_EXTRACT__CACHE_PATH=str(tmp_path / "cache.sqlite"),
            KG_EXTRACT__TIMEOUT_S="1",
            KG_EXTRACT__BACKOFF_ATTEMPTS="2",
            KG_EXTRACT__BACKOFF_BASE_S="0.01",
            KG_EXTRACT__MAX_RETRIES="1",
        )
        proc = subprocess.run(
            [sys.executable, "-m", "cli.main", "ingest", str(docs), "--json"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        calls = llm.calls
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads(proc.stdout)
    assert len(summary["failures"]) == 3
    assert all(f["reason"] for f in summary["failures"])
    assert calls > 3  # retried before giving up
    labels = clean_graph.execute_query(
        "MATCH (n) RETURN labels(n)[0] AS label, count(*) AS n, count(n.sha256) AS complete"
    ).records
    # The three documents, none marked complete; their chunks, searchable (pipeline rule 4);
    # the document graph's entities (their titles); the model stamp: nothing else.
    assert {r["label"]: (r["n"], r["complete"]) for r in labels} == {
        "Document": (3, 0),
        "Chunk": (3, 3),
        "Entity": (3, 0),
        "KgMeta": (1, 0),
    }
    done = clean_graph.execute_query(
        "MATCH (d:Document) WHERE d.sha256 IS NOT NULL RETURN count(d) AS n"
    ).records[0]["n"]
    assert done == 0
