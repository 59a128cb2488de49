"""OpenDocument text, spreadsheets and presentations (``.odt``, ``.ods``, ``.odp``).

odfpy (Apache-2.0, one option of its triple licence) builds the element tree. Its own
``load()`` prints a part it cannot parse to stdout (which would corrupt ``kg ingest --json``
and the MCP stdio channel) and reads every picture into memory, so the two parts kg needs,
``meta.xml`` and ``content.xml``, go through odfpy's parser here, and a parse error is raised.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any

from kg.formats import Extracted, Unreadable
from kg.formats._common import MAX_CELLS, clean, heading, iso_date, join_blocks, open_zip, row_line

_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_PRESENTATION = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
_META = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
_DC = "http://purl.org/dc/elements/1.1/"

#: Containers walked for their blocks; anything else is read as one paragraph of text.
_TEXT_CONTAINERS = {
    (_TEXT, "section"), (_TEXT, "list"), (_TEXT, "list-item"), (_TEXT, "list-header"),
    (_OFFICE, "text"), (_DRAW, "text-box"), (_DRAW, "frame"), (_DRAW, "g"),
    (_DRAW, "custom-shape"), (_DRAW, "rect"), (_DRAW, "ellipse"), (_PRESENTATION, "notes"),
    (_TABLE, "table-cell"),
}  # fmt: skip
#: Not the document's own text: a generated table of contents repeats the headings,
#: tracked changes hold deleted text, forms and scripts hold none.
_SKIPPED = {
    (_TEXT, "table-of-content"), (_TEXT, "tracked-changes"), (_OFFICE, "forms"),
    (_TEXT, "sequence-decls"), (_TEXT, "variable-decls"), (_TEXT, "user-field-decls"),
    (_TABLE, "named-expressions"), (_TABLE, "calculation-settings"),
    (_TABLE, "content-validations"), (_TEXT, "alphabetical-index"),
    (_TEXT, "illustration-index"), (_TEXT, "bibliography"), (_OFFICE, "annotation"),
}  # fmt: skip
_ROW_GROUPS = {(_TABLE, "table-header-rows"), (_TABLE, "table-rows"), (_TABLE, "table-row-group")}
_KINDS = {"text": "ODT", "spreadsheet": "ODS", "presentation": "ODP"}
#: The most elements of one part odfpy is asked to build (about 20 s of its time); the text
#: up to there is read, the rest of the part is not. Repeated rows and cells count once.
MAX_ELEMENTS = 400_000


def read_odf(data: bytes) -> Extracted:
    """Text documents, spreadsheets and presentations, told apart by the declared mimetype."""
    archive = open_zip(data, "OpenDocument file")
    with archive:
        try:
            mimetype = archive.read("mimetype").decode("ascii", "replace").strip()
        except KeyError:
            mimetype = "application/vnd.oasis.opendocument.text"  # optional in ODF 1.2
        kind = mimetype.rpartition(".")[2].split("-")[0]  # "text", "spreadsheet", "text-template"
        what = _KINDS.get(kind, "OpenDocument file")
        if kind not in _KINDS:
            raise Unreadable(f"unsupported OpenDocument kind {mimetype!r}")
        document = _parse(archive, mimetype, what)
    body = document.body
    root = next((child for child in _children(body) if _name(child) == (_OFFICE, kind)), None)
    if root is None:
        raise Unreadable(f"unreadable {what}: content.xml has no office:{kind} body")
    if kind == "spreadsheet":
        blocks = list(_sheets(root))
    elif kind == "presentation":
        blocks = list(_pages(root))
    else:
        blocks = list(_text_blocks(root, _Budget()))
    title, date = _declared(document.meta)
    return Extracted(join_blocks(blocks), title, date)


def _parse(archive: zipfile.ZipFile, mimetype: str, what: str) -> Any:
    from xml.sax import SAXException, handler
    from xml.sax.xmlreader import InputSource

    from defusedxml import DefusedXmlException
    from defusedxml.sax import make_parser
    from odf.load import LoadParser
    from odf.opendocument import OpenDocument

    document = OpenDocument(mimetype, add_generator=False)
    for part in ("meta.xml", "content.xml"):
        try:
            xml = archive.read(part)
        except KeyError as exc:
            if part == "meta.xml":
                continue  # meta.xml is optional
            raise Unreadable(f"unreadable {what}: no content.xml") from exc
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise Unreadable(f"unreadable {what}: {part}: {exc}") from exc
        parser = make_parser()
        parser.setFeature(handler.feature_namespaces, 1)
        parser.setFeature(handler.feature_external_ges, 0)
        parser.setContentHandler(_bounded(document, LoadParser))
        parser.setErrorHandler(handler.ErrorHandler())  # raises on every error
        source = InputSource()
        source.setByteStream(io.BytesIO(xml))
        document._parsing = part  # odfpy's parser reads which part it is in
        try:
            parser.parse(source)
        except _Enough:
            pass  # the tree built so far is the document's beginning: read that
        except (SAXException, DefusedXmlException, ValueError) as exc:
            raise Unreadable(f"unreadable {what}: {part}: {exc}"[:300]) from exc
        finally:
            del document._parsing
    return document


class _Enough(Exception):
    """The element bound is reached: stop parsing, keep what was built."""


def _bounded(document: Any, base: type) -> Any:
    """odfpy's parser, stopped after ``MAX_ELEMENTS`` elements.

    odfpy builds about 20,000 elements a second (measured: a 5,000-row sheet, 55,000
    elements, took 3 s), so the bound keeps a huge sheet from taking minutes.
    """

    class Bounded(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(document)
            self.elements = 0

        def startElementNS(self, tag: Any, qname: Any, attrs: Any) -> None:
            self.elements += 1
            if self.elements > MAX_ELEMENTS:
                raise _Enough
            super().startElementNS(tag, qname, attrs)

    return Bounded()


def _declared(meta: Any) -> tuple[str | None, str | None]:
    title: str | None = None
    created: str | None = None
    dated: str | None = None
    for child in _children(meta):
        name = _name(child)
        if name == (_DC, "title"):
            title = clean(_text(child)) or None
        elif name == (_META, "creation-date"):
            created = iso_date(_text(child))
        elif name == (_DC, "date"):
            dated = iso_date(_text(child))
    return title, created or dated


# --------------------------------------------------------------------------- the tree


def _name(node: Any) -> tuple[str, str] | None:
    return node.qname if node.nodeType == node.ELEMENT_NODE else None


def _children(node: Any) -> list[Any]:
    return list(node.childNodes) if node is not None else []


def _text(node: Any) -> str:
    """The inline text of an element: spans and links unwrapped, ``text:s`` spaces counted;
    frames (read as blocks of their own), annotations and note citations left out."""
    parts: list[str] = []
    for child in _children(node):
        name = _name(child)
        if name is None:
            parts.append(str(child.data))
        elif name == (_TEXT, "s"):
            parts.append(" " * min(_count(child, _TEXT, "c"), 64))
        elif name == (_TEXT, "tab"):
            parts.append("\t")
        elif name == (_TEXT, "line-break"):
            parts.append("\n")
        elif name in _SKIPPED or name in {(_DRAW, "frame"), (_TEXT, "note-citation")}:
            continue
        else:
            parts.append(_text(child))
    return "".join(parts)


def _attr(node: Any, namespace: str, name: str) -> str | None:
    value = node.attributes.get((namespace, name))
    return str(value) if value is not None else None


def _count(node: Any, namespace: str, name: str) -> int:
    try:
        return max(1, int(_attr(node, namespace, name) or 1))
    except ValueError:
        return 1


def _repeat(node: Any, name: str) -> int:
    return _count(node, _TABLE, name)


class _Budget:
    """The table cells left to read in this file."""

    def __init__(self) -> None:
        self.left = MAX_CELLS


# --------------------------------------------------------------------------- text documents


def _text_blocks(node: Any, budget: _Budget) -> Iterator[str | None]:
    for child in _children(node):
        name = _name(child)
        if name is None or name in _SKIPPED:
            continue
        if name == (_TEXT, "h"):
            text = clean(_text(child))
            yield heading(_count(child, _TEXT, "outline-level"), text) if text else None
        elif name == (_TEXT, "p"):
            yield from _paragraph(child, budget)
        elif name == (_TABLE, "table"):
            yield _table(child, budget)
        elif name in _TEXT_CONTAINERS:
            yield from _text_blocks(child, budget)


def _paragraph(node: Any, budget: _Budget) -> Iterator[str | None]:
    """A paragraph's own text, then any text boxes or tables anchored in it."""
    yield clean(_text(node)) or None
    for frame in _children(node):
        if _name(frame) == (_DRAW, "frame"):
            yield from _text_blocks(frame, budget)


