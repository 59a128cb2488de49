"""Rich Text Format (``.rtf``): its plain text, through striprtf (BSD-3-Clause).

striprtf honours the file's code page (``\\ansicpg``) and ``\\u`` escapes, so Cyrillic written
either way comes out as text. The ``\\info`` group's title and creation time are read here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from kg.formats import Extracted, Unreadable
from kg.formats._common import clean

_TITLE = re.compile(rb"\{\\title\s?((?:[^{}\\]|\\[^{}]|\\[{}])*)\}")
_CREATED = re.compile(rb"\\creatim\\yr(\d{4})\\mo(\d{1,2})\\dy(\d{1,2})")
_CODEPAGE = re.compile(rb"\\ansicpg(\d{3,5})")


def read_rtf(data: bytes) -> Extracted:
    """The document's text, its ``\\title`` and its ``\\creatim`` date."""
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        raise Unreadable("unreadable RTF: it does not start with {\\rtf")
    source = _decode(data)
    try:
        text = _to_text(source)
    except (ValueError, LookupError, IndexError, RecursionError) as exc:
        raise Unreadable(f"unreadable RTF: {type(exc).__name__}: {exc}"[:300]) from exc
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return Extracted(body, _title(data), _created(data))


def _decode(data: bytes) -> str:
    # RTF is 7-bit by the specification (8-bit text is escaped as \'hh or \uN); some writers
    # emit raw UTF-8 anyway. Latin-1 keeps any other byte as itself for striprtf to read.
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _to_text(source: str) -> str:
    from striprtf.striprtf import rtf_to_text

    convert: Callable[..., str] = rtf_to_text  # striprtf has no annotations
    return convert(source, errors="replace")


def _title(data: bytes) -> str | None:
    match = _TITLE.search(data[:65536])
    if match is None:
        return None
    codepage = _CODEPAGE.search(data[:4096])
    header = b"{\\rtf1\\ansi\\ansicpg" + (codepage.group(1) if codepage else b"1252") + b" "
    try:
        title = clean(_to_text(_decode(header + match.group(1) + b"}")))
    except (ValueError, LookupError, IndexError):
        return None
    return title or None


def _created(data: bytes) -> str | None:
    match = _CREATED.search(data[:65536])
    if match is None:
        return None
    year, month, day = (int(group) for group in match.groups())
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None
