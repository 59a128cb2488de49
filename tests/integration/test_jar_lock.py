"""neo4j-server/jars.lock is what Maven resolves from neo4j-server/pom.xml, jar for jar."""

from __future__ import annotations

import shutil

import pytest

from kg.localserver.jars import lock_from_maven, lock_path, read_lock, render_lock
from kg.paths import server_pom
from kg.settings import BROWSER_VERSION, NEO4J_VERSION


@pytest.mark.slow
def test_the_lock_matches_what_maven_resolves_from_the_pom() -> None:
    if shutil.which("mvn") is None:
        pytest.skip("Maven is not installed: only regenerating the lock needs it")
    fresh = lock_from_maven(
        server_pom(), neo4j_version=NEO4J_VERSION, browser_version=BROWSER_VERSION
    )
    current = read_lock()
    assert current is not None
    assert render_lock(fresh) == lock_path().read_text(encoding="utf-8"), (
        "neo4j-server/jars.lock is stale: run .venv/bin/python scripts/lock_jars.py"
    )
    assert fresh == current
