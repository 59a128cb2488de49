"""A document's own date, from what the document itself declares (no LLM, no file times).

Where a date comes from, first found wins:

1. the file's metadata (Office ``dcterms:created`` and the like: kg/formats/ fills it);
2. a Markdown front matter's ``date:`` (``2024-03-15``, or any form below);
3. a date in the title: ``2024-03-15``, ``15.03.2024``, ``15 марта 2024``, ``March 15, 2024``,
   ``15 March 2024``.

The file's modification time is never used: copying a folder changes it, so it dates the copy,
not the document. A date is an ISO calendar date (``YYYY-MM-DD``); an impossible one
(``31.02.2024``) is no date.
"""

from __future__ import annotations

import re
from datetime import date, datetime

import yaml

__all__ = ["document_date", "parse_date"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
# Only the ``date:`` line is read (a whole front matter is parsed by kg.docgraph); bounded.
_DATE_LINE = re.compile(r"^date[ \t]*:[ \t]*(.{1,80})$", re.MULTILINE | re.IGNORECASE)

_MONTHS = {
    # English, full and short
    **{m: i for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december"], 1)},
    **{m: i for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)},
    "sept": 9,
    # Russian: the genitive a date is written in, and the nominative
    **{m: i for i, m in enumerate(
        ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа",
         "сентября", "октября", "ноября", "декабря"], 1)},
    **{m: i for i, m in enumerate(
        ["январь", "февраль", "март", "апрель", "май", "июнь", "июль", "август",
         "сентябрь", "октябрь", "ноябрь", "декабрь"], 1)},
}  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))

_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_DOTTED = re.compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d])")
_DAY_MONTH = re.compile(
    rf"(?<!\w)(\d{{1,2}})\s+({_MONTH})\.?,?\s+(\d{{4}})(?:\s*(?:г\.|года|г\b))?", re.IGNORECASE
)
_MONTH_DAY = re.compile(rf"(?<!\w)({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)",
                        re.IGNORECASE)  # fmt: skip


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def parse_date(text: str) -> str | None:
    """The first date written in ``text`` in one of the module's forms, as ``YYYY-MM-DD``."""
    found: list[tuple[int, str]] = []
    for m in _ISO.finditer(text):
        if (iso := _iso(int(m[1]), int(m[2]), int(m[3]))) is not None:
            found.append((m.start(), iso))
            break
    for m in _DOTTED.finditer(text):
        if (iso := _iso(int(m[3]), int(m[2]), int(m[1]))) is not None:
            found.append((m.start(), iso))
            break
    for m in _DAY_MONTH.finditer(text):
        if (iso := _iso(int(m[3]), _MONTHS[m[2].casefold()], int(m[1]))) is not None:
            found.append((m.start(), iso))
            break
    for m in _MONTH_DAY.finditer(text):
        if (iso := _iso(int(m[3]), _MONTHS[m[1].casefold()], int(m[2]))) is not None:
            found.append((m.start(), iso))
            break
    return min(found)[1] if found else None


def _front_matter_date(text: str) -> str | None:
    match = _FRONT_MATTER.match(text)
    if not match:
        return None
    line = _DATE_LINE.search(match.group(1))
    if not line:
        return None
    raw = line.group(1).strip()
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return parse_date(str(value)) if value is not None else None


def document_date(text: str, title: str | None) -> str | None:
    """The date ``text`` declares in its front matter, else the one in ``title``."""
    return _front_matter_date(text) or (parse_date(title) if title else None)
