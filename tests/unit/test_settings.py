from __future__ import annotations

import re
from pathlib import Path

import pytest

from kg.settings import Settings


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_defaults_point_at_the_local_server() -> None:
    s = Settings()
    assert s.neo4j.uri == "bolt://127.0.0.1:7687"
    assert s.server.bolt_port == 7687
    assert s.server.http_port == 7474


def test_prefix_and_nested_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_NEO4J__URI", "bolt://db:7687")
    monkeypatch.setenv("KG_EXTRACT__MODEL", "qwen2.5")
    monkeypatch.setenv("KG_SEARCH__TYPE_WEIGHTS", '{"DEPENDS_ON": 0.5}')
    with pytest.warns(DeprecationWarning, match="KG_LLM__MODEL"):
        s = Settings()
    assert s.neo4j.uri == "bolt://db:7687"
    assert s.llm.model == "qwen2.5"  # the old shared name, moved to the shared section
    assert s.search.type_weights == {"DEPENDS_ON": 0.5}


def test_ecosystem_neo4j_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "neo4j://elsewhere:7687")
    monkeypatch.setenv("NEO4J_USERNAME", "reader")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    monkeypatch.setenv("NEO4J_DATABASE", "kgdb")
    s = Settings()
    assert (s.neo4j.uri, s.neo4j.username, s.neo4j.database) == (
        "neo4j://elsewhere:7687",
        "reader",
        "kgdb",
    )
    assert s.neo4j.password.get_secret_value() == "s3cret"


def test_kg_prefix_wins_over_ecosystem_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "neo4j://ecosystem:7687")
    monkeypatch.setenv("KG_NEO4J__URI", "bolt://kg:7687")
    monkeypatch.setenv("NEO4J_USERNAME", "eco-user")
    s = Settings()
    assert s.neo4j.uri == "bolt://kg:7687"
    assert s.neo4j.username == "eco-user"  # sections merge field by field


def test_dotenv_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KG_ENV_FILE")  # the suite's own setting: read no .env (conftest)
    (tmp_path / ".env").write_text("KG_NEO4J__DATABASE=fromdotenv\nKG_API__PORT=9001\n")
    s = Settings()
    assert s.neo4j.database == "fromdotenv"
    assert s.api.port == 9001


def test_kg_env_file_names_another_file_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("KG_NEO4J__DATABASE=fromdotenv\n")
    other = tmp_path / "prod.env"
    other.write_text("KG_NEO4J__DATABASE=fromother\n")
    monkeypatch.setenv("KG_ENV_FILE", "")
    assert Settings().neo4j.database == "neo4j"  # empty: no file at all
    monkeypatch.setenv("KG_ENV_FILE", str(other))
    assert Settings().neo4j.database == "fromother"


def test_secrets_never_print(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", "hunter2-very-secret")
    monkeypatch.setenv("KG_EXTRACT__API_KEY", "sk-live-abc123")
    monkeypatch.setenv("KG_API__API_KEYS", "key-one,key-two")
    s = Settings()
    dumped = repr(s) + str(s) + s.model_dump_json()
    for secret in ("hunter2-very-secret", "sk-live-abc123", "key-one", "key-two"):
        assert secret not in dumped
    assert [k.get_secret_value() for k in s.api.api_keys] == ["key-one", "key-two"]


@pytest.mark.parametrize(("value", "expected"), [("off", None), ("", None), ("250", 250)])
def test_hub_degree_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: int | None
) -> None:
    monkeypatch.setenv("KG_SEARCH__HUB_DEGREE", value)
    assert Settings().search.hub_degree == expected


def test_hub_degree_defaults_to_a_bound_and_rejects_nonsense(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().search.hub_degree == 1000
    monkeypatch.setenv("KG_SEARCH__HUB_DEGREE", "0")
    with pytest.raises(ValueError, match="hub_degree"):
        Settings()


def test_an_unset_uri_follows_the_local_servers_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_SERVER__BOLT_PORT", "7697")
    s = Settings()
    assert s.neo4j.uri == "bolt://127.0.0.1:7697"
    assert s.uses_local_server
    # Built from arguments, the same: one place decides.
    assert Settings(server={"bolt_port": 7701}).neo4j.uri == "bolt://127.0.0.1:7701"


def test_a_uri_given_is_kept_and_says_whether_it_is_the_local_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KG_SERVER__BOLT_PORT", "7697")
    monkeypatch.setenv("KG_NEO4J__URI", "bolt://127.0.0.1:7687")
    s = Settings()
    assert s.neo4j.uri == "bolt://127.0.0.1:7687"
    assert not s.uses_local_server  # another server on the old port
    monkeypatch.setenv("KG_NEO4J__URI", "neo4j://localhost:7697")
    assert Settings().uses_local_server
    monkeypatch.setenv("NEO4J_URI", "bolt://db.example:7697")
    monkeypatch.delenv("KG_NEO4J__URI")
    assert not Settings().uses_local_server


def test_port_advice_names_free_ports_and_moves_a_local_uri_too() -> None:
    from kg.localserver.server import port_advice

    plain = Settings(server={"bolt_port": 7687, "http_port": 7474})
    message = port_advice({"BOLT": 7687}, {"BOLT": 7687, "HTTP": 7474}, plain)
    found = re.search(r"`export KG_SERVER__BOLT_PORT=(\d+)`", message)
    assert found, message
    assert int(found.group(1)) not in (7687, 7474)
    spelled = Settings(neo4j={"uri": "bolt://127.0.0.1:7687"}, server={"bolt_port": 7687})
    both = port_advice({"BOLT": 7687, "HTTP": 7474}, {"BOLT": 7687, "HTTP": 7474}, spelled)
    assignments = dict(
        a.split("=", 1)
        for a in re.search(r"`export ([^`]+)`", both).group(1).split()  # type: ignore[union-attr]
    )
    assert set(assignments) == {"KG_SERVER__BOLT_PORT", "KG_SERVER__HTTP_PORT", "KG_NEO4J__URI"}
    assert assignments["KG_NEO4J__URI"] == f"bolt://127.0.0.1:{assignments['KG_SERVER__BOLT_PORT']}"
    assert assignments["KG_SERVER__BOLT_PORT"] != assignments["KG_SERVER__HTTP_PORT"]
