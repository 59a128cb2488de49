"""What the CLI writes to the terminal: data made inert, errors scrubbed of secrets, always.

Text from data (file names, titles, entity names, chunk text, answers, reasons that quote
them) reaches the terminal only through :func:`inert`: control characters (ANSI escapes, OSC
sequences such as a window title or a hyperlink, newlines, bidi overrides) are written as
visible escapes, undecodable bytes of a file name as ``\\xNN``, and the result is a Rich
``Text``, which Rich never parses for markup (``[link=...]``, ``[red]``) or emoji codes. A
hostile file name therefore cannot clear the screen, forge a row or become a hyperlink, with
or without a terminal, ``FORCE_COLOR`` included. ``--json`` output is JSON-escaped already.

Every exit path of ``kg`` passes through here: the one-line ``error:`` for kg errors, the
driver's own errors, the traceback of a bug, and every log record (one stderr handler with
``kg.redact.RedactFilter``). The secrets are the settings' ``SecretStr`` values, a password
written inside ``KG_NEO4J__URI``, and secret-looking environment variables (read directly, so
an error raised while the settings load is covered too).
"""

from __future__ import annotations

import logging
import re
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console
from rich.text import Text

from kg.errors import QueryRejected
from kg.redact import RedactFilter, env_secrets, install_redaction, scrub, settings_secrets

_HANDLER_NAME = "kg-cli"

# C0 and C1 controls and DEL; zero-width, line/paragraph separators and bidi controls (they
# reorder or hide what follows); lone surrogates (undecodable bytes of a file name).
_OTHERS = r"\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
_UNSAFE = re.compile(rf"[\x00-\x1f{_OTHERS}]")
_UNSAFE_IN_LINES = re.compile(rf"[\x00-\x09\x0b-\x1f{_OTHERS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # one undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(value: object, style: str = "", *, lines: bool = False) -> Text:
    """``value`` as text from data that cannot act on the terminal (see the module docstring).

    ``lines=True`` keeps newlines (a multi-line answer); every other control is escaped.
    """
    pattern = _UNSAFE_IN_LINES if lines else _UNSAFE
    return Text(pattern.sub(_escaped, str(value)), style=style)


if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is now (tests swap it), not the one at creation."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def labelled(label: str, style: str, data: object = None) -> Text:
    """``label`` in ``style`` (kg's own words), then the data it is about, inert."""
    if data is None:
        return Text(label, style=style)
    return Text.assemble((label, style), " ", data if isinstance(data, Text) else inert(data))


def secrets() -> list[str]:
    """Everything that must never be printed, as far as it can be known now."""
    found = env_secrets()
    try:
        from kg.settings import Settings

        found += settings_secrets(Settings())
    except Exception:  # noqa: S110 - settings that do not load still leave env_secrets
        pass
    return found


def setup_logging(level: str = "WARNING", fmt: str = "text") -> logging.Handler:
    """One stderr handler on the root logger, scrubbing every record; idempotent.

    Without it, warnings would reach logging's last-resort handler, which no filter can reach.
    ``fmt`` is ``KG_LOG_FORMAT``: ``json`` writes one JSON object a line (kg.observe).
    """
    root = logging.getLogger()
    handler = next((h for h in root.handlers if h.get_name() == _HANDLER_NAME), None)
    if handler is None:
        handler = _StderrHandler()
        handler.set_name(_HANDLER_NAME)
        root.addHandler(handler)
    if fmt == "json":
        from kg.observe import JsonFormatter  # only then: `kg --help` stays light

        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(level)
    root.setLevel(level)
    # the secrets are listed when the first record arrives: building the settings for them
    # here would cost every command (`kg --help` included) a quarter second
    install_redaction([handler], (), source=secrets)
    return handler


def redaction() -> RedactFilter:
    """A filter holding the current secrets (for handlers the CLI does not own)."""
    return RedactFilter(secrets())


def print_error(message: str) -> None:
    """``error: <message>`` on stderr, scrubbed and inert (a message may quote data)."""
    text = inert(scrub(message, secrets()))
    Console(stderr=True).print(labelled("error:", "bold red", text))


def print_crash(exc: BaseException) -> None:
    """A bug's traceback on stderr, scrubbed (it may quote a URI or a password)."""
    text = "".join(traceback.format_exception(exc))
    sys.stderr.write(scrub(text, secrets()))
    sys.stderr.write("error: kg stopped on an unexpected error (above); please report it\n")


def run_and_print(
    run: Callable[[], M],
    *,
    json_output: bool,
    show: Callable[[M], None],
    invalid: Callable[[QueryRejected], int],
) -> int:
    """The shape of every question command: run it, print JSON or a view; a rejection exits 2.

    ``run`` validates the request (:func:`validated`) and calls the library surface; ``--json``
    prints exactly the body REST returns for the same request.
    """
    try:
        response = run()
    except QueryRejected as exc:
        return invalid(exc)
    if json_output:
        print(response.model_dump_json())  # noqa: T201 - the machine-readable output
    else:
        show(response)
    return 0


def validated(model: type[M], raw: dict[str, object], what: str) -> M:
    """``raw`` as ``model``, or the :class:`QueryRejected` REST would answer with."""
    from pydantic import ValidationError

    from kg.errors import rejected

    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise rejected(exc, what) from exc
