"""``kg serve``: the REST API under uvicorn, in one process or several workers."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

from cyclopts import Parameter
from rich.console import Console

if TYPE_CHECKING:
    from litestar import Litestar

    from kg.settings import Settings

console = Console()

#: uvicorn's import string for :func:`worker_app`
WORKER_APP = f"{__name__}:worker_app"


def worker_app() -> Litestar:
    """The app factory each ``--workers`` process calls: its settings come from the
    environment ``kg serve`` set, with the process's share of the admission and connection
    bounds; logging is set up here because a spawned worker inherits no handlers."""
    from api.app import create_app
    from api.serving import configure_protocol, worker_share
    from cli.output import setup_logging
    from kg.settings import Settings

    settings = Settings()
    share = worker_share(settings, settings.api.workers)
    setup_logging(share.log_level, share.log_format)
    configure_protocol(
        share.api.header_timeout_s, share.api.max_connections, share.api.send_timeout_s
    )
    logging.getLogger(__name__).info(
        "worker %d of %d: %d query slots (%d per client, %d heavy), %d connections",
        os.getpid(),
        settings.api.workers,
        share.search.max_concurrent_queries,
        share.api.max_queries_per_client,
        share.api.heavy_query_slots,
        share.api.max_connections,
    )
    return create_app(share)


def serve(
    *,
    host: Annotated[str | None, Parameter(help="Bind address (default: KG_API__HOST).")] = None,
    port: Annotated[int | None, Parameter(help="Port (default: KG_API__PORT).")] = None,
    workers: Annotated[
        int | None,
        Parameter(help="API processes sharing the port (default: KG_API__WORKERS, 1)."),
    ] = None,
) -> int:
    """Serve the REST API. Auth (bearer keys) is on whenever --host is not loopback."""
    from neo4j import GraphDatabase

    from api.app import SCHEMA_PATH, create_app
    from api.auth import auth_required
    from api.serving import raise_open_files_limit, worker_share
    from cli.output import setup_logging
    from kg.settings import Settings

    settings = Settings()
    updates: dict[str, object] = {}
    if host is not None:
        updates["host"] = host
    if port is not None:
        updates["port"] = port
    if workers is not None:
        updates["workers"] = workers
    if updates:
        api = settings.api.model_validate({**settings.api.model_dump(), **updates})
        settings = settings.model_copy(update={"api": api})
    app = create_app(settings)  # raises ConfigError (clean exit) when auth lacks keys
    # refuses a worker count whose shares would exceed the settings, before any worker starts
    worker_share(settings, settings.api.workers)
    # A malformed KG_NEO4J__URI (one holding a password, say) fails here, as one scrubbed line,
    # rather than as a traceback from the lifespan; building a driver does no I/O.
    GraphDatabase.driver(settings.neo4j.uri, auth=None).close()

    # one root handler, scrubbing secrets; uvicorn's loggers propagate to it (log_config=None)
    setup_logging(settings.log_level, settings.log_format)
    raise_open_files_limit(settings.api.max_connections * 2 + 256)
    shown = f"[{settings.api.host}]" if ":" in settings.api.host else settings.api.host
    base = f"http://{shown}:{settings.api.port}"
    auth = (
        "on (Authorization: Bearer <key>)"
        if auth_required(settings.api)
        else "off (loopback; a request from beyond loopback is refused: no keys)"
    )
    processes = f"  {settings.api.workers} workers" if settings.api.workers > 1 else ""
    console.print(f"kg API on [link={base}]{base}[/link]  auth {auth}{processes}")
    console.print(f"API docs at [link={base}{SCHEMA_PATH}]{base}{SCHEMA_PATH}[/link]")
    with _serving(settings):
        return _run(app, settings)


@contextlib.contextmanager
def _serving(settings: Settings) -> Iterator[None]:
    """Record where this process serves, for `kg browse` and the next `kg neo4j start`; say so
    when the running local Neo4j's Browser loads kg's style from another address."""
    from kg import local_server

    server = local_server(settings)
    with server.serving(settings.api) as url:
        note = server.style_note(url)
        if note is not None and server.status().running:
            console.print(f"[yellow]note:[/] {note}", soft_wrap=True)
        yield


def _run(app: Litestar, settings: Settings) -> int:
    """uvicorn in this process, or ``--workers`` spawned processes sharing the port."""
    import uvicorn

    from api.serving import configure_protocol, uvicorn_options

    options = uvicorn_options(
        settings.api.header_timeout_s, settings.api.max_connections, settings.api.send_timeout_s
    )
    common: dict[str, Any] = {
        "host": settings.api.host,
        "port": settings.api.port,
        "log_level": settings.log_level.lower(),
        "log_config": None,
    }
    if settings.api.workers == 1:
        uvicorn.run(app, **common, **options)
        return 0
    # Workers are spawned processes that build their own app from the environment: hand them
    # the flags through it, and the protocol by import string.
    os.environ.update(
        KG_API__HOST=settings.api.host,
        KG_API__PORT=str(settings.api.port),
        KG_API__WORKERS=str(settings.api.workers),
    )
    options["http"] = configure_protocol(
        settings.api.header_timeout_s, settings.api.max_connections, settings.api.send_timeout_s
    )
    with _shared_metrics():
        uvicorn.run(WORKER_APP, factory=True, workers=settings.api.workers, **common, **options)
    return 0


@contextlib.contextmanager
def _shared_metrics() -> Iterator[None]:
    """One set of metrics for all workers: before uvicorn spawns them, point
    ``PROMETHEUS_MULTIPROC_DIR`` at an empty directory (the one already set, emptied, or a
    new private one removed afterwards); each worker writes its values there and any
    worker's ``GET /metrics`` reads them all (kg/metrics.py)."""
    import shutil
    import tempfile

    from kg import observe

    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    directory = given or tempfile.mkdtemp(prefix="kg-metrics-")
    observe.share_metrics(directory)
    try:
        yield
    finally:
        if not given:
            shutil.rmtree(directory, ignore_errors=True)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
