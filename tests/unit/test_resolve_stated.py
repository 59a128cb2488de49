"""Abbreviations a document states, and what the ingest does with them (no Neo4j needed)."""

from __future__ import annotations

from kg.extract.schema import ExtractionResult
from kg.ingest import ChunkFacts, _mentions
from kg.resolve import Resolver, make_embedder
from kg.resolve.stated import stated_abbreviations
from kg.settings import ResolveSettings


def test_a_stated_abbreviation_pairs_with_the_nominative_of_its_long_form() -> None:
    found = stated_abbreviations(
        ["Увольнение регулируется согласно Трудовому кодексу Российской Федерации (ТК РФ)."]
    )
    assert found["тк рф"] == "Трудовой кодекс Российской Федерации"
    assert found["трудовой кодекс российской федерации"] == "ТК РФ"


def test_english_initials_skip_stopwords() -> None:
    found = stated_abbreviations(["Access goes through Identity and Access Management (IAM)."])
    assert found["iam"] == "Identity and Access Management"


def test_brackets_that_abbreviate_nothing_are_ignored() -> None:
    text = "Prices in the table (EUR, USD) are final (see below). The server (HTTP) answers."
    assert stated_abbreviations([text]) == {}


def test_an_abbreviation_with_two_meanings_is_left_out() -> None:
    found = stated_abbreviations(
        [
            "Отчёт готовит Финансовая служба (ФС).",
            "Данные хранятся в Файловой системе (ФС).",
        ]
    )
    assert "фс" not in found


def _facts(*names: str) -> list[ChunkFacts]:
    return [
        ChunkFacts(
            f"c{i}",
            ExtractionResult.model_validate({"entities": [{"name": n, "type": "Document"}]}),
        )
        for i, n in enumerate(names)
    ]


def test_the_ingest_gives_each_side_the_other_as_an_alias() -> None:
    stated = stated_abbreviations(["Порядок определяет Положение о коммерческой тайне (ПКТ)."])
    mentions, _ = _mentions(_facts("ПКТ", "Положению о коммерческой тайне"), stated)
    assert mentions[0].aliases == ("Положение о коммерческой тайне",)
    assert mentions[1].aliases == ("ПКТ",)


def test_a_stated_abbreviation_decides_what_initials_alone_cannot() -> None:
    # Two documents of one type share the initials ПКТ: the acronym rule alone is ambiguous
    # and keeps ПКТ apart; the text that states which one it abbreviates joins it.
    names = ("Положение о коммерческой тайне", "Порядок контроля транзакций", "ПКТ")
    settings = ResolveSettings()
    resolver = Resolver(settings, make_embedder(settings))
    alone, _ = _mentions(_facts(*names))
    ids = resolver.resolve(alone).entity_ids
    assert len(set(ids)) == 3
    stated = stated_abbreviations(["Сотрудник соблюдает Положение о коммерческой тайне (ПКТ)."])
    told, _ = _mentions(_facts(*names), stated)
    ids = resolver.resolve(told).entity_ids
    assert ids[2] == ids[0] != ids[1]
