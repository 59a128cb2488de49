"""Neo4j's jars without Maven: fetch exactly the locked coordinates from a Maven repository.

Why: Maven was a second prerequisite only to resolve one dependency tree, always the same one.
``neo4j-server/jars.lock`` records that tree once (``scripts/lock_jars.py`` runs Maven on
``neo4j-server/pom.xml``): every jar's ``groupId:artifactId:version[:classifier]``, size and
sha256. At run time kg downloads those files over HTTPS from the standard repository layout
(like coursier or ivy), checks each one, and keeps it only when its hash matches.

A download goes to ``<jar>.part`` and is renamed once verified, so an interrupted fetch resumes
(HTTP range requests) and a finished jar is never fetched again; a jar whose hash is wrong is
deleted and fetched from scratch. Proxies come from the usual environment variables
(``HTTPS_PROXY``, ``NO_PROXY``); a mirror of Maven Central in ``~/.m2/settings.xml`` is used
like Maven would use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import Console
from rich.errors import LiveError
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from kg.errors import ServerError
from kg.paths import server_pom

if TYPE_CHECKING:  # httpx loads when jars are fetched: `kg neo4j status` stays fast
    import httpx

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
LOCK_NAME = "jars.lock"

_ATTEMPTS = 4
_WORKERS = 4

_LOCK_HEADER = """\
# Every jar the local Neo4j server runs on (`kg neo4j start`), with its size and sha256.
# kg downloads exactly these from Maven Central and refuses any file whose hash differs.
# Generated from neo4j-server/pom.xml by `.venv/bin/python scripts/lock_jars.py`; do not edit.
"""


# -- the lock ---------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class LockedJar:
    """One jar: its Maven coordinates, size in bytes and sha256 (hex)."""

    group: str
    artifact: str
    version: str
    classifier: str | None
    size: int
    sha256: str

    @property
    def coordinate(self) -> str:
        tail = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.artifact}:{self.version}{tail}"

    @property
    def filename(self) -> str:
        tail = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{tail}.jar"

    @property
    def repository_path(self) -> str:
        """The path under a repository's root URL (Maven's standard layout)."""
        group = self.group.replace(".", "/")
        return f"{group}/{self.artifact}/{self.version}/{self.filename}"


@dataclass(frozen=True)
class JarLock:
    """The locked dependency tree for one Neo4j and one Neo4j Browser version."""

    neo4j_version: str
    browser_version: str
    jars: tuple[LockedJar, ...]

    @property
    def total_bytes(self) -> int:
        return sum(jar.size for jar in self.jars)


def lock_path() -> Path:
    """The lock file next to the pom it was generated from (checkout or installed wheel)."""
    return server_pom().with_name(LOCK_NAME)


def read_lock(path: Path | None = None) -> JarLock | None:
    """The lock, or None when the file is missing (kg then falls back to Maven)."""
    path = path or lock_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return parse_lock(text, source=str(path))


def parse_lock(text: str, *, source: str = "jars.lock") -> JarLock:
    """Parse ``key=value`` lines and ``coordinate size sha256`` lines; ``#`` starts a comment."""
    props: dict[str, str] = {}
    jars: list[LockedJar] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" in line and ":" not in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
            continue
        try:
            jars.append(_parse_jar_line(line))
        except ValueError as exc:
            raise ServerError(f"{source}:{number}: {exc}") from exc
    missing = [key for key in ("neo4j.version", "browser.version") if key not in props]
    if missing:
        raise ServerError(f"{source}: missing {', '.join(missing)}")
    names = [jar.filename for jar in jars]
    if len(set(names)) != len(names):
        raise ServerError(f"{source}: two jars share a file name")
    return JarLock(props["neo4j.version"], props["browser.version"], tuple(sorted(jars)))


