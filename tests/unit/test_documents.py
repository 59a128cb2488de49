"""Loading a folder (every skip reason, filters, PDF, HTML, Russian) and chunking."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from kg.documents import (
    chunk_document,
    count_tokens,
    document_id,
    html_to_text,
    load_folder,
)
from kg.models import Document

MAX = 1_000_000
DATA = Path(__file__).parent.parent / "data" / "docs"


def _write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _reasons(result: object) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}  # type: ignore[attr-defined]


def _make_pdf(path: Path, lines: list[str] | None) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    c.setTitle("Payments Runbook" if lines else "")
    if lines:
        y = 800
        for line in lines:
            c.drawString(72, y, line)
            y -= 20
    else:
        c.rect(72, 600, 200, 100, fill=1)  # drawing only: no text layer
    c.showPage()
    c.save()


# --------------------------------------------------------------------------- loading


def test_loads_supported_kinds_sorted_with_titles(tmp_path: Path) -> None:
    _write(tmp_path, "b/notes.md", "Intro line\n\n# Payments Service\n\nIt calls Ledger.\n")
    _write(tmp_path, "a.txt", "plain text body")
    _write(tmp_path, "guide.rst", "Deploy Guide\n============\n\nRun it.\n")
    _write(tmp_path, "src/app.py", "def main():\n    return 1\n")
    _write(tmp_path, "conf/app.yaml", "service: payments\n")
    _write(tmp_path, "Makefile", "all:\n\techo hi\n")
    result = load_folder(tmp_path, max_file_bytes=MAX)
    paths = [d.path for d in result.documents]
    assert paths == sorted(paths)
    assert paths == ["Makefile", "a.txt", "b/notes.md", "conf/app.yaml", "guide.rst", "src/app.py"]
    by_path = {d.path: d for d in result.documents}
    assert by_path["b/notes.md"].title == "Payments Service"
    assert by_path["guide.rst"].title == "Deploy Guide"
    assert by_path["a.txt"].title == "a"
    assert by_path["src/app.py"].title == "app"
    assert result.skipped == []


def test_ids_and_hashes_are_stable(tmp_path: Path) -> None:
    _write(tmp_path, "x/y.md", "# T\n\nbody")
    first = load_folder(tmp_path, max_file_bytes=MAX).documents[0]
    second = load_folder(tmp_path, max_file_bytes=MAX).documents[0]
    assert first == second
    assert first.id == document_id("x/y.md")
    assert first.id.startswith("doc_")
    assert len(first.id) == 20
    import hashlib

    assert first.sha256 == hashlib.sha256(first.text.encode()).hexdigest()


def test_every_skip_reason_is_reported(tmp_path: Path) -> None:
    _write(tmp_path, "empty.md", "")
    _write(tmp_path, "blank.txt", "   \n\n  ")
    _write(tmp_path, "big.txt", "x" * 20_001)
    _write(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    _write(tmp_path, "data.txt", b"abc\x00\x01\x02def")
    _write(tmp_path, "latin1.txt", "café".encode("latin-1"))
    _make_pdf(tmp_path / "scan.pdf", None)
    _write(tmp_path, "broken.pdf", b"%PDF-1.4 garbage that is not a pdf")
    _write(tmp_path, "ok.md", "# fine")
    reasons = _reasons(load_folder(tmp_path, max_file_bytes=20_000))
    assert reasons["empty.md"] == "empty file"
    assert reasons["blank.txt"].startswith("empty")
    assert reasons["big.txt"].startswith("too large")
    assert reasons["image.png"] == "unsupported file type '.png'"
    assert reasons["data.txt"] == "binary file"
    assert reasons["latin1.txt"].startswith("bad encoding")
    assert "no text layer" in reasons["scan.pdf"]
    assert reasons["broken.pdf"].startswith("unreadable PDF")
    assert "ok.md" not in reasons


def test_too_large_is_decided_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "huge.txt", "y" * 5000)

    def boom(self: Path) -> bytes:
        raise AssertionError("read a file that was too large")

    monkeypatch.setattr(Path, "read_bytes", boom)
    assert _reasons(load_folder(tmp_path, max_file_bytes=10))["huge.txt"].startswith("too large")


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 0 does not stop root (CI runs as root), so the read itself is made to fail."""
    _write(tmp_path, "secret.md", "# no")
    _write(tmp_path, "open.md", "# yes")
    real_open = os.open

    def denied(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.fsdecode(path).endswith("secret.md"):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", denied)
    result = load_folder(tmp_path, max_file_bytes=MAX)
    assert _reasons(result)["secret.md"].startswith("unreadable")
    assert [d.path for d in result.documents] == ["open.md"]


def test_symlink_loop_is_reported_not_followed(tmp_path: Path) -> None:
    _write(tmp_path, "a/doc.md", "# A")
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "dangling.md").symlink_to(tmp_path / "missing.md")
    result = load_folder(tmp_path, max_file_bytes=MAX)
    assert [d.path for d in result.documents] == ["a/doc.md"]
    reasons = _reasons(result)
    assert reasons["a/loop/"] == "symlink loop"
    assert reasons["dangling.md"].startswith("unreadable")


