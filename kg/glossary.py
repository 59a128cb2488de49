"""A word-for-word gloss of a question into the corpus's other language (Russian <-> English).

Offline, a Russian question meets English text only through names, transliterations and the
cognates it shares with English (docs/search.md, "Languages"), and an English question meets
Russian text only through names. The gloss adds, to the other language's fulltext query, the
words nearest to each of the question's words in that language: «белок» -> protein,
«сервис платежей» -> service, payment. BM25 then does what it does with any query: a wrong
gloss word rarely matches a passage, a right one does.

The table (kg/glossary-ru-en.tsv.gz: 89,000 words, 1.7 MB) is built once by
bench/glossary/build.py from multilingual-e5-small's embeddings of single words; nothing is
downloaded and no model runs here: a lookup per word, the table read on first use (~0.3 s).
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from kg.errors import ConfigError
from kg.languages import LanguageCode, is_cyrillic, stem
from kg.words import STOP_WORDS, words

GLOSSARY_FILE = Path(__file__).with_name("glossary-ru-en.tsv.gz")
#: Most gloss words one question gets (three per word of the question at most).
MAX_GLOSS_WORDS = 24
#: Shortest word of the question that is glossed: shorter ones are function words or noise.
MIN_LETTERS = 3


@functools.cache
def _table() -> dict[tuple[str, str], tuple[str, ...]]:
    """(language, word) -> the nearest words of the other language, best first."""
    try:
        with gzip.open(GLOSSARY_FILE, "rt", encoding="utf-8") as lines:
            table: dict[tuple[str, str], tuple[str, ...]] = {}
            for line in lines:
                if line.startswith("#"):
                    continue
                language, word, found = line.rstrip("\n").split("\t")
                table[(language, word)] = tuple(found.split())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read kg's glossary {GLOSSARY_FILE}: {exc}") from exc
    return table


def _lookup(word: str, source: LanguageCode) -> tuple[str, ...]:
    table = _table()
    if source == "ru":
        from kg.resolve.russian import Morphology

        found = table.get(("ru", word))
        return found if found is not None else table.get(("ru", Morphology.lemma(word)), ())
    found = table.get(("en", word))
    if found is None and len(word) > 3 and word.endswith("s"):  # an English plural
        found = table.get(("en", word[:-1]))
    return found or ()


def gloss(text: str, target: LanguageCode) -> list[str]:
    """The ``target`` language's words for ``text``'s words in the other language, in the
    order of the text, one per stem (``protects`` and ``protect`` are one query term to an
    English index), at most :data:`MAX_GLOSS_WORDS`. Words already in ``target``'s script
    and function words are not glossed."""
    source: LanguageCode = "ru" if target == "en" else "en"
    out: list[str] = []
    seen: set[str] = set()
    for word in words(text.replace("ё", "е").replace("Ё", "Е")):
        if len(word) < MIN_LETTERS or word in STOP_WORDS or not word.isalpha():
            continue
        if any(is_cyrillic(c) for c in word) != (source == "ru"):
            continue
        for found in _lookup(word, source):
            key = stem(found)
            if key not in seen:
                seen.add(key)
                out.append(found)
                if len(out) >= MAX_GLOSS_WORDS:
                    return out
    return out