def _parse_jar_line(line: str) -> LockedJar:
    parts = line.split()
    if len(parts) != 3:
        raise ValueError(f"expected `coordinate size sha256`, got {line!r}")
    coordinate, size, sha256 = parts
    fields = coordinate.split(":")
    if len(fields) not in (3, 4) or not all(fields):
        raise ValueError(f"bad coordinate {coordinate!r}")
    if not size.isdigit() or len(sha256) != 64 or not _is_hex(sha256):
        raise ValueError(f"bad size or sha256 for {coordinate}")
    classifier = fields[3] if len(fields) == 4 else None
    for field in fields:
        if "/" in field or field in (".", ".."):
            raise ValueError(f"bad coordinate {coordinate!r}")
    return LockedJar(fields[0], fields[1], fields[2], classifier, int(size), sha256.lower())


def render_lock(lock: JarLock) -> str:
    lines = [
        _LOCK_HEADER.rstrip("\n"),
        f"neo4j.version={lock.neo4j_version}",
        f"browser.version={lock.browser_version}",
        "# groupId:artifactId:version[:classifier]  bytes  sha256",
    ]
    lines.extend(f"{jar.coordinate} {jar.size} {jar.sha256}" for jar in sorted(lock.jars))
    return "\n".join(lines) + "\n"


