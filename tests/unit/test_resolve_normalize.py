"""Normalization keys: what must collapse, what must stay apart, and the abbreviations file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg.errors import ConfigError
from kg.resolve.abbreviations import AbbreviationTable, load_table
from kg.resolve.normalize import Normalizer, phonetic, skeleton, strip_ending, transliterate

N = Normalizer(AbbreviationTable())


@pytest.mark.parametrize(
    "names",
    [
        ["auth-svc", "AuthService", "auth_service", "Auth Service", "authservice", "AUTH-SERVICE"],
        ["K8s", "Kubernetes", "kubernetes", "Кубернетес"],
        ["Postgres", "PostgreSQL", "postgres", "Постгрес", "psql"],
        ["Кафка", "Kafka", "KAFKA"],
        ["JavaScript", "Javascript", "javascript"],
        ["Джава", "Java"],
        ["OAuth 2.0", "OAuth2", "oauth 2"],
        ["María García", "Maria Garcia"],
        ["PostgresSQL", "PostgreSQL", "postgres sql"],  # an abbreviation absorbs its own tail
        ["mongo db", "MongoDB", "Mongo DB"],
        ["Java Script", "JavaScript"],
    ],
)
def test_spelling_variants_share_the_exact_key(names: list[str]) -> None:
    assert len({N.key(n) for n in names}) == 1, {n: N.key(n) for n in names}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("AuthService", "AuthzService"),
        ("Java", "JavaScript"),
        ("PaymentService", "PaymentsGateway"),
        ("Python 2", "Python 3"),
        ("Gazprom", "Gazprombank"),
    ],
)
def test_hard_negatives_have_different_keys(a: str, b: str) -> None:
    fa, fb = N.form(a), N.form(b)
    assert fa.compact != fb.compact
    assert fa.core_compact != fb.core_compact


def test_generic_suffixes_and_legal_forms_leave_the_core() -> None:
    assert N.form("PaymentService").core_compact == N.form("payment").core_compact
    assert N.form("ПАО Сбербанк").core_compact == N.form("Сбербанк").core_compact
    assert N.form("Apple Inc.").core_compact == "apple"


def test_vendor_prefix_is_kept_apart_from_the_core() -> None:
    form = N.form("Apache Kafka")
    assert form.vendor == "apache"
    assert form.core == ("kafka",)
    assert N.form("Apache").core == ("apache",)  # a vendor alone is the name itself


def test_camel_case_splits_but_known_words_stay_whole() -> None:
    assert N.tokens("HTTPServer") == ("http", "server")
    assert N.tokens("OrdersDB") == ("order", "database")
    assert N.tokens("MongoDB") == ("mongodb",)
    assert N.tokens("OAuth Server") == ("oauth", "server")


def test_acronyms_of_words_in_both_scripts() -> None:
    assert "iam" in N.form("Identity and Access Management").acronyms
    assert "sso" in N.form("Single Sign-On").acronyms
    assert "мвд" in N.form("Министерство внутренних дел").acronyms
    assert N.form("IAM").short == "iam"
    assert N.form("МВД").short == "мвд"
    assert N.form("auth-svc").acronyms == ()  # one word with a hyphen is no acronym source
    assert N.form("Java").short is None


def test_transliteration_and_spelling_key() -> None:
    assert transliterate("кафка") == "kafka"
    assert transliterate("джава") == "java"
    assert phonetic("docker") == phonetic(transliterate("докер"))
    assert phonetic("google") == phonetic(transliterate("гугл"))
    assert strip_ending("moskvy") == strip_ending("moskva") == "moskv"


def test_abbreviation_file_extends_defaults(tmp_path: Path) -> None:
    path = tmp_path / "abbr.yaml"
    path.write_text("abbreviations:\n  pg: postgresql\ngeneric: [cluster]\n", encoding="utf-8")
    normalizer = Normalizer(load_table(path))
    assert normalizer.key("pg") == normalizer.key("PostgreSQL")
    assert normalizer.key("k8s") == normalizer.key("kubernetes")  # defaults still there
    assert normalizer.form("Kafka cluster").core == ("kafka",)


def test_abbreviation_file_can_replace_defaults(tmp_path: Path) -> None:
    path = tmp_path / "abbr.json"
    path.write_text(json.dumps({"replace_defaults": True, "abbreviations": {"x": "y"}}))
    table = load_table(path)
    assert dict(table.abbreviations) == {"x": "y"}
    assert Normalizer(table).key("k8s") == "k8s"


@pytest.mark.parametrize("content", ["[1, 2]", "abbreviations: [a, b]\n", "a: [unclosed\n"])
def test_bad_abbreviation_file_is_a_config_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "abbr.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError):
        load_table(path)


def test_missing_abbreviation_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_table(tmp_path / "nope.yaml")


def test_consonant_skeleton() -> None:
    assert skeleton("github") == skeleton(transliterate("гитхаб")) == "gtb"
    assert skeleton("clickhouse") == skeleton(transliterate("кликхаус"))
    assert skeleton("windows") == skeleton(transliterate("виндоус"))


def test_acronyms_of_title_hyphen_words() -> None:
    assert "sso" in N.form("Single-Sign-On").acronyms
    assert N.form("auth-svc").acronyms == ()
