"""A failed extraction never leaves a file unsearchable (issue 42, item 3; pipeline rule 4).

A plain `kg ingest` with no LLM listening (a closed loopback port) writes every chunk, so
`kg search --mode text` finds each file's phrase at once; the error names the refused
connection once, with both ways out. With the scripted OpenAI-compatible server of
tests/fakellm.py (the one stand-in the tests allow) failing some chunks, the next run asks the
LLM for those chunks only. Neo4j is real. The same runs check the progress a pipe sees
(item 4): plain stage lines with their counts on stderr, and with ``--json`` nothing on stdout
but the JSON object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neo4j import Driver

from kg.ingest import STAGES, ingest
from kg.settings import Settings
from tests.apiserver import free_port
from tests.clienv import run_kg
from tests.fakellm import Reply, ScriptedLLM

DOCS = {
    "hr/leave.md": "# Leave policy\n\nEmployees take the quokka allowance each spring.\n",
    "ops/runbook.md": "# Runbook\n\nRestart the heliotrope queue when it stalls.\n",
    "ru/заметка.md": "# Заметка\n\nСервис платежей хранит выдру в архиве.\n",
}
PHRASES = {"hr/leave.md": "quokka", "ops/runbook.md": "heliotrope", "ru/заметка.md": "выдру"}


def _folder(root: Path) -> Path:
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _stage_lines(stderr: str) -> dict[str, list[str]]:
    """The plain progress lines (cli/progress.py) by stage, seconds cut off."""
    lines: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        name, _, rest = line.partition(": ")
        if name in (*STAGES, "workers") and rest:
            lines.setdefault(name, []).append(rest.rsplit(" · ", 1)[0] if " s" in rest else rest)
    return lines


def test_a_closed_llm_port_leaves_every_file_searchable_and_says_why_once(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "docs")
    closed = {
        "KG_LLM__BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
        "KG_LLM__MAX_RETRIES": "0",
        "KG_EXTRACT__CACHE_PATH": str(tmp_path / "cache.sqlite"),
    }
    done = run_kg(settings, "ingest", str(folder), **closed)
    out = done.stdout + done.stderr
    assert "no running event loop" not in out
    rows = [x for x in out.splitlines() if x.startswith("│ failed") and "failed chunks" not in x]
    assert len(rows) == 1, out  # one row for every chunk the refusal stopped
    assert "failed 3 chunks" in rows[0]
    assert "retrying" not in out  # a refused port is not retried chunk by chunk
    assert "--graph metadata" in out
    # Not a terminal: plain stage lines on stderr, with their counts (issue 42, item 4).
    stages = _stage_lines(done.stderr)
    assert stages["load"] == ["started", f"done, {len(DOCS)} files"], done.stderr
    assert stages["chunk"][-1].startswith(f"done, {len(DOCS)}/{len(DOCS)} documents · "), stages
    assert stages["extract"][-1] == "done, 3/3 chunks · 0 LLM calls · 3 failed", stages
    # the run's writes, then the finish's (resolved entities and the facts written)
    assert stages["write"][1] == "done, 3/3 steps · 3 chunks", stages
    finish = r"done, 4/4 steps · \d+ entities · \d+ relations · \d+ facts"
    assert re.fullmatch(finish, stages["write"][-1]), stages
    assert "│ chunk" not in done.stderr  # no rich bar off a terminal
    json_run = run_kg(settings, "ingest", str(folder), "--json", **closed)
    # --json: the one JSON object on stdout, nothing else, and no progress on stderr.
    assert json_run.stdout.startswith("{"), json_run.stdout
    assert json_run.stdout.count("\n") == 1, json_run.stdout
    assert _stage_lines(json_run.stderr) == {}, json_run.stderr
    summary = json.loads(json_run.stdout)
    reasons = {f["reason"] for f in summary["failures"]}
    assert len(reasons) == 1, reasons
    assert "Connect call failed" in reasons.pop()
    assert summary["documents_incomplete"] == len(DOCS)
    # Resolution waits on no LLM: nothing was extracted. Its own work is well under a second
    # quiet; the bound leaves room for a loaded machine (0.77 s seen beside a benchmark).
    assert summary["timings"].get("resolve", 0.0) <= 3.0, summary["timings"]
    chunks = clean_graph.execute_query("MATCH (c:Chunk) RETURN count(c) AS n").records[0]["n"]
    assert chunks == summary["chunks"] > 0
    for path, phrase in PHRASES.items():
        found = run_kg(settings, "search", phrase, "--mode", "text", "--json")
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)["local"]["chunks"]
        assert hits, phrase
        assert hits[0]["document_path"] == path, (phrase, hits)


class _Counts:
    """A counting Progress (kg.ingest.CountingProgress): each stage's last counts."""

    def __init__(self) -> None:
        self.last: dict[str, dict[str, int]] = {}
        self._stage = ""

    def stage(self, name: str, total: int | None) -> None:
        self._stage = name

    def advance(self, amount: int = 1) -> None:
        pass

    def note(self, counts: Mapping[str, int]) -> None:
        self.last.setdefault(self._stage, {}).update(counts)


def _extraction(chunk: str) -> dict[str, Any]:
    name = "Quokka Allowance" if "quokka" in chunk else "Heliotrope Queue"
    return {"entities": [{"name": name, "type": "Thing"}], "relations": []}


def test_the_next_run_asks_the_llm_for_the_failed_chunks_only(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "docs")
    (folder / "ru" / "заметка.md").unlink()
    state = {"fail": True}

    def respond(request: dict[str, Any]) -> Reply:
        chunk = str(request["messages"][-1].get("content") or "")
        if state["fail"] and "heliotrope" in chunk:
            return Reply(status=500, payload={"error": {"message": "scripted failure"}})
        return Reply(payload=_extraction(chunk))

    with ScriptedLLM(responder=respond) as llm:
        own = settings.model_copy(deep=True)
        own.llm.base_url = llm.base_url
        own.llm.max_retries = 0
        own.extract.cache_path = tmp_path / "cache.sqlite"
        counted = _Counts()
        first = ingest(own, clean_graph, folder, progress=counted)
        assert [f["document_id"] for f in first.failures]
        # what the progress display was told as chunks finished: the summary's own counters
        assert counted.last["extract"] == {
            "calls": first.llm_calls, "cached": 0, "failed": len(first.failures)
        }  # fmt: skip
        assert first.llm_calls >= 2
        assert counted.last["write"]["facts"] == first.facts_created
        assert first.documents_incomplete == 1
        chunks = clean_graph.execute_query("MATCH (c:Chunk) RETURN count(c) AS n").records[0]["n"]
        assert chunks == first.chunks == 2  # the failed chunk is written too
        state["fail"] = False
        llm.reset()
        again = ingest(own, clean_graph, folder)
        assert again.documents_incomplete == 0
        assert again.documents_unchanged == 1  # the document that succeeded is not redone
        assert llm.calls == 1  # only the failed chunk is asked again
        names = {
            r["n"] for r in clean_graph.execute_query("MATCH (e:Entity) RETURN e.name AS n").records
        }
        assert {"Quokka Allowance", "Heliotrope Queue"} <= names
        assert ingest(own, clean_graph, folder).documents_unchanged == 2
