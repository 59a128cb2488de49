"""Loading a folder into :class:`~kg.models.Document` objects, and cutting them into chunks.

Loading never drops a file silently: everything it does not load comes back as a
:class:`~kg.models.SkippedFile` with a reason, so ``kg ingest`` can say what it ignored.
Chunking follows the text's structure first (headings, paragraphs) and cuts by size, with
overlap, only inside blocks too big for one chunk. Token counts are an offline approximation
(no tokenizer vocabularies to download).
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import math
import os
import re
import stat
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from kg import formats
from kg.docdates import document_date
from kg.limits import cut_key, cut_name, is_valid_unicode, printable_path
from kg.models import Chunk, Document, SkippedFile

__all__ = [
    "LoadResult",
    "chunk_document",
    "count_tokens",
    "document_id",
    "load_folder",
]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
RST_SUFFIXES = frozenset({".rst", ".rest"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
TEXT_SUFFIXES = frozenset(
    {
        ".txt", ".text", ".log", ".csv", ".tsv", ".adoc", ".org", ".tex",
        ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".java",
        ".kt", ".kts", ".scala", ".rs", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb",
        ".php", ".swift", ".m", ".r", ".lua", ".pl", ".ex", ".exs", ".erl", ".hs", ".clj",
        ".yaml", ".yml", ".json", ".jsonl", ".toml", ".ini", ".cfg", ".conf", ".properties",
        ".xml", ".sql", ".cypher", ".graphql", ".proto", ".sh", ".bash", ".zsh", ".ps1",
        ".bat", ".env", ".tf", ".hcl", ".gradle", ".cmake", ".mk", ".dockerfile", ".css",
        ".scss", ".vue", ".svelte",
    }
)  # fmt: skip
TEXT_NAMES = frozenset(
    {"readme", "license", "licence", "changelog", "makefile", "dockerfile", "notice", "authors"}
)
IGNORED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".kg", ".tox",
     ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)  # fmt: skip

_SNIFF_BYTES = 8192
_NOT_UTF8 = "name is not valid UTF-8; not read (rename it)"


@dataclass(frozen=True)
class LoadResult:
    """What a folder gave: loaded documents and every file that was skipped, with why."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


class _Skip(Exception):
    """Internal: a file cannot be loaded; the message is the reason reported to the user."""


# --------------------------------------------------------------------------- ids and tokens


def _sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def document_id(relpath: str, source: str = "") -> str:
    """Stable id from the document's source (root folder or namespace) and relative path.

    Re-ingesting a file from the same source updates the same node; two sources never collide
    unless the caller gives them the same namespace.
    """
    key = relpath if not source else source + "\x00" + relpath
    return "doc_" + _sha1_hex(key)[:16]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _piece_cost(piece: str) -> int:
    # BPE vocabularies give a short word one token and split long ones; ~4 characters
    # per token is close for English and a little generous for Cyrillic.
    return max(1, math.ceil(len(piece) / 4)) if piece[0].isalnum() or piece[0] == "_" else 1


def count_tokens(text: str) -> int:
    """Approximate LLM tokens: words cost about one token per 4 characters, punctuation one."""
    return sum(_piece_cost(m.group()) for m in _TOKEN_RE.finditer(text))


# --------------------------------------------------------------------------- path filters


def _matches(relpath: str, pattern: str) -> bool:
    """Glob on the relative path; a pattern without '/' also matches the file name alone."""
    pattern = pattern.strip()
    if not pattern:
        return False
    candidates = [pattern]
    if pattern.startswith("**/"):
        candidates.append(pattern[3:])
    if pattern.endswith("/"):
        candidates.append(pattern + "*")
    name = relpath.rsplit("/", 1)[-1]
    for p in candidates:
        if fnmatch.fnmatchcase(relpath, p):
            return True
        if "/" not in p and fnmatch.fnmatchcase(name, p):
            return True
    return False


def _filter_reason(relpath: str, include: Sequence[str], exclude: Sequence[str]) -> str | None:
    for pattern in exclude:
        if _matches(relpath, pattern):
            return f"excluded by pattern {pattern!r}"
    if include and not any(_matches(relpath, p) for p in include):
        return "not matched by any include pattern"
    return None


# --------------------------------------------------------------------------- walking


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


