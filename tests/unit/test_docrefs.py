"""Numbered references and title references between a run's documents (kg/docrefs.py)."""

from __future__ import annotations

import pytest

from kg.docgraph import category_name
from kg.docrefs import find, numbered, own_reference
from kg.models import Chunk, Document


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Приложение № 2 к Договору № 15/2024", [("appendix", "2"), ("contract", "15/2024")]),
        ("согласно Положению № 4 и Приказа № 12-к.", [("provision", "4"), ("order", "12-к")]),
        ("Договор поставки № 15/2024", [("contract", "15/2024")]),
        ("Приложение к Договору № 7", [("contract", "7")]),  # the contract's number
        ("по Регламенту №3, Инструкции № 5.1", [("regulation", "3"), ("instruction", "5.1")]),
        ("ГОСТ Р 7.0.97-2016 и ГОСТ 34.602–89", [("gost", "7.0.97-2016"), ("gost", "34.602-89")]),
        ("Федеральный закон № 152-ФЗ, а также 44-ФЗ", [("law", "152"), ("law", "44")]),
        ("see Policy 4.2 and Appendix 2.", [("policy", "4.2"), ("appendix", "2")]),
        ("Contract No. 15/2024 and Agreement #7", [("contract", "15/2024"), ("contract", "7")]),
        ("the policy of the company, appendix of it", []),
    ],
)
def test_numbered_references(text: str, expected: list[tuple[str, str]]) -> None:
    assert [n.key for n in numbered(text)] == expected


def test_canonical_names_of_loose_references() -> None:
    names = [n.name for n in numbered("по ГОСТ Р 7.0.97–2016 и Федеральному закону № 152‑ФЗ")]
    assert names[0] == "ГОСТ Р 7.0.97-2016"


def test_a_document_is_identified_by_the_first_reference_in_its_title_or_file_name() -> None:
    assert own_reference("Приложение № 2 к Договору № 15/2024") == ("appendix", "2")
    assert own_reference("Password rules", "legal/Policy 4.2.md") == ("policy", "4.2")
    assert own_reference("Положение о премировании", "hr/bonus.md") is None


def _doc(path: str, title: str, text: str) -> tuple[Document, Chunk]:
    doc = Document(path, path, title, text, "h")
    return doc, Chunk(path + "#0", path, 0, text, "h")


def test_references_by_inflected_title_by_number_and_not_by_one_word_titles() -> None:
    pairs = [
        _doc("a.md", "Положение о премировании", "Премия раз в квартал."),
        _doc("b.md", "Правила отпусков", "Согласно Положению о премировании и Отпуску."),
        _doc("c.md", "Отпуск", "Отпуск длится 28 дней."),  # one word: never looked for
        _doc("d.md", "Договор поставки № 15/2024", "Поставка серверов."),
        _doc("e.md", "Contract notes", "Contract No. 15/2024 is renewed; see 152-ФЗ."),
        _doc("f.md", "Приложение № 2 к Договору № 7", "x"),
        _doc("g.md", "Приложение № 2 к Договору № 8", "Приложение № 2 уточняет."),
    ]
    docs = [d for d, _ in pairs]
    found = find(docs, {d.id: [c] for d, c in pairs})
    assert {(src, dst) for _, src, dst in found.links} == {
        ("b.md", "a.md"),
        ("e.md", "d.md"),  # English spelling, Russian title: one kind
    }
    # Two documents claim «Приложение № 2»: neither is meant, and it is no loose reference.
    assert found.loose == {"e.md#0": {"152-ФЗ"}}


@pytest.mark.parametrize(
    ("folder", "name"),
    [("01_hr", "hr"), ("02-Договоры_2024", "Договоры 2024"), ("1. Кадры", "Кадры"),
     ("2024", "2024"), ("legal", "legal"), ("10_it-ops", "it ops")],
)  # fmt: skip
def test_category_names(folder: str, name: str) -> None:
    assert category_name(folder) == name


def test_the_document_graph_links_titles_and_files_its_folders() -> None:
    from kg.docgraph import CATEGORY, IN_CATEGORY, REFERENCE, REFERENCES, build
    from kg.resolve import HashingEmbedder

    texts = {
        "01_hr/a.md": ("Положение о премировании", "# Положение о премировании\n\nПремия."),
        "01_hr/b.md": ("Правила отпусков", "# Правила отпусков\n\nСогласно Положению о "
                       "премировании и 152-ФЗ."),
    }  # fmt: skip
    docs = [Document(p, p, t, x, "h", "2024-03-15") for p, (t, x) in texts.items()]
    chunks = {d.id: [Chunk(d.id + "#0", d.id, 0, d.text, "h")] for d in docs}
    graph = build(docs, chunks, [], HashingEmbedder(16), loose=True)
    names = {e.id: e for e in graph.entities}
    links = {(names[r.source].name, r.predicate, names[r.target].name) for r in graph.relations}
    assert links == {
        ("Правила отпусков", REFERENCES, "Положение о премировании"),
        ("Правила отпусков", IN_CATEGORY, "hr"),
        ("Положение о премировании", IN_CATEGORY, "hr"),
    }
    assert {r.valid_from.isoformat() for r in graph.relations if r.valid_from} == {"2024-03-15"}
    hr = next(e for e in graph.entities if e.type == CATEGORY)
    assert hr.aliases == ["01_hr"]
    law = next(e for e in graph.entities if e.type == REFERENCE)
    assert law.name == "152-ФЗ"
    assert ("01_hr/b.md#0", law.id) in graph.mentions
    # Off by default; and every switch off leaves the document graph as it was.
    assert not any(
        e.type == REFERENCE for e in build(docs, chunks, [], HashingEmbedder(16)).entities
    )
    bare = build(docs, chunks, [], HashingEmbedder(16), folders=False, references=False)
    assert bare.relations == []
    assert not any(e.type == CATEGORY for e in bare.entities)
