"""E-mail: MIME messages (``.eml``, the standard library's ``email``) and Outlook ``.msg``.

An Outlook message is an OLE2 compound file of MAPI property streams ([MS-OXMSG]); olefile
(BSD-2-Clause) reads the container and the few properties kg needs are decoded here (the
maintained MSG libraries are GPL). Both give one shape: ``# subject``, a From/To/Date line,
the body (plain text preferred, else the HTML part's text), and the attachments' names
(listed, not read).
"""

from __future__ import annotations

import datetime as dt
import struct
from typing import Any

from kg.formats import Extracted, Unreadable
from kg.formats._common import OLE_SIGNATURE, clean, heading, iso_date, join_blocks

#: An attachment name list longer than this is cut (a message with thousands of parts).
_MAX_ATTACHMENTS = 200


def _compose(
    subject: str | None,
    sender: str | None,
    to: str | None,
    date: dt.datetime | None,
    body: str,
    attachments: list[str],
) -> Extracted:
    fields = [
        f"From: {sender}" if sender else None,
        f"To: {to}" if to else None,
        f"Date: {date.isoformat(sep=' ')}" if date else None,
    ]
    header = "; ".join(f for f in fields if f)
    names = [clean(n) for n in attachments[:_MAX_ATTACHMENTS] if clean(n)]
    listed = f"Attachments: {', '.join(names)}" if names else None
    title = clean(subject or "") or None
    text = join_blocks([heading(1, title) if title else None, header, body.strip(), listed])
    return Extracted(text, title, iso_date(date))


# --------------------------------------------------------------------------- MIME (.eml)


def read_eml(data: bytes) -> Extracted:
    """A MIME message: headers, the text/plain part (else text/html's text), attachment names."""
    import email
    import email.policy
    from email.message import EmailMessage

    try:
        message = email.message_from_bytes(data, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        if not message.keys():
            raise Unreadable("unreadable EML: no message headers")
        subject = _header(message, "subject")
        sender = _header(message, "from")
        to = _header(message, "to")
        date = _date_header(message)
        body_part = message.get_body(preferencelist=("plain", "html"))
        body = _mime_body(body_part)
        attachments = [
            str(part.get_filename())
            for part in message.walk()
            if part is not body_part and part.get_filename()
        ]
    except (ValueError, LookupError, TypeError, IndexError, AttributeError) as exc:
        raise Unreadable(f"unreadable EML: {type(exc).__name__}: {exc}"[:300]) from exc
    return _compose(subject, sender, to, date, body, attachments)


def _header(message: Any, name: str) -> str | None:
    value = message.get(name)
    if value is None:
        return None
    return clean(str(value)) or None


def _date_header(message: Any) -> dt.datetime | None:
    value = message.get("date")
    when = getattr(value, "datetime", None)  # None when the header does not parse
    return when if isinstance(when, dt.datetime) else None


def _mime_body(part: Any) -> str:
    from kg.documents import html_to_text

    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, KeyError):  # an unknown or lying charset
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", "replace")
    if not isinstance(content, str):
        return ""
    if part.get_content_subtype() == "html":
        return html_to_text(content)[0]
    return content


# --------------------------------------------------------------------------- Outlook (.msg)

_PT_UNICODE, _PT_STRING8, _PT_BINARY, _PT_SYSTIME = 0x001F, 0x001E, 0x0102, 0x0040
_PR_SUBJECT, _PR_BODY, _PR_HTML = 0x0037, 0x1000, 0x1013
_PR_SENDER_NAME, _PR_SENDER_EMAIL, _PR_DISPLAY_TO = 0x0C1A, 0x0C1F, 0x0E04
_PR_CLIENT_SUBMIT_TIME, _PR_MESSAGE_DELIVERY_TIME = 0x0039, 0x0E06
_PR_ATTACH_LONG_FILENAME, _PR_ATTACH_FILENAME, _PR_DISPLAY_NAME = 0x3707, 0x3704, 0x3001
_PR_MESSAGE_CODEPAGE, _PR_INTERNET_CPID = 0x3FFD, 0x3FDE
_PROPERTIES = "__properties_version1.0"
_TOP_HEADER = 32  # the message's property stream header; 8 for attachments and recipients


def read_msg(data: bytes) -> Extracted:
    """An Outlook message: subject, sender, recipients, date, body, attachment names."""
    import olefile

    if not data.startswith(OLE_SIGNATURE):
        raise Unreadable("unreadable MSG: not an OLE2 compound file")
    try:
        with olefile.OleFileIO(data) as ole:
            return _msg(ole)
    except (OSError, ValueError, struct.error, IndexError, KeyError, TypeError) as exc:
        raise Unreadable(f"unreadable MSG: {type(exc).__name__}: {exc}"[:300]) from exc


