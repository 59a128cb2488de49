"""No Docker engine runs here, so compose.yaml is checked by reading it against the code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kg.settings import NEO4J_VERSION, Settings

REPO = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((REPO / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_neo4j_is_the_pinned_community_lts_image() -> None:
    neo4j = _compose()["services"]["neo4j"]
    image = neo4j["image"]
    assert image == "neo4j:5.26-community"
    assert NEO4J_VERSION.startswith("5.26."), "local server and compose must run the same line"


def test_ports_bind_to_loopback_only() -> None:
    for service in _compose()["services"].values():
        for mapping in service.get("ports", []):
            assert str(mapping).startswith("127.0.0.1:"), mapping


def test_neo4j_essentials() -> None:
    neo4j = _compose()["services"]["neo4j"]
    env = neo4j["environment"]
    assert env["NEO4J_AUTH"].startswith("neo4j/${NEO4J_PASSWORD")
    assert env["NEO4J_db_transaction_timeout"]
    assert {"127.0.0.1:7474:7474", "127.0.0.1:7687:7687"} <= set(neo4j["ports"])
    assert "healthcheck" in neo4j
    assert any(v.endswith(":/data") for v in neo4j["volumes"])


def test_api_service_matches_settings() -> None:
    compose = _compose()
    api = compose["services"]["api"]
    assert api["build"] == "."
    assert (REPO / "Dockerfile").exists()
    assert api["depends_on"]["neo4j"]["condition"] == "service_healthy"
    env = api["environment"]
    # Every KG_ variable compose sets must be one Settings understands.
    for name in env:
        if name.startswith("KG_"):
            section, _, field = name.removeprefix("KG_").lower().partition("__")
            model = Settings.model_fields[section].annotation
            assert field in model.model_fields, name  # type: ignore[union-attr]
    assert env["NEO4J_URI"] == "bolt://neo4j:7687"
    assert api["command"] == ["kg", "serve"]
