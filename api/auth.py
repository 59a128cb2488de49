"""Who may call the API, decided per request from the socket the request arrived on.

``ApiSettings.require_auth`` forces keys on (``true``) or off (``false``). Unset, a key is
required when keys are configured, when ``KG_API__HOST`` is not loopback, **and for every
request that did not arrive on a loopback address** — the local end of the connection, ASGI
``scope["server"]``, not a setting. So ``uvicorn --factory api.app:create_app --host 0.0.0.0``
never serves the network without keys: a request from another machine arrives on a
non-loopback address, and with no keys configured it is refused (403) rather than served.

When a request needs no key (it came in over loopback and auth is off), two browser attacks
remain, and both are closed here:

- DNS rebinding: a web page whose name now resolves to 127.0.0.1 sends its own name as
  ``Host``. Only loopback names (``localhost``, ``127.x.x.x``, ``[::1]``, with any port) and
  ``KG_API__ALLOWED_HOSTS`` are accepted (421 otherwise; see api/middleware.py).
- Cross-site POSTs: a page may send ``text/plain`` or a form to 127.0.0.1 without a CORS
  preflight. JSON endpoints accept only ``application/json`` bodies (415), always.

Behind a reverse proxy every keyless client arrives from the proxy's address, so admission
control would count them all as one client. ``KG_API__TRUSTED_PROXIES`` (IPs or CIDRs, empty
by default) names the proxies whose ``X-Forwarded-For`` is believed: only when the socket's
peer is one of them, and then the client is the rightmost address in the header that is not
itself a trusted proxy (the one the outermost trusted proxy saw; what a client wrote further
left is its own claim, and ignored). No other forwarded header is read.

Keys are compared in constant time against *every* configured key, so timing reveals neither
which key nearly matched nor how many there are. A key may be bound to namespaces
(``KG_API__API_KEYS=key::ns1|ns2``, kg/settings.py ``ApiKey``): the middleware binds every
request made with it to them (``kg.bound_namespaces``), so the library refuses any other
namespace (403 naming it) and keeps every read to them; an unscoped key reads the whole graph.
``/health`` and the OpenAPI pages stay open:
they carry no graph data, and orchestrators and humans need them without a key.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from litestar.connection import ASGIConnection
from litestar.exceptions import HTTPException, NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE
from litestar.types import Guard

from kg.errors import ConfigError
from kg.settings import ApiKey, ApiSettings

logger = logging.getLogger("kg.api")

#: Route handlers with ``opt={PUBLIC: True}`` skip the key check.
PUBLIC = "public"
WWW_AUTHENTICATE = 'Bearer realm="kg"'
SECURITY_SCHEME = "BearerAuth"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1`` and ``localhost`` are loopback; ``0.0.0.0`` and names are not."""
    host = host.strip().lower()
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback  # ::ffff:127.0.0.1
    return address.is_loopback


def arrived_on_loopback(server: Any) -> bool:
    """Whether the connection's local end (ASGI ``scope["server"]``) is loopback.

    A Unix socket (``(path, None)``) is local too; an unknown local end is not.
    """
    if not isinstance(server, tuple | list) or not server:
        return False
    host = server[0]
    if not isinstance(host, str):
        return False
    if len(server) > 1 and server[1] is None:
        return True  # a Unix domain socket: only this machine can reach it
    return is_loopback(host)


def auth_required(api: ApiSettings) -> bool:
    """What the settings alone demand (before any socket is known): forced by
    ``require_auth``, else on when keys are configured or the host is not loopback."""
    if api.require_auth is not None:
        return api.require_auth
    return has_keys(api.api_keys) or not is_loopback(api.host)


class Secret(Protocol):
    """A configured key: a ``SecretStr`` or an :class:`~kg.settings.ApiKey`."""

    def get_secret_value(self) -> str: ...


def has_keys(keys: Sequence[Secret]) -> bool:
    return any(k.get_secret_value() for k in keys)


def check_auth_config(api: ApiSettings) -> bool:
    """Whether the settings turn auth on; refuses (ConfigError) auth on without usable keys."""
    required = auth_required(api)
    if required and not has_keys(api.api_keys):
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


@dataclass(frozen=True)
class Access:
    """What one request needs: a key or not; ``refusal`` says why it cannot be served."""

    key_required: bool
    local: bool
    refusal: str | None = None


