"""GET /health: open (no key), so orchestrators can probe it."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from api.auth import PUBLIC
from api.backend import Backend
from api.models import HealthStatus


class HealthController(Controller):
    path = "/health"
    tags = ["health"]  # noqa: RUF012

    @get(
        "/",
        operation_id="health",
        summary="Whether Neo4j answers",
        description="200 when Neo4j answers, 503 when it does not. Needs no API key.",
        opt={PUBLIC: True},
        responses={
            503: ResponseSpec(
                data_container=HealthStatus,
                description="Neo4j does not answer.",
                generate_examples=False,
            )
        },
    )
    async def health(self, backend: NamedDependency[Backend]) -> Response[HealthStatus]:
        ok = await backend.health()
        if ok:
            return Response(HealthStatus(status="ok", neo4j=True), status_code=HTTP_200_OK)
        return Response(
            HealthStatus(status="unavailable", neo4j=False),
            status_code=HTTP_503_SERVICE_UNAVAILABLE,
        )
