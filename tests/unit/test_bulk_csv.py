"""Import-file values (kg/bulk/csvfiles.py): data never becomes CSV syntax."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime

import pytest

from kg.bulk.csvfiles import array_delimiter, field_text
from kg.errors import StoreError


@pytest.mark.parametrize(
    "value",
    ['Acme "Quoted", Inc.', "line\nbreak\r\nand, comma", "Служба; аутентификации", "", "\\"],
)
def test_a_string_reads_back_as_itself(value: str) -> None:
    line = field_text(value, "\ue000") + "," + field_text("next", "\ue000") + "\n"
    assert next(csv.reader(io.StringIO(line))) == [value, "next"]


def test_missing_is_an_empty_unquoted_field_and_empty_is_quoted() -> None:
    assert field_text(None, ";") == ""
    assert field_text("", ";") == '""'


def test_scalars_and_vectors_use_the_importers_forms() -> None:
    assert field_text(True, ";") == "true"
    assert field_text(7, ";") == "7"
    assert field_text(date(2024, 3, 1), ";") == "2024-03-01"
    assert field_text(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), ";") == (
        "2026-01-02T03:04:05+00:00"
    )
    vector = [0.1, -1e-05, 2.5, 1 / 3]
    assert field_text(vector, "\ue000") == '"' + "\ue000".join(map(repr, vector)) + '"'
    assert [float(x) for x in field_text(vector, ";").strip('"').split(";")] == vector


def test_array_delimiter_avoids_every_element() -> None:
    assert array_delimiter([["a;b", "c"]]) == "\ue000"
    assert array_delimiter([["x\ue000y"], ["\ue001"]]) == "\ue002"
    assert field_text(['a,"b"', "c"], "\ue000") == '"a,""b""\ue000c"'


def test_an_array_of_one_empty_string_is_refused_not_imported_as_empty() -> None:
    with pytest.raises(StoreError, match="one empty string"):
        field_text([""], ";")
