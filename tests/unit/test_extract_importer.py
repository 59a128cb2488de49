"""Triplets JSONL import: good lines load, bad lines are reported by line number."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from kg.errors import ConfigError
from kg.extract.importer import DEFAULT_ENTITY_TYPE, read_triplets
from kg.extract.ontology import Ontology


def _line(**fields: Any) -> str:
    return json.dumps(fields, ensure_ascii=False)


GOOD = _line(
    id="adr-7",
    title="ADR 7",
    text="Payments depends on Ledger since March 2024.",
    triplets=[
        {
            "subject": "Payments",
            "predicate": "depends on",
            "object": "Ledger",
            "subject_type": "Service",
            "object_type": "Service",
            "description": "Payments depends on Ledger",
            "weight": 0.9,
            "valid_from": "2024-03",
        },
        {"subject": "Ledger", "predicate": "owned by", "object": "Team Atlas"},
    ],
)
RUSSIAN = _line(
    title="Платформа",
    text="Сервис платежей является частью платформы.",
    triplets=[
        {"subject": "Сервис платежей", "predicate": "является частью", "object": "Платформа"}
    ],
)


def _write(tmp_path: Path, *lines: str | bytes) -> Path:
    path = tmp_path / "triplets.jsonl"
    data = b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines)
    path.write_bytes(data + b"\n")
    return path


def test_good_lines_load(tmp_path: Path) -> None:
    result = read_triplets(_write(tmp_path, GOOD, "", "   ", RUSSIAN))
    assert result.errors == []
    assert len(result.documents) == 2
    adr, ru = result.documents
    assert adr.id == "adr-7"
    assert adr.title == "ADR 7"
    assert adr.text.startswith("Payments")
    names = {(e.name, e.type) for e in adr.result.entities}
    assert names == {
        ("Payments", "Service"),
        ("Ledger", "Service"),
        ("Team Atlas", DEFAULT_ENTITY_TYPE),
    }
    first, second = adr.result.relations
    assert first.predicate == "DEPENDS_ON"
    assert first.weight == 0.9
    assert first.valid_from == date(2024, 3, 1)
    assert second.predicate == "OWNED_BY"
    assert second.weight == 0.5
    assert ru.id is None
    assert ru.result.relations[0].predicate == "PART_OF"  # "является частью" translates it
    assert ru.result.entities[0].name == "Сервис платежей"


def test_type_learned_from_a_later_triplet(tmp_path: Path) -> None:
    line = _line(
        title="t",
        text="x",
        triplets=[
            {"subject": "A", "predicate": "uses", "object": "B"},
            {"subject": "B", "predicate": "uses", "object": "C", "subject_type": "Database"},
        ],
    )
    doc = read_triplets(_write(tmp_path, line)).documents[0]
    assert {e.name: e.type for e in doc.result.entities} == {
        "A": "Entity",
        "B": "Database",
        "C": "Entity",
    }


def test_document_without_triplets_is_fine(tmp_path: Path) -> None:
    doc = read_triplets(_write(tmp_path, _line(title="t", text="plain"))).documents[0]
    assert doc.result.entities == []


def test_malformed_lines_reported_with_line_numbers(tmp_path: Path) -> None:
    triplet = {"subject": "A", "predicate": "uses", "object": "B"}
    path = _write(
        tmp_path,
        GOOD,  # 1
        "{not json",  # 2
        _line(text="no title"),  # 3
        _line(title="t", text="x", triplets=[triplet | {"valid_from": "someday"}]),  # 4
        _line(title="t", text="x", triplets=[triplet | {"weight": 2}]),  # 5
        _line(title="t", text="x", triplets=[triplet | {"weight": "heavy"}]),  # 6
        _line(title="t", text="x", triplets=[{"subject": "A", "object": "B"}]),  # 7
        _line(title="t", text="x", triplets=[triplet | {"predicate": "?!"}]),  # 8
        "[1, 2]",  # 9
        b"\xff\xfe broken",  # 10
        "",  # 11 (blank: ignored)
        _line(title="t", text="x", triplets=[triplet | {"subjet": "typo"}]),  # 12
        _line(title="t", text="x", triplets=[triplet | {"subject": "  "}]),  # 13
        _line(title="t", text="x", triplets=[triplet | {"valid_from": "2024", "valid_to": "2020"}]),
        RUSSIAN,  # 15
    )
    result = read_triplets(path)
    # Lines that are not documents are skipped with their line numbers ...
    errors = dict(result.errors)
    assert sorted(errors) == [2, 3, 9, 10]
    assert errors[2].startswith("invalid JSON")
    assert errors[3] == "title: Field required"
    assert errors[9] == "expected a JSON object"
    assert errors[10] == "not valid UTF-8"
    # ... while a bad triplet drops alone: its document, text and other facts still load.
    by_line = {d.line: d for d in result.documents}
    assert sorted(by_line) == [1, 4, 5, 6, 7, 8, 12, 13, 14, 15]
    assert by_line[15].title == "Платформа"
    reasons = {n: [(x.where(), x.reason) for x in d.dropped] for n, d in by_line.items()}
    assert reasons[1] == []
    assert reasons[15] == []
    for n in (4, 5, 6, 7, 8, 12, 13, 14):
        assert [w for w, _ in reasons[n]] == ["triplets[0]"], n
        assert by_line[n].text == "x"
        assert by_line[n].result.relations == []
    assert "valid_from" in reasons[4][0][1]
    assert "ISO date" in reasons[4][0][1]
    assert reasons[5][0][1].startswith("weight")
    assert reasons[6][0][1].startswith("weight")
    assert reasons[7][0][1] == "predicate: Field required"
    assert "no usable letters" in reasons[8][0][1]
    assert "subjet" in reasons[12][0][1]
    assert reasons[13][0][1] == "subject: must not be empty"
    assert "before valid_from" in reasons[14][0][1]


def test_bad_triplet_among_good_ones_drops_alone(tmp_path: Path) -> None:
    good = {"subject": "Auth", "predicate": "uses", "object": "Postgres"}
    long_name = "x" * 400
    path = _write(
        tmp_path,
        _line(
            title="t",
            text="Auth uses Postgres.",
            entities=[{"name": long_name}, {"name": "Auth", "aliases": ["auth-svc"]}],
            triplets=[good, good | {"object": long_name}, good | {"predicate": "calls"}],
        ),
    )
    doc = read_triplets(path).documents[0]
    assert [(r.source, r.predicate, r.target) for r in doc.result.relations] == [
        ("Auth", "USES", "Postgres"),
        ("Auth", "CALLS", "Postgres"),
    ]
    assert [(x.where(), "longer than 300" in x.reason) for x in doc.dropped] == [
        ("entities[0]", True),
        ("triplets[1]", True),
    ]


def test_ontology_applies_to_imports(tmp_path: Path) -> None:
    ontology = Ontology.build(["Service", "Entity"], ["DEPENDS_ON"])
    path = _write(tmp_path, GOOD)
    result = read_triplets(path, ontology=ontology)
    [doc] = result.documents
    [dropped] = doc.dropped
    assert dropped.where() == "triplets[1]"
    assert "predicate 'OWNED_BY' is not allowed" in dropped.reason


def test_bom_first_line_and_unreadable_file(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\xef\xbb\xbf" + GOOD.encode())
    assert len(read_triplets(path).documents) == 1
    with pytest.raises(ConfigError, match="cannot read"):
        read_triplets(tmp_path / "missing.jsonl")


def test_declared_entities_give_types_descriptions_and_aliases(tmp_path: Path) -> None:
    line = _line(
        title="Auth",
        text="AuthService, also called the OAuth Server, stores data in Postgres.",
        entities=[
            {
                "name": "AuthService",
                "type": "Service",
                "aliases": ["OAuth Server"],
                "description": "The token issuer.",
            }
        ],
        triplets=[{"subject": "OAuth Server", "predicate": "stores data in", "object": "Postgres"}],
    )
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n")
    result = read_triplets(path)
    assert result.errors == []
    doc = result.documents[0].result
    by_name = {e.name: e for e in doc.entities}
    assert set(by_name) == {"AuthService", "Postgres"}  # the alias did not become an entity
    assert by_name["AuthService"].aliases == ["OAuth Server"]
    assert by_name["AuthService"].type == "Service"
    assert by_name["AuthService"].description == "The token issuer."
    assert doc.relations[0].source == "AuthService"  # ends are rewritten to the entity name


def test_bad_entity_declaration_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line(title="x", text="y", entities=[{"name": " "}]) + "\n")
    result = read_triplets(path)
    assert result.errors == []
    [doc] = result.documents
    assert doc.text == "y"
    assert [(x.where(), x.reason) for x in doc.dropped] == [
        ("entities[0]", "name: must not be empty")
    ]
