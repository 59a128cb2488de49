"""The Litestar app factory: settings in, an app out; the Neo4j driver lives in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme, Tag

import kg
from api.auth import SECURITY_SCHEME, api_key_guard, check_auth_config
from api.backend import Backend, ServiceFactory, default_service_factory
from api.deps import provide_backend, provide_service
from api.errors import exception_handler
from api.routes.entities import EntityController
from api.routes.health import HealthController
from api.routes.search import SearchController
from api.routes.templates import TemplateController
from kg.graph.driver import open_async_driver
from kg.settings import Settings

SCHEMA_PATH = "/schema"

_DESCRIPTION = """\
Guarded, read-only search over a kg knowledge graph in Neo4j.

Every route except `/health` and the pages under `/schema` needs `Authorization: Bearer <key>`
when authentication is on (by default whenever the server binds beyond loopback).
Errors are JSON: `{status_code, error, detail, errors: [{field, reason}]}`.
"""


def openapi_config() -> OpenAPIConfig:
    """The spec's metadata; independent of settings so the exported file is reproducible."""
    return OpenAPIConfig(
        title="kg",
        version=kg.__version__,
        description=_DESCRIPTION,
        path=SCHEMA_PATH,
        render_plugins=[ScalarRenderPlugin(path=["/", "/scalar"]), SwaggerRenderPlugin()],
        components=Components(
            security_schemes={
                SECURITY_SCHEME: SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="An API key from KG_API__API_KEYS.",
                )
            }
        ),
        tags=[
            Tag(name="search", description="Local GraphRAG search."),
            Tag(name="entities", description="Entities and their neighbourhoods."),
            Tag(name="templates", description="Named, read-only Cypher templates."),
            Tag(name="health", description="Liveness of the API and Neo4j."),
        ],
    )


def create_app(
    settings: Settings | None = None, *, service_factory: ServiceFactory | None = None
) -> Litestar:
    """Build the API. Raises ConfigError when auth is required but no keys are configured.

    ``service_factory(driver, settings)`` builds the search service; tests pass their own.
    """
    settings = settings if settings is not None else Settings()
    auth_on = check_auth_config(settings.api)
    factory = service_factory or default_service_factory

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        driver = open_async_driver(settings.neo4j)
        try:
            backend = Backend(driver, factory(driver, settings), settings)
            app.state.backend = backend
            await backend.try_startup()
            yield
        finally:
            await driver.close()

    guards = [api_key_guard(settings.api.api_keys, [SCHEMA_PATH])] if auth_on else []
    return Litestar(
        route_handlers=[SearchController, EntityController, TemplateController, HealthController],
        dependencies={
            "service": Provide(provide_service),
            "backend": Provide(provide_backend),
        },
        guards=guards,
        lifespan=[lifespan],
        state=State({"settings": settings, "auth": auth_on}),
        exception_handlers={Exception: exception_handler},
        request_max_body_size=settings.api.max_body_bytes,
        openapi_config=openapi_config(),
        logging_config=None,
        debug=False,
    )
