"""The local server's lifecycle: fetch its jars, start it, wait for it, stop it, report it.

The package docstring (:mod:`kg.localserver`) says why it exists and how it keeps its secret.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from kg.errors import ServerError
from kg.localserver import classes, config, password
from kg.localserver.browser import (
    BROWSER_GUIDE_PATH,
    BROWSER_STYLE_PATH,
    api_url,
    record_served,
    style_elsewhere,
)
from kg.localserver.jars import (
    DownloadProgress,
    JarLock,
    RichDownloadBar,
    fetch_jars,
    jars_present,
    maven_repository,
    read_lock,
)
from kg.localserver.java import JavaRuntime, find_java
from kg.localserver.process import (
    free_port,
    http_ok,
    nearby_free_port,
    pid_alive,
    port_open,
    require_tool,
    tail_text,
    write_private,
)
from kg.paths import server_pom
from kg.settings import ApiSettings, LocalServerSettings, Settings


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

    #: Where kg's API serves Browser's style and guide (api/browser.py serves these paths).
    BROWSER_STYLE_PATH: ClassVar[str] = BROWSER_STYLE_PATH
    BROWSER_GUIDE_PATH: ClassVar[str] = BROWSER_GUIDE_PATH

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
        return self._server.bolt_uri

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self._server.http_port}/browser/"

    @property
    def api_url(self) -> str:
        """kg's API as a browser on this machine reaches it: Browser loads kg's style from it.

        Where a live ``kg serve`` serves (it records its address here), else ``KG_API__*``.
        """
        return api_url(self._settings)

    def serving(self, api: ApiSettings) -> AbstractContextManager[str]:
        """For ``kg serve``: record that this process serves kg's API at ``api``'s address
        while the block runs, so ``kg browse`` and a later ``kg neo4j start`` point there."""
        return record_served(self.home, api)

    @property
    def browser_style_url(self) -> str | None:
        """The style URL this home's neo4j.conf gives Browser (set when Neo4j started)."""
        try:
            text = (self.home / "conf" / "neo4j.conf").read_text(encoding="utf-8")
        except OSError:
            return None
        prefix = "browser.post_connect_cmd=style "
        return next((ln[len(prefix) :] for ln in text.splitlines() if ln.startswith(prefix)), None)

    def style_note(self, api: str) -> str | None:
        """What `kg serve` and `kg browse` both say when Browser loads kg's style from another
        address than ``api`` (where kg's API serves); None when they agree."""
        return style_elsewhere(self.browser_style_url, api)

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
        mvn = require_tool(
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
            tail = tail_text((proc.stdout + proc.stderr).splitlines(), 30)
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
            bolt_answers=pid is not None and port_open(self._server.bolt_port),
            http_answers=pid is not None and http_ok(self._server.http_port),
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
            cache = self._server.jar_cache.expanduser() / "java-versions.json"
            return f"would run on {find_java(cache=cache).describe()}"
        except ServerError as exc:
            return str(exc)

    def start(self, *, wait: bool = True) -> ServerStatus:
        """Start the server (idempotent: an already running one is left alone)."""
        if self._live_pid() is not None:
            return self.status()
        runtime = find_java()
        java = str(runtime.java)
        self._check_ports()
        lib = self.ensure_jars()
        self._make_home()
        conf_dir = self._write_config()
        legacy = self._legacy_home()
        self._set_initial_password(java, lib)
        self._record_java(runtime)
        cmd = config.server_command(
            java, lib, self.home, conf_dir, self._server.heap,
            (*self._class_flags(runtime.java, lib), *self._server.java_options),
        )  # fmt: skip
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

    def _check_ports(self) -> None:
        """Refuse a taken port with one fix that works when followed literally."""
        ports = {"BOLT": self._server.bolt_port, "HTTP": self._server.http_port}
        taken = {name: port for name, port in ports.items() if port_open(port)}
        if taken:
            raise ServerError(port_advice(taken, ports, self._settings))

    def stop(self, *, timeout_s: float = 60.0) -> bool:
        """Stop cleanly (SIGTERM, then SIGKILL after ``timeout_s``). False when not running."""
        pid = self._live_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        clean = True
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                break
            time.sleep(0.2)
        else:
            clean = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        self._settle_classes(clean=clean and not pid_alive(pid))
        return True

    # -- internals ---------------------------------------------------------------------------

    @property
    def class_record(self) -> Path:
        """Which class archive the running server maps or records (kg.localserver.classes)."""
        return self.home / "run" / "class-archive.json"

    def _class_flags(self, java: Path, lib: Path) -> list[str]:
        self.class_record.unlink(missing_ok=True)
        if not self._server.class_archive:
            return []
        try:
            archive = classes.archive_for(java, lib)
        except OSError:  # an unreadable runtime or cache: start as without an archive
            return []
        if archive.recording is not None:
            write_private(self.class_record, archive.record())
        return archive.flags()

    def _settle_classes(self, *, clean: bool) -> None:
        with contextlib.suppress(OSError):
            classes.settle(self.class_record.read_text(encoding="utf-8"), clean=clean)
        self.class_record.unlink(missing_ok=True)

    def _java_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.home / "conf")
        return env

    def _make_home(self) -> None:
        config.make_home(self.home, self.password_file)

    def _record_java(self, runtime: JavaRuntime) -> None:
        write_private(self.java_record, runtime.describe() + "\n")

    def _write_config(self) -> Path:
        return config.write_config(self.home, self._server, self.api_url)

    def _set_initial_password(self, java: str, lib: Path) -> None:
        """Before the first start only: Neo4j ignores it once the system database exists."""
        if (self.home / "data" / "databases" / "system").exists():
            return
        password.set_initial_password(
            password.initial_password(self._settings.neo4j, self.password_file),
            java=java,
            lib=lib,
            run_dir=self.home / "run",
            env=self._java_env(),
        )

    admin_command = staticmethod(password.admin_command)

    def _legacy_home(self) -> bool:
        """A home an older kg made: initialized, no password file, no password configured."""
        return (
            (self.home / "data" / "databases" / "system").exists()
            and self._settings.neo4j.configured_password is None
            and not self.password_file.exists()
        )

    def _replace_legacy_password(self) -> None:
        password.replace_legacy_password(self.bolt_uri, self.password_file, self.home)

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self._server.start_timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise ServerError(
                    f"Neo4j exited with code {proc.returncode} while starting. "
                    f"Last lines of {self.console_log}:\n{self.log_tail()}"
                )
            if port_open(self._server.bolt_port) and http_ok(self._server.http_port):
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
                chunks.append(f"--- {path.name} ---\n{tail_text(text, lines)}")
        return "\n".join(chunks) or "(no log written)"

    def _live_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if not pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return pid  # not Linux: trust the pid file
        return pid if config.ENTRY_POINT.encode() in cmdline else None


def port_advice(taken: dict[str, int], ports: dict[str, int], settings: Settings) -> str:
    """The port-collision message: what is taken, and one ``export`` line that moves kg's
    server to free ports and (because an unset URI follows the Bolt port) every command too."""
    avoid = frozenset(ports.values())
    moves: dict[str, str] = {}
    for name, port in taken.items():
        new = nearby_free_port(port, avoid)
        avoid |= {new}
        moves[f"KG_SERVER__{name}_PORT"] = str(new)
        if (
            name == "BOLT"
            and "uri" in settings.neo4j.model_fields_set
            and settings.uses_local_server
        ):
            # A URI spelled out does not follow the port: move it with the server.
            moves["KG_NEO4J__URI"] = f"bolt://127.0.0.1:{new}"
    what = " and ".join(f"port {p} ({n.lower()})" for n, p in taken.items())
    assignments = " ".join(f"{k}={v}" for k, v in moves.items())
    return (
        f"{what} on 127.0.0.1 {'is' if len(taken) == 1 else 'are'} already taken by another "
        f"process. To run kg's Neo4j beside it: `export {assignments}`, then run the command "
        "again (the local server will listen there and every kg command will connect there), "
        "or stop the other process."
    )


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
