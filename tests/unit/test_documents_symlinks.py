"""Ingest boundaries: nothing outside the resolved folder is read unless the user asks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kg.documents import load_folder

MAX = 1_000_000
SECRET = "root:x:0:0:kg-symlink-canary:/root:/bin/bash"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with a good file, links that escape it (file, directory, relative, chained,
    dangling) and links that stay inside it; the escaping ones point at a canary."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET + "\n", encoding="utf-8")
    (outside / "secrets").mkdir()
    (outside / "secrets" / "id_rsa.txt").write_text(SECRET, encoding="utf-8")

    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "good.md").write_text("# Good\n\nAuthService depends on Postgres.\n", encoding="utf-8")
    (root / "sub" / "inner.md").write_text("# Inner\n\ntext\n", encoding="utf-8")
    (root / "passwd.txt").symlink_to(outside / "passwd")  # absolute, to a file
    (root / "sub" / "up.txt").symlink_to(Path("..") / ".." / "outside" / "passwd")  # relative
    (root / "keys").symlink_to(outside / "secrets", target_is_directory=True)  # a directory
    (root / "sub" / "hop.txt").symlink_to(root / "passwd.txt")  # inside, then out
    (root / "alias.md").symlink_to(root / "sub" / "inner.md")  # stays inside
    (root / "subdir-link").symlink_to(root / "sub", target_is_directory=True)  # inside, again
    return root


def test_symlinks_out_of_the_folder_are_skipped_and_reported(tree: Path) -> None:
    result = load_folder(tree, max_file_bytes=MAX)
    assert all(SECRET not in d.text for d in result.documents)
    reasons = {s.path: s.reason for s in result.skipped}
    for escaping in ("passwd.txt", "sub/up.txt", "keys/", "sub/hop.txt"):
        assert escaping in reasons, reasons
        assert reasons[escaping].startswith("symlink to outside the folder"), reasons[escaping]
        assert "--follow-symlinks" in reasons[escaping]
    # links that stay inside the folder still load (a second way into one directory is
    # reported, not walked twice)
    loaded = sorted(d.path for d in result.documents)
    assert loaded == ["alias.md", "good.md", "sub/inner.md"]
    assert "subdir-link/" in reasons


def test_follow_symlinks_opts_in(tree: Path) -> None:
    result = load_folder(tree, max_file_bytes=MAX, follow_symlinks=True)
    texts = {d.path: d.text for d in result.documents}
    assert SECRET in texts["passwd.txt"]
    assert SECRET in texts["keys/id_rsa.txt"]
    assert not [s for s in result.skipped if s.reason.startswith("symlink to outside")]


def test_a_root_that_is_itself_a_symlink_is_resolved_first(tree: Path, tmp_path: Path) -> None:
    """The boundary is the *resolved* root: linking to the folder does not widen it."""
    link = tmp_path / "docs-link"
    link.symlink_to(tree, target_is_directory=True)
    result = load_folder(link, max_file_bytes=MAX)
    assert "good.md" in {d.path for d in result.documents}
    assert all(SECRET not in d.text for d in result.documents)


def test_a_dangling_link_is_reported_not_fatal(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    (root / "gone.md").symlink_to(tmp_path / "nowhere.md")
    result = load_folder(root, max_file_bytes=MAX)
    assert [d.path for d in result.documents] == ["a.md"]
    assert [s.path for s in result.skipped] == ["gone.md"]


def test_a_file_swapped_for_an_escaping_link_after_the_walk_is_not_read(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boundary is checked again just before each read (the tree may change mid-run)."""
    import kg.documents as documents

    walk = documents._walk

    def walk_then_swap(*args: object, **kwargs: object) -> object:
        found = list(walk(*args, **kwargs))  # type: ignore[arg-type]
        good = tree / "good.md"
        good.unlink()
        os.symlink(tmp_path / "outside" / "passwd", good)
        return iter(found)

    monkeypatch.setattr(documents, "_walk", walk_then_swap)
    result = load_folder(tree, max_file_bytes=MAX)
    assert all(SECRET not in d.text for d in result.documents)
    assert "good.md" in {s.path for s in result.skipped}
