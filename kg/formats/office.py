"""Word, Excel and PowerPoint (OOXML: ``.docx``, ``.xlsx``, ``.pptx``).

python-docx, openpyxl and python-pptx (all MIT) read the packages; each is imported here, so
only a folder that holds such a file pays for it. Every archive passes the zip bound first.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from kg.formats import Extracted, Unreadable
from kg.formats._common import (
    MAX_CELLS,
    cell_text,
    checked_zip,
    clean,
    heading,
    iso_date,
    join_blocks,
    row_line,
)

_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
# What a broken package raises from inside the libraries (a missing part, bad XML, a bad value).
_BROKEN = (zipfile.BadZipFile, KeyError, ValueError, TypeError, AttributeError, IndexError)


def _broken(what: str, exc: Exception) -> Unreadable:
    return Unreadable(f"unreadable {what}: {type(exc).__name__}: {exc}"[:300])


def _declared(props: Any) -> tuple[str | None, str | None]:
    """Title and date (created, else modified) from a package's core properties."""
    title = clean(props.title or "") or None
    date = iso_date(props.created) or iso_date(props.modified)
    return title, date


# --------------------------------------------------------------------------- Word


def read_docx(data: bytes) -> Extracted:
    """Headings as ``#`` lines, paragraphs, and tables as ``a | b`` rows, in document order."""
    checked_zip(data, "DOCX")
    import docx
    from lxml.etree import LxmlError

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(_docx_blocks(document))
        title, date = _declared(document.core_properties)
    except (*_BROKEN, LxmlError) as exc:
        raise _broken("DOCX", exc) from exc
    return Extracted(join_blocks(blocks), title, date)


def _docx_blocks(document: Any) -> Iterator[str | None]:
    from docx.table import Table

    levels = _heading_levels(document)
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            yield _docx_table(item)
        else:
            yield _docx_paragraph(item, levels)


def _heading_levels(document: Any) -> dict[str, int]:
    """Style id -> heading level (0: a list item), a style based on a heading included.

    Read once: python-docx's ``paragraph.style`` searches the style sheet on every call
    (a 2,000-paragraph document took 11 s that way).
    """
    styles = {style.style_id: style for style in document.styles if style.style_id}
    levels: dict[str, int] = {}
    for style_id, style in styles.items():
        current, hops = style, 0
        while current is not None and hops < 8:
            name = (current.name or "").strip()
            match = _HEADING_STYLE.fullmatch(name)
            if name.casefold() == "title" or match:
                levels[style_id] = int(match.group(1)) if match else 1
                break
            if name.casefold().startswith("list"):
                levels[style_id] = 0
                break
            current, hops = getattr(current, "base_style", None), hops + 1
    return levels


def _docx_paragraph(paragraph: Any, levels: dict[str, int]) -> str | None:
    text = clean(paragraph.text)
    if not text:
        return None
    level = levels.get(paragraph._p.style or "")  # the paragraph's style id, read from its XML
    if level is None:
        return text
    return heading(level, text) if level else f"- {text}"


def _docx_table(table: Any) -> str | None:
    lines: list[str] = []
    for row in table.rows:
        cells, seen = [], None
        for cell in row.cells:
            if cell._tc is seen:  # a merged cell is listed once per grid column it spans
                continue
            seen = cell._tc
            cells.append(cell.text)
        line = row_line(cells)
        if line:
            lines.append(line)
    return "\n".join(lines) or None


# --------------------------------------------------------------------------- Excel


def read_xlsx(data: bytes) -> Extracted:
    """Each sheet a ``# Sheet`` section, its non-empty rows as ``a | b | c`` (cached values)."""
    checked_zip(data, "XLSX")
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = openpyxl.load_workbook(
            io.BytesIO(data), read_only=True, data_only=True, keep_links=False
        )
    except (*_BROKEN, InvalidFileException, OSError) as exc:
        raise _broken("XLSX", exc) from exc
    try:
        blocks: list[str | None] = []
        budget = MAX_CELLS
        for sheet in workbook.worksheets:
            if budget <= 0:
                break
            rows, budget = _sheet_rows(sheet, budget)
            if rows:
                blocks.append(heading(1, sheet.title))
                blocks.append("\n".join(rows))
        title, date = _declared(workbook.properties)
    except (*_BROKEN, OSError) as exc:
        raise _broken("XLSX", exc) from exc
    finally:
        workbook.close()
    return Extracted(join_blocks(blocks), title, date)


def _sheet_rows(sheet: Any, budget: int) -> tuple[list[str], int]:
    """The sheet's rows within ``budget`` cells (a skipped empty row costs one)."""
    # A stated dimension (often A1:XFD1048576) would pad every row and fill every gap.
    sheet.reset_dimensions()
    rows: list[str] = []
    for values in sheet.iter_rows(values_only=True):
        budget -= max(1, len(values))
        if budget < 0:
            break
        line = row_line(cell_text(value) for value in values)
        if line:
            rows.append(line)
    return rows, budget


# --------------------------------------------------------------------------- PowerPoint


def read_pptx(data: bytes) -> Extracted:
    """Each slide: its title as ``# title``, then its text frames, tables and notes."""
    checked_zip(data, "PPTX")
    import pptx
    from lxml.etree import LxmlError

    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        blocks: list[str | None] = []
        for slide in presentation.slides:
            blocks.extend(_slide_blocks(slide))
        title, date = _declared(presentation.core_properties)
    except (*_BROKEN, LxmlError) as exc:
        raise _broken("PPTX", exc) from exc
    return Extracted(join_blocks(blocks), title, date)


def _slide_blocks(slide: Any) -> Iterator[str | None]:
    title_shape = slide.shapes.title
    title = clean(title_shape.text_frame.text) if title_shape is not None else ""
    if title:
        yield heading(1, title)
    for shape in _shapes(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            lines = [row_line(cell.text for cell in row.cells) for row in shape.table.rows]
            yield "\n".join(line for line in lines if line)
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield _frame_text(shape.text_frame)
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        if frame is not None:
            yield _frame_text(frame)


def _shapes(shapes: Any) -> Iterator[Any]:
    """Every shape, group members included, in the slide's order."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _frame_text(frame: Any) -> str | None:
    lines = [clean(paragraph.text) for paragraph in frame.paragraphs]
    return "\n".join(line for line in lines if line) or None
