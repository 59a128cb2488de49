"""The linking filter's pure parts: which n-gram spellings some name or alias can equal."""

from __future__ import annotations

from kg.search.names import _index, may_name, name_forms


def test_name_forms_are_the_words_of_names_that_have_a_form() -> None:
    assert name_forms(["Kiss and Tell", "the", None, "Ledger DB"]) == [
        ("kiss", "and", "tell"),
        ("ledger", "db"),
    ]


def test_only_spellings_some_name_equals_are_asked() -> None:
    forms = frozenset(name_forms(["Kiss and Tell", "Tell"]))
    asked = may_name([("kiss", "and", "tell"), ("and", "tell"), ("tell",), ("kiss",)], forms)
    assert asked == [("kiss", "and", "tell"), ("tell",)]


def test_without_forms_every_spelling_is_asked() -> None:
    spellings = [("a", "b"), ("c",)]
    assert may_name(spellings, None) == spellings


def test_the_index_finds_entities_by_the_form_of_a_name_or_an_alias_a_scope_sees() -> None:
    index = _index(
        [
            {"id": "auth", "name": "AuthService", "type": "Service", "mentions": 3,
             "aliases": ["Сервис аутентификации", "Gateway Edge"],
             "alias_sources": ["alpha", "beta"], "namespaces": ["alpha", "beta"]},
            {"id": "edge", "name": "Gateway Edge", "type": "Service", "mentions": 1,
             "aliases": [], "alias_sources": [], "namespaces": ["beta"]},
        ]
    )  # fmt: skip
    assert [r["id"] for r in index.rows(("authservice",), None)] == ["auth"]
    row = index.rows(("сервис", "аутентификации"), None)[0]
    assert row == {"id": "auth", "phrase": "сервис аутентификации", "name": "AuthService",
                   "type": "Service", "aliases": ["Сервис аутентификации", "Gateway Edge"],
                   "mentions": 3}  # fmt: skip
    assert {r["id"] for r in index.rows(("gateway", "edge"), None)} == {"auth", "edge"}
    # alpha sees its own alias of AuthService, not beta's, and not beta's entity
    assert index.rows(("gateway", "edge"), ["alpha"]) == []
    assert index.rows(("сервис", "аутентификации"), ["alpha"])[0]["aliases"] == [
        "Сервис аутентификации"
    ]
    assert {r["id"] for r in index.rows(("gateway", "edge"), ["beta"])} == {"auth", "edge"}
    assert index.rows(("nothing",), None) == []
