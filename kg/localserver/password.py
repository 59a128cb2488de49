"""The local server's password: random on first start, kept 0600, never on a command line.

Neo4j's admin tool takes the initial password only as an argument, so it gets a picocli
``@argfile`` (mode 0600, deleted right after): ``ps`` shows the file's name only. A home an
older kg left on the fixed :data:`LEGACY_PASSWORD` gets a random one on its next start.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import tempfile
from pathlib import Path

from kg.errors import ConfigError, ServerError
from kg.localserver.process import tail_text, write_private
from kg.settings import Neo4jSettings

ADMIN_TOOL = "org.neo4j.cli.AdminTool"

#: The fixed password older kg versions gave every local server; replaced on the next start.
LEGACY_PASSWORD = "kg-local-password"  # noqa: S105 - a known-bad value we look for, not a secret


def new_password() -> str:
    """A random password that no command line can take for an option (no leading ``-``)."""
    return "kg" + secrets.token_urlsafe(24)


def argfile_quote(value: str) -> str:
    """One argument for a picocli ``@argfile``: quoted, so spaces, quotes and ``#`` survive."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def admin_command(java: str, lib: Path, argfile: Path) -> list[str]:
    """``neo4j-admin dbms set-initial-password`` reading its argument from ``argfile``."""
    return [
        java, "-Dfile.encoding=UTF-8", "-cp", f"{lib}/*", ADMIN_TOOL,
        "dbms", "set-initial-password", f"@{argfile}",
    ]  # fmt: skip


def initial_password(neo4j: Neo4jSettings, password_file: Path) -> str:
    """The configured password, else the one in the password file, else a new random one."""
    configured = neo4j.configured_password
    if configured is not None:
        password = configured.get_secret_value()
        if password.startswith("@") or any(c in password for c in "\r\n\x00"):
            raise ConfigError(
                "the local Neo4j cannot take a password that starts with `@` or holds a "
                "line break; choose another KG_NEO4J__PASSWORD"
            )
        return password
    with contextlib.suppress(FileNotFoundError):
        existing = password_file.read_text(encoding="utf-8").strip()
        if existing:
            return existing
    password = new_password()
    write_private(password_file, password + "\n")
    return password


def set_initial_password(
    password: str, *, java: str, lib: Path, run_dir: Path, env: dict[str, str]
) -> None:
    """Give a new server home its first password through a 0600 ``@argfile`` in ``run_dir``."""
    fd, name = tempfile.mkstemp(prefix="initial-password-", dir=run_dir)
    argfile = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            # "--" ends the options: a password starting with "-" is still the password.
            handle.write("--\n" + argfile_quote(password) + "\n")
        proc = subprocess.run(  # noqa: S603
            admin_command(java, lib, argfile),
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    finally:
        argfile.unlink(missing_ok=True)
    if proc.returncode != 0:
        detail = tail_text((proc.stdout + proc.stderr).splitlines(), 10)
        raise ServerError(f"could not set the initial Neo4j password:\n{detail}")


def replace_legacy_password(bolt_uri: str, password_file: Path, home: Path) -> None:
    """Swap the old fixed default for a random password kept in the password file.

    The new password is written first, so a failure between the two steps can never lose
    it; if the old default is refused (the user chose their own), the file is removed and
    kg asks for the password instead.
    """
    from neo4j import GraphDatabase
    from neo4j.exceptions import AuthError

    new = new_password()
    write_private(password_file, new + "\n")
    changed = False
    try:
        with GraphDatabase.driver(bolt_uri, auth=("neo4j", LEGACY_PASSWORD)) as driver:
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
            f"could not replace the old default password of the server in {home}: "
            f"{type(exc).__name__}"
        ) from exc
    finally:
        if not changed:
            password_file.unlink(missing_ok=True)
