"""Proving that code runs offline: every socket connect and name lookup refused and recorded."""

from __future__ import annotations

import socket
from typing import Any

import pytest


def refuse_sockets(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Patch connect, connect_ex, create_connection and getaddrinfo to raise OSError; the list
    returned collects every attempt (empty afterwards: nothing reached for the network)."""
    opened: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        opened.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return opened