_MOVED_OUT = "moved outside the folder (a new symlink); not read"
_BECAME_LINK = "became a symlink while it was loaded; not read"
_CHANGED_DIR = "directory changed during the walk; not read"
# A FIFO swapped in after the type check must not block the open; nor may a tty become ours.
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True)
class _Tree:
    """The folder being loaded, held open by a descriptor for the whole load.

    With ``confined``, every directory listed and every file read is opened from that
    descriptor one name at a time and never through a symlink (an ``openat`` walk of the
    resolved path): whatever is swapped in after a check, what is opened is inside the folder.
    """

    real: Path
    fd: int
    confined: bool

    def resolve(self, path: Path) -> Path:
        """``path`` with every symlink resolved; :class:`_Skip` if that leaves the folder."""
        real = Path(os.path.realpath(path))
        if self.confined and not _inside(real, self.real):
            raise _Skip(_MOVED_OUT)
        return real

    def open(self, path: Path, flags: int) -> int:
        """A descriptor for ``path``; :class:`_Skip` when it leads outside, OSError else."""
        if not self.confined:
            return os.open(path, flags)
        real = self.resolve(path)
        parts = real.relative_to(self.real).parts
        *parents, last = parts or (".",)
        fd = self.fd
        try:
            for name in parents:
                parent, fd = fd, os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                if parent != self.fd:
                    os.close(parent)
            return os.open(last, flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a name realpath saw as no link is one now
                raise _Skip(_BECAME_LINK) from exc
            raise
        finally:
            if fd != self.fd:
                os.close(fd)


@dataclass(frozen=True)
class _Entry:
    name: str
    is_link: bool = False
    is_dir: bool = False
    error: str | None = None


def _list(tree: _Tree, directory: Path, ident: tuple[int, int]) -> list[_Entry]:
    """The directory's entries, sorted, if it is still the directory the walk checked."""
    try:
        fd = tree.open(directory, _DIR_FLAGS)
    except OSError as exc:
        raise _Skip(f"unreadable directory: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != ident:
            raise _Skip(_CHANGED_DIR)
        entries: list[_Entry] = []
        # The entries answer through this descriptor: read them all before it closes.
        with os.scandir(fd) as it:
            for entry in sorted(it, key=lambda e: e.name):
                try:
                    entries.append(_Entry(entry.name, entry.is_symlink(), entry.is_dir()))
                except OSError as exc:
                    entries.append(_Entry(entry.name, error=exc.strerror))
        return entries
    except OSError as exc:
        raise _Skip(f"unreadable directory: {exc.strerror}") from exc
    finally:
        os.close(fd)


# Long on purpose: the folder walk and its symlink boundary checks belong together.
def _walk(tree: _Tree, root: Path, skipped: list[SkippedFile]) -> Iterator[tuple[Path, str]]:
    """Yield (path, relpath) of candidate files, sorted, without recursion.

    A symlink whose target lies outside the resolved root is skipped and reported, unless the
    tree is not confined (``follow_symlinks``): a link to /etc/passwd or ~/.ssh in a shared
    folder must not send its text to the LLM. Symlinks inside the root are followed, and the
    file read is the link's resolved target. Symlinked directories are followed once; a
    directory whose real identity was already visited (a loop, or a second link to the same
    tree) is reported, not re-entered. A directory is listed only if it is still the one
    checked when its parent was (a swap for a link mid-walk is reported, not followed).
    """
    root_stat = os.fstat(tree.fd)
    root_ident = (root_stat.st_dev, root_stat.st_ino)
    seen: set[tuple[int, int]] = {root_ident}
    stack: list[tuple[Path, str, tuple[int, int]]] = [(root, "", root_ident)]
    found: list[tuple[str, Path]] = []
    while stack:
        directory, prefix, ident = stack.pop()
        try:
            entries = _list(tree, directory, ident)
        except _Skip as skip:
            skipped.append(SkippedFile(prefix or ".", str(skip)))
            continue
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            if not is_valid_unicode(entry.name):
                # Neo4j stores only valid Unicode: such a name could never become a path.
                skipped.append(SkippedFile(printable_path(rel), _NOT_UTF8))
                continue
            if entry.error is not None:
                skipped.append(SkippedFile(rel, f"unreadable: {entry.error}"))
                continue
            path = directory / entry.name
            if entry.is_link and tree.confined:
                path = Path(os.path.realpath(path))
                if not _inside(path, tree.real):
                    skipped.append(
                        SkippedFile(
                            rel + ("/" if entry.is_dir else ""),
                            f"symlink to outside the folder ({path}); not read "
                            "(--follow-symlinks reads it)",
                        )
                    )
                    continue
            if entry.is_dir:
                if entry.name in IGNORED_DIRS:
                    skipped.append(SkippedFile(rel + "/", "ignored directory"))
                    continue
                try:
                    st = os.stat(path)
                except OSError as exc:
                    skipped.append(SkippedFile(rel + "/", f"unreadable directory: {exc}"))
                    continue
                child = (st.st_dev, st.st_ino)
                if child in seen:
                    reason = "symlink loop" if entry.is_link else "directory already visited"
                    skipped.append(SkippedFile(rel + "/", reason))
                    continue
                seen.add(child)
                stack.append((path, rel + "/", child))
            else:
                found.append((rel, path))
    for rel, found_path in sorted(found):
        yield found_path, rel


def load_folder(
    root: Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    max_file_bytes: int,
    follow_symlinks: bool = False,
) -> LoadResult:
    """Load every supported file under ``root`` (recursively), in sorted path order.

    ``include``/``exclude`` are globs on the relative POSIX path (``docs/**/*.md``, ``*.pdf``;
    a pattern without ``/`` also matches the bare file name). Exclusion wins.
    Nothing outside the resolved ``root`` is read: symlinks that lead out of it are reported
    in ``skipped``, unless ``follow_symlinks`` (``kg ingest --follow-symlinks``), and so is a
    file or directory swapped for such a link while the folder loads. A file that changes
    meanwhile is read once, within ``max_file_bytes``; its hash is that text's.
    """
    root = Path(root)
    if not root.is_dir():
        if root.is_file():
            # A single file is a folder of one: handy for `kg ingest notes.md`.
            if not is_valid_unicode(root.name):
                return LoadResult(skipped=[SkippedFile(printable_path(root.name), _NOT_UTF8)])
            return _load_files([(root, root.name)], include, exclude, max_file_bytes, [], None)
        raise FileNotFoundError(f"not a folder: {root}")
    real = root.resolve()
    try:
        fd = os.open(real, _DIR_FLAGS)
    except OSError as exc:
        return LoadResult(skipped=[SkippedFile(".", f"unreadable directory: {exc.strerror}")])
    tree = _Tree(real, fd, confined=not follow_symlinks)
    try:
        skipped: list[SkippedFile] = []
        files = list(_walk(tree, root, skipped))
        return _load_files(files, include, exclude, max_file_bytes, skipped, tree)
    finally:
        os.close(fd)


def _load_files(
    files: Sequence[tuple[Path, str]],
    include: Sequence[str],
    exclude: Sequence[str],
    max_file_bytes: int,
    skipped: list[SkippedFile],
    tree: _Tree | None,
) -> LoadResult:
    documents: list[Document] = []
    for path, rel in files:
        reason = _filter_reason(rel, include, exclude)
        if reason is not None:
            skipped.append(SkippedFile(rel, reason))
            continue
        try:
            documents.append(_load_file(path, rel, max_file_bytes, tree))
        except _Skip as skip:
            skipped.append(SkippedFile(rel, str(skip)))
    skipped.sort(key=lambda s: s.path)
    return LoadResult(documents=documents, skipped=skipped)


def _kind(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in RST_SUFFIXES:
        return "rst"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in PDF_SUFFIXES:
        return "pdf"
    if suffix in formats.SUFFIXES:
        return "binary"
    if suffix in TEXT_SUFFIXES or path.name.lower() in TEXT_NAMES:
        return "text"
    if not suffix:
        return "sniff"  # no extension: load it if it turns out to be text
    return None


def _load_file(path: Path, rel: str, max_file_bytes: int, tree: _Tree | None) -> Document:
    kind = _kind(path)
    if kind is None:
        raise _Skip(f"unsupported file type {path.suffix.lower()!r}")
    data = _read(path, max_file_bytes, tree)

    date: str | None = None
    if kind == "binary":
        try:
            extracted = formats.read(path.suffix, data)
        except formats.Unreadable as exc:
            raise _Skip(str(exc)) from exc
        text, title, date = extracted.text, extracted.title, extracted.date
    elif kind == "pdf":
        text, title = _pdf_text(path, data)
    else:
        text = _decode(data)
        if kind == "html":
            text, title = html_to_text(text)
        else:
            title = None
            if kind == "markdown":
                title = _markdown_title(text) or _rst_title(text)  # ATX, then setext
            elif kind == "rst":
                title = _rst_title(text)
    text = _normalize_newlines(text)
    if not text.strip():
        raise _Skip("empty: no text")
    # Title and path reach indexed properties: bounded by the one rule (kg/limits.py).
    rel = cut_key(rel)
    date = date or document_date(text, title or path.stem)
    return Document(
        id=document_id(rel),
        path=rel,
        title=cut_name(title or path.stem),
        text=text,
        sha256=_sha256(text),
        date=date,
    )


def _checked(st: os.stat_result, max_file_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise _Skip("not a regular file")
    if st.st_size > max_file_bytes:
        raise _Skip(f"too large: {st.st_size} bytes > {max_file_bytes}")
    if st.st_size == 0:
        raise _Skip("empty file")


def _read(path: Path, max_file_bytes: int, tree: _Tree | None) -> bytes:
    """The file's bytes, read once through one descriptor and never more than the bound.

    The type and size are checked by path first (a huge file or a device is never opened),
    then again on the open descriptor: the file may have been swapped or grown since.
    """
    where = tree.resolve(path) if tree is not None else path  # outside: not even a stat
    try:
        _checked(where.stat(), max_file_bytes)
        fd = tree.open(where, _FILE_FLAGS) if tree is not None else os.open(where, _FILE_FLAGS)
    except OSError as exc:
        raise _Skip(f"unreadable: {exc.strerror or exc}") from exc
    try:
        _checked(os.fstat(fd), max_file_bytes)
        blocks: list[bytes] = []
        left = max_file_bytes + 1  # one byte past the bound tells a file that grew
        while left > 0:
            block = os.read(fd, min(left, 1 << 20))
            if not block:
                break
            blocks.append(block)
            left -= len(block)
    except OSError as exc:
        raise _Skip(f"unreadable: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if left <= 0:
        raise _Skip(f"too large: it grew past {max_file_bytes} bytes while read")
    return b"".join(blocks)


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise _Skip("bad encoding: invalid UTF-16") from exc
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise _Skip("binary file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Skip(f"bad encoding: not valid UTF-8 (byte {exc.start})") from exc


def _normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


# --------------------------------------------------------------------------- titles

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_RST_UNDERLINE = re.compile(r"""^([=\-~^"'`#*+:.<>_])\1{2,}\s*$""")


def _markdown_title(text: str) -> str | None:
    match = _MD_HEADING.search(text)
    return match.group(2).strip() if match else None


def _rst_heading_lines(lines: Sequence[str]) -> Iterator[int]:
    """Indexes of RST section titles (a text line followed by an underline at least as long)."""
    for i in range(len(lines) - 1):
        title, under = lines[i].rstrip(), lines[i + 1].rstrip()
        if (
            title.strip()
            and not _RST_UNDERLINE.match(title)
            and _RST_UNDERLINE.match(under)
            and len(under) >= len(title.strip())
        ):
            yield i


def _rst_title(text: str) -> str | None:
    lines = text.splitlines()
    for i in _rst_heading_lines(lines):
        return lines[i].strip()
    return None


# --------------------------------------------------------------------------- HTML

_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
     "footer", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "dd", "dt", "hr",
     "nav", "aside", "main", "figure", "figcaption", "td", "th", "title"}
)  # fmt: skip
_HIDDEN_TAGS = frozenset({"script", "style", "noscript", "template", "head", "svg"})


class _TextExtractor(HTMLParser):
    """Event-driven, so arbitrarily deep nesting costs no recursion."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0
        self.title: str | None = None
        self.heading: str | None = None
        self._in_title = False
        self._in_h = False
        self._buf: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title, self._buf = True, []
        elif tag in _HIDDEN_TAGS:
            self.hidden += 1
        if tag in {"h1", "h2", "h3"} and self.heading is None:
            self._in_h, self._buf = True, []
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._in_title:
            self._in_title = False
            self.title = " ".join("".join(self._buf).split()) or None
        elif tag in _HIDDEN_TAGS and self.hidden:
            self.hidden -= 1
        if tag in {"h1", "h2", "h3"} and self._in_h:
            self._in_h = False
            self.heading = " ".join("".join(self._buf).split()) or None
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title or self._in_h:
            self._buf.append(data)
        if self.hidden or self._in_title:
            return
        self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str | None]:
    """Visible text of an HTML page (paragraph breaks kept) and its title."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    lines = [" ".join(line.split()) for line in text.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text, parser.title or parser.heading


# --------------------------------------------------------------------------- PDF


def _pdf_text(path: Path, data: bytes) -> tuple[str, str | None]:
    import io

    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pypdf warns on many harmless malformations
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise _Skip("encrypted PDF")
            pages = [(page.extract_text() or "").strip() for page in reader.pages]
            meta_title = reader.metadata.title if reader.metadata else None
    except _Skip:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise _Skip(f"unreadable PDF: {type(exc).__name__}: {exc}") from exc
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise _Skip("PDF has no text layer (scanned?)")
    title = meta_title.strip() if isinstance(meta_title, str) and meta_title.strip() else None
    return text, title


# --------------------------------------------------------------------------- chunking


@dataclass(frozen=True)
class _Block:
    """A span of the document text: a paragraph, or a heading (which starts a section)."""

    start: int
    end: int
    heading: bool
    tokens: int


def _blocks(text: str) -> list[_Block]:
    """Paragraphs split on blank lines; Markdown/RST headings become their own blocks."""
    blocks: list[_Block] = []
    lines = text.split("\n")
    rst_titles = set(_rst_heading_lines(lines))
    offsets: list[int] = []
    pos = 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    para_start: int | None = None
    in_fence = False
    skip_next = False

    def close(end_line: int) -> None:
        nonlocal para_start
        if para_start is not None:
            start = offsets[para_start]
            end = offsets[end_line - 1] + len(lines[end_line - 1])
            blocks.append(_Block(start, end, False, count_tokens(text[start:end])))
            para_start = None

    for i, line in enumerate(lines):
        if skip_next:
            skip_next = False
            continue
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence:
            if para_start is None:
                para_start = i
            continue
        is_md_heading = bool(_MD_HEADING.match(line))
        if is_md_heading or i in rst_titles:
            close(i)
            end_line = i + 1 if is_md_heading else i + 2
            start = offsets[i]
            end = offsets[end_line - 1] + len(lines[end_line - 1])
            blocks.append(_Block(start, end, True, count_tokens(text[start:end])))
            skip_next = not is_md_heading
            continue
        if not stripped:
            close(i)
        elif para_start is None:
            para_start = i
    close(len(lines))
    return blocks


def _split_span(text: str, start: int, end: int, chunk_tokens: int, overlap: int) -> list[str]:
    """Cut one oversized span by token count, each piece repeating ``overlap`` tokens."""
    pieces = [
        (m.start() + start, m.end() + start, _piece_cost(m.group()))
        for m in _TOKEN_RE.finditer(text[start:end])
    ]
    out: list[str] = []
    i = 0
    overlap = min(overlap, chunk_tokens // 2)
    while i < len(pieces):
        j, cost = i, 0
        while j < len(pieces) and (cost + pieces[j][2] <= chunk_tokens or j == i):
            cost += pieces[j][2]
            j += 1
        out.append(text[pieces[i][0] : pieces[j - 1][1]])
        if j >= len(pieces):
            break
        # Step back over ``overlap`` tokens, but always move forward.
        back, k = 0, j
        while k - 1 > i and back + pieces[k - 1][2] <= overlap:
            k -= 1
            back += pieces[k][2]
        i = k
    return out


def chunk_document(doc: Document, *, chunk_tokens: int, overlap: int) -> list[Chunk]:
    """Cut a document into chunks of at most about ``chunk_tokens`` tokens.

    Paragraphs are packed together up to the size; a heading starts a new chunk once the
    current one is a quarter full (so tiny sections still share a chunk); only a block too big
    for one chunk is cut by size, with ``overlap`` tokens repeated between its pieces.
    """
    if chunk_tokens < 1:
        raise ValueError("chunk_tokens must be positive")
    if overlap < 0:
        raise ValueError("overlap must not be negative")
    text = doc.text
    texts: list[str] = []
    cur: list[_Block] = []

    def emit(blocks: Sequence[_Block]) -> None:
        if blocks:
            piece = text[blocks[0].start : blocks[-1].end].strip()
            if piece:
                texts.append(piece)

    def split_headings(blocks: list[_Block]) -> tuple[list[_Block], list[_Block]]:
        """(body, trailing headings): a heading belongs with what follows it."""
        i = len(blocks)
        while i > 0 and blocks[i - 1].heading:
            i -= 1
        return blocks[:i], blocks[i:]

    for block in _blocks(text):
        if block.tokens > chunk_tokens:
            body, lead = split_headings(cur)
            emit(body)
            start = lead[0].start if lead else block.start
            texts.extend(_split_span(text, start, block.end, chunk_tokens, overlap))
            cur = []
            continue
        cur_tokens = sum(b.tokens for b in cur)
        starts_section = block.heading and cur_tokens >= chunk_tokens // 4
        if cur and (cur_tokens + block.tokens > chunk_tokens or starts_section):
            body, lead = split_headings(cur)
            if body and sum(b.tokens for b in lead) + block.tokens <= chunk_tokens:
                emit(body)
                cur = lead
            else:
                emit(cur)
                cur = []
        cur.append(block)
    emit(cur)

    chunks: list[Chunk] = []
    for index, chunk_text in enumerate(texts):
        digest = _sha256(chunk_text)
        chunk_id = "chk_" + _sha1_hex(f"{doc.id}:{index}:{digest}")[:16]
        chunks.append(Chunk(chunk_id, doc.id, index, chunk_text, digest))
    return chunks
