"""Where kg's bundled files live (a source checkout or a wheel), and kg's private state files."""

from __future__ import annotations

import os
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


# -- kg's own state (.kg/): private to the user who runs kg ----------------------------------

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
STATE_DIR_NAME = ".kg"


def _is_state(path: Path) -> bool:
    return STATE_DIR_NAME in path.parts


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter (0700), with missing parents likewise.

    An existing directory is tightened only when it is kg's state (inside a ``.kg`` folder):
    kg never changes the mode of a folder the user chose for something else.
    """
    path = Path(path)
    for part in [*reversed(path.parents), path]:
        if part.exists():
            if _is_state(part) and part.is_dir() and not part.is_symlink():
                part.chmod(PRIVATE_DIR_MODE)
            continue
        part.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        part.chmod(PRIVATE_DIR_MODE)  # mkdir's mode is filtered through the umask
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` if missing, readable and writable by its owner only (0600), in a
    private directory; tighten an existing file. SQLite gives its -wal and -shm files the
    database file's mode, so a cache created through this stays private whole."""
    path = Path(path)
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE_MODE)
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)
    return path
