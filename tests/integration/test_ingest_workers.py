"""Parallel ingest (docs/architecture.md, "Parallel ingest"): N workers build the graph one
worker builds, whatever the order, and a worker killed mid-batch is completed by a rerun.

Everything is real: the Neo4j server, `kg ingest` processes, a SIGKILL. The corpus is the first
200 MuSiQue passages with their LLM triplets (tests/data/musique-workers), imported with
--triplets; its entities merge across passages under different spellings.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.graph.shard_runs import ShardsStaging, live_shards, staging_shard
from kg.ingest import finish_ingest, ingest
from kg.ingest_workers import ingest_parallel
from kg.settings import Settings
from kg.shards import Shard, shard_of
from tests.clienv import cli_env
from tests.conftest import _wipe
from tests.graphsnap import snapshot

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "musique-workers" / "corpus.jsonl"
WORKERS = 4


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The (empty) folder the import's documents belong to: one source for every run."""
    return tmp_path_factory.mktemp("musique")


@pytest.fixture(scope="module")
def one_worker(driver: Driver, settings: Settings, folder: Path) -> Any:
    """The reference: the graph one plain `ingest` builds."""
    _wipe(driver, settings.neo4j.database)
    summary = ingest(settings, driver, folder, triplets=CORPUS)
    assert summary.documents_new == 200
    assert summary.mentions_merged > 0  # the slice has merges that workers could split
    reference = snapshot(driver)
    merged = driver.execute_query(
        "MATCH (e:Entity) WHERE size(e.aliases) > 0 RETURN count(e) AS n"
    ).records[0]["n"]
    assert merged > 10
    _wipe(driver, settings.neo4j.database)
    return reference


def _kg_shard(settings: Settings, folder: Path, spec: str, **env: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", "ingest", str(folder), "--triplets", str(CORPUS),
            "--shard", spec, "--json"]  # fmt: skip


