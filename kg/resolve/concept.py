"""The concept key: a name's content words in one language, as an unordered set.

Why a set of English words: «сервис аутентификации» and ``AuthService`` say the same two
things in another order (Russian puts the genitive complement after the head, English the
modifier before it), «Министерство финансов Российской Федерации» and ``Ministry of Finance of
the Russian Federation`` too. Each word is reduced to its lemma («аутентификации» ->
«аутентификация»), translated through the lexicon (kg/resolve/lexicon.py) or, when the lexicon
does not know it, transliterated (a brand: «Касперского» -> ``kasperskiy``); English words are
analysed like every other key (``auth`` -> authentication, ``payments`` -> payment). Words
that carry no identity drop out: stopwords, generic tokens (service, ООО), and the country
qualifier that documents of one country add («России», ``of the Russian Federation``).
Quoted parts («Россия» in «Банк «Россия»») are names and are transliterated, never translated:
the bank «Россия» is not the Bank of Russia.

The key is evidence only when it is non-empty; the scorer also requires equal digits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from kg.resolve.abbreviations import AbbreviationTable
from kg.resolve.lexicon import COUNTRY_QUALIFIERS, ENGLISH_SYNONYMS
from kg.resolve.normalize import transliterate
from kg.resolve.russian import Morphology, has_cyrillic

_QUOTED = re.compile(r"«([^»]*)»|\"([^\"]*)\"|„([^“”]*)[“”]|“([^”]*)”")
_RU_STOPWORDS = frozenset(
    {"о", "об", "и", "в", "во", "по", "для", "на", "с", "со", "к", "при", "от"}
)
_PARTS = re.compile(r"[^\W_]+")
_MAX_PHRASE = 3
QUALIFIED = "@country"  # in the key of a one-word concept whose name named its country


@dataclass(frozen=True)
class ConceptKeys:
    """Computes concept keys with one table; ``analyse`` is the normalizer's word analysis
    (a word -> its normalized, expanded, stemmed tokens) and ``spell`` its spelling key."""

    table: AbbreviationTable
    analyse: Callable[[str], tuple[str, ...]]
    spell: Callable[[str], str]
    _cache: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @cached_property
    def _translations(self) -> Mapping[tuple[str, ...], tuple[str, ...]]:
        """Lexicon keys as tuples of lemmas, values as English words."""
        out: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key, value in self.table.translations.items():
            lemmas = tuple(Morphology.lemma(w) for w in _PARTS.findall(key.casefold()))
            if lemmas:
                out.setdefault(lemmas, tuple(value.split()))
        return out

    @cached_property
    def _names(self) -> tuple[Mapping[str, str], Mapping[str, str]]:
        """Known short names: all-caps ones match case-sensitively (``ПО`` is not «по»)."""
        exact: dict[str, str] = {}
        folded: dict[str, str] = {}
        for short, whole in self.table.names.items():
            if short.isupper() or sum(c.isupper() for c in short) >= 2:
                exact[short] = whole
            else:
                folded[Morphology.lemma(short) if has_cyrillic(short) else short.casefold()] = whole
        return exact, folded

    @cached_property
    def _known_codes(self) -> frozenset[str]:
        """Known short names as the normalizer writes codes (casefolded, in Latin)."""
        return frozenset(transliterate(short.casefold()) for short in self.table.names)

    def known_codes(self, codes: tuple[str, ...]) -> frozenset[str]:
        """The codes among ``codes`` that the concept key expands (``ib`` for «ИБ»)."""
        return frozenset(c for c in codes if c in self._known_codes)

    def key(self, name: str) -> tuple[str, ...]:
        found = self._cache.get(name)
        if found is None:
            found = self._key(name)
            if len(self._cache) < 1 << 18:
                self._cache[name] = found
        return found

    def _key(self, name: str) -> tuple[str, ...]:
        text = unicodedata.normalize("NFKC", name)
        words: list[str] = []
        last = 0
        for match in _QUOTED.finditer(text):
            words.extend(self._plain(text[last : match.start()], depth=0))
            inner = next(g for g in match.groups() if g is not None)
            for word in _PARTS.findall(inner):
                words.extend(self.analyse(word))
            last = match.end()
        words.extend(self._plain(text[last:], depth=0))
        out: set[str] = set()
        table = self.table
        qualified = False
        for word in words:
            word = ENGLISH_SYNONYMS.get(word, word)
            if word in COUNTRY_QUALIFIERS:
                qualified = True
                continue
            if not word or word in table.stopwords or word in table.generic:
                continue
            out.add(self.spell(word))
        if qualified and not out:
            return (QUALIFIED,)  # the country itself: «Россия», «РФ», "Russian Federation"
        if not any(not w.isdigit() for w in out):
            return ()
        if qualified and len(out) == 1:
            # «Банк России» is {bank} once its country is dropped; the mark keeps it from
            # meeting a bare «Банк» (any bank), while «Bank of Russia» carries it too
            out.add(QUALIFIED)
        return tuple(sorted(out))

    def _plain(self, text: str, depth: int) -> list[str]:
        """English words of an unquoted segment: known names expanded, phrases translated."""
        exact, folded = self._names
        lemmas: list[tuple[str, str]] = []  # (lemma, original word)
        out: list[str] = []
        for word in _PARTS.findall(text):
            whole = exact.get(word)
            if whole is None:
                whole = folded.get(
                    Morphology.lemma(word) if has_cyrillic(word) else word.casefold()
                )
            if whole is not None and depth < 2:
                out.extend(self._translate(lemmas))
                lemmas = []
                out.extend(self._plain(whole, depth + 1))
                continue
            if has_cyrillic(word) and not any(c.isdigit() for c in word):
                lemmas.append((Morphology.lemma(word), word))
            else:
                out.extend(self._translate(lemmas))
                lemmas = []
                out.extend(self.analyse(word))
        out.extend(self._translate(lemmas))
        return out

    def _translate(self, lemmas: list[tuple[str, str]]) -> list[str]:
        out: list[str] = []
        translations = self._translations
        i = 0
        while i < len(lemmas):
            for size in range(min(_MAX_PHRASE, len(lemmas) - i), 0, -1):
                phrase = tuple(lemma for lemma, _ in lemmas[i : i + size])
                english = translations.get(phrase)
                if english is not None:
                    for word in english:
                        out.extend(self.analyse(word))
                    i += size
                    break
            else:
                lemma, original = lemmas[i]
                if lemma not in _RU_STOPWORDS:
                    out.extend(self.analyse(lemma if lemma else original))
                i += 1
        return out
