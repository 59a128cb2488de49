"""Neo4j Browser settings: the local server's neo4j.conf, compose.yaml, the style file, kg browse.

The browser test (tests/integration/test_browser_ui.py) shows they work in a real Browser;
these pin what cannot run here (compose.yaml) to what does (the local server's config).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from api.browser import GUIDE_FILE, STYLE_FILE, browser_dir
from cli.browse_cmd import browser_launch_url, has_display
from kg.localserver import (
    BROWSER_STYLE_PATH,
    LocalNeo4j,
    browser_config,
    kg_api_url,
)
from kg.settings import ApiSettings, Settings

REPO = Path(__file__).resolve().parents[2]


def _conf(lines: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines)


def test_local_server_styles_browser_from_the_api(tmp_path: Path) -> None:
    settings = Settings(server={"home": tmp_path / "neo4j"}, api={"port": 8123})
    conf_dir = LocalNeo4j(settings)._write_config()
    conf = _conf([ln for ln in (conf_dir / "neo4j.conf").read_text().splitlines() if "=" in ln])
    assert conf["browser.post_connect_cmd"] == "style http://127.0.0.1:8123/browser-style.grass"
    # The allowlist replaces Browser's default: keep it, add the API's host (no port).
    hosts = conf["browser.remote_content_hostname_whitelist"].split(",")
    assert hosts == ["guides.neo4j.com", "localhost", "127.0.0.1"]
    assert conf["client.allow_telemetry"] == "false"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8000"),
        ("0.0.0.0", "http://127.0.0.1:8000"),
        ("localhost", "http://127.0.0.1:8000"),
        ("::", "http://127.0.0.1:8000"),
        ("::1", "http://[::1]:8000"),
        ("kg.internal", "http://kg.internal:8000"),
    ],
)
def test_api_url_is_what_a_browser_on_this_machine_reaches(host: str, url: str) -> None:
    assert kg_api_url(ApiSettings(host=host, port=8000)) == url


def test_allowlist_names_hosts_not_ports() -> None:
    conf = _conf(browser_config(ApiSettings(host="kg.internal", port=9000)))
    assert conf["browser.remote_content_hostname_whitelist"].endswith(",kg.internal")
    ipv6 = _conf(browser_config(ApiSettings(host="::1", port=9000)))
    assert ipv6["browser.remote_content_hostname_whitelist"].endswith(",[::1]")


def test_compose_sets_what_the_local_server_sets() -> None:
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    neo4j_env = compose["services"]["neo4j"]["environment"]
    api_env = compose["services"]["api"]["environment"]
    api = ApiSettings(host=api_env["KG_API__HOST"], port=int(api_env["KG_API__PORT"]))
    # Docker's naming: `.` becomes `_`, `_` becomes `__`, after the NEO4J_ prefix.
    expected = {
        "NEO4J_" + key.replace("_", "__").replace(".", "_"): value
        for key, value in _conf(browser_config(api)).items()
    }
    assert {k: neo4j_env.get(k) for k in expected} == expected
    assert "127.0.0.1:8000:8000" in compose["services"]["api"]["ports"]


def _grass_rules(text: str) -> dict[str, dict[str, str]]:
    """The rules as Browser 5's ``:style <url>`` parser reads them: ``selector { k: v; }``,
    quotes protect braces, a property with more than one colon is dropped."""
    rules: dict[str, dict[str, str]] = {}
    for selector, body in re.findall(r"([^{}\s][^{}]*?)\s*\{((?:'[^']*'|[^{}'])*)\}", text):
        props: dict[str, str] = {}
        for prop in body.split(";"):
            if prop.strip():
                key, sep, value = prop.partition(":")
                assert sep, f"{selector}: {prop.strip()!r} has no value"
                assert ":" not in value, f"{selector}: {prop.strip()!r} would be dropped"
                props[key.strip()] = value.strip().strip("'")
        rules[selector.strip()] = props
    return rules


def test_style_captions_every_kg_label_and_relations_by_predicate() -> None:
    text = (browser_dir() / STYLE_FILE).read_text(encoding="utf-8")
    assert "/*" not in text, "Browser's GRASS parser has no comments"
    rules = _grass_rules(text)
    captions = {selector: props.get("caption") for selector, props in rules.items()}
    assert captions["node.Entity"] == "{name}"
    assert captions["node.Document"] == "{title}"
    assert captions["node.Chunk"] == "{text}"  # fitted (cut) into the node's circle
    assert captions["node.Community"] == "{title}"
    assert captions["node.Predicate"] == "{name}"
    assert "{model_version}" in (captions["node.KgMeta"] or "")
    assert captions["relationship"] == "<type>"
    assert captions["relationship.RELATED"] == "{predicate}"
    colours = {rules[s]["color"] for s in rules if s.startswith("node.")}
    assert len(colours) == len([s for s in rules if s.startswith("node.")]), "one colour a label"


def test_style_and_guide_ship_in_the_wheel_config() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"browser" = "kg/_browser"' in pyproject
    assert (browser_dir() / GUIDE_FILE).is_file()


def test_guide_is_slides_of_runnable_queries_without_scripts() -> None:
    html = (browser_dir() / GUIDE_FILE).read_text(encoding="utf-8")
    assert html.count("<slide") >= 5
    assert html.count('<pre class="runnable">') >= 8
    assert "<script" not in html.lower()
    assert not re.search(r"\son\w+\s*=", html), "Browser strips event handlers"


def test_browse_url_fills_the_connection_and_the_guide_command() -> None:
    url = browser_launch_url(
        "http://127.0.0.1:7474/browser/", "bolt://127.0.0.1:7687", "http://127.0.0.1:8000/g"
    )
    parts = urlsplit(url)
    assert url.startswith("http://127.0.0.1:7474/browser/?")
    query = parse_qs(parts.query)
    assert query == {
        "dbms": ["bolt://127.0.0.1:7687"],
        # `edit` fills the editor; `play` would skip the post-connect style command.
        "cmd": ["edit"],
        "arg": [":play http://127.0.0.1:8000/g"],
    }
    assert BROWSER_STYLE_PATH.endswith(".grass")  # Browser's :style wants a dot in a URL


def test_no_display_means_print(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not has_display()
    monkeypatch.setenv("DISPLAY", ":0")
    assert has_display()


def test_the_api_url_follows_a_live_kg_serve(tmp_path: Path) -> None:
    from kg.localserver.browser import api_url, record_served

    home = tmp_path / "neo4j"
    home.mkdir()
    settings = Settings(server={"home": home}, api={"port": 8000})
    assert api_url(settings) == "http://127.0.0.1:8000"
    with record_served(home, ApiSettings(host="0.0.0.0", port=9123)) as url:
        assert url == "http://127.0.0.1:9123"
        assert api_url(settings) == url
        conf = _conf(browser_config(api_url(settings)))
        assert conf["browser.post_connect_cmd"] == f"style {url}{BROWSER_STYLE_PATH}"
    assert api_url(settings) == "http://127.0.0.1:8000"  # the record went with the process


def test_a_dead_kg_serve_record_is_ignored(tmp_path: Path) -> None:
    import json

    from kg.localserver.browser import SERVED_RECORD, api_url

    home = tmp_path / "neo4j"
    (home / SERVED_RECORD).parent.mkdir(parents=True)
    gone = subprocess.Popen(["true"])  # a kg serve that has exited since
    gone.wait()
    (home / SERVED_RECORD).write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": gone.pid}))
    settings = Settings(server={"home": home}, api={"port": 8000})
    assert api_url(settings) == "http://127.0.0.1:8000"


def test_kg_serve_port_and_kg_browse_name_one_style_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kg serve --port 9000` after Neo4j started for KG_API__PORT=8000: the style URL that
    `kg browse` prints is the one Browser runs (neo4j.conf's, :8000), and both commands say
    the same thing about the server on :9000 and how to make Browser follow it."""
    from cli.browse_cmd import browse
    from cli.serve_cmd import _serving
    from kg.localserver.server import ServerStatus

    home = tmp_path / "neo4j"
    monkeypatch.setenv("KG_SERVER__HOME", str(home))
    monkeypatch.setenv("KG_API__PORT", "8000")
    settings = Settings()
    local = LocalNeo4j(settings)
    local._write_config()  # what `kg neo4j start` wrote while no kg serve ran
    configured = "http://127.0.0.1:8000" + BROWSER_STYLE_PATH
    assert local.browser_style_url == configured
    running = ServerStatus(
        running=True,
        pid=1,
        bolt_uri=local.bolt_uri,
        browser_url=local.browser_url,
        bolt_answers=True,
        http_answers=True,
        home=local.home,
    )
    monkeypatch.setattr(LocalNeo4j, "status", lambda self: running)
    monkeypatch.setattr("cli.browse_cmd.api_answers", lambda url: True)
    served = settings.model_copy(update={"api": settings.api.model_copy(update={"port": 9000})})

    with _serving(served):  # what `kg serve --port 9000` does around uvicorn
        serve_out = capsys.readouterr().out
        assert browse(print_only=True) == 0
        browse_out = capsys.readouterr().out
        assert local.api_url == "http://127.0.0.1:9000"

    note = (
        f"Neo4j Browser loads kg's style from {configured} (set when the local Neo4j started), "
        "not from http://127.0.0.1:9000, where kg's API serves"
    )
    for out in (serve_out, browse_out):
        assert note in " ".join(out.split()), out
        assert "kg neo4j stop && kg neo4j start" in out
    assert f":style {configured}  (Browser loads it when it connects)" in browse_out
    assert ":play http://127.0.0.1:9000/browser-guide" in browse_out

    # After the restart neo4j.conf names :9000 and both say nothing more.
    url = "http://127.0.0.1:9000"
    with _serving(served):
        LocalNeo4j(Settings())._write_config()
        assert local.browser_style_url == url + BROWSER_STYLE_PATH
        capsys.readouterr()
        assert browse(print_only=True) == 0
        browse_out = capsys.readouterr().out
    assert f":style {url}{BROWSER_STYLE_PATH}  (Browser loads" in browse_out
    assert "note:" not in browse_out