def _run_shard(settings: Settings, folder: Path, spec: str) -> dict[str, Any]:
    done = subprocess.run(
        _kg_shard(settings, folder, spec),
        cwd=REPO,
        env=cli_env(settings),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _leftovers(driver: Driver) -> int:
    """Coordination state a finished graph must not keep."""
    return int(
        driver.execute_query(
            "MATCH (n) WHERE n:KgLock OR n:KgStaged OR n:KgShardDone OR n:KgShardStaging "
            "OR n.staged IS NOT NULL OR n.staged_gone IS NOT NULL RETURN count(n) AS n"
        ).records[0]["n"]
    )


@pytest.mark.slow
def test_four_worker_processes_build_the_graph_one_worker_builds(
    one_worker: Any, clean_graph: Driver, settings: Settings, folder: Path
) -> None:
    summary = ingest_parallel(
        settings, clean_graph, folder, workers=WORKERS, options={"triplets": CORPUS}
    )
    assert len(summary.workers) == WORKERS
    assert sum(w["documents_new"] for w in summary.workers) == 200
    assert all(w["documents_new"] > 0 for w in summary.workers)  # every worker had a share
    assert summary.documents_new == 200
    assert summary.finished
    assert _leftovers(clean_graph) == 0
    assert snapshot(clean_graph) == one_worker


@pytest.mark.slow
def test_shards_as_separate_processes_in_any_order(
    one_worker: Any, clean_graph: Driver, settings: Settings, folder: Path
) -> None:
    order = ["3/4", "1/4", "0/4"]
    for staged, spec in enumerate(order, start=1):
        result = _run_shard(settings, folder, spec)
        assert result["finished"] is False
        assert result["shards_staged"] == staged
    # Nothing is resolved until the last shard has staged: no entity yet, no complete document.
    records = clean_graph.execute_query(
        "OPTIONAL MATCH (e:Entity) WITH count(e) AS entities "
        "OPTIONAL MATCH (d:Document) WHERE d.sha256 IS NOT NULL "
        "RETURN entities, count(d) AS complete"
    ).records[0]
    assert (records["entities"], records["complete"]) == (0, 0)
    last = _run_shard(settings, folder, "2/4")
    assert last["finished"] is True
    assert last["entities_created"] > 0
    assert _leftovers(clean_graph) == 0
    assert snapshot(clean_graph) == one_worker


@pytest.mark.slow
def test_a_worker_killed_mid_batch_is_completed_by_rerunning_its_shard(
    one_worker: Any, clean_graph: Driver, settings: Settings, folder: Path
) -> None:
    victim = 1
    paths = [json.loads(line)["id"] for line in CORPUS.read_text().splitlines()]
    victims = [p for p in paths if shard_of(p, WORKERS) == victim]
    # Small batches: the victim writes its chunks over many transactions, and dies among them.
    env = cli_env(settings, KG_WRITE__BATCH_SIZE="5")
    procs = {
        i: subprocess.Popen(
            _kg_shard(settings, folder, f"{i}/{WORKERS}"),
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(WORKERS)
    }
    try:
        written = _wait_for_chunks(clean_graph, victims, procs[victim])
        procs[victim].send_signal(signal.SIGKILL)
        assert procs[victim].wait(timeout=30) == -signal.SIGKILL
        for i, proc in procs.items():
            if i != victim:
                out, err = proc.communicate(timeout=300)
                assert proc.returncode == 0, err[-2000:]
                assert json.loads(out)["finished"] is False  # the round lacks the victim
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert written > 0
    staged = clean_graph.execute_query(
        "MATCH (d:Document) WHERE d.staged IS NOT NULL RETURN d.path AS path"
    ).records
    assert not set(victims) <= {r["path"] for r in staged}  # the victim did not stage all
    # Rerunning the victim's shard redoes what it had not staged, and finishes the round.
    result = _run_shard(settings, folder, f"{victim}/{WORKERS}")
    assert result["finished"] is True
    assert _leftovers(clean_graph) == 0
    assert snapshot(clean_graph) == one_worker


def _wait_for_chunks(driver: Driver, paths: list[str], proc: subprocess.Popen[str]) -> int:
    """Wait until the worker has written some of its chunks (and is still writing)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the worker ended before it could be killed"
        n = int(
            driver.execute_query(
                "MATCH (d:Document)<-[:PART_OF]-(c:Chunk) WHERE d.path IN $paths "
                "RETURN count(c) AS n",
                paths=paths,
            ).records[0]["n"]
        )
        if n > 0:
            return n
        time.sleep(0.05)
    raise AssertionError("the worker wrote no chunk in time")


@pytest.fixture(autouse=True)
def _no_lock_left(driver: Driver) -> Iterator[None]:
    yield
    driver.execute_query("MATCH (l:KgLock) DETACH DELETE l")


def test_the_comparison_fails_for_workers_that_each_resolve_their_own_shard(
    one_worker: Any, clean_graph: Driver, settings: Settings, folder: Path
) -> None:
    # What the staging avoids: each shard resolved against what earlier shards wrote, in
    # shard order. The fingerprint sees the difference, so the equalities above can fail.
    for i in range(WORKERS):
        ingest(settings, clean_graph, folder, triplets=CORPUS, shard=Shard(i, WORKERS),
               finish=True)  # fmt: skip
    assert _leftovers(clean_graph) == 0
    nodes, _ = snapshot(clean_graph)
    entities = {n for n in nodes if "Entity" in n[0]}
    assert entities != {n for n in one_worker[0] if "Entity" in n[0]}


def _write_folder(folder: Path, count: int) -> None:
    folder.mkdir()
    for i in range(count):
        link = f"[next](page{(i + 1) % count}.md)"
        service = f"Service Alpha{i % 3}"
        body = f"# Page {i}\n\n## {service}\n\nPage {i} calls {service}. {link}\n"
        (folder / f"page{i}.md").write_text(body, encoding="utf-8")


def _documents(driver: Driver) -> dict[str, bool]:
    records = driver.execute_query(
        "MATCH (d:Document) RETURN d.path AS path, d.staged_gone IS NOT NULL AS gone"
    ).records
    return {r["path"]: r["gone"] for r in records}


def test_folders_too_and_a_shard_removes_only_its_own_gone_documents(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "pages"
    _write_folder(folder, 12)
    ingest(settings, clean_graph, folder, graph="metadata")
    reference = snapshot(clean_graph)
    _wipe(clean_graph, settings.neo4j.database)
    ingest_parallel(settings, clean_graph, folder, workers=2, options={"graph": "metadata"})
    assert snapshot(clean_graph) == reference

    gone = "page5.md"
    owner = shard_of(gone, 2)
    (folder / gone).unlink()
    other = ingest(settings, clean_graph, folder, graph="metadata", shard=Shard(1 - owner, 2))
    assert other.documents_pruned == 0
    assert not other.finished
    assert _documents(clean_graph)[gone] is False  # still there, not even marked
    mine = ingest(settings, clean_graph, folder, graph="metadata", shard=Shard(owner, 2))
    assert mine.removed == [gone]
    assert mine.finished
    assert gone not in _documents(clean_graph)
    assert len(_documents(clean_graph)) == 11
    assert _leftovers(clean_graph) == 0


# -- a finish while a shard stages (issue 39, C4) --------------------------------------------


class _HoldAt:
    """Progress that holds the run when it reaches ``name`` (the shard is still staging)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reached = threading.Event()
        self.release = threading.Event()

    def stage(self, name: str, total: int | None) -> None:
        if name == self.name and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(300)

    def advance(self, amount: int = 1) -> None:
        pass


def _entities(driver: Driver) -> int:
    return int(driver.execute_query("MATCH (e:Entity) RETURN count(e) AS n").records[0]["n"])


@pytest.mark.slow
def test_a_finish_waits_for_a_shard_still_staging(
    one_worker: Any, clean_graph: Driver, settings: Settings, folder: Path
) -> None:
    first = ingest(settings, clean_graph, folder, triplets=CORPUS, shard=Shard(0, 2))
    assert first.finished is False
    hold = _HoldAt("write")  # shard 1 has loaded, chunked and read its triplets: not staged
    with ThreadPoolExecutor(2) as pool:
        second = pool.submit(
            ingest, settings, clean_graph, folder, triplets=CORPUS, shard=Shard(1, 2),
            progress=hold,
        )  # fmt: skip
        assert hold.reached.wait(120)
        finishing = pool.submit(finish_ingest, settings, clean_graph, folder)
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and not finishing.done():
            assert _entities(clean_graph) == 0, "the finish resolved part of the round"
            time.sleep(0.2)
        assert not finishing.done()
        hold.release.set()
        results = [second.result(timeout=300), finishing.result(timeout=300)]
    assert all(r.finished for r in results)
    assert sum(r.entities_created for r in results) > 0
    assert _leftovers(clean_graph) == 0
    assert snapshot(clean_graph) == one_worker


def test_a_finish_gives_up_naming_the_shard_and_a_dead_shard_blocks_one_lease(
    clean_graph: Driver, settings: Settings, folder: Path
) -> None:
    source, db = str(folder), settings.neo4j.database
    impatient = settings.model_copy(deep=True)
    impatient.write.resolve_wait_s = 1
    with (
        staging_shard(clean_graph, db, source, 3, 4, lease_s=60),
        pytest.raises(ShardsStaging, match=r"3/4 \(") as refused,
    ):
        finish_ingest(impatient, clean_graph, folder)
    assert "write.resolve_wait_s" in str(refused.value)
    # A shard that died: its lease runs out, the finish goes on and deletes the mark.
    clean_graph.execute_query(
        "CREATE (:KgShardStaging {source: $s, index: 2, count: 4, owner: 'gone:1:x',"
        " expires: datetime() - duration({seconds: 1})})",
        s=source,
    )
    assert live_shards(clean_graph, db, source) == []
    assert finish_ingest(impatient, clean_graph, folder).finished
    assert _leftovers(clean_graph) == 0
