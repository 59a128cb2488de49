"""The local server advertises the loopback address and ports it binds: a ``neo4j://`` client
gets a routing table naming them, and a table naming any other address would let it connect
but never query (docs/scaling.md)."""

from __future__ import annotations

from pathlib import Path

from kg.localserver.config import write_config
from kg.settings import ApiSettings, LocalServerSettings


def _conf(tmp_path: Path) -> dict[str, str]:
    server = LocalServerSettings(home=tmp_path / "home", bolt_port=7791, http_port=7792)
    conf_dir = write_config(tmp_path / "home", server, ApiSettings())
    lines = (conf_dir / "neo4j.conf").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_advertised_addresses_are_the_bound_loopback_ones(tmp_path: Path) -> None:
    conf = _conf(tmp_path)
    assert conf["server.default_listen_address"] == "127.0.0.1"
    assert conf["server.default_advertised_address"] == conf["server.default_listen_address"]
    assert conf["server.bolt.listen_address"] == "127.0.0.1:7791"
    assert conf["server.bolt.advertised_address"] == conf["server.bolt.listen_address"]
    assert conf["server.http.advertised_address"] == conf["server.http.listen_address"]
