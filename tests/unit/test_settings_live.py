"""No dead settings: every documented field is read somewhere in kg, api or cli."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from kg.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _source() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("kg", "api", "cli", "kg_mcp")  # kg_mcp reads the MCP session bounds
        for path in sorted((REPO / folder).rglob("*.py"))
    )


def _fields() -> list[str]:
    names: list[str] = []
    for section, info in Settings.model_fields.items():
        model = info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            names += [f"{section}.{name}" for name in model.model_fields]
        else:
            names.append(section)
    return names


def test_every_setting_is_read_on_some_code_path() -> None:
    source = _source()
    # A read is an attribute access (`settings.search.fanout`, `self.fanout`); the declaration
    # itself (`fanout: int = ...`) is not one.
    dead = [f for f in _fields() if not re.search(r"\." + f.split(".")[-1] + r"\b", source)]
    assert dead == []


def test_the_check_finds_a_dead_name() -> None:
    assert not re.search(r"\.no_such_setting_anywhere\b", _source())
