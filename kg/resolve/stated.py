"""Abbreviations a document states: «Трудовой кодекс Российской Федерации (ТК РФ)».

Why: a policy that writes the full name once, with its abbreviation in brackets, and the
abbreviation ever after, has told the reader what the abbreviation means; the resolver should
know it too, whether or not the lexicon lists it. The pair is found in the text, checked (the
abbreviation's letters are the initials of the words just before the bracket, an abbreviation
inside the long name counting whole), the long form put in the nominative (the sentence
inflects it: «согласно Трудовому кодексу Российской Федерации (ТК РФ)»), and handed to the
resolver as each side's alias. An abbreviation the corpus expands in two ways is ambiguous
and left out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

from kg.resolve.russian import Morphology

_BRACKETED = re.compile(r"([^\W_][\w\-]*(?:[ \t]+[\w\-]+){0,9})[ \t]*\(([^()\n]{2,16})\)")
_WORDS = re.compile(r"[^\W_]+")
_STOPWORDS = frozenset(
    {"and", "of", "for", "the", "a", "an", "on", "in", "to", "и", "о", "об", "по", "для", "на", "в"}
)
MAX_TEXT = 2_000_000  # characters of one document scanned


def _initials(words: list[str]) -> tuple[str, ...]:
    """The ways ``words`` abbreviate: initials, caps words whole, with or without stopwords."""
    out: list[str] = []
    for skip in (True, False):
        kept = [w for w in words if not (skip and w.casefold() in _STOPWORDS)]
        if len(kept) >= 2 or (len(kept) == 1 and kept[0].isupper()):
            letters = "".join(w if w.isupper() and len(w) <= 5 else w[0] for w in kept)
            out.append(letters.casefold())
    return tuple(out)


def _pair(before: str, inside: str) -> tuple[str, str] | None:
    """(short, long) when ``inside`` abbreviates the last words of ``before``."""
    short = inside.strip()
    letters = "".join(_WORDS.findall(short))
    if not 2 <= len(letters) <= 10 or sum(c.isupper() for c in letters) < 2:
        return None
    if any(c.isdigit() for c in letters):
        return None
    words = _WORDS.findall(before)
    target = letters.casefold()
    for start in range(len(words) - 1, -1, -1):
        chosen = words[start:]
        if target in _initials(chosen):
            if chosen[0].casefold() in _STOPWORDS:
                return None
            phrase = " ".join(chosen)
            return short, Morphology.nominative(phrase)
        if len(words) - start > len(letters) + 3:
            return None
    return None


def stated_abbreviations(texts: Iterable[str]) -> Mapping[str, str]:
    """Each stated abbreviation's long form, and each long form's abbreviation (casefolded
    keys, surface values); an abbreviation stated with two meanings is left out."""
    meanings: dict[str, set[str]] = defaultdict(set)
    shorts: dict[str, str] = {}
    longs: dict[str, str] = {}
    for text in texts:
        for match in _BRACKETED.finditer(text[:MAX_TEXT]):
            found = _pair(match.group(1), match.group(2))
            if found is None:
                continue
            short, long = found
            meanings[short.casefold()].add(long.casefold())
            shorts[short.casefold()] = short
            longs[long.casefold()] = long
    out: dict[str, str] = {}
    for key, expansions in meanings.items():
        if len(expansions) != 1:
            continue
        (long_key,) = expansions
        out[key] = longs[long_key]
        out.setdefault(long_key, shorts[key])
    return out
