"""The operating-system side of the local server: pids, ports, tools on PATH, private files."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

from kg.errors import ServerError


def require_tool(name: str, hint: str) -> str:
    """The path of ``name`` on PATH, or a :class:`ServerError` that ends with ``hint``."""
    path = shutil.which(name)
    if path is None:
        raise ServerError(f"`{name}` was not found on PATH. {hint}")
    return path


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child is dead for our purposes
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def http_ok(port: int) -> bool:
    import urllib.error  # here: `kg neo4j status` on a stopped server needs no HTTP
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def free_port() -> int:
    """A TCP port that was free a moment ago (for tests and throwaway servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """True when nothing listens on ``port`` on loopback and this user may bind it."""
    if port_open(port):
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def nearby_free_port(port: int, avoid: frozenset[int] = frozenset()) -> int:
    """A free port near ``port`` (``port + 10``, ``+ 20``, ...), one a user can remember;
    any free port when none of those is."""
    for step in range(1, 40):
        candidate = port + 10 * step
        if candidate > 65535:
            break
        if candidate not in avoid and port_free(candidate):
            return candidate
    while (candidate := free_port()) in avoid:
        pass
    return candidate


def tail_text(lines: list[str], n: int) -> str:
    return "\n".join(lines[-n:])


def write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by this user only (0600), replacing the file atomically."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