def lock_from_maven(
    pom: Path, *, neo4j_version: str, browser_version: str, mvn: str | None = None
) -> JarLock:
    """Resolve ``pom`` with Maven and describe every jar it copies (for ``scripts/lock_jars``)."""
    mvn = mvn or shutil.which("mvn")
    if mvn is None:
        raise ServerError("`mvn` was not found on PATH; it is needed to generate the jar lock")
    with tempfile.TemporaryDirectory(prefix="kg-jar-lock-") as tmp:
        out = Path(tmp) / "repo"
        cmd = [
            mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
            f"-DoutputDirectory={out}", "-Dmdep.useRepositoryLayout=true",
            f"-Dneo4j.version={neo4j_version}", f"-Dbrowser.version={browser_version}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise ServerError(f"Maven could not resolve {pom}:\n{tail}")
        jars = [_jar_from_layout(out, path) for path in sorted(out.rglob("*.jar"))]
    return JarLock(neo4j_version, browser_version, tuple(sorted(jars)))


def _jar_from_layout(root: Path, path: Path) -> LockedJar:
    *group, artifact, version, name = path.relative_to(root).parts
    stem = f"{artifact}-{version}"
    if not name.startswith(stem) or not name.endswith(".jar"):
        raise ServerError(f"unexpected file in Maven's output: {path}")
    rest = name[len(stem) : -len(".jar")]
    classifier = rest[1:] if rest.startswith("-") else None
    if rest and classifier is None:
        raise ServerError(f"unexpected file in Maven's output: {path}")
    return LockedJar(
        ".".join(group), artifact, version, classifier, path.stat().st_size, file_sha256(path)
    )


# -- where from -------------------------------------------------------------------------------


def maven_repository(settings_xml: Path | None = None) -> str:
    """Maven Central, or the mirror of it that ``~/.m2/settings.xml`` names (as Maven would)."""
    path = settings_xml or Path.home() / ".m2" / "settings.xml"
    try:
        root = ET.parse(path).getroot()  # noqa: S314 - the user's own Maven settings
    except (OSError, ET.ParseError):
        return MAVEN_CENTRAL
    for mirror in (el for el in root.iter() if _local(el.tag) == "mirror"):
        values = {_local(child.tag): (child.text or "").strip() for child in mirror}
        patterns = [p.strip() for p in values.get("mirrorOf", "").split(",")]
        if "!central" in patterns:
            continue
        if any(p in ("*", "central", "external:*") for p in patterns) and values.get("url"):
            return values["url"].rstrip("/")
    return MAVEN_CENTRAL


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


# -- progress ---------------------------------------------------------------------------------


class DownloadProgress(Protocol):
    """What the fetcher reports: one total in bytes, then bytes as they arrive (or are lost)."""

    def begin(self, total_bytes: int, description: str) -> None: ...

    def advance(self, nbytes: int) -> None: ...

    def end(self) -> None: ...


class RichDownloadBar:
    """A rich bar on stderr (bytes, speed, time left); one line of text when not a terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]Neo4j jars"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self._console,
            disable=not self._console.is_terminal,
            transient=False,
        )
        self._task = self._progress.add_task("jars", total=None)

    def begin(self, total_bytes: int, description: str) -> None:
        self._console.print(description, highlight=False, markup=False)
        self._progress.update(self._task, total=total_bytes)
        try:
            self._progress.start()
        except LiveError:  # another live display owns the terminal (older rich): stay quiet
            self._progress.disable = True

    def advance(self, nbytes: int) -> None:
        self._progress.advance(self._task, nbytes)

    def end(self) -> None:
        self._progress.stop()


class _NoProgress:
    def begin(self, total_bytes: int, description: str) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        pass

    def end(self) -> None:
        pass


# -- fetching ---------------------------------------------------------------------------------


def jars_present(lock: JarLock, dest: Path) -> bool:
    """Every locked jar is in ``dest`` with its locked size (a cheap check, no hashing)."""
    for jar in lock.jars:
        try:
            if (dest / jar.filename).stat().st_size != jar.size:
                return False
        except FileNotFoundError:
            return False
    return True


def fetch_jars(
    lock: JarLock,
    dest: Path,
    *,
    repository: str = MAVEN_CENTRAL,
    progress: DownloadProgress | None = None,
    client: httpx.Client | None = None,
    workers: int = _WORKERS,
) -> None:
    """Make ``dest`` hold exactly the locked jars, each verified against its sha256.

    Jars already there with the right hash are kept; anything else in ``dest`` that is not a
    locked jar is removed, so ``dest/*`` is the server's whole class path.
    """
    dest.mkdir(parents=True, exist_ok=True)
    progress = progress or _NoProgress()
    repository = repository.rstrip("/")
    with _exclusive(dest.parent / f".{dest.name}.fetch-lock"):
        todo = [jar for jar in lock.jars if not _verified(dest / jar.filename, jar)]
        total = sum(jar.size for jar in todo)
        if todo:
            progress.begin(
                total,
                f"fetching {len(todo)} of Neo4j's jars ({total / 1e6:.0f} MB) from {repository}",
            )
            try:
                with _client(client) as http:
                    _fetch_all(http, todo, dest, repository, progress, workers)
            finally:
                progress.end()
        wanted = {jar.filename for jar in lock.jars}
        for path in dest.iterdir():
            if path.name not in wanted and path.is_file():
                path.unlink()


@contextlib.contextmanager
def _client(client: httpx.Client | None) -> Iterator[httpx.Client]:
    if client is not None:
        yield client
        return
    import httpx

    timeout = httpx.Timeout(30.0, connect=10.0)
    with httpx.Client(timeout=timeout, follow_redirects=True) as own:
        yield own


def _fetch_all(
    http: httpx.Client,
    jars: Sequence[LockedJar],
    dest: Path,
    repository: str,
    progress: DownloadProgress,
    workers: int,
) -> None:
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="kg-jars") as pool:
        futures = [
            pool.submit(_fetch_one, http, jar, dest, repository, progress.advance, stop)
            for jar in jars
        ]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in done if f.exception() is not None), None)
        if failed is not None:
            stop.set()
            for future in futures:
                future.cancel()
            error = failed.exception()
            assert error is not None
            raise error


class _Stopped(Exception):
    """Another download failed; this one gives up quietly (its .part is kept for a resume)."""


# Long on purpose: one download's resume, verify and retry steps in order.
def _fetch_one(
    http: httpx.Client,
    jar: LockedJar,
    dest: Path,
    repository: str,
    advance: Callable[[int], None],
    stop: threading.Event,
) -> None:
    import httpx

    url = f"{repository}/{jar.repository_path}"
    final = dest / jar.filename
    part = dest / f"{jar.filename}.part"
    reported = 0  # bytes of this jar shown on the bar so far

    def report(nbytes: int) -> None:
        nonlocal reported
        reported += nbytes
        advance(nbytes)

    def resume_at(offset: int) -> None:
        report(offset - reported)

    bad_hashes = 0
    network_error: Exception | None = None
    for attempt in range(_ATTEMPTS):
        if stop.is_set():
            return
        if attempt and network_error is not None:
            time.sleep(min(0.25 * 2**attempt, 2.0))
        try:
            _download(http, url, part, jar.size, resume_at, report, stop)
        except _Stopped:
            return
        except (httpx.TransportError, _Retryable) as exc:
            network_error = exc
            continue
        network_error = None
        got = file_sha256(part)
        if part.stat().st_size == jar.size and got == jar.sha256:
            part.replace(final)
            return
        # A corrupt or tampered file (or a bad resumed tail): fetch it again from nothing.
        part.unlink()
        resume_at(0)
        bad_hashes += 1
        if bad_hashes >= 2:
            raise ServerError(
                f"checksum mismatch for {jar.coordinate}: {url} sent a file with sha256 {got}, "
                f"but kg's jar lock expects {jar.sha256}. Something between this machine and "
                "the repository altered it (a proxy or a mirror), or the file there changed. "
                "Nothing was kept. Check the mirror in ~/.m2/settings.xml or the HTTPS_PROXY "
                "in use, then run the command again."
            )
    if isinstance(network_error, httpx.ConnectError | httpx.ConnectTimeout | httpx.ProxyError):
        raise ServerError(
            f"cannot reach {repository} to fetch Neo4j's jars ({network_error}). Check the "
            "network connection and proxy settings (HTTPS_PROXY), or name a reachable mirror "
            "of Maven Central in ~/.m2/settings.xml, then run the command again: jars already "
            "fetched are kept and a partial download resumes."
        ) from network_error
    raise ServerError(
        f"fetching {url} failed {_ATTEMPTS} times ({network_error}); run the command again "
        "to resume where it stopped."
    ) from network_error


class _Retryable(Exception):
    """A server-side failure worth another try (5xx, a range the server would not honour)."""


def _download(
    http: httpx.Client,
    url: str,
    part: Path,
    size: int,
    resume_at: Callable[[int], None],
    report: Callable[[int], None],
    stop: threading.Event,
) -> None:
    """Bring ``part`` to ``size`` bytes, resuming from what it already holds."""
    offset = part.stat().st_size if part.exists() else 0
    if offset > size:
        part.unlink()
        offset = 0
    if offset == size:
        resume_at(offset)
        return
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with http.stream("GET", url, headers=headers) as response:
        status = response.status_code
        if status == 404:
            raise ServerError(
                f"{url} does not exist (HTTP 404): the repository or mirror lacks this jar"
            )
        if status == 416:
            part.unlink(missing_ok=True)
            raise _Retryable(f"HTTP 416 for {url}")
        if status >= 500 or status == 429:
            raise _Retryable(f"HTTP {status} for {url}")
        if status not in (200, 206):
            raise ServerError(f"{url} answered HTTP {status}")
        if status == 200:
            offset = 0  # the whole file came back, not the missing tail: start the part again
        resume_at(offset)
        with part.open("ab" if offset else "wb") as out:
            for chunk in response.iter_bytes():
                if stop.is_set():
                    raise _Stopped
                out.write(chunk)
                report(len(chunk))


def _verified(path: Path, jar: LockedJar) -> bool:
    """A jar already in place counts only if its size and hash match; a bad one is removed."""
    try:
        if path.stat().st_size == jar.size and file_sha256(path) == jar.sha256:
            return True
    except FileNotFoundError:
        return False
    path.unlink()
    return False


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """One fetch per cache folder at a time (two `kg neo4j start` would share .part files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
