"""The binary formats' readers on real files written by the formats' own writing libraries.

Each file holds Russian and English text, one marker phrase of its own, a heading and (where
the format has them) a table; the readers must give the marker, ``#`` headings, ``a | b``
rows, the declared title and date, and refuse a corrupt file with a reason, alone.
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from kg import formats
from kg.documents import load_folder
from kg.formats import Extracted, Unreadable
from tests.formatfiles import (
    DATA,
    EN,
    MARKERS,
    all_files,
    odf_bytes,
    odf_table,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return all_files()


@pytest.fixture(scope="module")
def read(files: dict[str, bytes]) -> dict[str, Extracted]:
    return {suffix: formats.read(suffix, data) for suffix, data in files.items()}


# --------------------------------------------------------------------------- what comes out


def test_every_format_is_registered() -> None:
    assert set(MARKERS) <= formats.SUFFIXES


@pytest.mark.parametrize("suffix", sorted(MARKERS))
def test_the_marker_and_both_languages_come_out(suffix: str, read: dict[str, Extracted]) -> None:
    text = read[suffix].text
    assert MARKERS[suffix] in text
    assert "Сервис платежей" in text or "Сервис" in text
    assert "\x00" not in text


def _lines(extracted: Extracted) -> list[str]:
    return [line for line in extracted.text.split("\n") if line.strip()]


@pytest.mark.parametrize(
    ("suffix", "headings"),
    [
        (".docx", ["# Архитектура платежей", "## Details"]),
        (".odt", ["# Архитектура платежей", "## Details"]),
        (".xlsx", ["# Сервисы", "# Teams"]),
        (".ods", ["# Сервисы", "# Teams"]),
        (".pptx", ["# Обзор платформы", "# Next steps"]),
        (".odp", ["# Обзор платформы"]),
        (".eml", ["# Инцидент: платежи"]),
        (".msg", ["# Инцидент: платежи / Incident"]),
        (".epub", ["# Глава первая", "# Chapter two"]),
    ],
)
def test_headings_are_atx_lines_in_order(
    suffix: str, headings: list[str], read: dict[str, Extracted]
) -> None:
    found = [line for line in _lines(read[suffix]) if line.startswith("#")]
    assert found == headings


@pytest.mark.parametrize("suffix", [".docx", ".odt", ".pptx", ".odp"])
def test_tables_are_rows_of_cells(suffix: str, read: dict[str, Extracted]) -> None:
    lines = _lines(read[suffix])
    assert "Сервис | Owner" in lines
    assert "Ledger | Команда Б" in lines


def test_docx_and_odt_keep_document_order(read: dict[str, Extracted]) -> None:
    for suffix in (".docx", ".odt"):
        text = read[suffix].text
        order = ["# Архитектура платежей", MARKERS[suffix], "Сервис | Owner", "## Details"]
        positions = [text.index(part) for part in order]
        assert positions == sorted(positions), suffix
        assert text.rstrip().endswith("After the table: ещё текст.")


def test_sheets_skip_empty_rows_and_format_numbers(read: dict[str, Extracted]) -> None:
    lines = _lines(read[".xlsx"])
    assert lines[:4] == [
        "# Сервисы",
        "Сервис | Owner | Порт",
        "Ledger | marker-xlsx-beta | 5432",
        f"Платежи | {EN} | 8080",
    ]
    assert lines[4:] == ["# Teams", "Команда | Lead", "Far below"]
    ods = _lines(read[".ods"])
    assert ods == ["# Сервисы", "Сервис | Owner", "Ledger | marker-ods-epsilon", "# Teams",
                   "Команда | Lead"]  # fmt: skip


def test_a_huge_sheet_is_read_up_to_the_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    import openpyxl

    from kg.formats import _common, opendocument

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in range(100):
        sheet.append([f"r{row}", "x"])
    out = io.BytesIO()
    workbook.save(out)
    monkeypatch.setattr(_common, "MAX_CELLS", 10)
    monkeypatch.setattr("kg.formats.office.MAX_CELLS", 10)
    assert formats.read(".xlsx", out.getvalue()).text.split("\n")[-1] == "r4 | x"

    from odf.opendocument import OpenDocumentSpreadsheet

    document = OpenDocumentSpreadsheet()
    document.spreadsheet.addElement(odf_table([(f"r{row}", "x") for row in range(100)]))
    monkeypatch.setattr(opendocument, "MAX_ELEMENTS", 60)  # stops inside the table
    text = formats.read(".ods", odf_bytes(document)).text
    assert text.startswith("# T\n\nr0 | x\nr1 | x")
    assert "r99" not in text


def test_slides_keep_notes(read: dict[str, Extracted]) -> None:
    assert f"Speaker notes: {EN}." in read[".pptx"].text


def test_mail_has_a_header_line_the_plain_body_and_attachment_names(
    read: dict[str, Extracted],
) -> None:
    eml = _lines(read[".eml"])
    assert eml[1] == (
        "From: Иван Петров <ivan@example.com>; To: ops@example.com; Date: 2024-03-05 10:30:00+03:00"
    )
    assert "HTML part" not in read[".eml"].text
    assert eml[-1] == "Attachments: a.pdf, Отчёт.docx"
    msg = _lines(read[".msg"])
    assert msg[1].startswith(
        "From: Мария Иванова <maria@example.com>; To: Ops Team; Date: 2024-03-05"
    )
    assert f"{EN} (marker-msg-kappa)." in msg
    assert msg[-1] == "Attachments: Отчёт Q3.pdf, diagram.png"


@pytest.mark.parametrize(
    ("suffix", "title"),
    [
        (".docx", "Регламент DOCX"),
        (".xlsx", "Реестр XLSX"),
        (".pptx", "Доклад PPTX"),
        (".odt", "Регламент ODT"),
        (".ods", "Реестр ODS"),
        (".odp", "Доклад ODP"),
        (".rtf", "Заметка RTF"),
        (".eml", "Инцидент: платежи"),
        (".msg", "Инцидент: платежи / Incident"),
        (".epub", "Книга EPUB"),
    ],
)
def test_titles_and_dates_are_as_declared(
    suffix: str, title: str, read: dict[str, Extracted]
) -> None:
    assert read[suffix].title == title
    assert read[suffix].date == "2024-03-05"


def test_a_file_that_declares_nothing_has_no_title_or_date() -> None:
    message = EmailMessage()
    message["Date"] = "not a date"
    message.set_content("Just a body, тело письма.")
    extracted = formats.read(".eml", message.as_bytes())
    assert (extracted.title, extracted.date) == (None, None)
    assert extracted.text == "Just a body, тело письма."


def test_an_html_only_message_reads_its_html() -> None:
    message = EmailMessage()
    message["Subject"] = "HTML only"
    message.set_content("<html><body><h1>Отчёт</h1><p>Only <b>HTML</b> here.</p></body></html>",
                        subtype="html")  # fmt: skip
    assert "Only HTML here." in formats.read(".eml", message.as_bytes()).text


# --------------------------------------------------------------------------- broken files


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


RANDOM = bytes((i * 7919 + 13) % 256 for i in range(4096))


# Any bytes are a (headerless) MIME message: .eml has its own test below.
@pytest.mark.parametrize("suffix", sorted(set(MARKERS) - {".eml"}))
@pytest.mark.parametrize("damage", ["truncated", "random"])
def test_a_corrupt_file_is_unreadable_with_a_reason(
    suffix: str, damage: str, files: dict[str, bytes]
) -> None:
    data = _truncated(files[suffix]) if damage == "truncated" else RANDOM
    if suffix == ".rtf" and damage == "truncated":
        # An RTF cut in half is still RTF to every reader: its first half comes out.
        assert "marker-rtf" not in formats.read(suffix, data).text
        return
    with pytest.raises(Unreadable) as caught:
        formats.read(suffix, data)
    assert str(caught.value).strip()


def test_random_bytes_are_not_a_message() -> None:
    with pytest.raises(Unreadable, match="no message headers"):
        formats.read(".eml", b"\x00\x01\x02")


def test_a_zip_bomb_is_refused_before_it_is_read() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * 1_000_000)
    # The bound reads the declared sizes (zipfile never inflates past them): declare 201 MB.
    data = bytearray(out.getvalue())
    central = data.rindex(b"PK\x01\x02")
    data[central + 24 : central + 28] = (201_000_000).to_bytes(4, "little")
    for suffix in (".docx", ".xlsx", ".pptx", ".odt", ".epub"):
        with pytest.raises(Unreadable, match="zip bomb"):
            formats.read(suffix, bytes(data))


LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><lolz>&lol2;</lolz>'
)


def _replaced(data: bytes, member: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, content if info.filename == member else source.read(info))
    return out.getvalue()


@pytest.mark.parametrize(
    ("suffix", "member"), [(".odt", "content.xml"), (".epub", "OEBPS/content.opf")]
)
def test_xml_entities_are_refused(suffix: str, member: str, files: dict[str, bytes]) -> None:
    with pytest.raises(Unreadable):
        formats.read(suffix, _replaced(files[suffix], member, LAUGHS))


def test_a_zip_of_the_wrong_kind_says_so() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hi")
    for suffix in (".docx", ".xlsx", ".pptx", ".odt", ".epub"):
        with pytest.raises(Unreadable):
            formats.read(suffix, out.getvalue())


def test_an_encrypted_office_file_is_named_as_such() -> None:
    from kg.formats._common import OLE_SIGNATURE

    with pytest.raises(Unreadable, match="encrypted"):
        formats.read(".docx", OLE_SIGNATURE + b"\0" * 1024)


def test_the_folder_loads_around_a_corrupt_file(tmp_path: Path, files: dict[str, bytes]) -> None:
    for suffix, data in files.items():
        (tmp_path / f"doc{suffix}").write_bytes(data)
    (tmp_path / "broken.docx").write_bytes(_truncated(files[".docx"]))
    (tmp_path / "noise.xlsx").write_bytes(RANDOM)
    result = load_folder(tmp_path, max_file_bytes=5_000_000)
    loaded = {doc.path: doc for doc in result.documents}
    assert set(loaded) == {f"doc{suffix}" for suffix in files}
    assert loaded["doc.docx"].title == "Регламент DOCX"
    assert loaded["doc.docx"].date == "2024-03-05"
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons["broken.docx"].startswith("unreadable DOCX: not a valid zip container")
    assert reasons["noise.xlsx"].startswith("unreadable XLSX: not a valid zip container")


# --------------------------------------------------------------------------- the MSG fixture


def test_the_msg_fixture_is_what_its_script_writes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(DATA / "make_msg.py"), str(tmp_path / "sample.msg")],
        check=True,
        timeout=60,
    )
    assert (tmp_path / "sample.msg").read_bytes() == (DATA / "sample.msg").read_bytes()


def test_olefile_reads_the_msg_fixture() -> None:
    import olefile

    # Strict: any defect olefile can see in the structure raises instead of being logged.
    with olefile.OleFileIO(str(DATA / "sample.msg"), raise_defects=olefile.DEFECT_INCORRECT) as ole:
        streams = {"/".join(entry) for entry in ole.listdir()}
    assert "__substg1.0_0037001F" in streams
    assert "__attach_version1.0_#00000000/__substg1.0_3707001F" in streams


# --------------------------------------------------------------------------- light imports


def test_loading_markdown_imports_no_format_library(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\nText.", encoding="utf-8")
    code = (
        "import sys\nfrom kg.documents import load_folder\n"
        f"load_folder({str(tmp_path)!r}, max_file_bytes=1000)\n"
        "print(' '.join(sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
        timeout=60,
    )  # fmt: skip
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    heavy = {"docx", "openpyxl", "pptx", "odf", "striprtf", "olefile", "lxml"}
    assert sorted(loaded & heavy) == []
