"""A small triplets file whose names attack a CSV import: quotes, commas, line breaks,
semicolons (the importer's default array delimiter), private-use characters (kg's own array
delimiters), Cyrillic; dated facts of a single-valued predicate (one closes the other),
declared entities with aliases and types that become labels, a document long enough for
several chunks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOSTILE = 'Acme "Quoted", Inc.;\nline two \ue000 \x1f'
CYRILLIC = "Служба аутентификации"


def documents() -> list[dict[str, Any]]:
    long_text = " ".join(
        f"Paragraph {i}: {HOSTILE} depends on {CYRILLIC}; the Ledger calls Billing."
        for i in range(120)
    )
    return [
        {
            "id": "adr/1, \"first\";\nnew",
            "title": 'ADR "1"; Payments, ledger',
            "text": f"{HOSTILE} depends on {CYRILLIC}. Payments owned by Team A since 2021. "
            "Payments owned by Team B since 2023. Ledger calls Billing.",
            "entities": [
                {"name": HOSTILE, "type": "Service", "description": 'says "hi", bye',
                 "aliases": ["acme;corp", "ACME\ninc"]},
                {"name": CYRILLIC, "type": "Сервис", "aliases": ["аутентификация"]},
            ],
            "triplets": [
                {"subject": HOSTILE, "predicate": "depends on", "object": CYRILLIC,
                 "description": 'a "quoted", line\nbreak', "weight": 0.9},
                {"subject": "Payments", "predicate": "owned by", "object": "Team A",
                 "valid_from": "2021-01-01", "subject_type": "Service", "object_type": "Team"},
                {"subject": "Payments", "predicate": "owned by", "object": "Team B",
                 "valid_from": "2023-06", "object_type": "Team"},
                {"subject": "Ledger", "predicate": "calls", "object": "Billing",
                 "valid_to": "2025-01-01"},
            ],
        },
        {
            "id": "notes/long.md",
            "title": "Долгий документ",
            "text": long_text,
            "triplets": [
                {"subject": "Ledger", "predicate": "calls", "object": "Billing"},
                {"subject": CYRILLIC, "predicate": "хранит данные в", "object": "PostgreSQL"},
                {"subject": "Billing", "predicate": "uses", "object": "PostgreSQL"},
            ],
        },
    ]  # fmt: skip


def write(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in documents()) + "\n")
    return path
