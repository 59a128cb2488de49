"""One SQLite file behind a lock, private on disk: what kg's caches are built on.

The extraction cache (:mod:`kg.extract.cache`) and the community report cache
(:mod:`kg.communities.reports`) each keep one table of JSON values (never pickle: a cache file
must not be able to run code). Both open their file lazily (constructors do no I/O), share one
connection across threads under a lock, and run in WAL mode.

Privacy (security issue 26): a folder the cache creates is 0700 and the database is 0600 before
SQLite first opens it, whatever the umask; SQLite gives its ``-wal`` and ``-shm`` files the
database's mode, and they are tightened again after opening, so a cache never leaks prompts,
answers or extracted facts to other users of the machine.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from kg.errors import ExtractionError
from kg.paths import PRIVATE_FILE_MODE, private_file

__all__ = ["SIDE_FILES", "SqliteCache"]

#: The files SQLite keeps beside a database in WAL mode.
SIDE_FILES = ("-wal", "-shm")

MEMORY = ":memory:"


class SqliteCache:
    """``path`` (or ``:memory:``) with ``schema`` applied on first use; ``what`` names it in errors.

    Every failure, opening, reading or writing, is an :class:`~kg.errors.ExtractionError`
    whose message names the cache and its file.
    """

    def __init__(self, path: Path | str, *, schema: str, what: str) -> None:
        self.path = Path(path)
        self._schema = schema
        self._what = what
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def _on_disk(self) -> bool:
        return str(self.path) != MEMORY

    def connection(self) -> sqlite3.Connection:
        """The open connection (opened, made private and given its schema on first use)."""
        if self._conn is None:
            try:
                if self._on_disk:
                    private_file(self.path)
                conn = sqlite3.connect(
                    str(self.path), check_same_thread=False, isolation_level=None, timeout=30
                )
                if self._on_disk:
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(self._schema)
                self._tighten_side_files()
            except (sqlite3.Error, OSError) as exc:
                raise ExtractionError(f"cannot open {self._what} {self.path}: {exc}") from exc
            self._conn = conn
        return self._conn

    def _tighten_side_files(self) -> None:
        for suffix in SIDE_FILES if self._on_disk else ():
            side = self.path.with_name(self.path.name + suffix)
            if side.exists() and not side.is_symlink():
                side.chmod(PRIVATE_FILE_MODE)

    def fetchone(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The first row of a read, or None."""
        try:
            with self._lock:
                row: tuple[Any, ...] | None = self.connection().execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise ExtractionError(f"{self._what} {self.path}: read failed: {exc}") from exc
        return row

    def write(self, sql: str, params: tuple[Any, ...]) -> None:
        """One statement, committed on its own (the connection is in autocommit mode)."""
        try:
            with self._lock:
                self.connection().execute(sql, params)
        except sqlite3.Error as exc:
            raise ExtractionError(f"{self._what} {self.path}: write failed: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
