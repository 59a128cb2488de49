"""A local Neo4j Community server without Docker: jars from Maven Central, run with ``java -cp``.

Why: tests and the local default need a real Neo4j on machines with no Docker engine, and Python
should be the only prerequisite. The jars listed in ``neo4j-server/jars.lock`` (``org.neo4j:neo4j``
with Bolt and HTTP, and ``org.neo4j.client:neo4j-browser``) are fetched and checked by
:mod:`kg.graph.jars` into a cache outside the repository (Maven only when the lock is missing);
:mod:`kg.graph.java` picks the Java. The server's data lives in a project-local folder
(``settings.server.home``, mode 0700) that survives restarts.

Secrets: on first start the server gets a random password (unless one is configured), kept in
``<home>/password`` with mode 0600; it reaches Neo4j's admin tool through a 0600 picocli
``@argfile``, never on a command line. The HTTP port answers cross-origin requests only for its
own origin.

Browser: the config makes Neo4j Browser load kg's style from kg's API on connect and allows
kg's guide to be played from it (:func:`browser_config`; docs/browser.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
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

from kg.errors import ConfigError, ServerError
from kg.graph.jars import (
    DownloadProgress,
    JarLock,
    RichDownloadBar,
    fetch_jars,
    jars_present,
    maven_repository,
    read_lock,
)
from kg.graph.java import JavaRuntime, find_java
from kg.paths import server_pom
from kg.settings import ApiSettings, LocalServerSettings, Settings

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


#: The fixed password older kg versions gave every local server; replaced on the next start.
LEGACY_PASSWORD = "kg-local-password"  # noqa: S105 - a known-bad value we look for, not a secret

#: The server home's folders; all of them, and the home itself, are private (0700).
HOME_DIRS = ("conf", "data", "logs", "run", "plugins", "import")


#: Where kg's API serves Neo4j Browser's style and guide (api/browser.py): no key, no graph data.
BROWSER_STYLE_PATH = "/browser-style.grass"
BROWSER_GUIDE_PATH = "/browser-guide"

#: Browser's own default allowlist for remote guides and styles; the setting replaces it.
BROWSER_DEFAULT_HOSTS = ("guides.neo4j.com", "localhost")


def _api_host(api: ApiSettings) -> str:
    """The API's host as a browser on this machine names it (IPv6 in brackets, as in URLs).

    A wildcard bind and ``localhost`` are reached on 127.0.0.1.
    """
    host = api.host.strip().strip("[]")
    if host in ("", "0.0.0.0", "::", "localhost"):  # noqa: S104 - names a bind, binds nothing
        host = "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def kg_api_url(api: ApiSettings) -> str:
    """The kg API's base URL as a browser on this machine reaches it."""
    return f"http://{_api_host(api)}:{api.port}"