def _msg(ole: Any) -> Extracted:
    import olefile

    # olefile reads sectors lazily: a truncated file shows only when a lost stream is opened.
    if any(ole.nb_sect <= next_sector < olefile.MAXREGSECT for next_sector in ole.fat):
        raise Unreadable("unreadable MSG: truncated (its sectors run past the end of the file)")
    properties = _fixed_properties(ole, [_PROPERTIES], _TOP_HEADER)
    codepage = properties.get(_PR_MESSAGE_CODEPAGE) or properties.get(_PR_INTERNET_CPID)
    encoding = _encoding(codepage)
    top = {entry[0] for entry in ole.listdir(streams=True, storages=False) if len(entry) == 1}
    if _PROPERTIES not in top and not any(name.startswith("__substg1.0_") for name in top):
        raise Unreadable("unreadable MSG: an OLE file without message properties (not Outlook)")

    def string(prop: int, storage: list[str] | None = None) -> str | None:
        return _string(ole, storage or [], prop, encoding)

    body = string(_PR_BODY) or ""
    if not body.strip():
        html = _stream(ole, [f"__substg1.0_{_PR_HTML:04X}{_PT_BINARY:04X}"]) or b""
        if html:
            from kg.documents import html_to_text

            body = html_to_text(html.decode(encoding, "replace"))[0]
    sender_name, sender_email = string(_PR_SENDER_NAME), string(_PR_SENDER_EMAIL)
    sender = sender_name or sender_email
    if sender_name and sender_email and "@" in sender_email and sender_email not in sender_name:
        sender = f"{sender_name} <{sender_email}>"
    when = properties.get(_PR_CLIENT_SUBMIT_TIME) or properties.get(_PR_MESSAGE_DELIVERY_TIME)
    attachments: list[str] = []
    storages = sorted(
        {entry[0] for entry in ole.listdir(storages=True) if entry[0].startswith("__attach_")}
    )
    for storage in storages[:_MAX_ATTACHMENTS]:
        name = (
            string(_PR_ATTACH_LONG_FILENAME, [storage])
            or string(_PR_ATTACH_FILENAME, [storage])
            or string(_PR_DISPLAY_NAME, [storage])
        )
        if name:
            attachments.append(name)
    return _compose(
        string(_PR_SUBJECT),
        sender,
        string(_PR_DISPLAY_TO),
        _filetime(when) if isinstance(when, int) else None,
        body,
        attachments,
    )


def _stream(ole: Any, path: list[str]) -> bytes | None:
    if not ole.exists("/".join(path)):
        return None
    data: bytes = ole.openstream(path).read()
    return data


def _string(ole: Any, storage: list[str], prop: int, encoding: str) -> str | None:
    """A string property: UTF-16 (``001F``), else the message's code page (``001E``)."""
    raw = _stream(ole, [*storage, f"__substg1.0_{prop:04X}{_PT_UNICODE:04X}"])
    if raw is not None:
        text = raw.decode("utf-16-le", "replace")
    else:
        raw = _stream(ole, [*storage, f"__substg1.0_{prop:04X}{_PT_STRING8:04X}"])
        if raw is None:
            return None
        text = raw.decode(encoding, "replace")
    text = text.split("\x00", 1)[0].replace("\r\n", "\n").strip()
    return text or None


def _fixed_properties(ole: Any, path: list[str], header: int) -> dict[int, int]:
    """Fixed-size property values by id: 16-byte entries after the stream's header."""
    raw = _stream(ole, path) or b""
    values: dict[int, int] = {}
    for offset in range(header, len(raw) - 15, 16):
        tag, _flags, value = struct.unpack_from("<IIQ", raw, offset)
        prop_type, prop_id = tag & 0xFFFF, tag >> 16
        if prop_type == _PT_SYSTIME:
            values[prop_id] = value
        elif prop_type == 0x0003:  # PT_LONG: the low four bytes
            values[prop_id] = value & 0xFFFFFFFF
    return values


def _filetime(value: int) -> dt.datetime | None:
    """A FILETIME (100-ns ticks since 1601-01-01 UTC); None for zero or out of range."""
    if value <= 0:
        return None
    try:
        return dt.datetime(1601, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value // 10)
    except OverflowError:
        return None


def _encoding(codepage: int | None) -> str:
    import codecs

    if codepage in (None, 0):
        return "cp1252"
    name = "utf-8" if codepage == 65001 else f"cp{codepage}"
    try:
        codecs.lookup(name)
    except LookupError:
        return "cp1252"
    return name
