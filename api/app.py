"""The Litestar app factory: settings in, an app out; the Neo4j driver lives in the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme, Tag
from neo4j.exceptions import DriverError

import kg
from api import logs
from api.auth import SECURITY_SCHEME, AccessPolicy, access_guard, check_auth_config
from api.backend import Backend, ServiceFactory
from api.browser import BrowserAssetsController
from api.deps import provide_backend, provide_graph
from api.docs_assets import DocsAssetsController, offline_swagger
from api.errors import exception_handler
from api.middleware import EdgeMiddleware
from api.openapi import render_once
from api.routes.entities import EntityController
from api.routes.health import HealthController
from api.routes.metrics import MetricsController
from api.routes.namespaces import NamespaceController
from api.routes.questions import QuestionController
from api.routes.routed import RoutedSearchController
from api.routes.search import SearchController
from api.routes.templates import TemplateController
from kg import AsyncKnowledgeGraph, observe
from kg.errors import ConfigError
from kg.redact import scrub, settings_secrets
from kg.settings import Settings

SCHEMA_PATH = "/schema"

logger = logging.getLogger("kg.api")

_DESCRIPTION = """\
Guarded, read-only search over a kg knowledge graph in Neo4j.

Every route except `/health` and the pages under `/schema` needs `Authorization: Bearer <key>`
when authentication is on (by default: when keys are configured, and for every request that
does not arrive on a loopback address). POST bodies must be `application/json`.
Errors are JSON: `{status_code, error, detail, errors: [{field, reason}]}`.
"""


def openapi_config() -> OpenAPIConfig:
    """The spec's metadata; independent of settings so the exported file is reproducible."""
    return OpenAPIConfig(
        title="kg",
        version=kg.__version__,
        description=_DESCRIPTION,
        path=SCHEMA_PATH,
        # rendered once (api/openapi.py); Swagger UI's files served by kg (api/docs_assets.py)
        render_plugins=render_once(offline_swagger(path=["/", "/swagger"])),
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
            Tag(name="namespaces", description="The document sources the graph holds."),
            Tag(name="questions", description="Answers with citations; questions to templates."),
            Tag(name="health", description="Liveness of the API and Neo4j."),
        ],
    )


def create_app(
    settings: Settings | None = None, *, service_factory: ServiceFactory | None = None
) -> Litestar:
    """Build the API. Raises ConfigError when auth is required but no keys are configured.

    ``service_factory(driver, settings)`` builds the search use case behind the surface
    (:class:`kg.AsyncKnowledgeGraph`); tests pass their own.
    """
    settings = settings if settings is not None else Settings()
    auth_on = check_auth_config(settings.api)
    policy = AccessPolicy.from_settings(settings.api)
    secrets = settings_secrets(settings)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        logs.install(secrets, fmt=settings.log_format)
        _log_access_policy(policy)
        # this process serves: its metrics are on; a bad OTEL_TRACES_EXPORTER fails here
        observe.enable_metrics()
        observe.tracing_enabled()
        graph = AsyncKnowledgeGraph(settings, service_factory=service_factory)
        try:
            await graph.open()
        except (ValueError, DriverError) as exc:  # a malformed URI, e.g. one holding a password
            raise ConfigError(
                f"cannot use KG_NEO4J__URI: {scrub(str(exc), secrets)}; put the user and "
                "password in KG_NEO4J__USERNAME / KG_NEO4J__PASSWORD"
            ) from None
        try:
            backend = Backend(graph, settings)
            app.state.backend = backend
            await backend.try_startup()
            yield
        finally:
            await graph.aclose()
            observe.worker_exiting()

    app = Litestar(
        route_handlers=[
            SearchController,
            RoutedSearchController,
            EntityController,
            TemplateController,
            QuestionController,
            NamespaceController,
            HealthController,
            MetricsController,
        ],
        dependencies={
            "graph": Provide(provide_graph),
            "backend": Provide(provide_backend),
        },
        guards=[access_guard(policy, [SCHEMA_PATH])],
        lifespan=[lifespan],
        state=State({"settings": settings, "auth": auth_on, "policy": policy}),
        exception_handlers={Exception: exception_handler},
        request_max_body_size=settings.api.max_body_bytes,
        openapi_config=openapi_config(),
        logging_config=None,
        debug=False,
    )
    app.register(BrowserAssetsController)  # Browser's style and guide: open, no graph data
    app.register(DocsAssetsController)  # the docs page's Swagger UI files: no CDN
    # Outermost, before routing: Host check, body deadline, client identity (api/middleware.py)
    edge = EdgeMiddleware(
        cast("Any", app.asgi_handler), policy, body_timeout_s=settings.api.body_timeout_s
    )
    # Outermost of all: one span and one request-duration observation per request
    app.asgi_handler = cast("Any", observe.asgi(cast("Any", edge), "api"))
    return app


def _log_access_policy(policy: AccessPolicy) -> None:
    """Say once, at start-up, who will be served: the bound socket is not known yet."""
    if policy.require_auth is False:
        logger.warning("API auth is forced off (KG_API__REQUIRE_AUTH=false): anyone who can "
                       "reach this server can search the graph")  # fmt: skip
    elif not policy.keys:
        logger.info(
            "no API keys configured: only requests arriving on a loopback address are served; "
            "set KG_API__API_KEYS to serve beyond this machine"
        )
