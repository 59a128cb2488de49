"""Bearer API keys: on by default whenever the server listens beyond loopback.

``ApiSettings.require_auth`` forces it on or off; ``None`` decides by ``ApiSettings.host``.
Keys are compared in constant time against *every* configured key, so timing reveals neither
which key nearly matched nor how many there are. ``/health`` and the OpenAPI pages stay open:
they carry no graph data, and orchestrators and humans need them without a key.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler
from litestar.types import Guard
from pydantic import SecretStr

from kg.errors import ConfigError
from kg.settings import ApiSettings

#: Route handlers with ``opt={PUBLIC: True}`` skip the key check.
PUBLIC = "public"
WWW_AUTHENTICATE = 'Bearer realm="kg"'
SECURITY_SCHEME = "BearerAuth"


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1`` and ``localhost`` are loopback; ``0.0.0.0`` and names are not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def auth_required(api: ApiSettings) -> bool:
    """Forced by ``require_auth`` when set, else on for any non-loopback bind address."""
    if api.require_auth is not None:
        return api.require_auth
    return not is_loopback(api.host)


def check_auth_config(api: ApiSettings) -> bool:
    """Whether auth is on; refuses (ConfigError) to run with auth on and no usable keys."""
    required = auth_required(api)
    if required and not [k for k in api.api_keys if k.get_secret_value()]:
        why = (
            "KG_API__REQUIRE_AUTH is true"
            if api.require_auth
            else f"the API binds to {api.host}, which is not loopback"
        )
        raise ConfigError(
            f"API authentication is required because {why}, but no API keys are configured; "
            "set KG_API__API_KEYS (comma-separated) or bind to 127.0.0.1"
        )
    return required


def key_matches(presented: str, keys: Sequence[SecretStr]) -> bool:
    """Constant-time comparison against all keys; never short-circuits on the first match."""
    token = presented.encode("utf-8")
    matched = False
    for key in keys:
        secret = key.get_secret_value().encode("utf-8")
        matched |= bool(secret) and hmac.compare_digest(token, secret)
    return matched


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def api_key_guard(keys: Sequence[SecretStr], open_prefixes: Sequence[str]) -> Guard:
    """A Litestar guard admitting requests with a valid bearer key, public handlers, and the
    OpenAPI pages under ``open_prefixes``."""
    frozen = tuple(keys)

    def guard(connection: ASGIConnection, handler: BaseRouteHandler) -> None:  # type: ignore[type-arg]
        if handler.opt.get(PUBLIC):
            return
        path = connection.scope["path"]
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in open_prefixes):
            return
        token = bearer_token(connection.headers.get("authorization"))
        if token is None or not key_matches(token, frozen):
            raise NotAuthorizedException(
                detail="a valid API key is required: send 'Authorization: Bearer <key>'",
                headers={"WWW-Authenticate": WWW_AUTHENTICATE},
            )

    return guard
