"""Neo4j's classes archived for the JVM (AppCDS): a server starts about a third sooner.

A start with no archive for its Java runtime and jars records the classes it loads
(``-XX:ArchiveClassesAtExit``), and the JVM writes them as it exits after a clean stop; later
starts map them (``-XX:SharedArchiveFile``) instead of loading and verifying each class again.
Measured on this project's machine: 6.0 s → 4.1 s from launch to a server that answers
(docs/benchmarks.md, "Local server start"). The recording start pays ~3 s more and its stop
~5 s more, once.

An archive belongs to one Java executable (path, size, modification time) and one lib folder,
so its name hashes them: an upgraded JDK or other jars make a new one, and a JVM that finds an
archive it cannot use ignores it (with a warning in the console log) and starts as without
one. The recording is written under a name of its own and becomes the archive only once its
server's JVM ended on the stop's SIGTERM, never after a SIGKILL or a crash, so a half-written
file is never mapped. ``server.class_archive=false`` turns all of it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

#: A recording left by a server that never stopped cleanly is deleted after this long.
STALE_RECORDING_S = 6 * 3600
_PREFIX = "neo4j-classes-"


@dataclass(frozen=True)
class ClassArchive:
    """Where the archive for one runtime and lib folder is, and the JVM flags to use it."""

    archive: Path
    recording: Path | None  # set when this start records the archive

    def flags(self) -> list[str]:
        if self.recording is not None:
            return [f"-XX:ArchiveClassesAtExit={self.recording}"]
        return [f"-XX:SharedArchiveFile={self.archive}"]

    def record(self) -> str:
        """What the server's home keeps until its stop (:func:`settle`)."""
        return json.dumps({"archive": str(self.archive), "recording": str(self.recording)})


def archive_for(java: Path, lib: Path) -> ClassArchive:
    """The archive of ``java`` on the jars in ``lib``: mapped when it exists, else recorded
    by this start."""
    resolved = java.resolve()
    stat = resolved.stat()
    key = hashlib.sha256(
        f"{resolved}\0{stat.st_size}\0{stat.st_mtime_ns}\0{lib.resolve()}".encode()
    ).hexdigest()[:16]
    archive = lib.parent / f"{_PREFIX}{key}.jsa"
    if archive.is_file() and archive.stat().st_size > 0:
        return ClassArchive(archive, None)
    _clear_stale(lib.parent)
    return ClassArchive(archive, lib.parent / f"{_PREFIX}{key}.{uuid.uuid4().hex}.recording")


def settle(record: str, *, clean: bool) -> None:
    """After the server's JVM is gone: its recording becomes the archive when it stopped
    cleanly, and is deleted otherwise."""
    try:
        paths = json.loads(record)
        archive, recording = Path(paths["archive"]), paths["recording"]
    except (ValueError, KeyError, TypeError):
        return
    if not recording or recording == "None":
        return
    recorded = Path(recording)
    with contextlib.suppress(OSError):
        if clean and recorded.is_file() and recorded.stat().st_size > 0:
            os.replace(recorded, archive)  # atomic: a starting JVM maps the old file or this
        else:
            recorded.unlink(missing_ok=True)


def _clear_stale(folder: Path) -> None:
    """Recordings of servers that were killed or crashed (never settled)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for path in folder.glob(f"{_PREFIX}*.recording"):
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > STALE_RECORDING_S:
                    path.unlink()
