"""The languages kg indexes text in, and how it tells them apart.

Each chunk is stored in one language, and its text is searched through that language's
fulltext index, whose Lucene analyzer stems the way the language inflects: ``платежей`` finds
``платежи`` in the Russian index, ``services`` finds ``service`` in the English one. A question
is sent to every language's index (analyzed there the same way) and the rankings are fused,
each weighted by how much of the question is written in that language's script.

Detection is by script, not by a statistical model: kg's corpora are Russian and English, often
in one document (Russian prose with English service names), and the two scripts never overlap.
A text is Russian when at least :data:`RUSSIAN_SHARE` (a fifth) of its letters are Cyrillic,
so a Russian runbook full of ``Billing Service`` and ``payments.completed`` is Russian, and an
English page quoting one Russian name stays English. Anything else (including other
Latin-script languages) goes to the English index, whose analyzer is the best of Neo4j's for
the Latin script at large; docs/search.md ("Languages") explains the choice.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

LanguageCode = Literal["en", "ru"]


@dataclass(frozen=True)
class Language:
    """One indexed language: its chunk label, fulltext index and Lucene analyzer."""

    code: LanguageCode
    name: str
    label: str  # a second label on its chunks (Chunk:ChunkRu); the index covers that label
    index: str
    analyzer: str


ENGLISH = Language("en", "English", "ChunkEn", "chunk_text_en", "english")
RUSSIAN = Language("ru", "Russian", "ChunkRu", "chunk_text_ru", "russian")
LANGUAGES: tuple[Language, ...] = (ENGLISH, RUSSIAN)
BY_CODE: dict[str, Language] = {lang.code: lang for lang in LANGUAGES}
#: Every language label, for removing the old one when a chunk's language changes.
LABELS: tuple[str, ...] = tuple(lang.label for lang in LANGUAGES)

#: Share of letters that must be Cyrillic for a text to count as Russian.
RUSSIAN_SHARE = 0.2
#: A language whose script is absent from the question still gets this weight: numbers, codes
#: and names written in the other script match there too.
MIN_WEIGHT = 0.1


def is_cyrillic(char: str) -> bool:
    return "\u0400" <= char <= "\u04ff"


def script_shares(text: str) -> dict[LanguageCode, float]:
    """The share of ``text``'s letters in each language's script (both 0.0 without letters)."""
    cyrillic = latin = 0
    for char in text:
        if not char.isalpha():
            continue
        if is_cyrillic(char):
            cyrillic += 1
        else:
            latin += 1
    total = cyrillic + latin
    if total == 0:
        return {"en": 0.0, "ru": 0.0}
    return {"en": latin / total, "ru": cyrillic / total}


def detect(text: str) -> LanguageCode:
    """``ru`` when at least :data:`RUSSIAN_SHARE` of the letters are Cyrillic, else ``en``."""
    return "ru" if script_shares(text)["ru"] >= RUSSIAN_SHARE else "en"


def index_weights(question: str) -> dict[str, float]:
    """How much each language's text ranking counts for ``question``: its script's share of the
    question's letters, never below :data:`MIN_WEIGHT` (a question without letters, such as a
    version number, counts everywhere)."""
    shares = script_shares(question)
    if not any(shares.values()):
        return {code: 1.0 for code in shares}
    return {code: max(share, MIN_WEIGHT) for code, share in shares.items()}


@functools.cache
def _stemmer(code: LanguageCode) -> Any:
    import snowballstemmer  # its package loads thirty languages: only when a word is stemmed

    return snowballstemmer.stemmer("russian" if code == "ru" else "english")


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The Snowball stem of one casefolded word, by its script: ``платежей`` -> ``платеж``,
    ``databases`` -> ``databas``. The same stemmers as Lucene's analyzers, so what the fulltext
    index would match, linking matches too. Cached per process: a pure function of the word,
    and the pure-Python stemmer was a tenth of a graph search's CPU on MuSiQue."""
    code: LanguageCode = "ru" if any(is_cyrillic(c) for c in word) else "en"
    return str(_stemmer(code).stemWord(word))


def stems(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(stem(w) for w in words)


#: Russian names of common entity types, for questions that ask for a type ("какую базу данных
#: ..." asks for a Database). Entity types are English (the extraction prompt's ontology); these
#: are the Russian words a question uses for them. Compared by stems, so any case form counts.
RUSSIAN_TYPE_NAMES: Mapping[str, tuple[str, ...]] = {
    "database": ("база данных", "бд", "субд", "хранилище"),
    "service": ("сервис", "служба", "микросервис"),
    "team": ("команда",),
    "person": ("человек", "сотрудник", "инженер", "руководитель"),
    "cluster": ("кластер",),
    "region": ("регион",),
    "topic": ("топик",),
    "incident": ("инцидент", "авария"),
    "product": ("продукт",),
    "library": ("библиотека",),
    "organization": ("организация", "компания"),
    "location": ("место", "город", "страна"),
    "event": ("событие",),
    "project": ("проект",),
    "document": ("документ",),
}
