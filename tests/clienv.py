"""The environment for running the `kg` CLI in a subprocess against a given Neo4j."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kg.settings import Settings
from tests.neo4j_backend import TEST_JAVA_OPTIONS


def clean_env() -> dict[str, str]:
    """This process's environment without any NEO4J_/KG_ variables, and with no ``.env``
    file read (``KG_ENV_FILE`` empty): a child sees only what its test gives it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "KG_"))}
    env["KG_ENV_FILE"] = ""
    env["KG_SERVER__JAVA_OPTIONS"] = json.dumps(TEST_JAVA_OPTIONS)  # tests/neo4j_backend.py
    return env


def cli_env(settings: Settings, **extra: str) -> dict[str, str]:
    """This process's environment without any NEO4J_/KG_ variables, pointed at ``settings``."""
    env = clean_env()
    env.update(
        KG_NEO4J__URI=settings.neo4j.uri,
        KG_NEO4J__USERNAME=settings.neo4j.username,
        KG_NEO4J__PASSWORD=settings.neo4j.password.get_secret_value(),
        KG_RESOLVE__EMBEDDING_DIM=str(settings.resolve.embedding_dim),
        **extra,
    )
    return env


def run_kg(settings: Settings, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``kg ARGS`` in a subprocess against ``settings``' Neo4j, with ``env`` added."""
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=Path(__file__).resolve().parents[1],
        env=cli_env(settings, **env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def example_ingest_cmd(example: Path, triplets: Path) -> list[str]:
    """`kg ingest EXAMPLE --triplets FILE --json` as a subprocess command line."""
    return [
        sys.executable,
        "-m",
        "cli.main",
        "ingest",
        str(example),
        "--triplets",
        str(triplets),
        "--json",
    ]
