"""TCP_NODELAY on the async driver's Bolt sockets, which the driver leaves to asyncio.

neo4j 6.x sets ``TCP_NODELAY`` on its sync sockets only, expecting asyncio to set it on the
async ones. asyncio does so only for a socket made with ``proto=IPPROTO_TCP``, and the driver
makes its sockets with ``socket(AF_INET)`` (proto 0). So Nagle's algorithm holds the client's
LOGON until the server acknowledges HELLO, which the server delays by its 40 ms ACK timer:
every new async connection took ~50 ms against ~5 ms for the sync driver (measured on the local
server; docs/architecture.md, "A CLI at the speed of its work"). kg's reads are async (the CLI,
the API, MCP), so each command and each new pooled connection paid it.

The fix names a private module of the driver, so it is best effort: when that module changes
shape, nothing is patched and the driver works as it would alone
(``tests/integration/test_driver_nodelay.py`` fails then, so an upgrade notices).
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

__all__ = ["NoDelaySocket", "apply"]


class NoDelaySocket(socket.socket):
    """A socket that disables Nagle's algorithm as soon as it is made for TCP."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.family in (socket.AF_INET, socket.AF_INET6) and self.type == socket.SOCK_STREAM:
            with contextlib.suppress(OSError):  # best effort, as the sync driver does
                self.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def apply() -> bool:
    """Make the Bolt sockets the driver makes ``NoDelaySocket``s (the sync ones set it
    already); whether it could. Idempotent."""
    try:
        from neo4j._async_compat.network import _bolt_socket
    except ImportError:
        return False
    current = getattr(_bolt_socket, "socket", None)
    if current is NoDelaySocket:
        return True
    if current is not socket.socket:
        return False
    _bolt_socket.socket = NoDelaySocket  # type: ignore[attr-defined]  # the fix (docstring)
    return True
