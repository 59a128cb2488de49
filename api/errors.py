"""kg errors (and Litestar's and the driver's) to JSON responses, in one function.

Domain code raises ``kg.errors``; only this module knows HTTP. Client errors carry the
domain message; server-side failures carry a generic message and are logged here instead,
so neither a stack trace nor a Neo4j credential can reach a client.

    QueryRejected, ValidationException   422  names each field and why
    NotFoundError, unknown route          404
    ScopeDenied (namespace outside a key) 403  names the namespace (kg/scope.py)
    QueryTimeout, server tx timeout       504
    ExtractionError (the LLM failed)      502  /answer and /query
    ClientBusy (per-client cap)           429  Retry-After 1
    Overloaded (every slot busy)          503  Retry-After 1
    StoreError (incl. StoreUnavailable),
    driver connection/auth failures       503  Retry-After 5
    the server refused one statement      500  (kg let through what Neo4j rejects: a bug)
    missing or invalid API key            401  with WWW-Authenticate
    key required, none configured         403  (api/auth.py)
    body not sent in time                 408  (api/middleware.py)
    body over ApiSettings.max_body_bytes  413
    body not JSON (Content-Type)          415
    Host not loopback while auth is off   421  (api/middleware.py, before routing)
    JSON nested too deep, malformed JSON  400
    anything else                         500  generic; detail logged server-side
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_403_FORBIDDEN,
    HTTP_404_NOT_FOUND,
    HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    HTTP_422_UNPROCESSABLE_ENTITY,
    HTTP_429_TOO_MANY_REQUESTS,
    HTTP_500_INTERNAL_SERVER_ERROR,
    HTTP_502_BAD_GATEWAY,
    HTTP_503_SERVICE_UNAVAILABLE,
    HTTP_504_GATEWAY_TIMEOUT,
)
from neo4j.exceptions import Neo4jError

from api.backend import UNREACHABLE, statement_error
from api.models import ErrorBody, FieldError
from kg.errors import (
    ClientBusy,
    ExtractionError,
    NotFoundError,
    Overloaded,
    QueryRejected,
    QueryTimeout,
    ScopeDenied,
    StoreError,
)
from kg.redact import scrub, settings_secrets

logger = logging.getLogger("kg.api")

UNAVAILABLE_DETAIL = "Neo4j is unavailable; try again shortly"
INTERNAL_DETAIL = "internal error; the server logged the details"
TIMEOUT_DETAIL = "the query ran past its time bound; narrow it (lower depth or limit) and retry"

_DECODERS = frozenset({"decode_json", "decode_msgpack"})
_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "payload_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    422: "invalid_parameters",
    429: "too_many_requests",
    500: "internal_error",
    502: "llm_failed",
    503: "unavailable",
    504: "timeout",
}


def _code(status: int) -> str:
    return _CODES.get(status, "client_error" if status < 500 else "server_error")


def _validation_errors(extra: Any) -> list[FieldError]:
    """Litestar puts ``[{"key", "message", "source"?}]`` in ``extra``; name every field."""
    items = extra if isinstance(extra, list) else [extra] if isinstance(extra, dict) else []
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        field = str(item.get("key") or item.get("source") or "body")
        out.append(FieldError(field=field, reason=str(item.get("message", "invalid value"))))
    return out or [FieldError(field="body", reason="invalid value")]


def _is_body_nesting(exc: BaseException) -> bool:
    """A RecursionError from the JSON decoder: a hostile body nested thousands deep."""
    if not isinstance(exc, RecursionError):
        return False
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name in _DECODERS:
            return True
        tb = tb.tb_next
    return False


def _is_timeout(exc: Neo4jError) -> bool:
    return "TransactionTimedOut" in (exc.code or "")


def classify(exc: BaseException) -> tuple[ErrorBody, dict[str, str]]:
    """The one mapping from an exception to an error body (and headers)."""
    if isinstance(exc, QueryRejected):
        errors = [
            FieldError(field=str(e.get("field", "")), reason=str(e.get("reason", "")))
            for e in exc.errors
        ]
        return _body(HTTP_422_UNPROCESSABLE_ENTITY, str(exc), errors), {}
    if isinstance(exc, NotFoundError):
        return _body(HTTP_404_NOT_FOUND, str(exc)), {}
    if isinstance(exc, ScopeDenied):
        return _body(
            HTTP_403_FORBIDDEN, str(exc), [FieldError(field="namespaces", reason=str(exc))]
        ), {}
    if isinstance(exc, QueryTimeout) or (isinstance(exc, Neo4jError) and _is_timeout(exc)):
        return _body(HTTP_504_GATEWAY_TIMEOUT, TIMEOUT_DETAIL), {}
    if isinstance(exc, ExtractionError):
        return _body(HTTP_502_BAD_GATEWAY, f"LLM: {exc}"), {}
    if isinstance(exc, ClientBusy):
        return _body(HTTP_429_TOO_MANY_REQUESTS, str(exc)), {"Retry-After": "1"}
    if isinstance(exc, Overloaded):
        return _body(HTTP_503_SERVICE_UNAVAILABLE, str(exc)), {"Retry-After": "1"}
    if statement_error(exc):
        return _body(HTTP_500_INTERNAL_SERVER_ERROR, INTERNAL_DETAIL), {}
    if isinstance(exc, (StoreError, *UNREACHABLE)):
        return _body(HTTP_503_SERVICE_UNAVAILABLE, UNAVAILABLE_DETAIL), {"Retry-After": "5"}
    if _is_body_nesting(exc):
        return _body(HTTP_400_BAD_REQUEST, "request body is nested too deeply"), {}
    if isinstance(exc, ValidationException):
        errors = _validation_errors(exc.extra)
        detail = "invalid parameters: " + "; ".join(f"{e.field}: {e.reason}" for e in errors)
        return _body(HTTP_422_UNPROCESSABLE_ENTITY, detail, errors), dict(exc.headers or {})
    if isinstance(exc, HTTPException) and exc.status_code < HTTP_500_INTERNAL_SERVER_ERROR:
        return _body(exc.status_code, exc.detail), dict(exc.headers or {})
    return _body(HTTP_500_INTERNAL_SERVER_ERROR, INTERNAL_DETAIL), {}


def _body(status: int, detail: str, errors: list[FieldError] | None = None) -> ErrorBody:
    return ErrorBody(status_code=status, error=_code(status), detail=detail, errors=errors or [])


def exception_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    """Litestar's handler for every exception: JSON, no trace, server faults logged."""
    body, headers = reported(request, exc)
    return Response(body, status_code=body.status_code, headers=headers, media_type=MediaType.JSON)


