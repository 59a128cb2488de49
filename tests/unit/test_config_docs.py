from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_configuration_page_is_current() -> None:
    path = REPO / "scripts" / "config_docs.py"
    spec = importlib.util.spec_from_file_location("config_docs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    current = (REPO / "docs" / "configuration.md").read_text()
    assert current == module.render(), "run: .venv/bin/python scripts/config_docs.py"
