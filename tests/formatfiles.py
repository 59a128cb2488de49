"""Files of every binary format kg reads, written by the formats' own writing libraries.

Each holds Russian and English text, one marker phrase of its own, a heading and (where the
format has them) a table. MSG has no maintained writer: it comes from the committed fixture
tests/data/formats/sample.msg (written by make_msg.py there; see its LICENSE.md).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

DATA = Path(__file__).parent / "data" / "formats"
CREATED = dt.datetime(2024, 3, 5, 10, 30, tzinfo=dt.UTC)
RU = "Сервис платежей зависит от базы данных"
EN = "The payment service depends on the ledger"


# --------------------------------------------------------------------------- writers


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = "Регламент DOCX"
    document.core_properties.created = CREATED.replace(tzinfo=None)
    document.add_heading("Архитектура платежей", level=1)
    document.add_paragraph(f"{RU}. marker-docx-alpha. {EN}.")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Сервис", "Owner"), ("Ledger", "Команда Б")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Details", level=2)
    document.add_paragraph("After the table: ещё текст.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_xlsx() -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Сервисы"
    sheet.append(["Сервис", "Owner", "Порт"])
    sheet.append(["Ledger", "marker-xlsx-beta", 5432])
    sheet.append([])
    sheet.append(["Платежи", EN, 8080.0])
    second = workbook.create_sheet("Teams")
    second.append(["Команда", "Lead"])
    second["A5"] = "Far below"
    workbook.properties.title = "Реестр XLSX"
    workbook.properties.created = CREATED.replace(tzinfo=None)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_pptx() -> bytes:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])  # title and content
    assert slide.shapes.title is not None
    slide.shapes.title.text = "Обзор платформы"
    slide.placeholders[1].text_frame.text = f"{RU}. marker-pptx-gamma."
    rows = slide.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    for r, row in enumerate([("Сервис", "Owner"), ("Ledger", "Команда Б")]):
        for c, value in enumerate(row):
            rows.cell(r, c).text = value
    slide.notes_slide.notes_text_frame.text = f"Speaker notes: {EN}."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])  # title only
    assert second.shapes.title is not None
    second.shapes.title.text = "Next steps"
    presentation.core_properties.title = "Доклад PPTX"
    presentation.core_properties.created = CREATED.replace(tzinfo=None)
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def _odf_meta(document: object, title: str) -> None:
    from odf.dc import Title
    from odf.meta import CreationDate

    meta = document.meta  # type: ignore[attr-defined]
    meta.addElement(Title(text=title))
    meta.addElement(CreationDate(text="2024-03-05T10:30:00"))


def odf_table(rows: list[tuple[str, ...]], name: str = "T") -> object:
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import P

    table = Table(name=name)
    table.addElement(TableColumn(numbercolumnsrepeated=len(rows[0])))
    for row in rows:
        tr = TableRow()
        for value in row:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            tr.addElement(cell)
        table.addElement(tr)
    return table


def odf_bytes(document: object) -> bytes:
    out = io.BytesIO()
    document.write(out)  # type: ignore[attr-defined]
    return out.getvalue()


def make_odt() -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    _odf_meta(document, "Регламент ODT")
    document.text.addElement(H(outlinelevel=1, text="Архитектура платежей"))
    document.text.addElement(P(text=f"{RU}. marker-odt-delta. {EN}."))
    document.text.addElement(odf_table([("Сервис", "Owner"), ("Ledger", "Команда Б")]))
    document.text.addElement(H(outlinelevel=2, text="Details"))
    document.text.addElement(P(text="After the table: ещё текст."))
    return odf_bytes(document)


def make_ods() -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import TableCell, TableRow

    document = OpenDocumentSpreadsheet()
    _odf_meta(document, "Реестр ODS")
    sheet = odf_table([("Сервис", "Owner"), ("Ledger", "marker-ods-epsilon")], name="Сервисы")
    # A sheet's usual tail: an empty row repeated to the end of the sheet, never expanded.
    empty = TableRow(numberrowsrepeated=1_048_000)
    empty.addElement(TableCell(numbercolumnsrepeated=16_000))
    sheet.addElement(empty)  # type: ignore[attr-defined]
    document.spreadsheet.addElement(sheet)
    document.spreadsheet.addElement(odf_table([("Команда", "Lead")], name="Teams"))
    return odf_bytes(document)


def make_odp() -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    _odf_meta(document, "Доклад ODP")
    layout = PageLayout(name="PM1")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="Default", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    page = Page(name="p1", masterpagename=master)
    title = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
    title.setAttrNS(PRESENTATIONNS, "class", "title")
    box = TextBox()
    box.addElement(P(text="Обзор платформы"))
    title.addElement(box)
    page.addElement(title)
    body = Frame(width="20cm", height="10cm", x="1cm", y="5cm")
    body.setAttrNS(PRESENTATIONNS, "class", "outline")
    box = TextBox()
    box.addElement(P(text=f"{RU}. marker-odp-zeta. {EN}."))
    body.addElement(box)
    page.addElement(body)
    table_frame = Frame(width="10cm", height="3cm", x="1cm", y="16cm")
    table_frame.addElement(odf_table([("Сервис", "Owner"), ("Ledger", "Команда Б")]))
    page.addElement(table_frame)
    document.presentation.addElement(page)
    return odf_bytes(document)


def _rtf_escape(text: str) -> str:
    return "".join(c if ord(c) < 128 else f"\\u{ord(c)}?" for c in text)


def make_rtf() -> bytes:
    rtf = (
        "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Arial;}}"
        "{\\info{\\title " + _rtf_escape("Заметка RTF") + "}"
        "{\\creatim\\yr2024\\mo3\\dy5\\hr10\\min30}}"
        "\\f0\\fs24 " + _rtf_escape(f"{RU}. marker-rtf-eta.") + "\\par "
        + _rtf_escape(f"{EN}. Конец.") + "\\par }"
    )  # fmt: skip
    return rtf.encode("ascii")


def make_eml() -> bytes:
    message = EmailMessage()
    message["Subject"] = "Инцидент: платежи"
    message["From"] = "Иван Петров <ivan@example.com>"
    message["To"] = "ops@example.com"
    message["Date"] = "Tue, 05 Mar 2024 10:30:00 +0300"
    message.set_content(f"{RU}. marker-eml-theta.\n\n{EN}.")
    message.add_alternative("<html><body><p>HTML part, not preferred</p></body></html>", "html")
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="a.pdf")
    message.add_attachment(b"PK", maintype="application", subtype="zip", filename="Отчёт.docx")
    return message.as_bytes()


def make_epub() -> bytes:
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">urn:uuid:1</dc:identifier><dc:title>Книга EPUB</dc:title>'
        "<dc:language>ru</dc:language><dc:date>2024-03-05</dc:date></metadata>"
        '<manifest><item id="c2" href="text/ch%202.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>'
    )

    def chapter(title: str, body: str) -> str:
        return (
            '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
            f"<head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p>"
            "</body></html>"
        )

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", opf)
        archive.writestr(
            "OEBPS/text/ch1.xhtml", chapter("Глава первая", f"{RU}. marker-epub-iota.")
        )
        archive.writestr("OEBPS/text/ch 2.xhtml", chapter("Chapter two", f"{EN}."))
    return out.getvalue()


WRITERS: dict[str, Callable[[], bytes]] = {
    ".docx": make_docx,
    ".xlsx": make_xlsx,
    ".pptx": make_pptx,
    ".odt": make_odt,
    ".ods": make_ods,
    ".odp": make_odp,
    ".rtf": make_rtf,
    ".eml": make_eml,
    ".epub": make_epub,
}
MARKERS = {
    ".docx": "marker-docx-alpha",
    ".xlsx": "marker-xlsx-beta",
    ".pptx": "marker-pptx-gamma",
    ".odt": "marker-odt-delta",
    ".ods": "marker-ods-epsilon",
    ".odp": "marker-odp-zeta",
    ".rtf": "marker-rtf-eta",
    ".eml": "marker-eml-theta",
    ".epub": "marker-epub-iota",
    ".msg": "marker-msg-kappa",
}


def all_files() -> dict[str, bytes]:
    """Every format's file by suffix, the MSG fixture included."""
    built = {suffix: write() for suffix, write in WRITERS.items()}
    built[".msg"] = (DATA / "sample.msg").read_bytes()
    return built
