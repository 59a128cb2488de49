"""``as_of``: the one instant type every surface accepts (REST, CLI, templates).

A date means its midnight UTC; a date-time with an offset is that instant (``T00:00+14:00`` is
the previous day 10:00 UTC, never "the date 2023-06-01"); a naive date-time is taken as UTC.
Whatever the input, the value is an aware UTC ``datetime``. An instant that leaves the
representable range once moved to UTC (``9999-12-31T23:00-05:00``) is a validation error
naming the field, never an overflow deep inside a query.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _read(value: Any) -> Any:
    """A string with a time part is a date-time, always: pydantic would otherwise accept
    ``2023-06-01T00:00:00+14:00`` as the plain date 2023-06-01 and drop the offset."""
    if isinstance(value, str):
        text = value.strip()
        if _DATE_ONLY.fullmatch(text):
            return date.fromisoformat(text)
        if len(text) > 64:
            raise ValueError("is not an ISO 8601 date or date-time")
        try:
            return datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            raise ValueError("is not an ISO 8601 date or date-time") from None
    if not isinstance(value, date):
        # A number would be read as a Unix timestamp: not what the spec (a string) promises.
        raise ValueError("must be an ISO 8601 date or date-time string")
    return value


def utc_instant(value: date | datetime) -> datetime:
    """``value`` as an aware UTC datetime; ValueError when that is out of range."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    else:
        aware = datetime.combine(value, time(0), tzinfo=UTC)
    try:
        return aware.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError(
            "is out of range once converted to UTC (years 1..9999); use a nearer instant"
        ) from None


#: ``as_of`` fields: accepts a date or a date-time (any offset), holds an aware UTC datetime.
AsOf = Annotated[datetime | date, BeforeValidator(_read), AfterValidator(utc_instant)]
