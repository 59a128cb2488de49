"""Reading the binary formats a company's folder holds into kg's plain-text document form.

Each reader takes the file's bytes (already size-bounded by the loader) and returns
:class:`Extracted`: Markdown-flavoured text (headings as ``#`` lines so the chunker and the
document graph see them as headings, table rows as ``a | b | c`` lines), the title the file
declares, and the date it declares. A reader that cannot read its file raises
:class:`Unreadable`; the loader turns that into a skip for that file alone.

Readers are imported on first use: a folder of Markdown never imports an Office library.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SUFFIXES", "Extracted", "Unreadable", "read"]


@dataclass(frozen=True)
class Extracted:
    """What a reader found in one file."""

    text: str
    title: str | None = None
    date: str | None = None  # ISO 8601 calendar date (YYYY-MM-DD) the file declares, if any


class Unreadable(Exception):
    """The file is not a readable instance of its format; the message says why, for the user."""


# suffix -> "module:function" inside kg.formats (docs/extraction.md, "Formats").
_READERS: dict[str, str] = {
    ".docx": "office:read_docx",
    ".xlsx": "office:read_xlsx",
    ".xlsm": "office:read_xlsx",
    ".pptx": "office:read_pptx",
    ".odt": "opendocument:read_odf",
    ".ods": "opendocument:read_odf",
    ".odp": "opendocument:read_odf",
    ".rtf": "rtf:read_rtf",
    ".eml": "mail:read_eml",
    ".msg": "mail:read_msg",
    ".epub": "epub:read_epub",
}

SUFFIXES = frozenset(_READERS)


def read(suffix: str, data: bytes) -> Extracted:
    """Read ``data`` as the format ``suffix`` names (``.docx``, ...)."""
    target = _READERS.get(suffix.lower())
    if target is None:
        raise KeyError(suffix)
    module_name, _, function_name = target.partition(":")
    module = importlib.import_module(f"kg.formats.{module_name}")
    reader: Callable[[bytes], Extracted] = getattr(module, function_name)
    try:
        return reader(data)
    except Unreadable:
        raise
    except Exception as exc:  # a corrupt file is that file's skip, never the run's
        # The readers catch what their libraries document; a malformed file can still reach a
        # library's unguarded corner (an IndexError, a TypeError). It is the same verdict.
        kind = suffix.lower().lstrip(".").upper()
        raise Unreadable(f"unreadable {kind}: {type(exc).__name__}: {exc}"[:300]) from exc
