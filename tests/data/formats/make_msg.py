"""Write tests/data/formats/sample.msg: a small Outlook message, built from the specifications.

No maintained library writes .msg files, so this script writes the OLE2 compound file itself
([MS-CFB] version 3: 512-byte sectors, a FAT, a directory of 128-byte entries, and a mini
stream with its mini FAT for the streams under 4,096 bytes) holding the MAPI property streams
of [MS-OXMSG]: subject, body, sender, recipients, a submit time, and two attachments (one
name in UTF-16, one in the message's code page). The output is byte-for-byte deterministic.

    python tests/data/formats/make_msg.py [OUT]    # default: sample.msg beside this script
"""

from __future__ import annotations

import datetime as dt
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

SECTOR = 512
MINI = 64
CUTOFF = 4096
FREE, END, FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
NOSTREAM = 0xFFFFFFFF
STORAGE, STREAM, ROOT = 1, 2, 5
RED, BLACK = 0, 1


@dataclass
class Entry:
    name: str
    kind: int
    data: bytes = b""
    children: list[Entry] = field(default_factory=list)
    # filled in by the writer
    sid: int = 0
    left: int = NOSTREAM
    right: int = NOSTREAM
    child: int = NOSTREAM
    color: int = BLACK
    start: int = END


def storage(name: str, *children: Entry) -> Entry:
    return Entry(name, STORAGE, children=list(children))


def stream(name: str, data: bytes) -> Entry:
    return Entry(name, STREAM, data)


# --------------------------------------------------------------------------- MAPI properties

PT_LONG, PT_SYSTIME, PT_UNICODE, PT_STRING8, PT_BINARY = 0x0003, 0x0040, 0x001F, 0x001E, 0x0102


def unicode_prop(prop: int, text: str) -> Entry:
    return stream(f"__substg1.0_{prop:04X}{PT_UNICODE:04X}", text.encode("utf-16-le"))


def ansi_prop(prop: int, text: str, codepage: str = "cp1252") -> Entry:
    return stream(f"__substg1.0_{prop:04X}{PT_STRING8:04X}", text.encode(codepage))


