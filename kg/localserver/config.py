"""The local server's files and command line: its private home, neo4j.conf and the java call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kg.localserver.browser import browser_config
from kg.localserver.process import write_private
from kg.settings import ApiSettings, LocalServerSettings

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"

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

#: The server home's folders; all of them, and the home itself, are private (0700).
HOME_DIRS = ("conf", "data", "logs", "run", "plugins", "import")


def make_home(home: Path, password_file: Path) -> None:
    """The home and its folders, private to this user (also tightens an older home)."""
    for path in (home, *(home / sub for sub in HOME_DIRS)):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.chmod(0o700)
    if password_file.exists():
        password_file.chmod(0o600)


def write_config(home: Path, server: LocalServerSettings, api: ApiSettings | str) -> Path:
    """Write ``<home>/conf/neo4j.conf`` (mode 0600) and return its folder; ``api`` is kg's
    API (its URL, or its settings), where Browser loads kg's style from."""
    conf_dir = home / "conf"
    lines = [
        "# Written by `kg neo4j start`; edit kg settings instead of this file.",
        "server.default_listen_address=127.0.0.1",
        "server.default_advertised_address=127.0.0.1",
        f"server.bolt.listen_address=127.0.0.1:{server.bolt_port}",
        f"server.bolt.advertised_address=127.0.0.1:{server.bolt_port}",
        f"server.http.listen_address=127.0.0.1:{server.http_port}",
        f"server.http.advertised_address=127.0.0.1:{server.http_port}",
        "server.https.enabled=false",
        "dbms.security.auth_enabled=true",
        # Web pages from other origins must not drive the HTTP API (default `*`); Browser
        # is served from this origin and talks Bolt, so it needs no cross-origin grant.
        f"dbms.security.http_access_control_allow_origin=http://127.0.0.1:{server.http_port}",
        f"db.transaction.timeout={server.transaction_timeout}",
        f"server.memory.heap.initial_size={server.heap}",
        f"server.memory.heap.max_size={server.heap}",
        f"server.memory.pagecache.size={server.pagecache}",
        "db.tx_log.rotation.retention_policy=2 files",
        f"server.directories.data={home / 'data'}",
        f"server.directories.logs={home / 'logs'}",
        f"server.directories.run={home / 'run'}",
        f"server.directories.plugins={home / 'plugins'}",
        f"server.directories.import={home / 'import'}",
        "dbms.usage_report.enabled=false",
        # Stop in under a second, not ten: Bolt's shutdown otherwise waits a fixed 5 s quiet
        # period and 5 s for connections that are already gone (the databases have checkpointed
        # and stopped before this; docs/architecture.md, "Stopping the local server").
        "internal.dbms.bolt.netty_server_shutdown_quiet_period=0",
        "internal.server.bolt.connection_shutdown_wait_time=0s",
        "internal.server.bolt.thread_pool_shutdown_wait_time=1s",
        *browser_config(api),
        "",
    ]
    write_private(conf_dir / "neo4j.conf", "\n".join(lines))
    return conf_dir


def server_command(
    java: str, lib: Path, home: Path, conf_dir: Path, heap: str, extra: Sequence[str] = ()
) -> list[str]:
    """The ``java -cp`` line that runs Neo4j's entry point on this home (``extra``: the
    ``server.java_options`` setting, after kg's own flags so that it can override them)."""
    return [
        java, f"-Xms{heap}", f"-Xmx{heap}", *JVM_FLAGS, *extra,
        "-cp", f"{lib}/*", ENTRY_POINT,
        f"--home-dir={home}", f"--config-dir={conf_dir}",
    ]  # fmt: skip
