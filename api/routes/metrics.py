"""GET /metrics: the deployment's Prometheus series (kg.metrics), for a scraper.

The series describe every request and read of the whole deployment, so a key scoped to some
namespaces is refused (403) as for the templates that read the whole graph; otherwise the
route is guarded like every other one (open on loopback by default, a key beyond it).
"""

from __future__ import annotations

from litestar import Controller, Request, Response, get

from kg import ScopeDenied, observe


class MetricsController(Controller):
    path = "/metrics"

    @get(
        "/",
        operation_id="metrics",
        summary="Prometheus metrics",
        include_in_schema=False,  # Prometheus' text format, not an API resource
        sync_to_thread=False,
    )
    def metrics(self, request: Request) -> Response[bytes]:  # type: ignore[type-arg]
        policy = request.app.state.policy
        if policy.namespaces_of(request.headers.get("authorization")) is not None:
            raise ScopeDenied(
                "/metrics reports the whole deployment: a key scoped to namespaces cannot read it"
            )
        body, content_type = observe.metrics_exposition()
        return Response(body, media_type=content_type)