def test_symlinked_dir_outside_tree_is_followed_only_when_asked(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, "shared.md", "# Shared")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    assert load_folder(root, max_file_bytes=MAX).documents == []
    followed = load_folder(root, max_file_bytes=MAX, follow_symlinks=True)
    assert [d.path for d in followed.documents] == ["link/shared.md"]


def test_include_exclude_globs(tmp_path: Path) -> None:
    _write(tmp_path, "docs/a.md", "# a")
    _write(tmp_path, "docs/deep/b.md", "# b")
    _write(tmp_path, "docs/deep/c.txt", "c")
    _write(tmp_path, "drafts/d.md", "# d")
    result = load_folder(
        tmp_path, include=["docs/**", "*.md"], exclude=["drafts/*", "**/c.txt"], max_file_bytes=MAX
    )
    assert [d.path for d in result.documents] == ["docs/a.md", "docs/deep/b.md"]
    reasons = _reasons(result)
    assert reasons["drafts/d.md"] == "excluded by pattern 'drafts/*'"
    assert reasons["docs/deep/c.txt"] == "excluded by pattern '**/c.txt'"

    only_txt = load_folder(tmp_path, include=["*.txt"], max_file_bytes=MAX)
    assert [d.path for d in only_txt.documents] == ["docs/deep/c.txt"]
    assert _reasons(only_txt)["docs/a.md"] == "not matched by any include pattern"


def test_vcs_directories_are_reported_once(tmp_path: Path) -> None:
    _write(tmp_path, ".git/config", "[core]")
    _write(tmp_path, "x.md", "# x")
    result = load_folder(tmp_path, max_file_bytes=MAX)
    assert _reasons(result) == {".git/": "ignored directory"}


def test_pdf_text_layer_and_title(tmp_path: Path) -> None:
    _make_pdf(tmp_path / "runbook.pdf", ["Payments calls Ledger.", "Owned by Team Atlas."])
    doc = load_folder(tmp_path, max_file_bytes=MAX).documents[0]
    assert "Payments calls Ledger." in doc.text
    assert doc.title == "Payments Runbook"


def test_html_text_only(tmp_path: Path) -> None:
    html = (
        "<html><head><title>Ops Wiki</title><style>p{color:red}</style>"
        "<script>var secret = 1;</script></head>"
        "<body><h1>Payments</h1><p>Calls &amp; pays <b>Ledger</b>.</p><p>Second</p></body></html>"
    )
    _write(tmp_path, "wiki.html", html)
    doc = load_folder(tmp_path, max_file_bytes=MAX).documents[0]
    assert doc.title == "Ops Wiki"
    assert "Calls & pays Ledger." in doc.text
    assert "secret" not in doc.text
    assert "color" not in doc.text
    assert "\n\nSecond" in doc.text


def test_html_ten_thousand_levels_deep() -> None:
    depth = 10_000
    html = "<div>" * depth + "deep text" + "</div>" * depth
    text, title = html_to_text(html)
    assert text == "deep text"
    assert title is None
    text, _ = html_to_text("<span>" * depth + "<h1>Head</h1>unclosed")
    assert "Head" in text
    assert "unclosed" in text


def test_russian_document(tmp_path: Path) -> None:
    _write(tmp_path, "ру/платежи.md", "# Сервис платежей\n\nСервис платежей вызывает Реестр.\n")
    doc = load_folder(tmp_path, max_file_bytes=MAX).documents[0]
    assert doc.title == "Сервис платежей"
    assert doc.path == "ру/платежи.md"
    assert "вызывает Реестр" in doc.text


def test_sample_data_folder_loads() -> None:
    result = load_folder(DATA, max_file_bytes=MAX)
    assert len(result.documents) >= 3
    assert all(d.text.strip() for d in result.documents)


def test_single_file_and_missing_root(tmp_path: Path) -> None:
    path = _write(tmp_path, "one.md", "# One")
    assert [d.path for d in load_folder(path, max_file_bytes=MAX).documents] == ["one.md"]
    with pytest.raises(FileNotFoundError):
        load_folder(tmp_path / "nope", max_file_bytes=MAX)


def test_crlf_normalized(tmp_path: Path) -> None:
    _write(tmp_path, "win.txt", b"line one\r\nline two\r\n")
    assert load_folder(tmp_path, max_file_bytes=MAX).documents[0].text == "line one\nline two\n"


