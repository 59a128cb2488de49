"""The extraction contract: names, predicates, dates, dangling ends, ontology."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kg.errors import ConfigError
from kg.extract.ontology import Ontology, load_ontology, ontology_from_settings
from kg.extract.predicates import (
    PREDICATE_RE,
    SYNONYMS,
    canonical_predicate,
    is_valid_predicate,
    normalize_predicate,
)
from kg.extract.schema import (
    ExtractedEntity,
    ExtractedRelation,
    ExtractionResult,
    parse_partial_date,
)
from kg.settings import ExtractSettings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("published by", "PUBLISHED_BY"),
        ("является частью", "ЯВЛЯЕТСЯ_ЧАСТЬЮ"),
        ("publishedBy", "PUBLISHED_BY"),
        ("Published-By", "PUBLISHED_BY"),
        ("  depends_on  ", "DEPENDS_ON"),
        ("DEPENDS_ON", "DEPENDS_ON"),
        ("owned  by!!", "OWNED_BY"),
        ("calls`) DETACH DELETE (n", "CALLS_DETACH_DELETE_N"),
        ("3 calls", "CALLS"),
        ("принадлежитКоманде", "ПРИНАДЛЕЖИТ_КОМАНДЕ"),
        ("ﬁle of", "FILE_OF"),  # NFKC ligature
    ],
)
def test_normalize_predicate(raw: str, expected: str) -> None:
    assert normalize_predicate(raw) == expected
    assert PREDICATE_RE.match(expected)
    assert is_valid_predicate(expected)


@pytest.mark.parametrize("raw", ["", "   ", "123", "--", "`"])
def test_normalize_predicate_rejects_letterless(raw: str) -> None:
    with pytest.raises(ValueError, match="no usable letters"):
        normalize_predicate(raw)


def test_normalize_predicate_is_bounded_and_idempotent() -> None:
    long = normalize_predicate("word " * 40)
    assert len(long) <= 64
    assert not long.endswith("_")
    assert normalize_predicate(long) == long
    assert not is_valid_predicate("calls")
    assert not is_valid_predicate("HAS SPACE")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024", date(2024, 1, 1)),
        ("2024-03", date(2024, 3, 1)),
        ("2024-03-05", date(2024, 3, 5)),
        ("2024-03-05T10:00:00Z", date(2024, 3, 5)),
        (2021, date(2021, 1, 1)),
        (None, None),
        ("", None),
        ("null", None),
        (date(2020, 2, 2), date(2020, 2, 2)),
    ],
)
def test_partial_dates(raw: Any, expected: date | None) -> None:
    assert parse_partial_date(raw) == expected


@pytest.mark.parametrize("raw", ["yesterday", "2024-13", "2024-02-30", "03/05/2024", "20245", 3.5])
def test_bad_dates_rejected(raw: Any) -> None:
    with pytest.raises(ValueError, match="date"):
        parse_partial_date(raw)


def test_entity_names_trimmed_and_non_empty() -> None:
    e = ExtractedEntity(name="  Payments \n Service ", type=" Service ", aliases=["PS", " ", "ps"])
    assert e.name == "Payments Service"
    assert e.type == "Service"
    assert e.aliases == ["PS"]
    with pytest.raises(ValidationError, match="must not be empty"):
        ExtractedEntity(name="   ", type="Service")
    with pytest.raises(ValidationError, match="must not be empty"):
        ExtractedEntity(name="X", type="")


def test_relation_fields() -> None:
    r = ExtractedRelation.model_validate(
        {"source": "A", "target": "B", "predicate": "part of", "valid_from": "2023", "weight": 1}
    )
    assert r.predicate == "PART_OF"
    assert r.valid_from == date(2023, 1, 1)
    assert r.weight == 1.0
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        ExtractedRelation(source="A", target="B", predicate="X", weight=1.5)
    with pytest.raises(ValidationError, match="before valid_from"):
        ExtractedRelation.model_validate(
            {
                "source": "A",
                "target": "B",
                "predicate": "X",
                "valid_from": "2024",
                "valid_to": "2023",
            }
        )
    with pytest.raises(ValidationError, match="not an ISO date"):
        ExtractedRelation.model_validate(
            {"source": "A", "target": "B", "predicate": "X", "valid_to": "soon"}
        )


def _payload(**relation: Any) -> dict[str, Any]:
    rel = {"source": "Payments", "target": "Ledger", "predicate": "calls"} | relation
    return {
        "entities": [
            {"name": "Payments", "type": "Service"},
            {"name": "Ledger Service", "type": "Service", "aliases": ["Ledger", "LDG"]},
        ],
        "relations": [rel],
    }


def test_relation_ends_resolve_to_entity_names_case_insensitively() -> None:
    result = ExtractionResult.model_validate(_payload(source="PAYMENTS", target="ldg"))
    assert result.relations[0].source == "Payments"
    assert result.relations[0].target == "Ledger Service"


def test_dangling_relation_end_rejected_with_actionable_message() -> None:
    with pytest.raises(ValidationError) as info:
        ExtractionResult.model_validate(_payload(target="Kafka"))
    message = str(info.value)
    assert "'Kafka' is not one of the extracted entities" in message
    assert "Add each missing entity" in message


def test_duplicate_entities_merge() -> None:
    result = ExtractionResult.model_validate(
        {
            "entities": [
                {"name": "Ledger", "type": "Service", "aliases": ["L1"]},
                {"name": "ledger", "type": "service", "description": "Books.", "aliases": ["L2"]},
                {"name": "Ledger", "type": "Document"},
            ]
        }
    )
    assert [(e.name, e.type) for e in result.entities] == [
        ("Ledger", "Service"),
        ("Ledger", "Document"),
    ]
    assert result.entities[0].aliases == ["L1", "L2"]
    assert result.entities[0].description == "Books."


def test_empty_result_is_valid() -> None:
    assert ExtractionResult.model_validate({}) == ExtractionResult()


def test_russian_result() -> None:
    result = ExtractionResult.model_validate(
        {
            "entities": [
                {"name": "Сервис платежей", "type": "Сервис"},
                {"name": "Платформа", "type": "Система"},
            ],
            "relations": [
                {"source": "сервис платежей", "target": "Платформа", "predicate": "является частью"}
            ],
        }
    )
    assert result.relations[0].predicate == "PART_OF"  # one predicate with its translation
    assert result.relations[0].source == "Сервис платежей"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("зависит от", "DEPENDS_ON"),
        ("depends on", "DEPENDS_ON"),
        ("ЗАВИСИТ_OT", "DEPENDS_ON"),  # Latin O and T in a Russian word: still the same
        ("является частью", "PART_OF"),
        ("принадлежит", "OWNED_BY"),
        ("владеет", "OWNS"),
        ("работает в", "RUNS_ON"),
        ("согласует", "СОГЛАСУЕТ"),  # not in the table: kept, Russian
    ],
)
def test_translations_are_one_predicate(raw: str, expected: str) -> None:
    assert canonical_predicate(raw) == expected
    relation = ExtractedRelation.model_validate({"source": "A", "target": "B", "predicate": raw})
    assert relation.predicate == expected


def test_every_synonym_is_a_normalized_predicate_of_another_script() -> None:
    for russian, english in SYNONYMS.items():
        assert normalize_predicate(russian) == russian
        assert normalize_predicate(english) == english
        assert russian not in SYNONYMS.values()


def test_ontology_from_context() -> None:
    ontology = Ontology.build(["Service", "Team"], ["calls", "owned by"])
    context = {"ontology": ontology}
    ok = ExtractionResult.model_validate(_payload(), context=context)
    assert ok.relations[0].predicate == "CALLS"
    typed = ExtractedEntity.model_validate({"name": "A", "type": "service"}, context=context)
    assert typed.type == "Service"  # the ontology's spelling
    with pytest.raises(ValidationError, match="entity type 'Database' is not allowed"):
        ExtractedEntity.model_validate({"name": "A", "type": "Database"}, context=context)
    with pytest.raises(ValidationError, match="predicate 'USES' is not allowed; use one of: CALLS"):
        ExtractionResult.model_validate(_payload(predicate="uses"), context=context)
    # Without an ontology anything goes.
    assert ExtractionResult.model_validate(_payload(predicate="uses")).relations


def test_ontology_partial_and_fingerprint() -> None:
    only_predicates = Ontology.build(None, ["CALLS"])
    ExtractedEntity.model_validate(
        {"name": "A", "type": "Anything"}, context={"ontology": only_predicates}
    )
    assert Ontology().fingerprint == "none"
    assert Ontology.build(["A"]).fingerprint != Ontology.build(["B"]).fingerprint
    with pytest.raises(ValueError, match="entity type"):
        Ontology.build(["{{ bad }}"])


def test_example_ontology_file_loads() -> None:
    ontology = load_ontology(ROOT / "schema" / "ontology.example.yaml")
    assert ontology.entity_types is not None
    assert "Service" in ontology.entity_types
    assert ontology.predicates is not None
    # the file lists PART_OF and its Russian translation: one predicate
    assert ontology.predicates.count("PART_OF") == 1
    assert "ЯВЛЯЕТСЯ_ЧАСТЬЮ" not in ontology.predicates


def test_ontology_files_json_yaml_and_errors(tmp_path: Path) -> None:
    (tmp_path / "o.json").write_text('{"predicates": ["depends on"]}')
    assert load_ontology(tmp_path / "o.json") == Ontology(None, ("DEPENDS_ON",))
    (tmp_path / "bad.yaml").write_text("entity_types: [a, [b]]\n")
    with pytest.raises(ConfigError, match="list of strings"):
        load_ontology(tmp_path / "bad.yaml")
    (tmp_path / "broken.yaml").write_text("entity_types: [\n")
    with pytest.raises(ConfigError, match="not valid"):
        load_ontology(tmp_path / "broken.yaml")
    with pytest.raises(ConfigError, match="cannot read"):
        load_ontology(tmp_path / "missing.yaml")


def test_ontology_from_settings_lists_override_file(tmp_path: Path) -> None:
    (tmp_path / "o.yaml").write_text("entity_types: [Service]\npredicates: [CALLS]\n")
    settings = ExtractSettings(ontology_file=tmp_path / "o.yaml", allowed_predicates=["uses"])
    ontology = ontology_from_settings(settings)
    assert ontology.entity_types == ("Service",)
    assert ontology.predicates == ("USES",)
    assert ontology_from_settings(ExtractSettings()).empty


def test_json_schema_is_plain_for_llms() -> None:
    schema = ExtractionResult.model_json_schema()
    relation = schema["$defs"]["ExtractedRelation"]["properties"]
    assert relation["predicate"]["type"] == "string"
    assert relation["weight"]["maximum"] == 1.0