def _table(node: Any, budget: _Budget) -> str | None:
    return "\n".join(_rows(node, budget)) or None


def _rows(node: Any, budget: _Budget) -> Iterator[str]:
    """A table's non-empty rows as ``a | b``; repeated rows and cells expanded within budget."""
    for child in _children(node):
        name = _name(child)
        if name in _ROW_GROUPS:
            yield from _rows(child, budget)
        elif name == (_TABLE, "table-row"):
            line = _row(child, budget)
            for _ in range(_repeat(child, "number-rows-repeated")):
                budget.left -= 1
                if budget.left < 0:
                    return
                if not line:
                    break  # a run of empty rows (often to the sheet's end) costs one
                yield line


def _row(node: Any, budget: _Budget) -> str | None:
    cells: list[str] = []
    pending_empty = 0
    for cell in _children(node):
        if _name(cell) not in {(_TABLE, "table-cell"), (_TABLE, "covered-table-cell")}:
            continue
        text = clean("\n".join(b for b in _text_blocks(cell, budget) if b))
        count = _repeat(cell, "number-columns-repeated")
        if not text:
            pending_empty += count  # trailing empties are never materialized
            continue
        count = min(count, max(budget.left, 0))
        cells.extend([""] * min(pending_empty, 64))
        pending_empty = 0
        cells.extend([text] * count)
        budget.left -= count
        if budget.left <= 0:
            break
    return row_line(cells)


# --------------------------------------------------------------------------- spreadsheets


def _sheets(root: Any) -> Iterator[str | None]:
    budget = _Budget()
    for child in _children(root):
        if _name(child) != (_TABLE, "table") or budget.left <= 0:
            continue
        rows = list(_rows(child, budget))
        if rows:
            yield heading(1, _attr(child, _TABLE, "name") or "Sheet")
            yield "\n".join(rows)


# --------------------------------------------------------------------------- presentations


def _pages(root: Any) -> Iterator[str | None]:
    budget = _Budget()
    for page in _children(root):
        if _name(page) != (_DRAW, "page"):
            continue
        frames = [c for c in _children(page) if _name(c) is not None]
        titles = [f for f in frames if _attr(f, _PRESENTATION, "class") == "title"]
        title = clean(_text(titles[0])) if titles else ""
        if title:
            yield heading(1, title)
        for frame in frames:
            if frame in titles[:1]:
                continue
            yield from _text_blocks_or_self(frame, budget)


def _text_blocks_or_self(node: Any, budget: _Budget) -> Iterator[str | None]:
    if _name(node) == (_TABLE, "table"):
        yield _table(node, budget)
    elif _name(node) in _TEXT_CONTAINERS:
        yield from _text_blocks(node, budget)
