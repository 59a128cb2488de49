"""A word-for-word gloss of a question into the corpus's other language (Russian <-> English).

Offline, a Russian question meets English text only through names, transliterations and the
cognates it shares with English (docs/search.md, "Languages"), and an English question meets
Russian text only through names. The gloss adds, to the other language's fulltext query, the
words nearest to each of the question's words in that language: «белок» -> protein,
«сервис платежей» -> service, payment. BM25 then does what it does with any query: a wrong
gloss word rarely matches a passage, a right one does.

The table (kg/glossary-ru-en.tsv.gz: 89,000 words, 1.2 MB) is built once by
bench/glossary/build.py from multilingual-e5-small's embeddings of single words; nothing is
downloaded and no model runs here: a binary search per word over the table's lines, which
are sorted; the file is decompressed on first use (~20 ms).
"""

from __future__ import annotations

import functools
import gzip
import zlib
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
def _table() -> bytes:
    """The table's lines, sorted by ``language<TAB>word<TAB>`` as bytes (the header first)."""
    try:
        with gzip.open(GLOSSARY_FILE, "rb") as raw:
            return raw.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise ConfigError(f"cannot read kg's glossary {GLOSSARY_FILE}: {exc}") from exc


def _row(language: str, word: str) -> tuple[str, ...] | None:
    """The words of ``word``'s line, by binary search over the sorted bytes: a lookup costs
    microseconds and the table only its decompression (~20 ms), where a parse of its 89,000
    lines into a dict cost ~0.2 s: most of a one-shot `kg search`'s own time."""
    data, key = _table(), f"{language}\t{word}\t".encode()
    low, high = 0, len(data)  # both always the start of a line (or the end)
    while low < high:
        middle = (low + high) // 2
        start = data.rfind(b"\n", low, middle) + 1 or low
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end]
        if line.startswith(key):
            return tuple(line[len(key) :].decode("utf-8").split())
        if line[: len(key)] < key:
            low = end + 1
        else:
            high = start
    return None


@functools.lru_cache(maxsize=65_536)
def _lookup(word: str, source: LanguageCode) -> tuple[str, ...]:
    if source == "ru":
        from kg.resolve.russian import Morphology

        found = _row("ru", word)
        return found if found is not None else _row("ru", Morphology.lemma(word)) or ()
    found = _row("en", word)
    if found is None and len(word) > 3 and word.endswith("s"):  # an English plural
        found = _row("en", word[:-1])
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


def english_reading(text: str) -> str:
    """What an English-only embedder (WordLlama) reads for a Russian question: its gloss, and
    its names as English spells them: each capitalized word past the first transliterated
    (``Мэннингу`` -> *menningu*, near *Manning* in a subword table), each Latin word as
    written (``Payments API``). The gloss alone dropped them; the whole question
    transliterated drowns the gloss (XQuAD ru->en `vector` R@5 73.6 with the gloss, 78.2
    with its names, 60.3 with the whole question: docs/search.md, "Languages")."""
    from kg.resolve.normalize import transliterate  # the ingest's own, loaded when asked

    names: list[str] = []
    for at, token in enumerate(text.split()):
        word = token.strip(".,;:!?()[]{}«»\"'")
        if not word:
            continue
        if not any(is_cyrillic(c) for c in word):
            if any(c.isalpha() for c in word):
                names.append(word)
        elif at > 0 and word[0].isupper():
            names.append(transliterate(word.casefold()))
    return " ".join([*gloss(text, "en"), *names])
