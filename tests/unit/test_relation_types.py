"""The one relation-type allowlist, confusable letters, and structural names (issue 17, item 9)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kg.cypher.params import NeighborhoodParams
from kg.extract.predicates import PREDICATE_RE, normalize_predicate
from kg.models import RELATION_TYPE_RE, STRUCTURAL_TYPES, is_relation_type
from kg.search.models import SearchRequest


@pytest.mark.parametrize(
    "name", ["DEPENDS_ON\n", "DEPENDS_ON\n\n", "A\nB", "DEPENDS_ON ", "X`Y", "", "1A"]
)
def test_allowlist_is_a_full_match(name: str) -> None:
    assert not is_relation_type(name)
    with pytest.raises(ValidationError):
        SearchRequest(query="q", relation_types=[name])


def test_types_are_upper_case() -> None:
    assert not is_relation_type("depends_on")
    assert is_relation_type("DEPENDS_ON")


def test_every_surface_uses_the_one_allowlist() -> None:
    assert PREDICATE_RE is RELATION_TYPE_RE
    with pytest.raises(ValidationError, match="relation_types"):
        NeighborhoodParams(entity_id="x", relation_types=["DEPENDS_ON\n"])
    assert NeighborhoodParams(entity_id="x", relation_types=["ЗАВИСИТ_ОТ"]).relation_types == [
        "ЗАВИСИТ_ОТ"
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("DEPENDS_ОN", "DEPENDS_ON"),  # Cyrillic О in a Latin word
        ("dеpends on", "DEPENDS_ON"),  # Cyrillic е
        ("ЗАВИСИТ_OT", "ЗАВИСИТ_ОТ"),  # Latin O and T in a Russian word
        ("зависит от", "ЗАВИСИТ_ОТ"),  # genuinely Russian stays Russian
        ("является частью", "ЯВЛЯЕТСЯ_ЧАСТЬЮ"),
        ("uses API", "USES_API"),
        ("СЕРВИС_ВЫЗЫВАЕТ_API", "СЕРВИС_ВЫЗЫВАЕТ_АРІ"),  # all-confusable word: the majority
    ],
)
def test_confusable_letters_fold_into_the_words_script(raw: str, expected: str) -> None:
    assert normalize_predicate(raw) == expected


def test_structural_types_are_reserved() -> None:
    reserved = {"MENTIONS", "PART_OF", "NEXT", "IN_COMMUNITY", "PARENT", "ABOUT", "RELATED"}
    assert reserved <= STRUCTURAL_TYPES
