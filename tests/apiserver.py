"""The API over real HTTP: uvicorn in a background thread on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from types import TracebackType
from typing import Any

import httpx
import uvicorn
from litestar import Litestar

from kg.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LiveServer:
    """``with LiveServer(app) as server: httpx.get(server.url + "/health")``."""

    def __init__(self, app: Litestar, *, start_timeout_s: float = 60.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_config=None,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=5,
            # as `kg serve` runs it: uvicorn's own default believes X-Forwarded-For from
            # 127.0.0.1, and kg decides whom to believe (KG_API__TRUSTED_PROXIES)
            proxy_headers=False,
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, name="kg-api", daemon=True)
        self._start_timeout_s = start_timeout_s

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + self._start_timeout_s
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the API server thread died during start-up")
            if time.monotonic() > deadline:
                self.server.should_exit = True
                raise TimeoutError("the API server did not start in time")
            time.sleep(0.02)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=15)


class TcpForwarder:
    """A loopback TCP proxy that can be closed and reopened: Neo4j "going away and coming
    back" without touching the real server."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(32)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            # shutdown wakes the thread blocked in accept(); close alone would not
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for sock in (client, upstream):  # Bolt is chatty: no Nagle delays
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def wait_until_served(
    url: str, proc: subprocess.Popen[str], *, timeout_s: float = 60, status: int | None = None
) -> None:
    """Wait until ``GET url`` answers (with ``status``, when given) from the API that ``proc``
    runs; RuntimeError with its output if it exits first, TimeoutError past ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API exited: {proc.stdout.read() if proc.stdout else ''}")
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.get(url, timeout=2)
            if status is None or answer.status_code == status:
                return
        time.sleep(0.2)
    raise TimeoutError(url)


def api_settings(settings: Settings, **api: Any) -> Settings:
    """``settings`` with ApiSettings fields replaced (validated), e.g. ``require_auth=False``."""
    merged = settings.api.model_validate({**settings.api.model_dump(), **api})
    return settings.model_copy(update={"api": merged})


_VERIFIED: set[str] = set()


class _VerifiedOnce:
    """The real search service, minus a repeat of the template EXPLAINs another app in this
    test process already ran against the same server (they cost seconds per app)."""

    def __init__(self, inner: Any, key: str) -> None:
        self._inner = inner
        self._key = key

    async def startup(self) -> object:
        if self._key in _VERIFIED:
            return None
        result = await self._inner.startup()
        _VERIFIED.add(self._key)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def verified_once_factory(driver: Any, settings: Settings) -> Any:
    """A ``service_factory`` for tests that start many apps against one server."""
    from api.backend import default_service_factory

    return _VerifiedOnce(default_service_factory(driver, settings), settings.neo4j.uri)
