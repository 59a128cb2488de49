"""A document's own date: front matter first, then a date in its title (kg/docdates.py)."""

from __future__ import annotations

import pytest

from kg.docdates import document_date, parse_date


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Отчёт 2024-03-15", "2024-03-15"),
        ("Приказ от 15.03.2024 № 5", "2024-03-15"),
        ("Положение от 15 марта 2024 г.", "2024-03-15"),
        ("Протокол 1 сентября 2023 года", "2023-09-01"),
        ("Minutes March 15, 2024", "2024-03-15"),
        ("Review 15 March 2024", "2024-03-15"),
        ("Sept. 3rd, 2022 retro", "2022-09-03"),
        ("31.02.2024", None),  # no such day
        ("Policy 4.2", None),
        ("no date at all", None),
    ],
)
def test_dates_in_titles(text: str, expected: str | None) -> None:
    assert parse_date(text) == expected


def test_the_first_date_written_wins() -> None:
    assert parse_date("Отчёт за 15 марта 2024, исправлен 2024-04-01") == "2024-03-15"


def test_front_matter_date_comes_before_the_title() -> None:
    text = "---\ntitle: x\ndate: 2023-01-02\n---\n# Report 2024-05-06\n"
    assert document_date(text, "Report 2024-05-06") == "2023-01-02"
    assert document_date("---\ndate: '5 мая 2023'\n---\n", None) == "2023-05-05"
    assert document_date("---\ndate: 2023-01-02T10:00:00Z\n---\n", None) == "2023-01-02"
    assert document_date("---\ndate: soon\n---\n# Report 2024-05-06", "Report 2024-05-06") == (
        "2024-05-06"
    )
    assert document_date("# Title", "Title") is None
