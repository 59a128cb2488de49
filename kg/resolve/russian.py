"""Russian morphology for names: the nominative of a noun phrase, and dictionary lemmas.

Why: an extractor reading Russian text emits names as the sentence inflects them
(«сервиса платежей», «Трудовым кодексом», «Петрову И. И.»). Matching them by spelling alone
either misses («сервиса аутентификации» / «сервис аутентификации») or, with a crude ending
stripper, joins what differs by gender («Петрова» / «Петров»: two people). A morphological
analyser made for Russian (pymorphy3 with the OpenCorpora dictionary, both MIT-licensed
packages on PyPI, the dictionary's data CC BY-SA) knows which words are which.

Two operations, both pure and cached per input:

- :meth:`Morphology.nominative` puts the *head* of a name into the nominative singular: the
  first noun, the adjectives before it that agree with it, and the person names after it in
  the same case («Анны Волковой» -> «Анна Волкова»). Words after the head stay, because in
  Russian they are complements in the genitive and belong to the name («сервиса платежей» ->
  «сервис платежей», «Министерства финансов» -> «Министерство финансов»). A word that can be
  read as a nominative singular is left alone, so «Петрова И. И.» stays a woman's name, and a
  surname keeps its gender when inflected («Петровой» -> «Петрова», «Петрову» -> «Петров»).
  Quoted names («Россия» in «Банк «Россия»») and words in Latin letters are never touched.
- :meth:`Morphology.lemma` is the dictionary form of one word (``трудовым`` -> ``трудовой``),
  for looking words up in the translation lexicon.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

_CYRILLIC_WORD = re.compile(r"[А-Яа-яЁё]+")
_QUOTED = re.compile(r"«[^»]*»|\"[^\"]*\"|„[^“”]*[“”]|“[^”]*”")
_NOUN_LIKE = frozenset({"NOUN"})
_ADJ_LIKE = frozenset({"ADJF", "PRTF"})
_PERSON = frozenset({"Name", "Surn", "Patr"})
_LEGAL_FORMS = frozenset(
    {"пао", "оао", "зао", "ооо", "ао", "ип", "фгуп", "гуп", "муп", "ано", "нко", "фгбу", "гбу",
     "мбу", "ак", "аб", "кб", "нпо"}
)  # fmt: skip


def _abbreviation(word: str) -> bool:
    """``ФНС``, ``ИБ``, ``ГОСТ``: capitals, short (a name in capitals is longer)."""
    return word.isupper() and len(word) <= 5


_lock = threading.Lock()
_analyzer: Any = None


def _morph() -> Any:
    """The analyser, loaded on first use (about 0.1 s and 15 MB); one per process."""
    global _analyzer
    with _lock:
        if _analyzer is None:
            import pymorphy3

            _analyzer = pymorphy3.MorphAnalyzer()
        return _analyzer


def has_cyrillic(text: str) -> bool:
    return _CYRILLIC_WORD.search(text) is not None


def _restore_case(original: str, word: str) -> str:
    """Give ``word`` the letter case of ``original``: ``ГОСТа`` -> ``ГОСТ``, ``КликХаусе`` ->
    ``КликХаус``, ``Петровой`` -> ``Петрова``: the shared beginning keeps its letters."""
    if len(original) > 1 and original.isupper():
        return word.upper()
    folded = original.casefold()
    shared = 0
    while shared < min(len(folded), len(word)) and folded[shared] == word[shared]:
        shared += 1
    if shared == 0:
        return word[:1].upper() + word[1:] if original[:1].isupper() else word
    return original[:shared] + word[shared:]


def _agrees(adjective: Any, head: Any) -> Any:
    """The adjective's parse in the head's case and number (and gender in the singular)."""
    for parse in adjective:
        tag = parse.tag
        if tag.POS not in _ADJ_LIKE or tag.case != head.tag.case:
            continue
        if tag.number is not None and tag.number != head.tag.number:
            continue
        if head.tag.number == "sing" and tag.gender is not None and tag.gender != head.tag.gender:
            continue
        return parse
    return None


class Morphology:
    """Russian noun-phrase normalization; stateless apart from its caches."""

    @staticmethod
    @lru_cache(maxsize=1 << 18)
    def _parses(word: str) -> tuple[Any, ...]:
        return tuple(_morph().parse(word))

    @staticmethod
    @lru_cache(maxsize=1 << 18)
    def known(word: str) -> bool:
        """The dictionary has the word (a fast lookup; guessing an unknown one is the slow
        part of the analyser, about 0.3 ms a word)."""
        return bool(_morph().word_is_known(word))

    @staticmethod
    @lru_cache(maxsize=1 << 18)
    def lemma(word: str) -> str:
        """The dictionary form of one word, casefolded, ``ё`` as ``е``; an unknown word as is
        (the lexicon holds only known words, and a guess costs more than it finds)."""
        folded = word.casefold()
        parses = Morphology._parses(folded) if Morphology.known(folded) else ()
        form = parses[0].normal_form if parses else folded
        return str(form).replace("ё", "е")

    @staticmethod
    @lru_cache(maxsize=1 << 18)
    def nominative(text: str) -> str:
        """``text`` with its head noun phrase in the nominative singular (module docstring)."""
        if not has_cyrillic(text):
            return text
        words = Morphology._unquoted_words(text)
        if len(words) == 1 and not Morphology.known(words[0].group().casefold()):
            # one unknown word (a brand: «Кликхаусе»): the resolver's ending rule covers it
            return text
        parsed = [Morphology._parses(m.group().casefold()) for m in words]
        head = Morphology._head(words, parsed)
        if head is None:
            return text
        index, head_parse, adjectives = head
        replacements: dict[int, str] = {}
        target = {"nomn"} if "Pltm" in head_parse.tag else {"nomn", "sing"}
        inflected = head_parse.inflect(target)
        if inflected is None:
            return text
        replacements[index] = inflected.word
        for position, adjective in adjectives:
            grammemes = {"nomn", inflected.tag.number or "sing"}
            if inflected.tag.number == "sing" and inflected.tag.gender:
                grammemes.add(inflected.tag.gender)
            form = adjective.inflect(grammemes)
            if form is not None:
                replacements[position] = form.word
        for position in range(index + 1, len(words)):
            name = next(
                (
                    p
                    for p in sorted(parsed[position], key=lambda p: "Fixd" in p.tag)
                    if _PERSON & set(p.tag.grammemes) and p.tag.case == head_parse.tag.case
                ),
                None,
            )
            if name is None:
                break
            form = name.inflect({"nomn"})
            if form is not None:
                replacements[position] = form.word
        out, last = [], 0
        for position, match in enumerate(words):
            if position in replacements:
                out.append(text[last : match.start()])
                out.append(_restore_case(match.group(), replacements[position]))
                last = match.end()
        out.append(text[last:])
        return "".join(out)

    @staticmethod
    @lru_cache(maxsize=1 << 18)
    def is_nominative(text: str) -> bool:
        """The name reads as a nominative, singular or plural («Российские железные дороги»):
        a form a reader would write as the name, not one a sentence inflected."""
        if Morphology.nominative(text) == text:
            return True
        words = Morphology._unquoted_words(text)
        parsed = [Morphology._parses(m.group().casefold()) for m in words]
        head = Morphology._head(words, parsed)
        return head is not None and head[1].tag.case == "nomn"

    @staticmethod
    def _unquoted_words(text: str) -> list[re.Match[str]]:
        """The Cyrillic words of ``text`` outside quotes (a quoted name is never inflected)."""
        quoted = [m.span() for m in _QUOTED.finditer(text)]
        return [
            m
            for m in _CYRILLIC_WORD.finditer(text)
            if not any(start <= m.start() < end for start, end in quoted)
        ]

    @staticmethod
    def _name_cases(parsed: list[tuple[Any, ...]], position: int) -> frozenset[str]:
        """The cases a declinable person name at ``position`` can be in (none: no such name)."""
        if position >= len(parsed):
            return frozenset()
        return frozenset(
            p.tag.case
            for p in parsed[position]
            if _PERSON & set(p.tag.grammemes) and "Fixd" not in p.tag and p.tag.case
        )

    @staticmethod
    def _modifies_next(
        words: list[re.Match[str]], parsed: list[tuple[Any, ...]], position: int
    ) -> bool:
        """The word can be an adjective agreeing with a noun word right after it."""
        parses = parsed[position]
        if position + 1 >= len(parsed) or not any(p.tag.POS in _ADJ_LIKE for p in parses):
            return False
        following = words[position + 1].group()
        if len(following) < 2 or _abbreviation(following):
            return False
        if any("Surn" in p.tag for p in parses) and Morphology._name_cases(parsed, position + 1):
            return False  # «Петровой Анне»: a surname before a given name, not an adjective
        return any(
            p.tag.POS in _NOUN_LIKE and _agrees(parses, p) is not None for p in parsed[position + 1]
        )

    @staticmethod
    def _head(
        words: list[re.Match[str]], parsed: list[tuple[Any, ...]]
    ) -> tuple[int, Any, list[tuple[int, Any]]] | None:
        """The head noun's position and parse, with the agreeing adjectives before it.

        None when the phrase is already nominative singular or has no head to inflect. Legal
        forms (``ПАО Сбербанка``) and single letters (``г. Москвы``) are skipped; any other
        abbreviation is the head itself, so what follows it is its complement (``ФНС России``).
        """
        before: list[int] = []
        for position, (match, parses) in enumerate(zip(words, parsed, strict=True)):
            word = match.group()
            if len(word) < 2 or word.casefold() in _LEGAL_FORMS:
                if before:
                    return None
                continue
            if _abbreviation(word):
                return None
            nouns = [p for p in parses if p.tag.POS in _NOUN_LIKE]
            if nouns and Morphology._modifies_next(words, parsed, position):
                before.append(position)  # «Московской области»: an adjective, not a surname
                continue
            if not nouns:
                if any(p.tag.POS in _ADJ_LIKE for p in parses):
                    before.append(position)
                    continue
                return None
            following = Morphology._name_cases(parsed, position + 1)

            def rank(p: Any, following: frozenset[str] = following) -> tuple[bool, bool]:
                # «Петровой Анне»: the given name after the surname says which case it is
                nominative = p.tag.case == "nomn" and p.tag.number == "sing"
                return (bool(following) and p.tag.case not in following, not nominative)

            for noun in sorted(nouns, key=rank):
                agreeing = [(b, _agrees(parsed[b], noun)) for b in before]
                if all(parse is not None for _, parse in agreeing):
                    if noun.tag.case == "nomn" and (
                        noun.tag.number == "sing" or "Pltm" in noun.tag
                    ):
                        return None
                    return position, noun, agreeing
            return None
        return None