def browser_config(api: ApiSettings) -> list[str]:
    """neo4j.conf lines that style Browser on connect and allow kg's guide.

    Browser runs ``browser.post_connect_cmd`` after each connect; a GRASS file cannot be
    inlined there (commands are split on ``;``), so it is loaded by URL from kg's API.
    ``browser.remote_content_hostname_whitelist`` replaces Browser's default list and matches
    host names, not ports: the defaults are kept and the API's host is added.
    """
    host = _api_host(api)
    hosts = [*BROWSER_DEFAULT_HOSTS, *([host] if host not in BROWSER_DEFAULT_HOSTS else [])]
    return [
        f"browser.post_connect_cmd=style {kg_api_url(api)}{BROWSER_STYLE_PATH}",
        f"browser.remote_content_hostname_whitelist={','.join(hosts)}",
        # Browser would report usage to Neo4j from the user's page (and ask about it).
        "client.allow_telemetry=false",
    ]


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    bolt_answers: bool
    http_answers: bool
    home: Path
    java: str = ""  # which Java it runs on (or would), and where that Java came from
    password_file: Path | None = None  # None when the password is configured instead

    def describe(self) -> str:
        if not self.running:
            head = f"stopped (home {self.home})"
        else:
            parts = [f"running, pid {self.pid}", f"Bolt {self.bolt_uri}"]
            parts.append("answers" if self.bolt_answers else "not answering")
            parts.append(f"Browser {self.browser_url}")
            head = ", ".join(parts)
        lines = [head]
        if self.java:
            lines.append(f"  java: {self.java}")
        if self.password_file is None:
            lines.append("  password: configured (KG_NEO4J__PASSWORD or NEO4J_PASSWORD)")
        else:
            lines.append(f"  password: in {self.password_file} (user neo4j; `cat` it for Browser)")
        return "\n".join(lines)


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

    @property
    def password_file(self) -> Path:
        """Where the generated password is kept (and read from): mode 0600."""
        path = self._settings.neo4j.password_file or self._server.password_file
        return path.expanduser().resolve()

    @property
    def java_record(self) -> Path:
        return self.home / "run" / "java"

    # -- jars --------------------------------------------------------------------------------

    def ensure_jars(self, progress: DownloadProgress | None = None) -> Path:
        """Fetch the server's jars once (verified against the lock); later calls reuse them.

        Without a lock for the configured versions, Maven resolves them instead.
        """
        marker = self.lib_dir / ".complete"
        lock = self._jar_lock()
        if lock is None:
            return self._ensure_jars_with_maven(marker)
        if marker.exists() and jars_present(lock, self.lib_dir):
            return self.lib_dir
        marker.unlink(missing_ok=True)
        fetch_jars(
            lock,
            self.lib_dir,
            repository=maven_repository(),
            progress=progress if progress is not None else RichDownloadBar(),
        )
        marker.write_text(self._server.version)
        return self.lib_dir

    def _jar_lock(self) -> JarLock | None:
        lock = read_lock()
        if lock is None:
            return None
        if (lock.neo4j_version, lock.browser_version) != (
            self._server.version,
            self._server.browser_version,
        ):
            return None
        return lock

    def _ensure_jars_with_maven(self, marker: Path) -> Path:
        if marker.exists():
            return self.lib_dir
        mvn = _require_tool(
            "mvn",
            f"kg has no jar lock (neo4j-server/jars.lock) for Neo4j {self._server.version} with "
            f"Browser {self._server.browser_version}, so Maven is needed once to fetch its jars "
            "(or use the versions kg ships a lock for: unset KG_SERVER__VERSION and "
            "KG_SERVER__BROWSER_VERSION).",
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
        configured = self._settings.neo4j.configured_password is not None
        return ServerStatus(
            running=pid is not None,
            pid=pid,
            bolt_uri=self.bolt_uri,
            browser_url=self.browser_url,
            bolt_answers=pid is not None and _port_open(self._server.bolt_port),
            http_answers=pid is not None and _http_ok(self._server.http_port),
            home=self.home,
            java=self._java_description(running=pid is not None),
            password_file=None if configured else self.password_file,
        )

    def _java_description(self, *, running: bool) -> str:
        if running:
            with contextlib.suppress(OSError):
                return self.java_record.read_text(encoding="utf-8").strip()
            return "unknown (started by an older kg)"
        try:
            return f"would run on {find_java().describe()}"
        except ServerError as exc:
            return str(exc)

    def start(self, *, wait: bool = True) -> ServerStatus:
        """Start the server (idempotent: an already running one is left alone)."""
        if self._live_pid() is not None:
            return self.status()
        runtime = find_java()
        java = str(runtime.java)
        for port in (self._server.bolt_port, self._server.http_port):
            if _port_open(port):
                raise ServerError(
                    f"port {port} on 127.0.0.1 is already taken by another process; "
                    "stop it or set KG_SERVER__BOLT_PORT / KG_SERVER__HTTP_PORT"
                )
        lib = self.ensure_jars()
        self._make_home()
        conf_dir = self._write_config()
        legacy = self._legacy_home()
        self._set_initial_password(java, lib)
        self._record_java(runtime)
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
            if legacy:
                self._replace_legacy_password()
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

    def _make_home(self) -> None:
        """The home and its folders, private to this user (also tightens an older home)."""
        for path in (self.home, *(self.home / sub for sub in HOME_DIRS)):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.chmod(0o700)
        if self.password_file.exists():
            self.password_file.chmod(0o600)

    def _record_java(self, runtime: JavaRuntime) -> None:
        _write_private(self.java_record, runtime.describe() + "\n")

    def _write_config(self) -> Path:
        s = self._server
        conf_dir = self.home / "conf"
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
            # Web pages from other origins must not drive the HTTP API (default `*`); Browser
            # is served from this origin and talks Bolt, so it needs no cross-origin grant.
            f"dbms.security.http_access_control_allow_origin=http://127.0.0.1:{s.http_port}",
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
            *browser_config(self._settings.api),
            "",
        ]
        _write_private(conf_dir / "neo4j.conf", "\n".join(lines))
        return conf_dir

    def _set_initial_password(self, java: str, lib: Path) -> None:
        """Before the first start only: Neo4j ignores it once the system database exists.

        The admin tool takes the password only as an argument, so it gets a picocli
        ``@argfile`` (mode 0600, deleted right after): ``ps`` shows the file's name only.
        """
        if (self.home / "data" / "databases" / "system").exists():
            return
        password = self._initial_password()
        fd, name = tempfile.mkstemp(prefix="initial-password-", dir=self.home / "run")
        argfile = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                # "--" ends the options: a password starting with "-" is still the password.
                handle.write("--\n" + _argfile_quote(password) + "\n")
            proc = subprocess.run(  # noqa: S603
                self.admin_command(java, lib, argfile),
                capture_output=True,
                text=True,
                env=self._java_env(),
                check=False,
            )
        finally:
            argfile.unlink(missing_ok=True)
        if proc.returncode != 0:
            detail = _tail_text((proc.stdout + proc.stderr).splitlines(), 10)
            raise ServerError(f"could not set the initial Neo4j password:\n{detail}")

    @staticmethod
    def admin_command(java: str, lib: Path, argfile: Path) -> list[str]:
        """``neo4j-admin dbms set-initial-password`` reading its argument from ``argfile``."""
        return [
            java, "-Dfile.encoding=UTF-8", "-cp", f"{lib}/*", ADMIN_TOOL,
            "dbms", "set-initial-password", f"@{argfile}",
        ]  # fmt: skip

    def _legacy_home(self) -> bool:
        """A home an older kg made: initialized, no password file, no password configured."""
        return (
            (self.home / "data" / "databases" / "system").exists()
            and self._settings.neo4j.configured_password is None
            and not self.password_file.exists()
        )

    def _replace_legacy_password(self) -> None:
        """Swap the old fixed default for a random password kept in the password file.

        The new password is written first, so a failure between the two steps can never lose
        it; if the old default is refused (the user chose their own), the file is removed and
        kg asks for the password instead.
        """
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError

        new = _new_password()
        _write_private(self.password_file, new + "\n")
        changed = False
        try:
            with GraphDatabase.driver(self.bolt_uri, auth=("neo4j", LEGACY_PASSWORD)) as driver:
                driver.execute_query(
                    "ALTER CURRENT USER SET PASSWORD FROM $old TO $new",
                    {"old": LEGACY_PASSWORD, "new": new},
                    database_="system",
                )
            changed = True
        except AuthError:
            pass
        except Exception as exc:
            raise ServerError(
                f"could not replace the old default password of the server in {self.home}: "
                f"{type(exc).__name__}"
            ) from exc
        finally:
            if not changed:
                self.password_file.unlink(missing_ok=True)

    def _initial_password(self) -> str:
        """The configured password, else the one in the password file, else a new random one."""
        configured = self._settings.neo4j.configured_password
        if configured is not None:
            password = configured.get_secret_value()
            if password.startswith("@") or any(c in password for c in "\r\n\x00"):
                raise ConfigError(
                    "the local Neo4j cannot take a password that starts with `@` or holds a "
                    "line break; choose another KG_NEO4J__PASSWORD"
                )
            return password
        path = self.password_file
        with contextlib.suppress(FileNotFoundError):
            existing = path.read_text(encoding="utf-8").strip()
            if existing:
                return existing
        password = _new_password()
        _write_private(path, password + "\n")
        return password

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


def _write_private(path: Path, text: str) -> None:
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


def _new_password() -> str:
    """A random password that no command line can take for an option (no leading ``-``)."""
    return "kg" + secrets.token_urlsafe(24)


def _argfile_quote(value: str) -> str:
    """One argument for a picocli ``@argfile``: quoted, so spaces, quotes and ``#`` survive."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def free_port() -> int:
    """A TCP port that was free a moment ago (for tests and throwaway servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def throwaway_server(
    *, password: str | None = None, heap: str = "1g", pagecache: str = "512m", **server: object
) -> Iterator[Settings]:
    """A local Neo4j on free ports in a temporary home, deleted on exit (tests, benchmarks).

    Yields settings whose ``neo4j.uri`` points at it; extra keyword arguments go to the
    ``server`` section (e.g. ``transaction_timeout``). Without ``password`` the server makes
    its own, and the settings read it from the home's password file.
    """
    home = Path(tempfile.mkdtemp(prefix="kg-neo4j-"))
    given = {"password": password} if password is not None else {}
    settings = Settings(
        neo4j=given,
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