# --------------------------------------------------------------------------- chunking


def _doc(text: str, path: str = "d.md") -> Document:
    import hashlib

    return Document(document_id(path), path, "t", text, hashlib.sha256(text.encode()).hexdigest())


def test_count_tokens_offline_and_unicode() -> None:
    assert count_tokens("") == 0
    assert count_tokens("a, b.") == 4
    assert count_tokens("Сервис платежей") >= 2


def test_small_document_is_one_chunk_with_stable_id() -> None:
    doc = _doc("# Title\n\nShort paragraph.")
    chunks = chunk_document(doc, chunk_tokens=100, overlap=10)
    assert len(chunks) == 1
    assert chunks[0].text == "# Title\n\nShort paragraph."
    assert chunks[0].document_id == doc.id
    assert chunks[0].index == 0
    again = chunk_document(doc, chunk_tokens=100, overlap=10)
    assert again == chunks


def test_headings_split_sections() -> None:
    body = " ".join(["word"] * 30)
    doc = _doc(f"# One\n\n{body}\n\n## Two\n\n{body}\n\nTitle three\n-----------\n\n{body}")
    chunks = chunk_document(doc, chunk_tokens=50, overlap=0)
    assert [c.text.splitlines()[0] for c in chunks] == ["# One", "## Two", "Title three"]


def test_paragraphs_are_packed_up_to_size() -> None:
    paras = [" ".join([f"p{i}"] * 10) for i in range(6)]
    doc = _doc("\n\n".join(paras))
    chunks = chunk_document(doc, chunk_tokens=25, overlap=0)
    assert len(chunks) == 3
    assert all(count_tokens(c.text) <= 25 for c in chunks)
    assert "\n\n".join(c.text for c in chunks) == doc.text


def test_oversized_block_is_cut_with_overlap() -> None:
    words = [f"w{i}" for i in range(100)]
    doc = _doc(" ".join(words))
    chunks = chunk_document(doc, chunk_tokens=20, overlap=5)
    assert len(chunks) > 5
    assert all(count_tokens(c.text) <= 20 for c in chunks)
    for prev, nxt in itertools.pairwise(chunks):
        # every word costs one token here, so the overlap repeats the last five words
        assert nxt.text.split()[:5] == prev.text.split()[-5:]
    assert chunks[-1].text.endswith("w99")
    assert len({c.id for c in chunks}) == len(chunks)


def test_repeated_content_gets_unique_ids() -> None:
    doc = _doc("\n\n".join(["same paragraph text " * 8] * 3))
    chunks = chunk_document(doc, chunk_tokens=45, overlap=0)
    assert len(chunks) == 3
    assert len({c.sha256 for c in chunks}) == 1
    assert len({c.id for c in chunks}) == 3


def test_chunk_ids_depend_on_document_and_content() -> None:
    a = chunk_document(_doc("same", "a.md"), chunk_tokens=50, overlap=0)[0]
    b = chunk_document(_doc("same", "b.md"), chunk_tokens=50, overlap=0)[0]
    c = chunk_document(_doc("other", "a.md"), chunk_tokens=50, overlap=0)[0]
    assert a.sha256 == b.sha256
    assert len({a.id, b.id, c.id}) == 3


def test_russian_chunking() -> None:
    text = "# Платежи\n\n" + " ".join(["Сервис платежей вызывает реестр."] * 40)
    chunks = chunk_document(_doc(text), chunk_tokens=60, overlap=10)
    assert len(chunks) > 1
    assert all(count_tokens(c.text) <= 60 for c in chunks)
    assert all("\ufffd" not in c.text for c in chunks)


def test_code_fence_is_not_split_on_blank_lines() -> None:
    text = "Intro\n\n```\n# not a heading\n\nx = 1\n```\n\nAfter"
    chunks = chunk_document(_doc(text), chunk_tokens=200, overlap=0)
    assert len(chunks) == 1


def test_bad_sizes_rejected() -> None:
    with pytest.raises(ValueError, match="chunk_tokens"):
        chunk_document(_doc("x"), chunk_tokens=0, overlap=0)


def test_heading_stays_with_its_section() -> None:
    big = " ".join(["alpha"] * 80)
    doc = _doc(f"# Intro\n\n{big}")
    chunks = chunk_document(doc, chunk_tokens=40, overlap=0)
    assert chunks[0].text.startswith("# Intro\n\nalpha")  # never a lone heading chunk
    para = " ".join(["beta"] * 15)
    doc = _doc(f"{para}\n\n## Next\n\n{para}")
    texts = [c.text for c in chunk_document(doc, chunk_tokens=25, overlap=0)]
    assert texts == [para, f"## Next\n\n{para}"]
