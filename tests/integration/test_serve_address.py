"""`kg browse` and Browser's style follow the address `kg serve` actually serves on.

`kg serve --port P` runs as a user starts it (a subprocess, real Neo4j) while KG_API__PORT
names another port; while it runs, the local server's view of kg's API (what `kg browse`
prints and what `kg neo4j start` writes into neo4j.conf for Browser's style) is port P; after
it stops, the settings' port again.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from kg.localserver import BROWSER_STYLE_PATH, LocalNeo4j
from kg.settings import Settings
from tests.apiserver import free_port
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]


def test_kg_serve_port_reaches_browse_and_the_browser_style(
    settings: Settings, tmp_path: Path
) -> None:
    home = tmp_path / "neo4j"
    home.mkdir()
    served, configured = free_port(), free_port()
    env = cli_env(settings, KG_SERVER__HOME=str(home), KG_API__PORT=str(configured))
    local = LocalNeo4j(
        settings.model_copy(
            update={
                "server": settings.server.model_copy(update={"home": home}),
                "api": settings.api.model_copy(update={"port": configured}),
            }
        )
    )
    assert local.api_url == f"http://127.0.0.1:{configured}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(served)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                httpx.get(f"http://127.0.0.1:{served}/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "kg serve did not answer"
                time.sleep(0.3)
        url = f"http://127.0.0.1:{served}"
        assert local.api_url == url  # what `kg browse` prints the guide from (and the style, once
        # neo4j.conf names it: until Neo4j restarts, kg browse and kg serve both say so)
        conf = (local._write_config() / "neo4j.conf").read_text(encoding="utf-8")
        assert f"browser.post_connect_cmd=style {url}{BROWSER_STYLE_PATH}" in conf
        style = httpx.get(url + BROWSER_STYLE_PATH, timeout=30)
        assert style.status_code == 200  # and kg serve does serve the style there
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert local.api_url == f"http://127.0.0.1:{configured}"
