"""The jar fetcher against a real HTTP server on loopback serving a Maven repository layout.

The server is a small ``http.server`` with range requests (for resumes), a switch that cuts a
transfer midway, and a request log; the jars are random bytes with their real sha256.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kg.errors import ServerError
from kg.localserver import free_port
from kg.localserver.jars import JarLock, LockedJar, fetch_jars


@dataclass
class Repo:
    root: Path
    url: str
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range)
    cut_once: set[str] = field(default_factory=set)  # paths whose next transfer stops halfway


def _handler(repo: Repo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            rng = self.headers.get("Range")
            repo.requests.append((self.path, rng))
            path = repo.root / self.path.lstrip("/")
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            start = 0
            if rng:
                start = int(rng.removeprefix("bytes=").split("-")[0])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path in repo.cut_once:
                repo.cut_once.discard(self.path)
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    root = tmp_path / "repo"
    root.mkdir()
    port = free_port()
    repo = Repo(root, f"http://127.0.0.1:{port}/maven2")
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(repo))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield repo
    finally:
        server.shutdown()
        server.server_close()


def _publish(repo: Repo, artifact: str, size: int, classifier: str | None = None) -> LockedJar:
    data = os.urandom(size)
    jar = LockedJar(
        "org.example.kg", artifact, "1.0", classifier, size, hashlib.sha256(data).hexdigest()
    )
    path = repo.root / "maven2" / jar.repository_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return jar


def _served(repo: Repo, jar: LockedJar) -> Path:
    return repo.root / "maven2" / jar.repository_path


def _lock(*jars: LockedJar) -> JarLock:
    return JarLock("5.26.30", "5.24.0", tuple(sorted(jars)))


class Recorder:
    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.ended = False

    def begin(self, total_bytes: int, description: str) -> None:
        self.total = total_bytes

    def advance(self, nbytes: int) -> None:
        self.done += nbytes

    def end(self) -> None:
        self.ended = True


def test_fetches_every_locked_jar_verified_and_nothing_else(repo: Repo, tmp_path: Path) -> None:
    jars = [
        _publish(repo, "core", 300_000),
        _publish(repo, "native", 50_000, classifier="linux-x86_64"),
        _publish(repo, "tiny", 10),
    ]
    dest = tmp_path / "lib"
    dest.mkdir()
    (dest / "stale-0.1.jar").write_bytes(b"left over from another version")
    progress = Recorder()
    fetch_jars(_lock(*jars), dest, repository=repo.url, progress=progress)
    assert sorted(p.name for p in dest.iterdir()) == sorted(j.filename for j in jars)
    for jar in jars:
        assert (dest / jar.filename).read_bytes() == _served(repo, jar).read_bytes()
    assert progress.done == progress.total == sum(j.size for j in jars)
    assert progress.ended
    # A second run finds every jar verified and asks the repository for nothing.
    repo.requests.clear()
    fetch_jars(_lock(*jars), dest, repository=repo.url)
    assert repo.requests == []


def test_a_tampered_jar_is_rejected_and_not_kept(repo: Repo, tmp_path: Path) -> None:
    good = _publish(repo, "good", 20_000)
    bad = _publish(repo, "bad", 20_000)
    _served(repo, bad).write_bytes(os.urandom(bad.size))  # same size, other bytes
    dest = tmp_path / "lib"
    mismatch = r"checksum mismatch for org\.example\.kg:bad:1\.0"
    with pytest.raises(ServerError, match=mismatch) as exc:
        fetch_jars(_lock(good, bad), dest, repository=repo.url, workers=1)
    assert bad.sha256 in str(exc.value)
    assert not (dest / bad.filename).exists()
    assert not (dest / f"{bad.filename}.part").exists()
    # It was fetched twice from scratch (a corrupt transfer gets one more chance).
    bad_path = f"/maven2/{bad.repository_path}"
    assert [r for r in repo.requests if r[0] == bad_path] == [(bad_path, None)] * 2


def test_an_interrupted_transfer_resumes_with_a_range_request(repo: Repo, tmp_path: Path) -> None:
    jar = _publish(repo, "big", 400_000)
    path = f"/maven2/{jar.repository_path}"
    repo.cut_once.add(path)
    dest = tmp_path / "lib"
    fetch_jars(_lock(jar), dest, repository=repo.url)
    assert (dest / jar.filename).read_bytes() == _served(repo, jar).read_bytes()
    assert repo.requests == [(path, None), (path, f"bytes={jar.size // 2}-")]


def test_a_partial_file_from_an_earlier_run_is_resumed(repo: Repo, tmp_path: Path) -> None:
    jar = _publish(repo, "big", 100_000)
    dest = tmp_path / "lib"
    dest.mkdir()
    (dest / f"{jar.filename}.part").write_bytes(_served(repo, jar).read_bytes()[:30_000])
    progress = Recorder()
    fetch_jars(_lock(jar), dest, repository=repo.url, progress=progress)
    assert (dest / jar.filename).read_bytes() == _served(repo, jar).read_bytes()
    assert repo.requests == [(f"/maven2/{jar.repository_path}", "bytes=30000-")]
    assert progress.done == jar.size


def test_corrupt_partial_and_corrupt_finished_jars_are_fetched_again(
    repo: Repo, tmp_path: Path
) -> None:
    partial = _publish(repo, "partial", 50_000)
    finished = _publish(repo, "finished", 50_000)
    dest = tmp_path / "lib"
    dest.mkdir()
    (dest / f"{partial.filename}.part").write_bytes(os.urandom(20_000))  # wrong head
    (dest / finished.filename).write_bytes(os.urandom(finished.size))  # right size, wrong bytes
    fetch_jars(_lock(partial, finished), dest, repository=repo.url, workers=1)
    for jar in (partial, finished):
        assert (dest / jar.filename).read_bytes() == _served(repo, jar).read_bytes()
    assert not list(dest.glob("*.part"))


def test_a_missing_jar_names_the_url(repo: Repo, tmp_path: Path) -> None:
    jar = _publish(repo, "gone", 10)
    _served(repo, jar).unlink()
    with pytest.raises(ServerError, match=r"gone-1\.0\.jar does not exist \(HTTP 404\)"):
        fetch_jars(_lock(jar), tmp_path / "lib", repository=repo.url)


def test_no_network_says_what_to_do(tmp_path: Path) -> None:
    jar = LockedJar("org.example", "x", "1", None, 10, "ab" * 32)
    nowhere = f"http://127.0.0.1:{free_port()}/maven2"  # nothing listens there
    with pytest.raises(ServerError, match="cannot reach") as exc:
        fetch_jars(_lock(jar), tmp_path / "lib", repository=nowhere)
    assert "HTTPS_PROXY" in str(exc.value)
    assert "run the command again" in str(exc.value)