@dataclass(frozen=True)
class AccessPolicy:
    """The per-request decision, from the settings and the connection's local address."""

    keys: tuple[Secret, ...]
    require_auth: bool | None = None
    host: str = "127.0.0.1"
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    trusted_proxies: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_settings(cls, api: ApiSettings) -> AccessPolicy:
        return cls(
            keys=tuple(k for k in api.api_keys if k.get_secret_value()),
            require_auth=api.require_auth,
            host=api.host,
            allowed_hosts=frozenset(h.strip().lower() for h in api.allowed_hosts if h.strip()),
            trusted_proxies=tuple(api.trusted_proxy_networks()),
        )

    def decide(self, server: Any) -> Access:
        local = arrived_on_loopback(server)
        if self.require_auth is not None:
            required = self.require_auth
        else:
            required = bool(self.keys) or not is_loopback(self.host) or not local
        refusal = None
        if required and not self.keys:
            where = server[0] if isinstance(server, tuple | list) and server else "unknown"
            refusal = (
                f"this API is reachable on {where}, which is not loopback, and no API keys "
                "are configured, so it serves no one there: set KG_API__API_KEYS, or bind it "
                "to 127.0.0.1"
            )
        return Access(key_required=required, local=local, refusal=refusal)

    def namespaces_of(self, authorization: str | None) -> tuple[str, ...] | None:
        """The namespaces the presented key is bound to; None for an unscoped key, no key or
        an invalid one (refused before any read when a key is required)."""
        token = bearer_token(authorization)
        if token is None:
            return None
        key = matching_key(token, self.keys)
        return key.namespaces if isinstance(key, ApiKey) else None

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a ``Host`` value names this machine's loopback (or an allowed name)."""
        if host_header is None or not host_header.strip():
            return True  # HTTP/1.0 without Host: not a browser, so not a rebinding page
        name = host_name(host_header)
        if name is None:
            return False
        return is_loopback(name) or name in self.allowed_hosts

    def client_id(
        self,
        access: Access,
        authorization: str | None,
        client: Any,
        forwarded_for: Sequence[str] = (),
    ) -> str:
        """Whom admission control counts this request against: the key's digest when a key
        is required (invalid keys are refused before any query), else the client address,
        which is the forwarded one when the peer is a trusted proxy (:meth:`client_address`)."""
        if access.key_required:
            token = bearer_token(authorization)
            if token is not None:
                return "key:" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]
        if isinstance(client, tuple | list) and client and isinstance(client[0], str):
            return f"addr:{self.client_address(client[0], forwarded_for)}"
        return "addr:unknown"

    def client_address(self, peer: str, forwarded_for: Sequence[str] = ()) -> str:
        """The client's address: the socket peer, unless the peer is a trusted proxy and
        ``X-Forwarded-For`` (its values, in order) names one; then the rightmost address not
        itself a trusted proxy. A malformed entry there ends the walk at the proxy that
        reported it: a trusted proxy writes addresses, so anything else is not believed. An
        IPv6 zone id (``fe80::1%eth0``) names an interface of the proxy's host, not a client:
        such a hop is malformed too (else one client could count as many, one per zone)."""
        if not self.trusted_proxies or not self._trusted(peer):
            return peer
        hops = [hop.strip() for value in forwarded_for for hop in value.split(",")]
        nearest = peer
        for hop in reversed([h for h in hops if h]):
            address = None if "%" in hop else _ip(hop)
            if address is None:
                return nearest
            if not self._trusted(hop):
                return str(address)
            nearest = str(address)
        return nearest

    def _trusted(self, host: str) -> bool:
        address = _ip(host)
        return address is not None and any(address in net for net in self.trusted_proxies)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address from a peer or a forwarded hop (``[::1]`` and ``::ffff:1.2.3.4`` too)."""
    try:
        address = ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def host_name(value: str) -> str | None:
    """The name in a ``Host`` header (``[::1]:8000`` -> ``::1``), or None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return name
    name, colon, port = value.rpartition(":")
    if not colon:
        return value
    if not port.isdigit() or ":" in name:
        return None
    return name


def key_matches(presented: str, keys: Sequence[Secret]) -> bool:
    """Constant-time comparison against all keys; never short-circuits on the first match."""
    return matching_key(presented, keys) is not None


def matching_key(presented: str, keys: Sequence[Secret]) -> Secret | None:
    """The key ``presented`` equals, compared in constant time against every key."""
    token = presented.encode("utf-8")
    found: Secret | None = None
    for key in keys:
        secret = key.get_secret_value().encode("utf-8")
        if bool(secret) & hmac.compare_digest(token, secret):
            found = key
    return found


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or ``application/<x>+json``, parameters allowed."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class _RefusalLog:
    """Logs the first refusal only: a flood of refused requests is one line, not a flood."""

    def __init__(self) -> None:
        self.logged = False

    def once(self, reason: str) -> None:
        if not self.logged:
            self.logged = True
            logger.warning("refusing requests: %s", reason)


def access_guard(policy: AccessPolicy, open_prefixes: Sequence[str]) -> Guard:
    """A Litestar guard: runs after routing and before parameters are parsed, so an
    unauthenticated caller learns nothing about parameters.

    Public handlers and the OpenAPI pages under ``open_prefixes`` are always served. Others:
    403 when a key is required but none is configured, 401 without a valid key, and 415
    for a body that is not JSON.
    """
    refusals = _RefusalLog()

    # async although it awaits nothing: Litestar runs a sync guard in a worker thread, a hop
    # per request that py-spy showed under load (the checks are a few dict and string looks).
    async def guard(connection: ASGIConnection, handler: BaseRouteHandler) -> None:  # type: ignore[type-arg]
        if handler.opt.get(PUBLIC):
            return
        path = connection.scope["path"]
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in open_prefixes):
            return
        access = policy.decide(connection.scope.get("server"))
        if access.refusal is not None:
            refusals.once(access.refusal)
            raise PermissionDeniedException(detail=access.refusal)
        if access.key_required:
            token = bearer_token(connection.headers.get("authorization"))
            if token is None or not key_matches(token, policy.keys):
                raise NotAuthorizedException(
                    detail="a valid API key is required: send 'Authorization: Bearer <key>'",
                    headers={"WWW-Authenticate": WWW_AUTHENTICATE},
                )
        method = connection.scope.get("method", "GET")
        if method in _BODY_METHODS and not is_json_media_type(
            connection.headers.get("content-type")
        ):
            raise HTTPException(
                status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
                detail="the body must be JSON: send 'Content-Type: application/json'",
            )

    return guard
