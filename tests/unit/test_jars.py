"""The jar lock: its format, the repository layout it maps to, and where jars come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.errors import ServerError
from kg.localserver.jars import (
    MAVEN_CENTRAL,
    LockedJar,
    lock_path,
    maven_repository,
    parse_lock,
    read_lock,
    render_lock,
)
from kg.settings import BROWSER_VERSION, NEO4J_VERSION

SHA = "ab" * 32

LOCK = f"""\
# a comment
neo4j.version=5.26.30
browser.version=5.24.0
org.neo4j:neo4j:5.26.30 317305 {SHA}
io.netty:netty-transport-native-epoll:4.1.137.Final:linux-x86_64 41506 {SHA}  # trailing
"""


def test_lock_lines_parse_to_coordinates_and_repository_paths() -> None:
    lock = parse_lock(LOCK)
    assert (lock.neo4j_version, lock.browser_version) == ("5.26.30", "5.24.0")
    epoll, neo4j = lock.jars  # sorted by coordinate
    assert neo4j.repository_path == "org/neo4j/neo4j/5.26.30/neo4j-5.26.30.jar"
    assert epoll.classifier == "linux-x86_64"
    assert epoll.filename == "netty-transport-native-epoll-4.1.137.Final-linux-x86_64.jar"
    assert epoll.repository_path == (
        "io/netty/netty-transport-native-epoll/4.1.137.Final/"
        "netty-transport-native-epoll-4.1.137.Final-linux-x86_64.jar"
    )
    assert lock.total_bytes == 317305 + 41506


def test_render_then_parse_is_the_same_lock() -> None:
    lock = parse_lock(LOCK)
    assert parse_lock(render_lock(lock)) == lock


@pytest.mark.parametrize(
    "line",
    [
        f"org.neo4j:neo4j 1 {SHA}",  # no version
        f"org.neo4j:neo4j:1 x {SHA}",  # size not a number
        "org.neo4j:neo4j:1 1 abc",  # short hash
        f"org.neo4j:neo4j:1 1 {'zz' * 32}",  # not hex
        f"org.neo4j:../../etc:1 1 {SHA}",  # a path escape
        f"org.neo4j:neo4j:1 1 {SHA} extra",
    ],
)
def test_bad_lock_lines_are_refused(line: str) -> None:
    text = f"neo4j.version=1\nbrowser.version=1\n{line}\n"
    with pytest.raises(ServerError, match=":3:"):
        parse_lock(text)


def test_a_lock_without_versions_is_refused() -> None:
    with pytest.raises(ServerError, match=r"neo4j\.version"):
        parse_lock(f"org.neo4j:neo4j:1 1 {SHA}\n")


def test_the_repository_lock_covers_the_default_versions() -> None:
    lock = read_lock()
    assert lock is not None, f"{lock_path()} is missing"
    assert (lock.neo4j_version, lock.browser_version) == (NEO4J_VERSION, BROWSER_VERSION)
    names = {jar.filename for jar in lock.jars}
    assert f"neo4j-{NEO4J_VERSION}.jar" in names
    assert f"neo4j-browser-{BROWSER_VERSION}.jar" in names
    assert all(isinstance(jar, LockedJar) and jar.size > 0 for jar in lock.jars)


def test_a_missing_lock_reads_as_none(tmp_path: Path) -> None:
    assert read_lock(tmp_path / "jars.lock") is None


def test_maven_central_unless_settings_xml_names_a_mirror(tmp_path: Path) -> None:
    assert maven_repository(tmp_path / "absent.xml") == MAVEN_CENTRAL
    settings = tmp_path / "settings.xml"
    settings.write_text(
        '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0"><mirrors>'
        "<mirror><id>other</id><mirrorOf>*,!central</mirrorOf><url>https://no.example</url>"
        "</mirror>"
        "<mirror><id>corp</id><mirrorOf>central</mirrorOf>"
        "<url>https://nexus.example/repository/maven-central/</url></mirror>"
        "</mirrors></settings>"
    )
    assert maven_repository(settings) == "https://nexus.example/repository/maven-central"
    settings.write_text("<settings><mirrors><mirror><mirrorOf>central")  # broken XML
    assert maven_repository(settings) == MAVEN_CENTRAL