def filetime(when: dt.datetime) -> int:
    return (when - dt.datetime(1601, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1) * 10


def properties(header: bytes, fixed: list[tuple[int, int, int]], strings: list[Entry]) -> Entry:
    """The property stream: a header, then 16-byte entries (tag, flags, value or size)."""
    body = bytearray(header)
    for prop, prop_type, value in fixed:
        body += struct.pack("<IIQ", (prop << 16) | prop_type, 0x6, value)  # readable, writable
    for entry in strings:
        tag = int(entry.name[-8:], 16)
        size = len(entry.data) + (2 if tag & 0xFFFF == PT_UNICODE else 1)  # with a terminator
        body += struct.pack("<IIII", tag, 0x6, size, 0)
    return stream("__properties_version1.0", bytes(body))


def message() -> Entry:
    submitted = filetime(dt.datetime(2024, 3, 5, 10, 30, tzinfo=dt.UTC))
    strings = [
        unicode_prop(0x001A, "IPM.Note"),
        unicode_prop(0x0037, "Инцидент: платежи / Incident"),
        unicode_prop(0x0C1A, "Мария Иванова"),
        unicode_prop(0x0C1F, "maria@example.com"),
        unicode_prop(0x0E04, "Ops Team"),
        unicode_prop(
            0x1000,
            "Сервис платежей зависит от базы данных.\r\n\r\n"
            "The payment service depends on the ledger (marker-msg-kappa).\r\n",
        ),
    ]
    recipient_strings = [unicode_prop(0x3001, "Ops Team"), unicode_prop(0x3003, "ops@example.com")]
    recipient = storage(
        "__recip_version1.0_#00000000",
        properties(bytes(8), [(0x0C15, PT_LONG, 1)], recipient_strings),  # PR_RECIPIENT_TYPE: To
        *recipient_strings,
    )
    pdf = b"%PDF-1.4\n% not a real PDF: the reader lists attachments, never reads them\n"
    first_strings = [unicode_prop(0x3707, "Отчёт Q3.pdf"), unicode_prop(0x3704, "OTCHET~1.PDF")]
    first = storage(
        "__attach_version1.0_#00000000",
        properties(bytes(8), [(0x3705, PT_LONG, 1)], first_strings),  # PR_ATTACH_METHOD: by value
        *first_strings,
        stream(f"__substg1.0_3701{PT_BINARY:04X}", pdf),
    )
    second_strings = [ansi_prop(0x3704, "diagram.png")]
    second = storage(
        "__attach_version1.0_#00000001",
        properties(bytes(8), [(0x3705, PT_LONG, 1)], second_strings),
        *second_strings,
        stream(f"__substg1.0_3701{PT_BINARY:04X}", b"\x89PNG\r\n\x1a\n" + bytes(5000)),
    )
    nameid = storage(
        "__nameid_version1.0",
        stream("__substg1.0_00020102", b""),
        stream("__substg1.0_00030102", b""),
        stream("__substg1.0_00040102", b""),
    )
    # Header of a top-level message: reserved, next recipient id, next attachment id,
    # recipient count, attachment count, reserved.
    header = struct.pack("<8xIIII8x", 1, 2, 1, 2)
    fixed = [
        (0x0039, PT_SYSTIME, submitted),  # PR_CLIENT_SUBMIT_TIME
        (0x0E06, PT_SYSTIME, submitted),  # PR_MESSAGE_DELIVERY_TIME
        (0x3FFD, PT_LONG, 1252),  # PR_MESSAGE_CODEPAGE
    ]
    return Entry(
        "Root Entry",
        ROOT,
        children=[
            properties(header, fixed, strings),
            *strings,
            recipient,
            first,
            second,
            nameid,
        ],
    )


# --------------------------------------------------------------------------- the compound file


def _key(entry: Entry) -> tuple[int, str]:
    # [MS-CFB] 2.6.4: shorter names first, then by upper-cased name.
    return (len(entry.name), entry.name.upper())


def _tree(siblings: list[Entry], depth: int, full_depth: int) -> int:
    """A balanced search tree of ``siblings``, its last partial level red: a red-black tree."""
    if not siblings:
        return NOSTREAM
    mid = len(siblings) // 2
    node = siblings[mid]
    node.color = RED if depth == full_depth else BLACK
    node.left = _tree(siblings[:mid], depth + 1, full_depth)
    node.right = _tree(siblings[mid + 1 :], depth + 1, full_depth)
    return node.sid


def _number(root: Entry) -> list[Entry]:
    order: list[Entry] = []
    queue = [root]
    while queue:
        entry = queue.pop(0)
        entry.sid = len(order)
        order.append(entry)
        queue.extend(entry.children)
    for entry in order:
        siblings = sorted(entry.children, key=_key)
        if siblings:
            full_depth = len(siblings).bit_length() - 1  # levels 0..full_depth-1 are complete
            if len(siblings) == (1 << (full_depth + 1)) - 1:
                full_depth += 1  # a perfect tree: no red level
            entry.child = _tree(siblings, 0, full_depth)
    return order


def _chain(fat: list[int], first: int, count: int) -> None:
    for i in range(count):
        fat[first + i] = first + i + 1 if i < count - 1 else END


def _padded(data: bytes, unit: int) -> bytes:
    return data + bytes(-len(data) % unit)


def compound_file(root: Entry) -> bytes:
    entries = _number(root)
    streams = [e for e in entries if e.kind == STREAM]

    # The mini stream: every stream under the cutoff, in 64-byte mini sectors.
    mini_fat: list[int] = []
    mini_stream = bytearray()
    for entry in streams:
        if 0 < len(entry.data) < CUTOFF:
            count = -(-len(entry.data) // MINI)
            entry.start = len(mini_fat)
            mini_fat.extend([0] * count)
            _chain(mini_fat, entry.start, count)
            mini_stream += _padded(entry.data, MINI)
    big = [e for e in streams if len(e.data) >= CUTOFF]

    directory = len(entries) * 128
    n_dir = -(-directory // SECTOR)
    n_minifat = -(-len(mini_fat) * 4 // SECTOR)
    n_ministream = -(-len(mini_stream) // SECTOR)
    n_big = sum(-(-len(e.data) // SECTOR) for e in big)
    others = n_dir + n_minifat + n_ministream + n_big
    n_fat = 1
    while n_fat * (SECTOR // 4) < n_fat + others:
        n_fat += 1
    assert n_fat <= 109, "one header DIFAT is enough for this fixture"

    total = n_fat + others
    fat = [FREE] * (n_fat * (SECTOR // 4))
    for i in range(n_fat):
        fat[i] = FATSECT
    dir_start = n_fat
    _chain(fat, dir_start, n_dir)
    minifat_start = dir_start + n_dir
    _chain(fat, minifat_start, n_minifat)
    ministream_start = minifat_start + n_minifat
    _chain(fat, ministream_start, n_ministream)
    cursor = ministream_start + n_ministream
    body = bytearray()
    for entry in big:
        count = -(-len(entry.data) // SECTOR)
        entry.start = cursor
        _chain(fat, cursor, count)
        body += _padded(entry.data, SECTOR)
        cursor += count
    assert cursor == total

    root.start = ministream_start if mini_stream else END
    root_size = len(mini_stream)

    difat = [i for i in range(n_fat)] + [FREE] * (109 - n_fat)
    header = struct.pack(
        "<8s16sHHHHH6xIIIIIIIII",
        bytes.fromhex("D0CF11E0A1B11AE1"),
        bytes(16),
        0x003E,  # minor version
        0x0003,  # major version 3: 512-byte sectors
        0xFFFE,  # little-endian
        9,  # sector shift: 2**9
        6,  # mini sector shift: 2**6
        0,  # directory sectors: always 0 in version 3
        n_fat,
        dir_start,
        0,  # transaction signature
        CUTOFF,
        minifat_start if n_minifat else END,
        n_minifat,
        END,  # no DIFAT sectors
        0,
    ) + struct.pack("<109I", *difat)
    assert len(header) == SECTOR

    dir_bytes = bytearray()
    for entry in entries:
        name = entry.name.encode("utf-16-le") + b"\0\0"
        assert len(name) <= 64, entry.name
        size = root_size if entry.kind == ROOT else len(entry.data)
        start = entry.start if (entry.kind == ROOT or size) else END
        if entry.kind == STORAGE:
            start, size = 0, 0
        dir_bytes += struct.pack(
            "<64sHBBIII16sIQQIQ",
            name,
            len(name),
            entry.kind,
            entry.color,
            entry.left,
            entry.right,
            entry.child,
            bytes(16),  # CLSID
            0,  # state bits
            0,  # creation time: none, so the file is deterministic
            0,  # modified time
            start,
            size,
        )
    dir_bytes = bytearray(_padded(bytes(dir_bytes), SECTOR))
    for offset in range(len(entries) * 128, len(dir_bytes), 128):  # unused entries
        struct.pack_into("<III", dir_bytes, offset + 68, NOSTREAM, NOSTREAM, NOSTREAM)

    out = bytearray(header)
    out += struct.pack(f"<{len(fat)}I", *fat)
    out += dir_bytes
    mini_fat += [FREE] * (-len(mini_fat) % (SECTOR // 4))
    out += struct.pack(f"<{len(mini_fat)}I", *mini_fat)
    out += _padded(bytes(mini_stream), SECTOR)
    out += body
    assert len(out) == SECTOR * (1 + total)
    return bytes(out)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("sample.msg")
    out.write_bytes(compound_file(message()))


if __name__ == "__main__":
    main()
