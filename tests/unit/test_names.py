"""The linking filter's pure parts: which n-gram spellings some name or alias can equal, and
the name index that links them in memory (kg.search.names)."""

from __future__ import annotations

from typing import Any

from kg.search.names import may_name, name_index


def _row(eid: str, name: str, *aliases: tuple[str, str], **more: Any) -> dict[str, Any]:
    return {"id": eid, "name": name, "type": "Service", "aliases": [a for a, _ in aliases],
            "alias_sources": [s for _, s in aliases], "namespaces": ["a"], "mentions": 3,
            **more}  # fmt: skip


ROWS = [
    _row("e2", "Kiss and Tell", ("Tell", "b")),
    _row("e1", "Ledger DB", ("the", "a"), namespaces=["a", "b"], mentions=7),
    _row("e3", "Tell", namespaces=["b"]),
]


def test_the_forms_are_the_words_of_names_and_aliases_that_have_one() -> None:
    assert set(name_index(ROWS).by_form) == {("kiss", "and", "tell"), ("ledger", "db"), ("tell",)}


def test_only_spellings_some_name_equals_are_asked() -> None:
    forms = frozenset(name_index(ROWS).by_form)
    asked = may_name([("kiss", "and", "tell"), ("and", "tell"), ("tell",), ("kiss",)], forms)
    assert asked == [("kiss", "and", "tell"), ("tell",)]


def test_without_forms_every_spelling_is_asked() -> None:
    spellings = [("a", "b"), ("c",)]
    assert may_name(spellings, None) == spellings


def test_a_spelling_links_every_entity_whose_name_or_alias_has_its_form() -> None:
    rows = name_index(ROWS).links([("tell",), ("ledger", "db"), ("kiss",)], None, 5)
    assert [(r["id"], r["phrase"]) for r in rows] == [
        ("e2", "tell"), ("e3", "tell"), ("e1", "ledger db"),
    ]  # fmt: skip
    e1 = rows[2]
    assert (e1["name"], e1["type"], e1["aliases"], e1["mentions"]) == (
        "Ledger DB", "Service", ["the"], 7,
    )  # fmt: skip
    assert [r["id"] for r in name_index(ROWS).links([("tell",)], None, 1)] == ["e2"]


def test_scoped_an_entity_links_in_its_scope_by_its_name_or_an_alias_the_scope_gave() -> None:
    index = name_index(ROWS)
    # e2's alias "Tell" came from b: scoped to a it does not link, nor is it shown
    assert [r["id"] for r in index.links([("tell",)], ["a"], 5)] == []
    assert [r["id"] for r in index.links([("tell",)], ["a", "b"], 5)] == ["e2", "e3"]
    [kiss] = index.links([("kiss", "and", "tell")], ["a"], 5)
    assert kiss["aliases"] == []
    # e3 is only in b; the counts are the scope's when given
    [ledger] = index.links([("ledger", "db")], ["b"], 5, lambda eid: {"e1": 2}[eid])
    assert ledger["mentions"] == 2
    assert index.links([("tell",)], ["b"], 5, lambda eid: 0)[0]["id"] == "e3"
