"""The language contract: detection by script, index weights, stems, asked types, spellings."""

from __future__ import annotations

import pytest

from kg.cypher.params import MAX_FUZZY_WORDS, ChunksByTextParams
from kg.graph import migrate, writer
from kg.languages import (
    LABELS,
    LANGUAGES,
    MIN_WEIGHT,
    detect,
    index_weights,
    script_shares,
    stem,
    stems,
)
from kg.search.retrieval import (
    asked_types,
    cognate_stems,
    cyrillic_loanword,
    latin_cognate_stems,
    question_ngrams,
    spellings,
)
from kg.words import words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The payments service writes to Kafka.", "en"),
        ("Сервис платежей пишет события в топик payments.completed.", "ru"),
        # Russian prose full of English names is still Russian ...
        ("Billing Service читает payments.completed из Kafka на k8s-ru-1.", "ru"),
        # ... and an English page quoting one Russian name stays English.
        ("The Moscow team calls it сервис in their runbooks and on every dashboard.", "en"),
        ("2024-10-03 12:00", "en"),
        ("", "en"),
    ],
)
def test_detect_by_script(text: str, expected: str) -> None:
    assert detect(text) == expected


def test_script_shares_count_letters_only() -> None:
    assert script_shares("abc где 123 !!") == {"en": 0.5, "ru": 0.5}
    assert script_shares("1234") == {"en": 0.0, "ru": 0.0}


def test_index_weights_follow_the_question_script_with_a_floor() -> None:
    assert index_weights("Какая база данных?") == {"en": MIN_WEIGHT, "ru": 1.0}
    assert index_weights("Which database?") == {"en": 1.0, "ru": MIN_WEIGHT}
    assert index_weights("2024") == {"en": 1.0, "ru": 1.0}
    mixed = index_weights("Какую базу использует Payments API?")
    assert 0.3 < mixed["en"] < 0.5 < mixed["ru"]


def test_snowball_stems_meet_across_case_forms() -> None:
    assert stem("платежей") == stem("платежи") == stem("платеж")
    assert stem("сервисов") == stem("сервис")
    assert stem("databases") == stem("database")
    # Different stems do not meet (the issue's own example).
    assert stem("зависимости") != stem("зависит")
    assert stems(["базу", "данных"]) == stems(["база", "данные"])


def test_asked_types_by_english_and_russian_names() -> None:
    types = {"Database", "Service", "Team"}
    assert asked_types(words("Which database does it use?"), types) == {"Database"}
    assert asked_types(words("Какую базу данных использует"), types) == {"Database"}
    assert asked_types(words("какая команда владеет"), types) == {"Team"}
    assert asked_types(words("what happened on Monday"), types) == set()
    # A type word must be whole: "данных" alone is not "база данных".
    assert asked_types(words("сколько данных"), types) == set()


def test_spellings_add_latin_transliteration_of_cyrillic_ngrams() -> None:
    grams = question_ngrams("Кто чинил Кафку и Kafka?", 8)
    found = spellings(grams, 128)
    assert ("кафку",) in found
    assert found[("kafku",)] == [("кафку",)]
    assert ("kafka",) in found  # Latin words are looked up as they are, once
    assert len(spellings(grams, 3)) == 3


def test_every_language_label_is_removed_before_one_is_set() -> None:
    # The writer and the migration remove every language label before setting the new one.
    removes = f"REMOVE c:{':'.join(LABELS)}"
    assert removes in writer._UPSERT_CHUNKS
    assert removes in migrate._SET_CHUNK_LANGUAGES


def test_chunks_by_text_queries_each_language_index_by_its_own_text() -> None:
    params = ChunksByTextParams(text="платежи OR (x)", texts={"en": "payments"}, k=5)
    queries = params.cypher_params()["queries"]
    assert [q["index"] for q in queries] == [lang.index for lang in LANGUAGES]
    by_language = {q["language"]: q["text"] for q in queries}
    assert by_language == {"en": "payments", "ru": "платежи or \\(x\\)"}
    assert params.cypher_params()["limit"] == 5 * len(LANGUAGES)
    with pytest.raises(ValueError, match="'en' or 'ru'"):
        ChunksByTextParams(text="x", texts={"de": "y"})  # type: ignore[dict-item]


