"""The linking filter's pure parts: which n-gram spellings some name or alias can equal."""

from __future__ import annotations

from kg.search.names import may_name, name_forms


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
