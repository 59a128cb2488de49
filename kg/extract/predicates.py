"""Predicate normalization: free text to one UPPER_SNAKE predicate.

Shared by the extraction schema, the importer and the graph writer, so one spelling of a
relation ("published by", "publishedBy", "Published-By") always lands on one predicate
(``PUBLISHED_BY``). Unicode letters are kept: ``"является частью"`` -> ``ЯВЛЯЕТСЯ_ЧАСТЬЮ``.
Letters that look alike across Latin and Cyrillic are folded into the script of the rest of
their word, so ``DEPENDS_ОN`` with a Cyrillic ``О`` is ``DEPENDS_ON``, while a genuinely
Russian predicate stays Russian. The allowlist itself lives in :mod:`kg.models`.

Translations are one predicate: a corpus in English and Russian stated ``depends on`` and
``зависит от`` for the same fact, and the vocabulary held DEPENDS_ON and ЗАВИСИТ_ОТ apart (two
types in Browser, two values for a filter, half the evidence each). :func:`canonical_predicate`
maps a normalized predicate through :data:`SYNONYMS`, a small table of Russian phrasings of
the common relations to the English predicate, and is what extraction, the triplets import and
an ontology use. A predicate not in the table stays as it is (Russian or not).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from kg.models import RELATION_TYPE_RE, is_relation_type

__all__ = [
    "MAX_PREDICATE_LENGTH",
    "PREDICATE_RE",
    "SYNONYMS",
    "canonical_predicate",
    "is_valid_predicate",
    "normalize_predicate",
]

MAX_PREDICATE_LENGTH = 64
PREDICATE_RE = RELATION_TYPE_RE  # one allowlist, defined in kg.models

# Upper-case letters that look the same in Latin and Cyrillic (after upper-casing).
_CYRILLIC_TO_LATIN = dict(zip("АВЕКМНОРСТХУІЈЅ", "ABEKMHOPCTXYIJS", strict=True))
_LATIN_TO_CYRILLIC = {latin: cyr for cyr, latin in _CYRILLIC_TO_LATIN.items()}

_NON_WORD = re.compile(r"[\W_]+")

#: Normalized Russian predicates -> the English predicate they translate. Direction is kept:
#: ``X принадлежит Y`` is ``X OWNED_BY Y``, ``X владеет Y`` is ``X OWNS Y``.
SYNONYMS: dict[str, str] = {
    "ЗАВИСИТ_ОТ": "DEPENDS_ON",
    "ВЫЗЫВАЕТ": "CALLS",
    "ИСПОЛЬЗУЕТ": "USES",
    "ЯВЛЯЕТСЯ_ЧАСТЬЮ": "PART_OF",
    "ВХОДИТ_В": "MEMBER_OF",
    "ЯВЛЯЕТСЯ_ЧЛЕНОМ": "MEMBER_OF",
    "ПРИНАДЛЕЖИТ": "OWNED_BY",
    "ВЛАДЕЕТ": "OWNS",
    "РАБОТАЕТ_НА": "RUNS_ON",
    "РАБОТАЕТ_В": "RUNS_ON",
    "ЗАПУЩЕН_НА": "RUNS_ON",
    "ХРАНИТ_ДАННЫЕ_В": "STORES_DATA_IN",
    "ПУБЛИКУЕТ_В": "PUBLISHES_TO",
    "ПОТРЕБЛЯЕТ_ИЗ": "CONSUMES_FROM",
    "ЧИТАЕТ_ИЗ": "CONSUMES_FROM",
    "НАХОДИТСЯ_В": "LOCATED_IN",
    "РАСПОЛОЖЕН_В": "LOCATED_IN",
    "РУКОВОДИТ": "LEADS",
    "ОБСЛУЖИВАЕТ": "OPERATES",
    "ЗАТРОНУЛ": "AFFECTED",
    "ЗАТРАГИВАЕТ": "AFFECTED",
    "ВЫЗВАН": "CAUSED_BY",
    "ВЫЗВАНО": "CAUSED_BY",
    "ИМЕЕТ_ВЕРСИЮ": "HAS_VERSION",
    "ЯВЛЯЕТСЯ_ЭКЗЕМПЛЯРОМ": "INSTANCE_OF",
    "РЕПЛИЦИРУЕТСЯ_В": "REPLICATES_TO",
    "ЗАМЕНЯЕТ": "REPLACES",
    "СОПРОВОЖДАЕТСЯ": "MAINTAINED_BY",
    "УТВЕРЖДЕН": "APPROVED_BY",
}


def normalize_predicate(value: str) -> str:
    """Return ``value`` as UPPER_SNAKE, or raise ``ValueError`` if no letter survives."""
    text = unicodedata.normalize("NFKC", str(value)).strip()
    text = _split_camel(text)
    text = _NON_WORD.sub("_", text).strip("_")
    # The type must start with a letter: drop leading digits ("3d_printed_by" -> "D_PRINTED_BY"
    # would be wrong, so we drop the whole leading numeric word instead).
    while text and not text[0].isalpha():
        head, _, rest = text.partition("_")
        text = rest if head and not head[0].isalpha() else text[1:]
    text = text.upper()[:MAX_PREDICATE_LENGTH].rstrip("_")
    text = _fold_confusables(text)
    if not text or not is_relation_type(text):
        raise ValueError(f"predicate {value!r} has no usable letters")
    return text


def canonical_predicate(value: str) -> str:
    """``value`` normalized, then as the one predicate of its translations (:data:`SYNONYMS`)."""
    if isinstance(value, str) and len(value) <= _CACHED_CHARS:
        return _canonical(value)
    return _canonical.__wrapped__(value)


# An import restates the same few thousand predicates tens of thousands of times; normalizing
# is pure, so short values are remembered (bounded: a hostile file cannot grow it).
_CACHED_CHARS = 256


@functools.lru_cache(maxsize=16384)
def _canonical(value: str) -> str:
    text = normalize_predicate(value)
    return SYNONYMS.get(text, text)


def _script(ch: str) -> str | None:
    if "A" <= ch <= "Z":
        return "latin"
    if "\u0400" <= ch <= "\u04ff":
        return "cyrillic"
    return None


def _majority(text: str) -> str | None:
    scripts = [s for s in map(_script, text) if s is not None]
    latin, cyrillic = scripts.count("latin"), scripts.count("cyrillic")
    if latin == cyrillic:
        return None
    return "latin" if latin > cyrillic else "cyrillic"


def _fold_confusables(text: str) -> str:
    """Rewrite look-alike letters into the script of their word (or of the whole predicate).

    A word mixing scripts takes its majority script; a word made only of letters that exist in
    both scripts (``OT``, ``API``) takes the whole predicate's majority script.
    """
    overall = _majority(text)
    words = []
    for word in text.split("_"):
        scripts = {s for s in map(_script, word) if s is not None}
        ambiguous = all(c in _CYRILLIC_TO_LATIN or c in _LATIN_TO_CYRILLIC
                        for c in word if _script(c) is not None)  # fmt: skip
        target = _majority(word) if len(scripts) > 1 else None
        if target is None and (len(scripts) > 1 or ambiguous):
            target = overall
        if target == "latin":
            word = "".join(_CYRILLIC_TO_LATIN.get(c, c) for c in word)
        elif target == "cyrillic":
            word = "".join(_LATIN_TO_CYRILLIC.get(c, c) for c in word)
        words.append(word)
    return "_".join(words)


def _split_camel(text: str) -> str:
    """``ownedBy`` -> ``owned_By`` for any script with case (Latin, Cyrillic, Greek ...)."""
    out: list[str] = []
    for i, ch in enumerate(text):
        if i and ch.isupper() and text[i - 1].islower():
            out.append("_")
        out.append(ch)
    return "".join(out)


def is_valid_predicate(value: str) -> bool:
    """True when ``value`` is already a normalized predicate (safe as a relationship type)."""
    return is_relation_type(value)
