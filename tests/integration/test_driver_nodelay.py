"""The async driver's Bolt sockets disable Nagle's algorithm (kg.graph.nodelay).

Without it every new async connection waited for the server's delayed ACK (~40 ms) between
HELLO and LOGON. The check is on the live connection's socket option, not on a time: a
connection made by ``open_async_driver`` to the test server has ``TCP_NODELAY`` set.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from urllib.parse import urlsplit

from kg.graph import nodelay
from kg.graph.driver import open_async_driver
from kg.settings import Settings


def _bolt_sockets(port: int) -> list[socket.socket]:
    """The open sockets of this process connected to ``port``."""
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() != -1:
            try:
                peer = obj.getpeername()
            except OSError:
                continue
            if isinstance(peer, tuple) and peer[1] == port:
                found.append(obj)
    return found


def test_the_async_drivers_connection_to_neo4j_has_tcp_nodelay(settings: Settings) -> None:
    port = urlsplit(settings.neo4j.uri).port
    assert port is not None

    async def connected() -> list[int]:
        async with open_async_driver(settings.neo4j) as driver:
            await driver.verify_connectivity()
            await driver.execute_query("RETURN 1", database_=settings.neo4j.database)
            return [
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in _bolt_sockets(port)
            ]

    options = asyncio.run(connected())
    assert options, "no socket to the test server was found"
    assert all(options), f"a Bolt socket without TCP_NODELAY: {options}"


def test_the_patch_applies_once_and_makes_nodelay_tcp_sockets() -> None:
    assert nodelay.apply()
    assert nodelay.apply()  # idempotent
    with nodelay.NoDelaySocket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    with nodelay.NoDelaySocket(socket.AF_INET, socket.SOCK_DGRAM) as udp:  # not TCP: untouched
        assert udp.type == socket.SOCK_DGRAM
