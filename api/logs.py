"""The API's log hygiene: secrets scrubbed from every record, repeated lines rate-limited.

A flood of slow clients once filled 50 MB of "Too many open files" in 20 s, and writing those
lines starved the event loop (``/health`` timed out). ``RepeatFilter`` lets the first few
records of one kind through per window, then drops the rest and says how many it dropped
when the window ends. ``install`` puts both filters on the handlers that exist (uvicorn's
and the root logger's) — for ``kg serve`` and for ``uvicorn --factory api.app:create_app``.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable

from kg import observe
from kg.redact import install_redaction

#: Loggers whose handlers get the filters: root, and uvicorn's (which do not propagate).
LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio")


_NUMBERS = re.compile(r"\d+")


class RepeatFilter(logging.Filter):
    """At most ``burst`` records per kind (logger, level, message template) per ``window_s``.

    When a window with dropped records ends, the next record of that kind carries a note of
    how many were dropped. Access-log lines are their own kind per template, so a flood of
    requests is throttled like a flood of errors.
    """

    def __init__(
        self, burst: int = 5, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self._clock = clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        # the kind: the first line, numbers blanked ("fd=17", ports, counts vary)
        first = str(record.msg).split("\n", 1)[0][:200]
        key = (record.name, record.levelno, _NUMBERS.sub("#", first))
        now = self._clock()
        with self._lock:
            started, count = self._seen.get(key, (now, 0))
            if now - started >= self.window_s:
                dropped = count - self.burst
                self._seen[key] = (now, 1)
                if dropped > 0:
                    record.msg = f"{record.msg} [{dropped} similar lines dropped]"
                return True
            self._seen[key] = (started, count + 1)
            if len(self._seen) > 10_000:  # bounded memory whatever the variety of messages
                self._seen.clear()
            return count < self.burst


def _handlers(names: Iterable[str]) -> list[logging.Handler]:
    found: list[logging.Handler] = []
    for name in names:
        for handler in logging.getLogger(name).handlers:
            if handler not in found:
                found.append(handler)
    return found


def install(
    secrets: Iterable[str],
    handlers: Iterable[logging.Handler] | None = None,
    *,
    fmt: str = "text",
) -> None:
    """Redaction (extended with ``secrets``) and repeat limiting on the API's log handlers;
    with ``fmt="json"`` (``KG_LOG_FORMAT``) each of them writes one JSON object a line.

    Idempotent: a handler that has the filters keeps them (redaction learns new secrets).
    """
    if handlers is None and not logging.getLogger().handlers:
        # Without a root handler, records (asyncio's "Too many open files" among them) would go
        # to logging's last-resort handler, which no filter can reach.
        fallback = logging.StreamHandler(sys.stderr)
        fallback.setLevel(logging.WARNING)
        fallback.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(fallback)
    targets = list(handlers) if handlers is not None else _handlers(LOGGERS)
    if fmt == "json":
        for handler in targets:
            if not isinstance(handler.formatter, observe.JsonFormatter):
                handler.setFormatter(observe.JsonFormatter())
    # the redaction filter goes first: the repeat filter then sees scrubbed text
    install_redaction(targets, secrets)
    for handler in targets:
        if not any(isinstance(f, RepeatFilter) for f in handler.filters):
            handler.addFilter(RepeatFilter())
