from __future__ import annotations

from tests.neo4j_backend import choose_backend


def test_explicit_uri_wins_even_when_docker_answers() -> None:
    assert choose_backend({"NEO4J_URI": "bolt://x:7687"}, docker_answers=True) == "uri"


def test_docker_next() -> None:
    assert choose_backend({}, docker_answers=True) == "testcontainers"


def test_local_server_last_never_skip() -> None:
    assert choose_backend({}, docker_answers=False) == "local"
    assert choose_backend({"NEO4J_URI": ""}, docker_answers=False) == "local"
