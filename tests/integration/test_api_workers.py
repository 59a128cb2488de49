"""``kg serve --workers 2``, run as a user runs it: two worker processes share the port, each
with its share of the query slots, both answer searches, and SIGTERM stops them all."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from neo4j import Driver

from kg.settings import Settings
from tests.apidata import wipe, write_graph
from tests.apiserver import free_port, wait_until_served
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graph(driver: Driver, settings: Settings) -> Iterator[Driver]:
    wipe(driver, settings)
    write_graph(driver, settings)
    yield driver
    wipe(driver, settings)


def _children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (from /proc; the spawn helper included)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


@pytest.mark.slow
def test_two_workers_share_the_port_and_the_query_slots(
    graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    port = free_port()
    env = cli_env(
        settings,
        PYTHONPATH=str(REPO),
        KG_SEARCH__MAX_CONCURRENT_QUERIES="6",
        KG_API__HEAVY_QUERY_SLOTS="2",  # a quarter of 6 is 1: two workers could not split it
        KG_LOG_LEVEL="INFO",
    )
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--workers", "2"],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    started: set[int] = set()
    try:
        wait_until_served(url + "/health", proc, timeout_s=120, status=200)
        # both workers finish start-up (each verifies the templates) before the count is taken
        deadline = time.monotonic() + 60
        while log.read_text().count("Application startup complete") < 2:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.25)
        text = log.read_text()
        started = {int(p) for p in re.findall(r"Started server process \[(\d+)\]", text)}
        assert len(started) == 2, text
        assert started <= _children(proc.pid) | {
            c for child in _children(proc.pid) for c in _children(child)
        }
        # each worker holds half of the six slots
        assert (
            len(re.findall(r"worker \d+ of 2: 3 query slots \(2 per client, 1 heavy\)", text)) == 2
        ), text

        def search(i: int) -> int:
            # a fresh connection per request, so the kernel spreads them over both workers
            with httpx.Client(base_url=url, timeout=30) as http:
                resp = http.post("/search/local", json={"query": "PaymentService", "depth": 2})
                assert resp.status_code == 200, resp.text
                names = {e["name"] for e in resp.json()["entities"]}
                assert {"PaymentService", "PostgreSQL"} <= names
                return resp.status_code

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(search, range(40))) == [200] * 40
        # one consistent set of metrics, whichever worker answers the scrape (kg/metrics.py)
        counts = set()
        for _ in range(6):
            with httpx.Client(base_url=url, timeout=30) as http:
                scrape = http.get("/metrics").text
            counts.add(_searches_counted(scrape))
        assert counts == {40.0}, scrape
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, log.read_text()
    assert not [pid for pid in started if Path(f"/proc/{pid}").exists()]  # workers stopped too
    assert "Traceback" not in log.read_text()


def _searches_counted(scrape: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        sample.value
        for family in text_string_to_metric_families(scrape)
        for sample in family.samples
        if sample.name == "kg_http_request_duration_seconds_count"
        and sample.labels.get("route") == "/search/local"
    )


def test_a_worker_count_that_would_exceed_the_settings_is_refused(
    settings: Settings, tmp_path: Path
) -> None:
    """The break: `--workers 8` rounded every share up to one, so 8 heavy queries ran at once
    where the settings allow 2. Now the whole stays within the settings, or kg serve refuses."""
    port = free_port()
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--workers", "8"],
        cwd=tmp_path, env=cli_env(settings, PYTHONPATH=str(REPO)), capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "KG_API__HEAVY_QUERY_SLOTS=2" in proc.stderr
    assert "serve with at most 2 workers" in proc.stderr
    assert "Traceback" not in proc.stderr
