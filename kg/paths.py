"""Where kg's bundled files live, in a source checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_REPO = _PACKAGE.parent


def _first_existing(*candidates: Path) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return candidates[0]


def server_pom() -> Path:
    """The Maven pom that resolves the local Neo4j server's jars."""
    return _first_existing(_PACKAGE / "_neo4j" / "pom.xml", _REPO / "neo4j-server" / "pom.xml")


def schema_dir() -> Path:
    """The folder of Cypher constraint and index files."""
    return _first_existing(_PACKAGE / "_schema", _REPO / "schema")
