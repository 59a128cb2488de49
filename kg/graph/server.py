"""A local Neo4j Community server without Docker: jars from Maven Central, run with ``java -cp``.

Why: tests and the local default need a real Neo4j on machines with no Docker engine. Maven
resolves ``org.neo4j:neo4j`` (server, Bolt, HTTP) and ``org.neo4j.client:neo4j-browser`` into a
cache outside the repository; the server's data lives in a project-local folder
(``settings.server.home``) that survives restarts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kg.errors import ServerError
from kg.paths import server_pom
from kg.settings import LocalServerSettings, Settings

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

# What Neo4j's own launcher adds (server.jvm.additional in the stock neo4j.conf).
JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
)


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    bolt_answers: bool
    http_answers: bool
    home: Path

    def describe(self) -> str:
        if not self.running:
            return f"stopped (home {self.home})"
        parts = [f"running, pid {self.pid}", f"Bolt {self.bolt_uri}"]
        parts.append("answers" if self.bolt_answers else "not answering")
        parts.append(f"Browser {self.browser_url}")
        return ", ".join(parts)


class LocalNeo4j:
    """Start, stop and inspect the local server. The constructor does no I/O."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._server: LocalServerSettings = settings.server
        self.home = self._server.home.resolve()

    # -- locations ---------------------------------------------------------------------------

    @property
    def lib_dir(self) -> Path:
        tag = f"{self._server.version}-browser-{self._server.browser_version}"
        return self._server.jar_cache.expanduser().resolve() / tag / "lib"

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / "neo4j.pid"

    @property
    def console_log(self) -> Path:
        return self.home / "logs" / "console.log"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self._server.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self._server.http_port}/browser/"

    # -- jars --------------------------------------------------------------------------------

    def ensure_jars(self) -> Path:
        """Resolve the server's jars once; later calls reuse the cache."""
        marker = self.lib_dir / ".complete"
        if marker.exists():
            return self.lib_dir
        mvn = _require_tool(
            "mvn", "Maven is needed once to fetch Neo4j's jars (apt-get install maven)."
        )
        staging = self.lib_dir.with_name(f"lib.partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            mvn, "-q", "-B", "-f", str(server_pom()),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            f"-Dneo4j.version={self._server.version}",
            f"-Dbrowser.version={self._server.browser_version}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603
        if proc.returncode != 0 or not any(staging.glob("neo4j-*.jar")):
            tail = _tail_text((proc.stdout + proc.stderr).splitlines(), 30)
            shutil.rmtree(staging, ignore_errors=True)
            raise ServerError(f"Maven could not fetch Neo4j {self._server.version}:\n{tail}")
        (staging / ".complete").write_text(self._server.version)
        shutil.rmtree(self.lib_dir, ignore_errors=True)
        staging.rename(self.lib_dir)
        return self.lib_dir

    # -- lifecycle ---------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        pid = self._live_pid()
        return ServerStatus(
            running=pid is not None,
            pid=pid,
            bolt_uri=self.bolt_uri,
            browser_url=self.browser_url,
            bolt_answers=pid is not None and _port_open(self._server.bolt_port),
            http_answers=pid is not None and _http_ok(self._server.http_port),
            home=self.home,
        )

    def start(self, *, wait: bool = True) -> ServerStatus:
        """Start the server (idempotent: an already running one is left alone)."""
        if self._live_pid() is not None:
            return self.status()
        java = _require_tool(
            "java", "Java 17 is needed to run Neo4j 5.26 (apt-get install openjdk-17-jre-headless)."
        )
        for port in (self._server.bolt_port, self._server.http_port):
            if _port_open(port):
                raise ServerError(
                    f"port {port} on 127.0.0.1 is already taken by another process; "
                    "stop it or set KG_SERVER__BOLT_PORT / KG_SERVER__HTTP_PORT"
                )
        lib = self.ensure_jars()
        conf_dir = self._write_config()
        self._set_initial_password(java, lib, conf_dir)
        self.console_log.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        heap = self._server.heap
        cmd = [
            java, f"-Xms{heap}", f"-Xmx{heap}", *JVM_FLAGS,
            "-cp", f"{lib}/*", ENTRY_POINT,
            f"--home-dir={self.home}", f"--config-dir={conf_dir}",
        ]  # fmt: skip
        with self.console_log.open("ab") as log:
            proc = subprocess.Popen(  # noqa: S603
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=self._java_env(),
            )
        self.pid_file.write_text(str(proc.pid))
        if wait:
            self._wait_ready(proc)
        return self.status()

    def stop(self, *, timeout_s: float = 60.0) -> bool:
        """Stop cleanly (SIGTERM, then SIGKILL after ``timeout_s``). False when not running."""
        pid = self._live_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                break
            time.sleep(0.2)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True

    # -- internals ---------------------------------------------------------------------------

    def _java_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.home / "conf")
        return env

    def _write_config(self) -> Path:
        s = self._server
        conf_dir = self.home / "conf"
        for sub in ("conf", "data", "logs", "run", "plugins", "import"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        lines = [
            "# Written by `kg neo4j start`; edit kg settings instead of this file.",
            "server.default_listen_address=127.0.0.1",
            "server.default_advertised_address=127.0.0.1",
            f"server.bolt.listen_address=127.0.0.1:{s.bolt_port}",
            f"server.bolt.advertised_address=127.0.0.1:{s.bolt_port}",
            f"server.http.listen_address=127.0.0.1:{s.http_port}",
            f"server.http.advertised_address=127.0.0.1:{s.http_port}",
            "server.https.enabled=false",
            "dbms.security.auth_enabled=true",
            f"db.transaction.timeout={s.transaction_timeout}",
            f"server.memory.heap.initial_size={s.heap}",
            f"server.memory.heap.max_size={s.heap}",
            f"server.memory.pagecache.size={s.pagecache}",
            "db.tx_log.rotation.retention_policy=2 files",
            f"server.directories.data={self.home / 'data'}",
            f"server.directories.logs={self.home / 'logs'}",
            f"server.directories.run={self.home / 'run'}",
            f"server.directories.plugins={self.home / 'plugins'}",
            f"server.directories.import={self.home / 'import'}",
            "dbms.usage_report.enabled=false",
            "",
        ]
        (conf_dir / "neo4j.conf").write_text("\n".join(lines))
        return conf_dir

    def _set_initial_password(self, java: str, lib: Path, conf_dir: Path) -> None:
        """Before the first start only: Neo4j ignores it once the system database exists."""
        if (self.home / "data" / "databases" / "system").exists():
            return
        password = self._settings.neo4j.password.get_secret_value()
        cmd = [java, "-cp", f"{lib}/*", ADMIN_TOOL, "dbms", "set-initial-password", password]
        proc = subprocess.run(  # noqa: S603
            cmd, capture_output=True, text=True, env=self._java_env(), check=False
        )
        if proc.returncode != 0:
            # Never echo the command: it carries the password.
            detail = _tail_text((proc.stdout + proc.stderr).splitlines(), 10)
            raise ServerError(f"could not set the initial Neo4j password:\n{detail}")

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self._server.start_timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise ServerError(
                    f"Neo4j exited with code {proc.returncode} while starting. "
                    f"Last lines of {self.console_log}:\n{self.log_tail()}"
                )
            if _port_open(self._server.bolt_port) and _http_ok(self._server.http_port):
                return
            time.sleep(0.5)
        raise ServerError(
            f"Neo4j did not become ready within {self._server.start_timeout_s:.0f}s. "
            f"Last lines of its logs:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        chunks = []
        for path in (self.console_log, self.home / "logs" / "neo4j.log"):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()
                chunks.append(f"--- {path.name} ---\n{_tail_text(text, lines)}")
        return "\n".join(chunks) or "(no log written)"

    def _live_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if not _pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return pid  # not Linux: trust the pid file
        return pid if ENTRY_POINT.encode() in cmdline else None


def _require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ServerError(f"`{name}` was not found on PATH. {hint}")
    return path


def _pid_alive(pid: int) -> bool:
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


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _http_ok(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _tail_text(lines: list[str], n: int) -> str:
    return "\n".join(lines[-n:])


def free_port() -> int:
    """A TCP port that was free a moment ago (for tests and throwaway servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def throwaway_server(
    *, password: str, heap: str = "1g", pagecache: str = "512m", **server: object
) -> Iterator[Settings]:
    """A local Neo4j on free ports in a temporary home, deleted on exit (tests, benchmarks).

    Yields settings whose ``neo4j.uri`` points at it; extra keyword arguments go to the
    ``server`` section (e.g. ``transaction_timeout``).
    """
    home = Path(tempfile.mkdtemp(prefix="kg-neo4j-"))
    settings = Settings(
        neo4j={"password": password},
        server={"home": home, "bolt_port": free_port(), "http_port": free_port(),
                "heap": heap, "pagecache": pagecache, **server},
    )  # fmt: skip
    local = LocalNeo4j(settings)
    try:
        status = local.start()
        neo4j = settings.neo4j.model_copy(update={"uri": status.bolt_uri})
        yield settings.model_copy(update={"neo4j": neo4j})
    finally:
        local.stop()
        shutil.rmtree(home, ignore_errors=True)
