"""Issue 39: files that change under a running ingest.

A file rewritten, deleted, grown, or swapped for a symlink, a FIFO or a device after the folder
was listed, and a directory swapped for a symlink during the walk. Nothing outside the folder
is read, nothing hangs or crashes, the affected file is reported and the rest is written; a
document's hash is the hash of the text stored, so the next run picks up what changed.

The races are made deterministic by wrapping the filesystem calls that open a path
(``os.open``, ``io.open``, ``os.scandir``): the swap runs right before the real call on the
named file, then kg's own code goes on against the changed tree. The end-to-end tests run the
real ``ingest()`` (``graph="metadata"``, no LLM) against the session's Neo4j.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

import kg.ingest as kg_ingest
from kg.documents import LoadResult, load_folder
from kg.ingest import ingest
from kg.settings import Settings

REPO = Path(__file__).resolve().parents[2]
CANARY = "kg-race-canary-39: root:x:0:0:/root:/bin/bash"
MAX = 10_000

Swaps = Mapping[str, Callable[[], None]]


@contextlib.contextmanager
def swap_before_open(swaps: Swaps) -> Iterator[list[str]]:
    """Run ``swaps[name]`` once, right before the first call that opens a path named ``name``.

    Yields the names whose swap ran, so a test can check it hit the window it meant to.
    """
    fired: list[str] = []
    real_os_open, real_io_open, real_scandir = os.open, io.open, os.scandir

    def arm(target: object) -> None:
        if not isinstance(target, str | os.PathLike):
            return  # a descriptor: already open
        name = os.path.basename(os.fspath(target))
        if name in swaps and name not in fired:
            fired.append(name)
            swaps[name]()

    def os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        arm(path)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    def io_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        arm(file)
        return real_io_open(file, *args, **kwargs)

    def scandir(path: Any = ".") -> Any:
        arm(path)
        return real_scandir(path)

    os.open, io.open, os.scandir = os_open, io_open, scandir  # type: ignore[assignment]
    try:
        yield fired
    finally:
        os.open, io.open, os.scandir = real_os_open, real_io_open, real_scandir


@contextlib.contextmanager
def grow_while_read(path: Path, extra: int) -> Iterator[list[int]]:
    """Append ``extra`` bytes to ``path`` right after the first ``os.read`` of it returns."""
    grown: list[int] = []
    inode = path.stat().st_ino
    real_read = os.read

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        if not grown and os.fstat(fd).st_ino == inode:
            with path.open("ab") as handle:
                handle.write(b"g" * extra)
            grown.append(extra)
        return data

    os.read = read
    try:
        yield grown
    finally:
        os.read = real_read


def _to_link(path: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        path.unlink()
        path.symlink_to(target)

    return swap


def _dir_to_link(path: Path, target: Path) -> Callable[[], None]:
    """The directory is moved aside (still inside the folder) and a link takes its name."""

    def swap() -> None:
        path.rename(path.with_name(path.name + ".moved"))
        path.symlink_to(target, target_is_directory=True)

    return swap


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Another folder, beside the ingested one: a canary file and a directory of canaries."""
    out = tmp_path / "outside"
    _write(out / "passwd", CANARY + "\n")
    _write(out / "secrets" / "inner.md", f"# Inner\n\n{CANARY}\n")
    _write(out / "secrets" / "outside-only-name.md", f"# Secret\n\n{CANARY}\n")
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    _write(docs / "good.md", "# Good\n\nAuthService depends on Postgres.\n")
    _write(docs / "victim.md", "# Victim\n\nBilling uses Kafka.\n")
    _write(docs / "sub" / "inner.md", "# Inner\n\nThe inner file, inside the folder.\n")
    return docs


def _texts(result: LoadResult) -> dict[str, str]:
    return {d.path: d.text for d in result.documents}


