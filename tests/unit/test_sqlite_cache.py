"""kg's SQLite caches are private on disk whatever the umask (security issue 26, item 7)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kg.communities.reports import CommunityReport, ReportCache
from kg.extract.cache import ExtractionCache
from kg.extract.schema import ExtractionResult
from kg.sqlite_cache import SIDE_FILES, SqliteCache


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _extraction(path: Path) -> ExtractionCache:
    cache = ExtractionCache(path)
    cache.put("sha", "model", ExtractionResult(entities=[], relations=[]))
    return cache


def _reports(path: Path) -> ReportCache:
    cache = ReportCache(path)
    cache.put("key", CommunityReport(title="t", summary="s", findings=[], rating=0))
    return cache


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("open_cache", [_extraction, _reports], ids=["extraction", "reports"])
def test_cache_folder_database_and_side_files_are_private(
    tmp_path: Path, open_cache: Callable[[Path], ExtractionCache | ReportCache]
) -> None:
    path = tmp_path / "made" / "by-kg" / "cache.sqlite"
    cache = open_cache(path)
    try:
        assert _mode(tmp_path / "made") == 0o700
        assert _mode(path.parent) == 0o700
        assert _mode(path) == 0o600
        for suffix in SIDE_FILES:  # open in WAL mode: both side files exist now
            side = path.with_name(path.name + suffix)
            assert side.exists(), side
            assert _mode(side) == 0o600, side
    finally:
        cache.close()


@pytest.mark.usefixtures("umask_022")
def test_an_existing_loose_database_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.touch(mode=0o644)
    db = SqliteCache(path, schema="CREATE TABLE IF NOT EXISTS t (k TEXT)", what="test cache")
    db.write("INSERT INTO t VALUES (?)", ("x",))
    try:
        assert _mode(path) == 0o600
        assert db.fetchone("SELECT k FROM t") == ("x",)
    finally:
        db.close()


def test_the_constructor_touches_nothing(tmp_path: Path) -> None:
    SqliteCache(tmp_path / "no" / "c.sqlite", schema="", what="test cache")
    assert not (tmp_path / "no").exists()
