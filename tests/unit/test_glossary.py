"""kg.glossary: the shipped Russian-English word table and the gloss a question gets from it."""

from __future__ import annotations

import gzip

from kg.glossary import GLOSSARY_FILE, MAX_GLOSS_WORDS, _row, gloss
from kg.languages import is_cyrillic, stem


def test_inflected_russian_words_are_glossed_through_their_dictionary_form() -> None:
    # "сервиса платежей": genitive forms, glossed through «сервис», «платеж».
    found = gloss("сервиса платежей", "en")
    assert "service" in found
    assert "payment" in found
    assert found.index("service") < found.index("payment")  # the question's order


def test_english_words_are_glossed_into_russian() -> None:
    found = gloss("payment service", "ru")
    assert "платеж" in found
    assert "сервис" in found
    assert all(any(is_cyrillic(c) for c in word) for word in found)


def test_an_english_plural_is_looked_up_by_its_singular() -> None:
    assert "платеж" in gloss("payments", "ru")


def test_function_words_and_the_target_script_are_not_glossed() -> None:
    assert gloss("и в на когда", "en") == []
    assert gloss("the of and which", "ru") == []
    # Kafka is already Latin: only the Russian word is glossed for the English index.
    found = gloss("Kafka платежей", "en")
    assert "payment" in found
    assert "kafka" not in found


def test_one_word_per_stem_and_a_bounded_gloss() -> None:
    found = gloss("сервиса сервисы сервисом платежей платежи", "en")
    assert len({stem(w) for w in found}) == len(found)
    long_question = " ".join(["университет церковь поезд болезнь электричество"] * 20)
    assert len(gloss(long_question, "en")) <= MAX_GLOSS_WORDS


def test_the_shipped_table_maps_both_ways_with_its_licence_in_the_header() -> None:
    with gzip.open(GLOSSARY_FILE, "rt", encoding="utf-8") as lines:
        header = next(lines)
        rows = [line.rstrip("\n").split("\t") for line in lines]
    assert "CC BY-SA 4.0" in header
    languages = {language for language, _, _ in rows}
    assert languages == {"ru", "en"}
    assert len(rows) > 50_000
    assert all(1 <= len(found.split()) <= 3 for _, _, found in rows)


def test_every_row_is_found_by_the_binary_search_and_absent_words_are_not() -> None:
    # kg.glossary searches the sorted bytes instead of parsing 89,000 lines into a dict: a
    # row it cannot find is a word whose gloss silently vanished.
    with gzip.open(GLOSSARY_FILE, "rt", encoding="utf-8") as lines:
        next(lines)
        rows = [line.rstrip("\n").split("\t") for line in lines]
    keys = [f"{language}\t{word}\t".encode() for language, word, _ in rows]
    assert keys == sorted(keys), "the rows must be sorted by language<TAB>word<TAB> as bytes"
    for language, word, found in [*rows[:50], *rows[::17], *rows[-50:]]:
        assert _row(language, word) == tuple(found.split()), (language, word)
    for language, word in [("en", "a"), ("en", "zzzzzzzz"), ("ru", "аааааааа"), ("ru", "яяяяяяя"),
                           ("xx", "word"), ("", ""), ("en", "payment\tx")]:  # fmt: skip
        assert _row(language, word) is None, (language, word)


def test_the_english_reading_of_a_russian_question_keeps_its_names() -> None:
    from kg.glossary import english_reading

    reading = english_reading("Сколько лет было Мэннингу, когда он играл в Суперкубке 50?")
    assert reading.startswith(" ".join(gloss("Сколько лет было Мэннингу", "en")))
    # the names, as English spells them; the first word is capitalized by the sentence only
    assert reading.split()[-2:] == ["menningu", "superkubke"]
    assert "skolko" not in reading
    # Latin words are kept as written, after the gloss of the Russian ones
    assert english_reading("Какую базу использует Payments API?").endswith("Payments API")
    assert english_reading("") == ""
