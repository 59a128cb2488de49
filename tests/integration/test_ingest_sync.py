"""Re-ingest keeps the graph in step with the folder, as a user meets it: `kg ingest` in a
subprocess, against the real server, with the scripted OpenAI-compatible LLM (tests/fakellm.py).

Gone means absent on disk: a deleted file's document goes (with its sole facts and the entities
nothing else holds), while files left out by --include/--exclude, skipped files, other workers'
files and a second triplets file into the same namespace never delete anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg import KnowledgeGraph
from kg.errors import ConfigError, exit_code
from kg.graph.meta import MODEL_VERSION
from kg.search.global_models import RoutedRequest
from kg.settings import Settings
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]

# What the scripted LLM knows: each name's type and the facts it states when both ends appear.
FACTS = {
    "AuthService": ("Service", [("DEPENDS_ON", "PostgreSQL")]),
    "PostgreSQL": ("Database", []),
    "Quokkaflux": ("Service", [("CALLS", "AuthService")]),
    "Ledger": ("Service", [("USES", "PostgreSQL")]),
}

DOCS = {
    "auth.md": "# Auth\n\nAuthService keeps its sessions in PostgreSQL.\n",
    "quokka.md": "# Quokka\n\nQuokkaflux calls AuthService on every marsupial order.\n",
    "ledger.md": "# Ledger\n\nLedger writes its journal to PostgreSQL.\n",
}


def responder(request: dict[str, Any]) -> Reply:
    text = " ".join(str(m.get("content") or "") for m in request["messages"])
    # The prompt's own examples must not count: only the chunk (the last user message).
    chunk = str(request["messages"][-1].get("content") or "") if request["messages"] else text
    names = [n for n in FACTS if n in chunk]
    entities = [{"name": n, "type": FACTS[n][0]} for n in names]
    relations = [
        {"source": n, "target": t, "predicate": p, "weight": 0.9}
        for n in names
        for p, t in FACTS[n][1]
        if t in names
    ]
    return Reply(payload={"entities": entities, "relations": relations})


@dataclass
class Cli:
    env: dict[str, str]
    llm: ScriptedLLM
    settings: Settings

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *args],
            capture_output=True,
            text=True,
            env={**self.env, **env},
            cwd=REPO,
            check=False,
            timeout=300,
        )

    def ingest(self, *args: str, **env: str) -> dict[str, Any]:
        proc = self.run("ingest", *args, "--json", **env)
        assert proc.returncode == 0, proc.stderr
        summary: dict[str, Any] = json.loads(proc.stdout)
        return summary


@pytest.fixture
def cli(clean_graph: Driver, settings: Settings, tmp_path: Path) -> Iterator[Cli]:
    with ScriptedLLM(responder=responder) as llm:
        env = cli_env(
            settings,
            KG_LLM__BASE_URL=llm.base_url,
            KG_EXTRACT__CACHE_PATH=str(tmp_path / "cache.sqlite"),
            KG_EXTRACT__MAX_RETRIES="1",
            KG_EXTRACT__TIMEOUT_S="10",
        )
        own = settings.model_copy(deep=True)
        own.llm.base_url = llm.base_url
        yield Cli(env, llm, own)


def folder(tmp_path: Path, docs: dict[str, str] = DOCS) -> Path:
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def paths(driver: Driver) -> set[str]:
    return {r["p"] for r in driver.execute_query("MATCH (d:Document) RETURN d.path AS p").records}


# -- the round trip ----------------------------------------------------------------------------


def test_a_deleted_file_is_gone_from_every_search_mode(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    root = folder(tmp_path)
    first = cli.ingest(str(root))
    assert first["documents_new"] == 3
    question = "What does Quokkaflux call on every marsupial order?"
    with KnowledgeGraph(cli.settings) as graph:
        before = graph.search(question, mode="text")
        assert any(c.document_path == "quokka.md" for c in before.chunks)

    (root / "quokka.md").unlink()
    dry = cli.ingest(str(root), "--dry-run")
    assert dry["removed"] == ["quokka.md"]
    assert dry["documents_pruned"] == 1
    assert paths(clean_graph) == set(DOCS)  # a dry run removes nothing
    proc = cli.run("ingest", str(root), "--dry-run")
    assert "would be removed" in proc.stdout
    assert "quokka.md" in proc.stdout

    again = cli.ingest(str(root))
    assert (again["documents_pruned"], again["removed"]) == (1, ["quokka.md"])
    assert again["documents_unchanged"] == 2
    assert cli.llm.calls == 3  # the first run only: nothing else was extracted again
    assert paths(clean_graph) == {"auth.md", "ledger.md"}
    # Its sole facts and the entity only it held are gone; shared ones stay.
    entities = clean_graph.execute_query("MATCH (e:Entity) RETURN e.name AS n").records
    names = {r["n"] for r in entities}
    assert "Quokkaflux" not in names
    assert {"AuthService", "PostgreSQL"} <= names
    calls = clean_graph.execute_query(
        "MATCH ()-[r]->() WHERE r.predicate = 'CALLS' RETURN count(r) AS n"
    ).records[0]["n"]
    assert calls == 0

    with KnowledgeGraph(cli.settings) as graph:
        for mode in ("text", "vector", "graph", "hybrid"):
            found = graph.search(question, mode=mode)
            assert all("Quokkaflux" not in c.text for c in found.chunks), mode
            assert all(c.document_path != "quokka.md" for c in found.chunks), mode
            assert all(e.name != "Quokkaflux" for e in found.entities), mode
            assert all(r.type != "CALLS" for r in found.relations), mode
        routed = graph.routed_search(RoutedRequest(query=question))
        assert routed.local is not None  # auto ran a local mode
        assert all("Quokkaflux" not in c.text for c in routed.local.chunks)
        assert all(e.name != "Quokkaflux" for e in routed.local.entities)


def test_global_search_forgets_a_deleted_file_once_communities_are_built_again(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    root = folder(tmp_path)
    cli.ingest(str(root))
    built = cli.run("communities", "build")
    assert built.returncode == 0, built.stderr

    def reports() -> str:
        with KnowledgeGraph(cli.settings) as graph:
            found = graph.global_search("Which services are there?", limit=50)
        return " ".join(f"{r.title} {r.summary}" for r in found.reports)

    assert "Quokkaflux" in reports()
    (root / "quokka.md").unlink()
    proc = cli.run("ingest", str(root))
    assert proc.returncode == 0, proc.stderr
    # The user is told: the reports still read as before the change.
    assert "kg communities build" in " ".join(proc.stdout.split())
    assert cli.ingest(str(root))["communities_stale"] is False  # nothing changed this time
    rebuilt = cli.run("communities", "build")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "Quokkaflux" not in reports()


def test_a_changed_document_keeps_the_entity_only_it_mentions(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    """Its old contents go first and its title entity had no other mention: it used to be
    deleted as an orphan before the new mentions could link it, and never came back."""
    root = folder(tmp_path, {"quokka.md": DOCS["quokka.md"]})
    cli.ingest(str(root), "--graph", "metadata")

    def linked() -> dict[str, int]:
        records = clean_graph.execute_query(
            "MATCH (e:Entity) RETURN e.name AS name, COUNT { (:Chunk)-[:MENTIONS]->(e) } AS n"
        ).records
        return {r["name"]: r["n"] for r in records}

    before = linked()
    assert before.get("Quokka", 0) > 0
    (root / "quokka.md").write_text(DOCS["quokka.md"] + "\nQuokka orders come in at night.\n")
    again = cli.ingest(str(root), "--graph", "metadata")
    assert again["documents_changed"] == 1
    after = linked()
    assert after.get("Quokka", 0) > 0, after
    assert set(before) <= set(after)  # nothing the new text still names was lost


# -- what must never delete anything -------------------------------------------------------------


def test_include_exclude_and_skipped_files_remove_nothing(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    root = folder(tmp_path)
    cli.ingest(str(root))
    only = cli.ingest(str(root), "--include", "auth.md")
    assert (only["documents_pruned"], only["removed"]) == (0, [])
    left_out = cli.ingest(str(root), "--exclude", "*.md")
    assert left_out["documents_pruned"] == 0
    # Every file over the size bound is skipped (still on disk): nothing is removed.
    skipped = cli.ingest(str(root), KG_EXTRACT__MAX_FILE_BYTES="8")
    assert len(skipped["skipped"]) == 3
    assert skipped["documents_pruned"] == 0
    assert paths(clean_graph) == set(DOCS)


def test_parallel_workers_on_shards_of_one_folder_remove_nothing(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    root = folder(tmp_path)
    cli.ingest(str(root))
    for name in DOCS:
        (root / name).write_text(DOCS[name] + "\nEdited for the shards.\n", encoding="utf-8")
    # Two workers, each a shard of the folder, at the same time.
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "cli.main", "ingest", str(root), "--include", pattern, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli.env,
            cwd=REPO,
        )
        for pattern in ("auth.md", "[lq]*.md")
    ]
    summaries = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        summaries.append(json.loads(out))
    assert [s["documents_pruned"] for s in summaries] == [0, 0]
    assert sorted(s["documents_changed"] for s in summaries) == [1, 2]
    assert paths(clean_graph) == set(DOCS)
    edited = clean_graph.execute_query(
        "MATCH (c:Chunk) WHERE c.text CONTAINS 'Edited for the shards' "
        "RETURN count(DISTINCT c.document_id) AS n"
    ).records[0]["n"]
    assert edited == 3


def test_shards_in_separate_folders_of_one_namespace_judge_only_their_own_files(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for shard, names in ((one, ["auth.md"]), (two, ["quokka.md", "ledger.md"])):
        shard.mkdir()
        for name in names:
            (shard / name).write_text(DOCS[name], encoding="utf-8")
        cli.ingest(str(shard), "--namespace", "shards", "--graph", "metadata")
    assert paths(clean_graph) == set(DOCS)
    # The other shard's files are not under this folder: nothing of theirs is "gone".
    again = cli.ingest(str(one), "--namespace", "shards", "--graph", "metadata")
    assert again["documents_pruned"] == 0
    assert paths(clean_graph) == set(DOCS)
    # A file deleted from its own folder still goes, on that folder's run only.
    (two / "ledger.md").unlink()
    assert (
        cli.ingest(str(one), "--namespace", "shards", "--graph", "metadata")["documents_pruned"]
        == 0
    )
    gone = cli.ingest(str(two), "--namespace", "shards", "--graph", "metadata")
    assert gone["documents_pruned"] == 1
    assert paths(clean_graph) == {"auth.md", "quokka.md"}


def test_a_moved_folder_is_judged_where_it_is_now(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    root = folder(tmp_path)
    cli.ingest(str(root), "--namespace", "moved", "--graph", "metadata")
    moved = root.rename(tmp_path / "elsewhere")
    # Unchanged documents, loaded from the new place: they are its documents now.
    assert cli.ingest(str(moved), "--namespace", "moved", "--graph", "metadata")[
        "documents_unchanged"
    ] == len(DOCS)
    (moved / "ledger.md").unlink()
    gone = cli.ingest(str(moved), "--namespace", "moved", "--graph", "metadata")
    assert gone["documents_pruned"] == 1
    assert paths(clean_graph) == {"auth.md", "quokka.md"}


def test_a_second_triplets_file_into_the_namespace_removes_nothing(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    def triplets(name: str, ids: list[str]) -> Path:
        lines = [
            json.dumps({"id": i, "title": i, "text": f"{i} depends on PostgreSQL.",
                        "triplets": [{"subject": i, "predicate": "DEPENDS_ON",
                                      "object": "PostgreSQL"}]})
            for i in ids
        ]  # fmt: skip
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    first, second = triplets("one.jsonl", ["Alpha", "Beta"]), triplets("two.jsonl", ["Gamma"])
    cli.ingest(str(tmp_path), "--triplets", str(first), "--namespace", "facts")
    summary = cli.ingest(str(tmp_path), "--triplets", str(second), "--namespace", "facts")
    assert summary["documents_pruned"] == 0
    assert paths(clean_graph) == {"Alpha", "Beta", "Gamma"}
    # --prune keeps its import meaning: the namespace's documents this file does not list go.
    pruned = cli.ingest(str(tmp_path), "--triplets", str(second), "--namespace", "facts",
                        "--prune")  # fmt: skip
    assert pruned["documents_pruned"] == 2
    assert paths(clean_graph) == {"Gamma"}


# -- the guard, and opting out ------------------------------------------------------------------


def test_removing_more_than_half_needs_prune_and_keep_missing_opts_out(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    root = folder(tmp_path)
    cli.ingest(str(root))
    (root / "quokka.md").unlink()
    (root / "ledger.md").unlink()
    refused = cli.run("ingest", str(root))
    assert refused.returncode == exit_code(ConfigError("x"))
    message = " ".join(refused.stderr.split())
    assert "would remove 2 of the 3 documents" in message
    assert "--prune" in message
    assert "--keep-missing" in message
    assert paths(clean_graph) == set(DOCS)  # refused before anything was written
    dry = cli.ingest(str(root), "--dry-run")
    assert dry["removal_needs_prune"] is True
    assert dry["removed"] == ["ledger.md", "quokka.md"]

    kept = cli.ingest(str(root), "--keep-missing")
    assert kept["documents_pruned"] == 0
    assert paths(clean_graph) == set(DOCS)
    both = cli.run("ingest", str(root), "--keep-missing", "--prune")
    assert both.returncode == exit_code(ConfigError("x"))
    assert "--keep-missing" in both.stderr

    confirmed = cli.ingest(str(root), "--prune")
    assert confirmed["documents_pruned"] == 2
    assert paths(clean_graph) == {"auth.md"}


# -- how a document was extracted ---------------------------------------------------------------


def record(driver: Driver) -> set[tuple[str, str, str]]:
    rows = driver.execute_query(
        "MATCH (d:Document) RETURN d.extraction AS m, d.extraction_model AS model, "
        "d.extraction_prompt AS prompt"
    ).records
    return {(r["m"], r["model"], r["prompt"]) for r in rows}


@pytest.mark.slow
def test_extraction_is_added_later_redone_for_another_model_and_forced(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    from kg.extract.prompts import PROMPT_VERSION

    root = folder(tmp_path)
    metadata = cli.ingest(str(root), "--graph", "metadata")
    assert cli.llm.calls == 0
    assert record(clean_graph) == {("metadata", "", "")}
    chunks = metadata["chunks"]
    assert chunks >= 3

    # A plain ingest afterwards: the files are unchanged, yet the LLM extracts every one.
    dry = cli.ingest(str(root), "--dry-run")
    assert (dry["documents_reextracted"], dry["estimated_calls"]) == (3, chunks)
    plain = cli.ingest(str(root))
    assert plain["documents_reextracted"] == 3
    assert plain["llm_calls"] == cli.llm.calls == chunks
    model = cli.settings.llm.model
    assert record(clean_graph) == {("llm", model, PROMPT_VERSION)}
    facts = clean_graph.execute_query("MATCH (:Entity)-[r]->(:Entity) RETURN count(r) AS n")
    assert facts.records[0]["n"] >= 3

    # The same model again: nothing to do, and the dry run says so.
    cli.llm.reset()
    assert cli.ingest(str(root), "--dry-run")["estimated_calls"] == 0
    same = cli.ingest(str(root))
    assert (same["documents_unchanged"], same["llm_calls"], cli.llm.calls) == (3, 0, 0)
    # A metadata run never replaces the LLM's facts.
    assert cli.ingest(str(root), "--graph", "metadata")["documents_reextracted"] == 0
    assert record(clean_graph) == {("llm", model, PROMPT_VERSION)}

    # Another model: every document again (its cache entries are the other model's).
    other = {"KG_LLM__MODEL": "another-model"}
    dry = cli.ingest(str(root), "--dry-run", **other)
    assert (dry["documents_reextracted"], dry["estimated_calls"]) == (3, chunks)
    redone = cli.ingest(str(root), **other)
    assert redone["llm_calls"] == cli.llm.calls == chunks
    assert record(clean_graph) == {("llm", "another-model", PROMPT_VERSION)}

    # --reextract: everything, past the cache.
    cli.llm.reset()
    assert cli.ingest(str(root), "--reextract", "--dry-run", **other)["estimated_calls"] == chunks
    forced = cli.ingest(str(root), "--reextract", **other)
    assert forced["documents_reextracted"] == 3
    assert (forced["llm_calls"], forced["cache_hits"], cli.llm.calls) == (chunks, 0, chunks)


def test_triplets_are_their_own_method(cli: Cli, clean_graph: Driver, tmp_path: Path) -> None:
    lines = [{"id": "a", "title": "A", "text": "AuthService uses PostgreSQL.",
              "triplets": [{"subject": "AuthService", "predicate": "USES",
                            "object": "PostgreSQL"}]}]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    cli.ingest(str(tmp_path), "--triplets", str(path))
    assert record(clean_graph) == {("triplets", "", "")}
    again = cli.ingest(str(tmp_path), "--triplets", str(path))
    assert again["documents_unchanged"] == 1


def test_migrate_gives_older_documents_a_record(
    cli: Cli, clean_graph: Driver, tmp_path: Path
) -> None:
    from kg.graph.meta import read_model, stamp

    root = folder(tmp_path)
    cli.ingest(str(root))  # LLM facts for all three
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "plain.md").write_text("# Plain\n\nNothing to extract here.\n")
    cli.ingest(str(tmp_path / "meta"), "--graph", "metadata")
    # As a model 4 kg left it: no record anywhere.
    clean_graph.execute_query(
        "MATCH (d:Document) REMOVE d.extraction, d.extraction_model, d.extraction_prompt"
    )
    stamp(clean_graph, cli.settings.neo4j.database, 4)
    refused = cli.run("ingest", str(root))
    assert refused.returncode == 1
    assert "kg migrate" in refused.stderr
    proc = cli.run("migrate")
    assert proc.returncode == 0, proc.stderr
    assert read_model(clean_graph, cli.settings.neo4j.database).version == MODEL_VERSION
    rows = clean_graph.execute_query(
        "MATCH (d:Document) RETURN d.path AS p, d.extraction AS m, d.extraction_model AS model"
    ).records
    assert {r["p"]: (r["m"], r["model"]) for r in rows} == {
        "auth.md": ("llm", ""), "quokka.md": ("llm", ""), "ledger.md": ("llm", ""),
        "plain.md": ("metadata", ""),
    }  # fmt: skip
    # An unrecorded model matches any LLM run: no extraction again, the metadata one is extracted.
    cli.llm.reset()
    assert cli.ingest(str(root))["llm_calls"] == 0
    assert cli.ingest(str(tmp_path / "meta"))["documents_reextracted"] == 1