def _reasons(result: LoadResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


# -- content that changes or goes away ----------------------------------------------------------


def test_a_file_rewritten_before_it_is_read_is_stored_as_read(root: Path) -> None:
    victim = root / "victim.md"
    new = "# Victim v2\n\nBilling uses RabbitMQ now.\n"
    with swap_before_open({"victim.md": lambda: victim.write_text(new)}) as fired:
        result = load_folder(root, max_file_bytes=MAX)
    assert fired == ["victim.md"]
    doc = next(d for d in result.documents if d.path == "victim.md")
    assert doc.text == new
    assert doc.sha256 == _sha256(doc.text)  # the hash of what is stored, not of the listing's


def test_a_file_deleted_after_the_listing_is_reported_and_the_rest_loads(root: Path) -> None:
    victim = root / "victim.md"
    with swap_before_open({"victim.md": victim.unlink}) as fired:
        result = load_folder(root, max_file_bytes=MAX)
    assert fired == ["victim.md"]
    assert _reasons(result)["victim.md"].startswith("unreadable")
    assert sorted(_texts(result)) == ["good.md", "sub/inner.md"]


# -- symlinks appearing after the boundary check ------------------------------------------------


def test_a_file_swapped_for_an_escaping_link_right_before_its_open_is_not_read(
    root: Path, outside: Path
) -> None:
    swap = _to_link(root / "victim.md", outside / "passwd")
    with swap_before_open({"victim.md": swap}) as fired:
        result = load_folder(root, max_file_bytes=MAX)
    assert fired == ["victim.md"]
    assert all(CANARY not in text for text in _texts(result).values())
    assert "victim.md" in _reasons(result)
    assert sorted(_texts(result)) == ["good.md", "sub/inner.md"]


def test_a_directory_swapped_for_an_escaping_link_during_the_walk_is_not_listed(
    root: Path, outside: Path
) -> None:
    """The walk lists ``sub/`` only if it is still the directory it checked: names from the
    outside folder never reach the report (a link to / would walk the whole disk)."""
    with swap_before_open({"sub": _dir_to_link(root / "sub", outside / "secrets")}) as fired:
        result = load_folder(root, max_file_bytes=MAX)
    assert fired == ["sub"]
    assert all(CANARY not in text for text in _texts(result).values())
    reasons = _reasons(result)
    assert not [p for p in reasons if "outside-only-name" in p], reasons
    assert "sub/" in reasons, reasons
    assert sorted(_texts(result)) == ["good.md", "victim.md"]


def test_a_directory_swapped_after_the_boundary_check_does_not_lead_outside(
    root: Path, outside: Path
) -> None:
    """The check-then-open window for a parent directory (no openat walk before issue 39)."""
    swap = _dir_to_link(root / "sub", outside / "secrets")
    with swap_before_open({"inner.md": swap}) as fired:
        result = load_folder(root, max_file_bytes=MAX)
    assert fired == ["inner.md"]
    texts = _texts(result)
    assert all(CANARY not in text for text in texts.values())
    # either the file it checked (moved aside with its directory) or a report, never outside
    assert "sub/inner.md" in texts or "sub/inner.md" in _reasons(result)
    assert {"good.md", "victim.md"} <= set(texts)


# -- size bound ---------------------------------------------------------------------------------


def test_a_file_grown_past_the_bound_after_its_size_was_checked_is_skipped(root: Path) -> None:
    victim = root / "victim.md"

    def grow() -> None:
        with victim.open("a", encoding="utf-8") as handle:
            handle.write("x" * (10 * MAX))

    with swap_before_open({"victim.md": grow}) as fired:
        result = load_folder(root, max_file_bytes=MAX)
    assert fired == ["victim.md"]
    assert all(len(text) <= MAX for text in _texts(result).values())
    assert _reasons(result)["victim.md"].startswith("too large"), _reasons(result)
    assert sorted(_texts(result)) == ["good.md", "sub/inner.md"]


def test_a_file_growing_while_it_is_read_stops_at_the_bound(root: Path) -> None:
    with grow_while_read(root / "victim.md", 10 * MAX) as grown:
        result = load_folder(root, max_file_bytes=MAX)
    assert grown, "the loader read the file without os.read"
    assert _reasons(result)["victim.md"].startswith("too large"), _reasons(result)
    assert sorted(_texts(result)) == ["good.md", "sub/inner.md"]


# -- FIFOs and devices (in a child process: a blocked open or an endless read stays there) ------


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _zero_device(path: Path) -> None:
    path.unlink()
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers


def _zero_link(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


SPECIALS: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo,
    "device": _zero_device,
    "link-to-device": _zero_link,
}


def child_load(root: str, special: str, follow_symlinks: bool) -> dict[str, Any]:
    """The child's side: swap ``victim.md`` for ``special`` right before its open, load.

    Memory is capped first, so an unbounded read fails here instead of filling the machine.
    """
    import resource

    pages = int(Path("/proc/self/statm").read_text().split()[0])
    cap = pages * os.sysconf("SC_PAGE_SIZE") + 512 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))
    victim = Path(root) / "victim.md"
    with swap_before_open({"victim.md": lambda: SPECIALS[special](victim)}) as fired:
        result = load_folder(Path(root), max_file_bytes=MAX, follow_symlinks=follow_symlinks)
    return {"fired": fired, "texts": _texts(result), "reasons": _reasons(result)}


_CHILD = (
    "import json, sys\n"
    "from tests.integration.test_ingest_races import child_load\n"
    "print(json.dumps(child_load(sys.argv[1], sys.argv[2], sys.argv[3] == '1')))\n"
)


@pytest.mark.parametrize(
    ("special", "follow_symlinks"),
    [("fifo", False), ("device", False), ("link-to-device", True)],
)
def test_a_fifo_or_device_swapped_in_before_the_read_is_skipped(
    root: Path, special: str, follow_symlinks: bool
) -> None:
    if special == "device" and os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(root), special, "1" if follow_symlinks else "0"],
            cwd=REPO, capture_output=True, text=True, timeout=20,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading hung on a {special} swapped in before the read")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert out["fired"] == ["victim.md"]
    assert out["reasons"]["victim.md"] == "not a regular file", out["reasons"]
    assert sorted(out["texts"]) == ["good.md", "sub/inner.md"]


