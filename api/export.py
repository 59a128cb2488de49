"""Write the OpenAPI spec to docs/openapi.json: ``python -m api.export [path]``.

The spec depends on code only (never on settings), so the committed file can be checked for
staleness by a test (tests/unit/test_openapi_current.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def openapi_spec() -> dict[str, Any]:
    """The spec of an app built with fixed settings (auth off, nothing read from the env)."""
    from api.app import create_app
    from kg.settings import Settings

    settings = Settings.model_construct()  # defaults only: no env, no .env
    app = create_app(settings)
    spec: dict[str, Any] = app.openapi_schema.to_schema()
    return spec


def render() -> str:
    return json.dumps(openapi_spec(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    path.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