def test_cognate_stems_are_transliterated_content_words_without_case_endings() -> None:
    stems_ = cognate_stems("В каком году Тесла переехал в Варшаву и изучал теорию? 1884 Kafka", 32)
    assert stems_ == ["tesl", "pereekhal", "varshav", "izuchal", "teori"]
    assert len(cognate_stems(" ".join(f"слово{i}" for i in range(100)), 5)) == 5


@pytest.mark.parametrize(
    ("english", "russian_stem"),
    [
        # each within the fuzzy edits of what Russian's Snowball stemmer keeps of the loanword
        ("component", "компонент"),  # компонент, компонента, компонентов
        ("components", "компонент"),
        ("reactive", "реактив"),  # реактивность -> реактивн: 1 edit
        ("directive", "директив"),  # директива -> директив
        ("server", "сервер"),
        ("method", "метод"),  # th -> т
        ("animation", "анимаци"),  # tion -> ци: анимация -> анимац, 1 edit
        ("classes", "класс"),  # a double s is not a plural's
        ("theory", "теори"),  # теория -> теор, 1 edit
        ("clicking", "клик"),
    ],
)
def test_english_words_are_spelt_as_russian_loanwords(english: str, russian_stem: str) -> None:
    assert cyrillic_loanword(english) == russian_stem


def test_latin_cognate_stems_are_an_english_questions_content_words_only() -> None:
    question = "How do I register a custom directive in the Vue app? 2024 Тесла"
    found = latin_cognate_stems(question, 32)
    assert found == ["регистер", "кустом", "директив"]  # "vue", "app": under 4 letters
    assert all(4 <= len(w) <= 40 and w.isalpha() for w in found)
    assert len(latin_cognate_stems(" ".join(f"word{chr(97 + i)}x" for i in range(26)), 5)) == 5


def test_fuzzy_words_are_rendered_by_the_model_never_taken_as_syntax() -> None:
    params = ChunksByTextParams(text="Тесла", fuzzy={"en": ["tesl", "varshavyanin"]})
    en = params.cypher_params()["queries"][0]
    assert en["text"] == "Тесла tesl~1 varshavyanin~2"
    for bad in (["te~2"], ["a b c"], ["x"], ["w" * 41], ["tesl"] * (MAX_FUZZY_WORDS + 1)):
        with pytest.raises(ValueError, match="fuzzy"):
            ChunksByTextParams(text="x", fuzzy={"en": bad})


def test_the_glossed_language_counts_at_least_its_share_of_the_corpus() -> None:
    from kg.search.signals.text import language_queries

    question = "How do I listen to a click?"
    texts, fuzzy, weights = language_queries(question, {}, {})
    assert set(fuzzy) == {"ru"}
    assert texts["ru"].startswith(question)
    assert weights == {"en": 1.0, "ru": MIN_WEIGHT}  # the question's script alone
    # over Vue's Russian guide (89% of its chunks Russian, the English ones mostly code): the
    # glossed Russian ranking counts its share, the English one under half the corpus less
    _, _, weights = language_queries(question, {}, {"en": 0.11, "ru": 0.89})
    assert weights == {"en": pytest.approx(0.22), "ru": 0.89}
    # a question's own language at half the corpus or more counts fully
    _, _, weights = language_queries(question, {}, {"en": 0.5, "ru": 0.5})
    assert weights == {"en": 1.0, "ru": 0.5}
    # never under the floor
    _, _, weights = language_queries(question, {}, {"en": 0.0, "ru": 1.0})
    assert weights == {"en": MIN_WEIGHT, "ru": 1.0}
    # a Russian question over a mostly English corpus: its own words found in the Russian
    # prose keep their weight (a minority English index is mostly code; a Russian one is not)
    _, _, weights = language_queries("Какая болезнь поражает лёгкие?", {}, {"en": 0.9, "ru": 0.1})
    assert weights == {"en": 0.9, "ru": 1.0}
    # a Russian question over both languages alike; the question's own language is untouched
    _, fuzzy, weights = language_queries(
        "Какая болезнь поражает лёгкие?", {}, {"en": 0.5, "ru": 0.5}
    )
    assert set(fuzzy) == {"en"}
    assert weights == {"en": 0.5, "ru": 1.0}
    # a translation counts fully and is not glossed
    texts, fuzzy, weights = language_queries(question, {"ru": "Как слушать клик?"}, {"ru": 0.2})
    assert fuzzy == {}
    assert texts["ru"] == "Как слушать клик?"
    assert weights["ru"] == 1.0
