"""The JVM class archive's bookkeeping (kg.localserver.classes): which flags a start gets, and
that a recording becomes the archive only after a clean stop. The JVM side (a recorded archive
mapped by the next start) runs whenever the suite starts its servers."""

from __future__ import annotations

from pathlib import Path

from kg.localserver.classes import archive_for, settle


def _runtime(tmp_path: Path) -> tuple[Path, Path]:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"not really java")
    lib = tmp_path / "cache" / "5.26" / "lib"
    lib.mkdir(parents=True)
    return java, lib


def test_a_first_start_records_and_a_clean_stop_keeps_the_recording(tmp_path: Path) -> None:
    java, lib = _runtime(tmp_path)
    first = archive_for(java, lib)
    assert first.recording is not None
    assert first.flags() == [f"-XX:ArchiveClassesAtExit={first.recording}"]
    first.recording.write_bytes(b"classes")  # what the JVM writes as it exits
    settle(first.record(), clean=True)
    assert first.archive.read_bytes() == b"classes"
    assert not first.recording.exists()
    again = archive_for(java, lib)
    assert again.recording is None
    assert again.flags() == [f"-XX:SharedArchiveFile={first.archive}"]


def test_a_killed_server_s_recording_is_never_mapped(tmp_path: Path) -> None:
    java, lib = _runtime(tmp_path)
    first = archive_for(java, lib)
    assert first.recording is not None
    first.recording.write_bytes(b"half")
    settle(first.record(), clean=False)
    assert not first.archive.exists()
    assert not first.recording.exists()
    assert archive_for(java, lib).recording is not None  # the next start records again


def test_an_empty_recording_is_not_kept(tmp_path: Path) -> None:
    java, lib = _runtime(tmp_path)
    first = archive_for(java, lib)
    assert first.recording is not None
    first.recording.write_bytes(b"")
    settle(first.record(), clean=True)
    assert not first.archive.exists()


def test_another_runtime_or_other_jars_get_an_archive_of_their_own(tmp_path: Path) -> None:
    java, lib = _runtime(tmp_path)
    base = archive_for(java, lib).archive
    java.write_bytes(b"an upgraded java, a different size")
    assert archive_for(java, lib).archive != base
    other_lib = lib.parent.parent / "5.27" / "lib"
    other_lib.mkdir(parents=True)
    assert archive_for(java, other_lib).archive.parent == other_lib.parent


def test_a_damaged_record_is_ignored(tmp_path: Path) -> None:
    settle("not json", clean=True)
    settle('{"archive": "x"}', clean=True)
    assert list(tmp_path.iterdir()) == []
