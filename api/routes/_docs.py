"""OpenAPI descriptions of the error responses each operation can return."""

from __future__ import annotations

from litestar.openapi import ResponseSpec

from api.auth import SECURITY_SCHEME
from api.models import ErrorBody

_WHY = {
    400: "Malformed request (e.g. a body that is not JSON).",
    401: "Missing or invalid API key (when auth is on).",
    403: "A key is required here (the request did not arrive on loopback) but the server has "
    "none configured: it refuses rather than serve an open API; or the request names a "
    "namespace outside the key's scope (the detail names it), or a template that reads the "
    "whole graph with a scoped key.",
    404: "Not found.",
    408: "The request body did not arrive within KG_API__BODY_TIMEOUT_S.",
    413: "Request body larger than the configured limit.",
    415: "The body is not `application/json`.",
    422: "Invalid parameters; `errors` names each field and why.",
    429: "This client already runs its share of the query slots; retry after `Retry-After`.",
    502: "The LLM endpoint failed, or gave no valid answer within the request's budget; the "
    "detail names the endpoint tried (no secrets) and the settings to change.",
    503: "Neo4j is unavailable, or kg is busy (`Retry-After`).",
    504: "The query ran past its time bound.",
}

#: The operation-level security requirement of every protected route.
SECURED: list[dict[str, list[str]]] = [{SECURITY_SCHEME: []}]


def errors(*codes: int) -> dict[int, ResponseSpec]:
    """Error responses for ``codes``, plus the ones every protected operation shares."""
    wanted = sorted({400, 401, 403, 503, *codes})
    return {
        code: ResponseSpec(
            data_container=ErrorBody, description=_WHY[code], generate_examples=False
        )
        for code in wanted
    }
