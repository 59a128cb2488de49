"""Keep secrets out of everything kg prints or logs: one function, applied at every exit.

``scrub`` replaces each known secret and any ``user:pass@`` in a URI with ``***``. The secrets
come from the settings (every ``SecretStr``, plus a password written inside
``KG_NEO4J__URI``) and, so that a run whose settings fail to load is covered too, from the
environment's secret-looking variables. ``RedactFilter`` applies the same function to log
records (message, arguments, traceback), so a handler it sits on never writes a secret.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

if TYPE_CHECKING:  # pydantic loads when settings are walked: `kg --help` never builds them
    from pydantic import BaseModel

MASK = "***"

# ``scheme://userinfo@``: everything between ``://`` and the last ``@`` before the host (a
# password may itself hold an ``@``).
_URI_USERINFO = re.compile(r"(?<=://)[^/?#\s'\"]+@")
_SECRET_ENV = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_KEYS?|CREDENTIALS?)", re.IGNORECASE)
_URI_ENV = re.compile(r"(^|_)(URI|URL|DSN)$", re.IGNORECASE)
# Secrets shorter than this are masked only where they stand alone, not inside other words
# (a password "kg" would otherwise mangle every message); URI userinfo is masked whatever it is.
_MIN_SECRET_CHARS = 6


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URI userinfo and every secret (longest first) replaced by ``***``."""
    text = _URI_USERINFO.sub(MASK + "@", text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_CHARS:
            text = text.replace(secret, MASK)
        elif secret in text:
            text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", MASK, text)
    return text


def public_url(url: str) -> str:
    """``url`` as an error may name it: no userinfo, query or fragment (a key may ride in
    any of them: ``https://user:key@host``, ``?api-key=...``)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return scrub(url.split("?", 1)[0].split("#", 1)[0])
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def uri_secrets(uri: str) -> list[str]:
    """The password (and the whole userinfo) written inside a URI, raw and percent-decoded."""
    try:
        parts = urlsplit(uri)
        password = parts.password
    except ValueError:
        return []
    found: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0]
    if password:
        found += [password, unquote(password)]
    if userinfo:
        found.append(userinfo)
    return found


def settings_secrets(settings: BaseModel) -> list[str]:
    """Every ``SecretStr`` value anywhere in ``settings``, and passwords inside its URIs."""
    from pydantic import BaseModel, SecretStr

    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, SecretStr):
            found.append(value.get_secret_value())
        elif isinstance(value, BaseModel):
            for name in type(value).model_fields:
                walk(getattr(value, name))
            for name, attr in vars(type(value)).items():
                # computed secrets (a password read from a file) are properties, not fields
                if isinstance(attr, property) and _SECRET_ENV.search(name):
                    try:
                        walk(getattr(value, name))
                    except Exception:  # noqa: S112 - an unreadable secret cannot leak
                        continue
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, str) and "://" in value:
            found.extend(uri_secrets(value))

    walk(settings)
    return [s for s in found if s]


def env_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-looking variables (``*PASSWORD*``, ``*API_KEY*`` ...) and URI passwords.

    Read directly, so that an error raised while the settings themselves load is scrubbed too.
    """
    environ = os.environ if environ is None else environ
    found: list[str] = []
    for name, value in environ.items():
        if not value:
            continue
        if _SECRET_ENV.search(name):
            found.append(value)
            found += [v.strip() for v in value.split(",") if v.strip()]  # key lists
        elif _URI_ENV.search(name) and "://" in value:
            found.extend(uri_secrets(value))
    return found


class RedactFilter(logging.Filter):
    """Scrubs every record passing a handler: message, arguments and traceback text.

    One instance per handler; more secrets can be added later (each app adds its own), or a
    ``source`` that lists them on the first record (the CLI's: building the settings costs
    a quarter second that ``kg --help`` must not pay).

    A record keeps the shape of its ``args`` (a formatter may unpack them: uvicorn's access
    formatter does): a record with no secret is left as it is; otherwise each argument is
    scrubbed in place, and only when that cannot clean the message is it flattened.
    """

    def __init__(
        self, secrets: Iterable[str] = (), *, source: Callable[[], Iterable[str]] | None = None
    ) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._sources: list[Callable[[], Iterable[str]]] = []
        self._lock = threading.Lock()
        self.add(secrets)
        if source is not None:
            self._sources.append(source)

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            self._secrets |= {s for s in secrets if s}

    def add_source(self, source: Callable[[], Iterable[str]]) -> None:
        """Secrets to read when the first record arrives (not now)."""
        with self._lock:
            self._sources.append(source)

    @property
    def secrets(self) -> frozenset[str]:
        with self._lock:
            sources, self._sources = self._sources, []
        for source in sources:
            self.add(source())
        return frozenset(self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.secrets
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the raw text, scrubbed
            message = f"{record.msg} {record.args}"
            record.msg, record.args = scrub(message, secrets), None
        else:
            clean = scrub(message, secrets)
            if clean != message:
                _scrub_args(record, clean, secrets)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info, secrets)
        return True


def _scrub_value(value: object, secrets: frozenset[str]) -> object:
    if isinstance(value, str):
        return scrub(value, secrets)
    text = str(value)
    return value if scrub(text, secrets) == text else scrub(text, secrets)


def _scrub_args(record: logging.LogRecord, clean: str, secrets: frozenset[str]) -> None:
    """Scrub ``record``'s template and each argument, keeping the arguments' shape; when a
    secret spans them (or a type no longer formats), the message is flattened to ``clean``."""
    args = record.args
    msg = scrub(record.msg, secrets) if isinstance(record.msg, str) else clean
    if isinstance(args, tuple):
        record.msg, record.args = msg, tuple(_scrub_value(a, secrets) for a in args)
    elif isinstance(args, Mapping):
        record.msg, record.args = msg, {k: _scrub_value(v, secrets) for k, v in args.items()}
    else:
        record.msg, record.args = clean, None
        return
    try:
        again = record.getMessage()
    except Exception:
        again = None
    if again is None or scrub(again, secrets) != again:
        record.msg, record.args = clean, None


def install_redaction(
    handlers: Iterable[logging.Handler],
    secrets: Iterable[str],
    *,
    source: Callable[[], Iterable[str]] | None = None,
) -> None:
    """Put (or extend) a ``RedactFilter`` on each handler; ``source`` is read on first use."""
    secrets = list(secrets)
    for handler in handlers:
        existing = next((f for f in handler.filters if isinstance(f, RedactFilter)), None)
        if existing is None:
            handler.addFilter(RedactFilter(secrets, source=source))
        else:
            existing.add(secrets)
            if source is not None:
                existing.add_source(source)
