"""``kg serve``: the REST API under uvicorn."""

from __future__ import annotations

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
    from neo4j import GraphDatabase

    from api.app import SCHEMA_PATH, create_app
    from api.auth import auth_required
    from api.serving import raise_open_files_limit, uvicorn_options
    from cli.output import setup_logging

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
    # A malformed KG_NEO4J__URI (one holding a password, say) fails here, as one scrubbed line,
    # rather than as a traceback from the lifespan; building a driver does no I/O.
    GraphDatabase.driver(settings.neo4j.uri, auth=None).close()

    # one root handler, scrubbing secrets; uvicorn's loggers propagate to it (log_config=None)
    setup_logging(settings.log_level)
    raise_open_files_limit(settings.api.max_connections * 2 + 256)
    shown = f"[{settings.api.host}]" if ":" in settings.api.host else settings.api.host
    base = f"http://{shown}:{settings.api.port}"
    auth = (
        "on (Authorization: Bearer <key>)"
        if auth_required(settings.api)
        else "off (loopback; a request from beyond loopback is refused: no keys)"
    )
    console.print(f"kg API on [link={base}]{base}[/link]  auth {auth}")
    console.print(f"API docs at [link={base}{SCHEMA_PATH}]{base}{SCHEMA_PATH}[/link]")
    uvicorn.run(
        app,
        host=settings.api.host,
        port=settings.api.port,
        log_level=settings.log_level.lower(),
        log_config=None,
        **uvicorn_options(settings.api.header_timeout_s, settings.api.max_connections),
    )
    return 0
