"""Whether anything listens at an LLM endpoint: a refused connection found in milliseconds.

Why: the LLM client (openai and instructor) takes a second or more to import, and a question
that must fail because nothing listens at ``KG_LLM__BASE_URL`` should fail at once, with the
same message the client's own failure gives (``Endpoint.failed``), before that cost and before
retrieval. Only a refusal is definite: a timeout, a name that does not resolve, or a proxy in
between is left to the client, which reports those itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
import urllib.request

#: How long the probe waits for the TCP handshake: loopback and LAN answer in microseconds.
PROBE_TIMEOUT_S = 0.5


def proxy_for(url: str) -> str | None:
    """The proxy the environment sets for ``url`` (``HTTPS_PROXY``, ``NO_PROXY`` ...).

    A client given its own transport reads no proxy from the environment (httpx2 and httpx
    alike), so the bounded transport goes through this one itself."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all") or None


async def refused(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> OSError | None:
    """The error when the endpoint's host refuses a connection on its port; None when
    something accepts it, or when the probe cannot tell (timeout, DNS, a proxy in between)."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or proxy_for(base_url):
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None  # a malformed port: the client's own error says so
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), timeout_s)
    except ConnectionRefusedError as exc:
        return exc
    except (OSError, TimeoutError):
        return None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None
