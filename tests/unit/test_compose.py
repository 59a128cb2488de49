"""No Docker engine runs here, so compose.yaml is checked by reading it against the code."""

from __future__ import annotations

import ipaddress
import re
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
            if not field:  # a top-level setting (KG_LOG_FORMAT)
                assert section in Settings.model_fields, name
                continue
            model = Settings.model_fields[section].annotation
            assert field in model.model_fields, name  # type: ignore[union-attr]
    assert env["NEO4J_URI"] == "bolt://neo4j:7687"
    assert api["command"] == ["kg", "serve"]


# -- the "replicas" profile: N stateless API replicas behind nginx (docs/scaling.md) ----------


def _known_setting(name: str) -> bool:
    section, _, field = name.removeprefix("KG_").lower().partition("__")
    model = Settings.model_fields[section].annotation
    return field in model.model_fields  # type: ignore[union-attr]


def test_the_default_services_belong_to_no_profile() -> None:
    services = _compose()["services"]
    assert "profiles" not in services["neo4j"]
    assert "profiles" not in services["api"]


def test_replicas_sit_behind_one_well_known_proxy() -> None:
    compose = _compose()
    replica = compose["services"]["api-replica"]
    proxy = compose["services"]["proxy"]
    assert replica["profiles"] == proxy["profiles"] == ["replicas"]
    assert replica["build"] == "."
    assert str(replica["deploy"]["replicas"]).startswith("${KG_API_REPLICAS")
    assert "ports" not in replica, "only the proxy is reached from outside"
    assert replica["depends_on"]["neo4j"]["condition"] == "service_healthy"
    assert proxy["image"].startswith("nginx:1.")
    assert proxy["depends_on"]["api-replica"]["condition"] == "service_healthy"
    env = replica["environment"]
    assert all(_known_setting(name) for name in env if name.startswith("KG_")), env
    # bound beyond loopback, so keys are required (api/auth.py)
    assert env["KG_API__HOST"] == "0.0.0.0"
    assert env["KG_API__API_KEYS"].startswith("${KG_API_KEYS:?")


def test_the_replicas_trust_exactly_the_proxy() -> None:
    compose = _compose()
    replica = compose["services"]["api-replica"]
    proxy = compose["services"]["proxy"]
    address = proxy["networks"]["edge"]["ipv4_address"]
    subnet = compose["networks"]["edge"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(address) in ipaddress.ip_network(subnet)
    assert "edge" in replica["networks"]
    assert "default" in replica["networks"]
    trusted = Settings(api={"trusted_proxies": replica["environment"]["KG_API__TRUSTED_PROXIES"]})
    assert trusted.api.trusted_proxies == [address]


def test_the_proxy_config_reaches_the_replicas_and_forwards_the_client() -> None:
    compose = _compose()
    proxy = compose["services"]["proxy"]
    replica_env = compose["services"]["api-replica"]["environment"]
    mounts = [v.split(":") for v in proxy["volumes"]]
    conf_paths = [host for host, target, *_ in mounts if target.startswith("/etc/nginx/conf.d/")]
    assert len(conf_paths) == 1
    conf = (REPO / conf_paths[0]).read_text()
    upstream = re.search(r"upstream kg_api \{[^}]*server ([\w-]+):(\d+)", conf)
    assert upstream is not None
    assert upstream.group(1) == "api-replica"
    assert upstream.group(2) == replica_env["KG_API__PORT"]
    assert "proxy_pass http://kg_api;" in conf
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in conf
    listen = re.search(r"listen (\d+);", conf)
    assert listen is not None
    assert proxy["ports"] == [f"127.0.0.1:{listen.group(1)}:{listen.group(1)}"]
    body = re.search(r"client_max_body_size\s+(\d+)m;", conf)
    assert body is not None
    assert int(body.group(1)) * 1024 * 1024 == Settings().api.max_body_bytes


def test_the_observability_profile_collects_traces_and_scrapes_metrics() -> None:
    compose = _compose()
    services = compose["services"]
    assert services["otel-collector"]["profiles"] == ["observability"]
    assert services["prometheus"]["profiles"] == ["observability"]
    api = services["api"]["environment"]
    assert api["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert api["OTEL_TRACES_EXPORTER"] == "${OTEL_TRACES_EXPORTER:-}"  # off unless asked
    collector = yaml.safe_load((REPO / "deploy" / "otel-collector.yaml").read_text())
    assert collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    prometheus = yaml.safe_load((REPO / "deploy" / "prometheus.yaml").read_text())
    (job,) = prometheus["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["api:8000"]
    key = job["authorization"]["credentials_file"]
    assert any(c["target"] == key for c in services["prometheus"]["configs"])
    assert "opentelemetry-exporter-otlp-proto-http" in (REPO / "pyproject.toml").read_text()
    assert "'.[otlp]'" in (REPO / "Dockerfile").read_text()
