"""What the readers share: the zip bound, dates, and the Markdown-flavoured lines they write."""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterable

from kg.formats import Unreadable

#: The most a zip-based file (OOXML, ODF, EPUB) may unpack to, by its members' declared sizes,
#: checked before any member is read: ten times the loader's default file-size bound, so a
#: compression bomb is refused in the first millisecond. zipfile never inflates a member past
#: its declared size, so the check holds for what the libraries read after it.
MAX_UNZIPPED_BYTES = 200_000_000

#: The most table cells one file is read for (sheets, ODF tables); reading stops there.
MAX_CELLS = 300_000

OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

_SPACES = re.compile(r"[ \t\u00a0]+")


def open_zip(data: bytes, what: str) -> zipfile.ZipFile:
    """The archive, once its declared unpacked size is within the bound."""
    if data.startswith(OLE_SIGNATURE):
        # Word, Excel and PowerPoint store a password-protected file as an OLE container.
        raise Unreadable(f"encrypted {what} (or a legacy binary Office file): not read")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise Unreadable(f"unreadable {what}: not a valid zip container ({exc})") from exc
    total = sum(info.file_size for info in archive.infolist())
    if total > MAX_UNZIPPED_BYTES:
        archive.close()
        raise Unreadable(
            f"unreadable {what}: unpacks to {total} bytes > {MAX_UNZIPPED_BYTES} (zip bomb?)"
        )
    if any(info.flag_bits & 0x1 for info in archive.infolist()):
        archive.close()
        raise Unreadable(f"encrypted {what}: remove the password first")
    return archive


def checked_zip(data: bytes, what: str) -> None:
    """Refuse a bomb or a broken archive before a library opens ``data`` itself."""
    open_zip(data, what).close()


def iso_date(value: object) -> str | None:
    """``YYYY-MM-DD`` of a datetime, a date or an ISO 8601 string; None when it is not one."""
    if isinstance(value, dt.datetime | dt.date):
        year = value.year
        return value.isoformat()[:10] if 1000 <= year <= 9999 else None
    if isinstance(value, str):
        text = value.strip()
        try:
            day = dt.date.fromisoformat(text[:10])
        except ValueError:
            return None
        return day.isoformat() if 1000 <= day.year <= 9999 else None
    return None


def clean(text: str) -> str:
    """One line: runs of spaces and line breaks inside a paragraph or a cell folded to one."""
    return _SPACES.sub(" ", " ".join(text.split("\n"))).strip()


def heading(level: int, text: str) -> str:
    """An ATX heading line (``#`` to ``######``) the chunker and the document graph see."""
    return f"{'#' * max(1, min(level, 6))} {clean(text)}"


def row_line(cells: Iterable[str]) -> str | None:
    """``a | b | c`` with trailing empty cells dropped; None for an empty row."""
    values = [clean(cell) for cell in cells]
    while values and not values[-1]:
        values.pop()
    return " | ".join(values) if values else None


def join_blocks(blocks: Iterable[str | None]) -> str:
    """Blocks (paragraphs, headings, tables) separated by blank lines, empty ones left out."""
    return "\n\n".join(block for block in blocks if block and block.strip())


def cell_text(value: object) -> str:
    """A spreadsheet value as a reader would see it: ``3`` not ``3.0``, dates as ISO."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        midnight = value.time() == dt.time()
        return value.date().isoformat() if midnight else value.isoformat(sep=" ")[:19]
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
