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
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, SecretStr

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

    One instance per handler; more secrets can be added later (each app adds its own).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._lock = threading.Lock()
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            self._secrets |= {s for s in secrets if s}

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.secrets
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the raw text, scrubbed
            message = f"{record.msg} {record.args}"
        record.msg = scrub(message, secrets)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info, secrets)
        return True


def install_redaction(handlers: Iterable[logging.Handler], secrets: Iterable[str]) -> None:
    """Put (or extend) a ``RedactFilter`` on each handler."""
    secrets = list(secrets)
    for handler in handlers:
        existing = next((f for f in handler.filters if isinstance(f, RedactFilter)), None)
        if existing is None:
            handler.addFilter(RedactFilter(secrets))
        else:
            existing.add(secrets)