def reported(
    request: Request[Any, Any, Any], exc: BaseException
) -> tuple[ErrorBody, dict[str, str]]:
    """:func:`classify`, with server faults logged (scrubbed): for a response, or for the
    ``error`` event that ends a stream already begun (``POST /answer`` with ``stream``)."""
    body, headers = classify(exc)
    status = body.status_code
    settings = getattr(request.app.state, "settings", None)
    if status == HTTP_413_REQUEST_ENTITY_TOO_LARGE and settings is not None:
        body.detail = f"request body larger than the limit of {settings.api.max_body_bytes} bytes"
    if status >= HTTP_500_INTERNAL_SERVER_ERROR:
        secrets = _secrets(request)
        message = scrub(f"{type(exc).__name__}: {exc}", secrets)
        where = f"{request.method} {request.url.path}"
        if status == HTTP_500_INTERNAL_SERVER_ERROR:
            # formatted by hand so the scrub covers the traceback's last line too
            trace = scrub("".join(traceback.format_exception(exc)), secrets)
            logger.error("unhandled error on %s: %s\n%s", where, message, trace)
        else:
            logger.warning("%s on %s: %s", body.error, where, message)
    return body, headers


def _secrets(request: Request[Any, Any, Any]) -> list[str]:
    settings = getattr(request.app.state, "settings", None)
    return settings_secrets(settings) if settings is not None else []
