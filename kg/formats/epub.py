"""EPUB books (``.epub``): the chapters in spine order, read with the standard library.

``META-INF/container.xml`` names the package document (OPF); its manifest and spine give
the chapters, its metadata the title (``dc:title``) and date (``dc:date``). Each chapter's
XHTML goes through the loader's own HTML reader. (EbookLib is AGPL: not used.)
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from urllib.parse import unquote
from xml.etree.ElementTree import Element, ParseError

from kg.formats import Extracted, Unreadable
from kg.formats._common import clean, heading, iso_date, join_blocks, open_zip

_CONTAINER_NS = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF_NS = "{http://www.idpf.org/2007/opf}"
_DC_NS = "{http://purl.org/dc/elements/1.1/}"
_ENC_NS = "{http://www.w3.org/2001/04/xmlenc#}"
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']""")
_HTML_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}


def read_epub(data: bytes) -> Extracted:
    """Each spine chapter's text, under its own title as a heading when it has one."""
    archive = open_zip(data, "EPUB")
    with archive:
        try:
            return _book(archive)
        except (KeyError, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise Unreadable(f"unreadable EPUB: {type(exc).__name__}: {exc}"[:300]) from exc


def _xml(archive: zipfile.ZipFile, name: str) -> Element:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root: Element = fromstring(archive.read(name))
    except DefusedXmlException as exc:  # entities are how XML bombs are built; no EPUB needs one
        raise Unreadable(f"unreadable EPUB: {name} declares XML entities") from exc
    except ParseError as exc:
        raise Unreadable(f"unreadable EPUB: {name}: {exc}") from exc
    return root


def _book(archive: zipfile.ZipFile) -> Extracted:
    from kg.documents import html_to_text

    container = _xml(archive, "META-INF/container.xml")
    rootfile = container.find(f".//{_CONTAINER_NS}rootfile")
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    if not opf_path:
        raise Unreadable("unreadable EPUB: container.xml names no package document")
    opf = _xml(archive, opf_path)
    base = posixpath.dirname(opf_path)

    metadata = opf.find(f"{_OPF_NS}metadata")
    title = date = None
    if metadata is not None:
        title = clean(metadata.findtext(f"{_DC_NS}title") or "") or None
        date = iso_date(metadata.findtext(f"{_DC_NS}date") or "")

    manifest: dict[str, tuple[str, str]] = {}
    for item in opf.iterfind(f"{_OPF_NS}manifest/{_OPF_NS}item"):
        item_id, href = item.get("id"), item.get("href")
        if item_id and href:
            path = posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))
            manifest[item_id] = (path, item.get("media-type", ""))
    encrypted = _encrypted(archive)

    blocks: list[str | None] = []
    names = set(archive.namelist())
    for ref in opf.iterfind(f"{_OPF_NS}spine/{_OPF_NS}itemref"):
        path, media_type = manifest.get(ref.get("idref", ""), ("", ""))
        if media_type not in _HTML_TYPES or path not in names:
            continue
        if path in encrypted:
            raise Unreadable("encrypted EPUB (DRM): its chapters cannot be read")
        text, chapter_title = html_to_text(_decode(archive.read(path)))
        chapter_title = clean(chapter_title or "")
        if chapter_title and chapter_title.casefold() != (title or "").casefold():
            if text.startswith(chapter_title):
                text = text[len(chapter_title) :].lstrip()
            blocks.append(heading(1, chapter_title))
        blocks.append(text)
    if not any(blocks):
        raise Unreadable("unreadable EPUB: its spine lists no readable chapter")
    return Extracted(join_blocks(blocks), title, date)


def _encrypted(archive: zipfile.ZipFile) -> set[str]:
    """The members META-INF/encryption.xml lists (fonts are often only obfuscated)."""
    try:
        root = _xml(archive, "META-INF/encryption.xml")
    except KeyError:
        return set()
    return {
        posixpath.normpath(unquote(ref.get("URI", "")))
        for ref in root.iter(f"{_ENC_NS}CipherReference")
    }


def _decode(raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", "replace")
    match = _XML_ENCODING.match(raw[:200])
    encoding = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return raw.decode(encoding, "replace")
    except LookupError:
        return raw.decode("utf-8", "replace")