# -- end to end: the real ingest() against Neo4j ------------------------------------------------


def _graph(driver: Driver, settings: Settings) -> dict[str, dict[str, Any]]:
    """Each document by path: its hash and the text of its chunks, in order."""
    records, _, _ = driver.execute_query(
        "MATCH (d:Document) OPTIONAL MATCH (c:Chunk {document_id: d.id}) "
        "WITH d, c ORDER BY c.index "
        "RETURN d.path AS path, d.sha256 AS sha256, collect(c.text) AS chunks",
        database_=settings.neo4j.database,
    )
    return {r["path"]: {"sha256": r["sha256"], "chunks": r["chunks"]} for r in records}


def _everything(driver: Driver, settings: Settings) -> str:
    records, _, _ = driver.execute_query(
        "MATCH (n) RETURN properties(n) AS p", database_=settings.neo4j.database
    )
    return json.dumps([r["p"] for r in records], default=str, ensure_ascii=False)


def test_ingest_under_races_writes_the_rest_and_nothing_from_outside(
    clean_graph: Driver, settings: Settings, root: Path, outside: Path
) -> None:
    _write(root / "to-passwd.md", "# Passwd\n\nA file that becomes a link to /etc/passwd.\n")
    _write(root / "gone.md", "# Gone\n\nDeleted after the listing.\n")
    _write(root / "grows.md", "# Grows\n\nGrows past the bound.\n")
    _write(root / "walked" / "w.md", "# Walked\n\nIts directory becomes a link.\n")
    os.mkfifo(root / "pipe.md")  # there from the start: listed, never opened for reading
    changed = "# Victim v2\n\nBilling uses RabbitMQ now.\n"

    def grow() -> None:
        with (root / "grows.md").open("a", encoding="utf-8") as handle:
            handle.write("x" * (10 * MAX))

    swaps: dict[str, Callable[[], None]] = {
        "victim.md": lambda: (root / "victim.md").write_text(changed),
        "good.md": _to_link(root / "good.md", outside / "passwd"),
        "to-passwd.md": _to_link(root / "to-passwd.md", Path("/etc/passwd")),
        "gone.md": (root / "gone.md").unlink,
        "grows.md": grow,
        "walked": _dir_to_link(root / "walked", outside / "secrets"),
        "inner.md": _dir_to_link(root / "sub", outside / "secrets"),
    }
    run = settings.model_copy(update={"extract": settings.extract.model_copy(
        update={"max_file_bytes": MAX})})  # fmt: skip
    with swap_before_open(swaps) as fired:
        summary = ingest(run, clean_graph, root, graph="metadata")
    assert sorted(fired) == sorted(swaps)
    assert summary.ok, summary.failures

    everything = _everything(clean_graph, settings)
    assert CANARY not in everything
    assert "root:x:0:0" not in everything  # /etc/passwd
    assert "outside-only-name" not in everything
    reasons = {s["path"]: s["reason"] for s in summary.skipped}
    assert not [p for p in reasons if "outside-only-name" in p], reasons
    for path in ("good.md", "to-passwd.md", "gone.md", "grows.md", "walked/", "pipe.md"):
        assert path in reasons, (path, reasons)
    assert reasons["grows.md"].startswith("too large")
    assert reasons["pipe.md"] == "not a regular file"

    graph = _graph(clean_graph, settings)
    assert set(graph) == {"victim.md", "sub/inner.md"}
    assert all(doc["sha256"] for doc in graph.values())  # complete
    assert graph["victim.md"]["sha256"] == _sha256(changed)
    assert "".join(graph["victim.md"]["chunks"]) == changed.strip()
    assert "inside the folder" in "".join(graph["sub/inner.md"]["chunks"])


def test_a_file_changed_after_it_was_read_is_rewritten_by_the_next_run(
    clean_graph: Driver, settings: Settings, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored hash is the stored text's: a change the run missed is the next run's."""
    victim = root / "victim.md"
    first = victim.read_text()
    second = "# Victim v2\n\nBilling uses RabbitMQ now.\n"
    load = kg_ingest.load_folder

    def load_then_change(*args: Any, **kwargs: Any) -> LoadResult:
        result = load(*args, **kwargs)
        victim.write_text(second)  # after the read, before the hash reaches the graph
        return result

    monkeypatch.setattr(kg_ingest, "load_folder", load_then_change)
    assert ingest(settings, clean_graph, root, graph="metadata").ok
    monkeypatch.undo()
    stored = _graph(clean_graph, settings)["victim.md"]
    assert stored["sha256"] == _sha256(first)
    assert "".join(stored["chunks"]) == first.strip()

    rerun = ingest(settings, clean_graph, root, graph="metadata")
    assert (rerun.documents_changed, rerun.documents_unchanged) == (1, 2)
    stored = _graph(clean_graph, settings)["victim.md"]
    assert stored["sha256"] == _sha256(second)
    assert "".join(stored["chunks"]) == second.strip()
