"""``kg serve``: the REST API under uvicorn."""

from __future__ import annotations

import logging
from typing import Annotated

import uvicorn
from cyclopts import Parameter
from rich.console import Console

from kg.settings import Settings

console = Console()


def serve(
    *,
    host: Annotated[str | None, Parameter(help="Bind address (default: KG_API__HOST).")] = None,
    port: Annotated[int | None, Parameter(help="Port (default: KG_API__PORT).")] = None,
) -> int:
    """Serve the REST API. Auth (bearer keys) is on whenever --host is not loopback."""
    from api.app import SCHEMA_PATH, create_app
    from api.auth import auth_required

    settings = Settings()
    updates: dict[str, object] = {}
    if host is not None:
        updates["host"] = host
    if port is not None:
        updates["port"] = port
    if updates:
        api = settings.api.model_validate({**settings.api.model_dump(), **updates})
        settings = settings.model_copy(update={"api": api})
    app = create_app(settings)  # raises ConfigError (clean exit) when auth lacks keys

    logging.basicConfig(level=settings.log_level, format="%(levelname)s %(name)s: %(message)s")
    shown = f"[{settings.api.host}]" if ":" in settings.api.host else settings.api.host
    base = f"http://{shown}:{settings.api.port}"
    auth = "on (Authorization: Bearer <key>)" if auth_required(settings.api) else "off (loopback)"
    console.print(f"kg API on [link={base}]{base}[/link]  auth {auth}")
    console.print(f"API docs at [link={base}{SCHEMA_PATH}]{base}{SCHEMA_PATH}[/link]")
    uvicorn.run(
        app,
        host=settings.api.host,
        port=settings.api.port,
        log_level=settings.log_level.lower(),
        proxy_headers=False,
    )
    return 0
