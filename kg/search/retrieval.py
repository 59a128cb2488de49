"""The pure parts of local search: question linking and graph propagation.

No I/O here: :mod:`kg.search.service` reads through guarded templates and calls these.

- :func:`question_ngrams` and :func:`longest_links`: the question's word n-grams are looked up
  among entity names and aliases (through the ``entity_names`` fulltext index); an n-gram
  links only when its words equal a name's words (casefolded, :mod:`kg.words`), and a longer
  match wins over the shorter ones inside it (``Kiss and Tell`` over ``Tell``).
- :func:`specificity`: a seed's weight falls with the number of chunks that mention it, so a
  name found in 500 chunks is a weak seed and one found in 2 a strong one (HippoRAG's node
  specificity, softened by a logarithm).
- :func:`personalized_pagerank`: random walks over entities *and* chunks that restart at the
  seeds; a chunk scores the share of walks that end on it, so a passage two mentions away
  from two seeds outranks one next to a single weak seed.
- :func:`cognate_stems`: a Russian question's words transliterated and stripped of their case
  ending, for fuzzy matching against English text (``Теслы`` -> ``tesl``~1 meets ``Tesla``).
- :func:`latin_cognate_stems`: the other way round, an English question's words spelt as a
  Russian loanword is (``component`` -> ``компонент``, ``reactive`` -> ``реактив``), for fuzzy
  matching against Russian text.
- :func:`asked_types`: the entity types a question asks for ("which *database* ...", "какую
  *базу данных* ..."), by stems, in English or by a type's Russian names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kg.languages import RUSSIAN_TYPE_NAMES, is_cyrillic, stems
from kg.resolve.normalize import strip_ending, transliterate
from kg.words import MAX_WORD_CHARS, STOP_WORDS, form, words

#: Phrases one question may send to the fulltext index (the ``entity_links`` template's bound).
MAX_PHRASES = 128
#: Word n-grams one question is looked up by among the names kept in memory. A question of 20
#: words has 132 n-grams of up to 8 words; cut longest first at 128, it lost its single
#: words, the names most often asked (docs/search.md, "Linking").
MAX_NGRAMS = 512


@dataclass(frozen=True)
class Ngram:
    """Words ``start..end`` of the question."""

    start: int
    end: int
    words: tuple[str, ...]


def question_ngrams(question: str, max_words: int, limit: int = MAX_NGRAMS) -> list[Ngram]:
    """Word n-grams of the question that could be a name, longest first; past ``limit``, the
    longest are the ones left out (a name is more often one word than eight)."""
    tokens = words(question)
    found: list[Ngram] = []
    long = {i for i, token in enumerate(tokens) if len(token) > MAX_WORD_CHARS}
    for size in range(1, min(max_words, len(tokens)) + 1):
        for start in range(len(tokens) - size + 1):
            if len(found) >= limit:
                return found[::-1]
            gram = tuple(tokens[start : start + size])
            if long.isdisjoint(range(start, start + size)) and form(" ".join(gram)) is not None:
                found.append(Ngram(start, start + size, gram))
    return found[::-1]


def spellings(ngrams: Sequence[Ngram], limit: int) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
    """Each n-gram's words as looked up among names, and the n-grams they stand for: the words
    themselves and, for an n-gram with Cyrillic words, their Latin transliteration (the
    resolver's, so ``Кафка`` is looked up as ``kafka`` too). At most ``limit`` spellings: past
    it, those of the longest n-grams are left out."""
    found: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for gram in sorted(ngrams, key=lambda g: (g.end - g.start, g.start)):
        variants = [gram.words]
        latin = tuple(transliterate(w) for w in gram.words)
        if latin != gram.words and form(" ".join(latin)) is not None:
            variants.append(latin)
        for variant in variants:
            if variant not in found and len(found) >= limit:
                return found
            found.setdefault(variant, []).append(gram.words)
    return found


def shortest(spellings: Sequence[tuple[str, ...]], limit: int) -> list[tuple[str, ...]]:
    """``spellings`` cut to ``limit``, the longest left out (a template's bound)."""
    if len(spellings) <= limit:
        return list(spellings)
    return sorted(spellings, key=len)[:limit]


def longest_links(
    ngrams: Sequence[Ngram], hits: Mapping[tuple[str, ...], Sequence[str]]
) -> dict[str, Ngram]:
    """Entity ids linked by non-overlapping n-grams, longest first, then leftmost.

    ``hits`` maps an n-gram's words to the entities whose name or alias has exactly those
    words. An ambiguous n-gram links every entity it names.
    """
    taken: list[Ngram] = []
    linked: dict[str, Ngram] = {}
    for gram in sorted(ngrams, key=lambda g: (-(g.end - g.start), g.start)):
        ids = hits.get(gram.words)
        if not ids or any(g.start < gram.end and gram.start < g.end for g in taken):
            continue
        taken.append(gram)
        for eid in ids:
            linked.setdefault(eid, gram)
    return linked


def specificity(mentions: int) -> float:
    """1 for an entity mentioned once (or never), 1/(1 + ln n) for one mentioned n times."""
    return 1.0 / (1.0 + math.log(max(1, mentions)))


def personalized_pagerank(
    edges: Sequence[tuple[str, str, float]],
    seeds: Mapping[str, float],
    *,
    damping: float,
    iterations: int,
) -> dict[str, float]:
    """Scores of every node reachable from the seeds; undirected, weighted edges.

    Each step, a walker follows an edge with probability ``damping`` (chosen in proportion to
    edge weight) or jumps back to a seed (chosen in proportion to seed weight). Mass on a node
    without edges returns to the seeds. The scores sum to 1.
    """
    nodes: dict[str, int] = {}
    for node in seeds:
        nodes.setdefault(node, len(nodes))
    src: list[int] = []
    dst: list[int] = []
    weight: list[float] = []
    index, isfinite = nodes.setdefault, math.isfinite
    # One pass, appends only: this loop was most of PageRank's time on an LLM-extracted graph
    # (tens of thousands of chunk-entity links per search).
    for a, b, value in edges:
        if a == b or not (value > 0 and isfinite(value)):
            continue
        src.append(index(a, len(nodes)))
        dst.append(index(b, len(nodes)))
        weight.append(value)
    n = len(nodes)
    restart = np.zeros(n)
    for node, value in seeds.items():
        restart[nodes[node]] = max(0.0, value)
    scores = pagerank(
        np.array(src, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        np.array(weight, dtype=np.float64),
        restart,
        damping=damping,
        iterations=iterations,
    )
    names = list(nodes)
    return {names[i]: float(scores[i]) for i in np.flatnonzero(scores > 0)}


# Far above float noise after the iterations (~1e-16 of the total mass), far below any real
# difference between two passages' scores.
SETTLE_DIGITS = 13


def pagerank(
    src: npt.NDArray[np.int64],
    dst: npt.NDArray[np.int64],
    weight: npt.NDArray[np.float64],
    restart: npt.NDArray[np.float64],
    *,
    damping: float,
    iterations: int,
) -> npt.NDArray[np.float64]:
    """:func:`personalized_pagerank` over nodes ``0..len(restart)``: undirected edges
    ``src[i] -- dst[i]`` of positive ``weight[i]``, walks restarting in proportion to
    ``restart``. All zeros when nothing restarts.

    Scores are rounded to ``SETTLE_DIGITS`` places (they sum to 1): the float sums above depend
    on the order of the edges, which depends on how the graph was read, so two passages whose
    scores are equal in exact arithmetic could otherwise swap between two imports of one
    corpus. Rounded, they tie, and callers break ties by id."""
    n = len(restart)
    restart = np.maximum(restart, 0.0)
    if n == 0 or restart.sum() <= 0:
        return np.zeros(n)
    restart = restart / restart.sum()
    s, d = np.concatenate([src, dst]), np.concatenate([dst, src])
    w = np.tile(weight, 2)
    out = np.bincount(s, weights=w, minlength=n)
    share = w / out[s] if len(s) else w
    dangling = np.flatnonzero(out == 0)
    scores = restart.copy()
    base = (1 - damping) * restart
    # (1 - damping) * restart + damping * (moved + lost * restart), in place: the same floats
    # (IEEE sums and products commute), a third less time
    for _ in range(iterations):
        moved: npt.NDArray[np.float64] = np.bincount(
            d, weights=scores.take(s) * share, minlength=n
        ).astype(np.float64, copy=False)
        moved += scores.take(dangling).sum() * restart
        moved *= damping
        moved += base
        scores = moved
    return np.round(scores, SETTLE_DIGITS)


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return n > 0 and any(tuple(haystack[i : i + n]) == tuple(needle) for i in range(len(haystack)))


def asked_types(question_words: Sequence[str], types: Iterable[str]) -> set[str]:
    """The types among ``types`` whose name (or, for common types, a Russian name) occurs in the
    question's words, compared by Snowball stems: ``базу данных`` asks for ``Database`` as
    ``database`` would. Pass only the words no entity link consumed (``сервис платежей`` names
    Payments API; it does not ask for a Service)."""
    question = stems(question_words)
    found: set[str] = set()
    for entity_type in types:
        names = [entity_type, *RUSSIAN_TYPE_NAMES.get(entity_type.casefold(), ())]
        if any(_contains(question, stems(words(name))) for name in names):
            found.add(entity_type)
    return found


#: English letter groups as Russian loanwords spell them, longest first (``th`` -> т, ``ph``
#: -> ф, ``tion`` -> ци as in «анимация»; ``c`` before e, i, y -> с, else к).
_LOANWORD_GROUPS = (
    ("tion", "ци"), ("sch", "ш"), ("sh", "ш"), ("ch", "ч"), ("th", "т"), ("ph", "ф"),
    ("ck", "к"), ("qu", "кв"), ("ee", "и"), ("oo", "у"), ("ce", "се"), ("ci", "си"),
    ("cy", "си"), ("x", "кс"), ("j", "дж"),
)  # fmt: skip
_LOANWORD_LETTERS = str.maketrans("abcdefghiklmnoprstuvwyz", "абкдефгхиклмнопрстуввиз")
#: English endings a Russian loanword does not keep (``animated`` -> animat, ``clicking`` -> click).
_ENGLISH_ENDINGS = ("ing", "ed", "es", "s", "e")


def cyrillic_loanword(word: str) -> str:
    """``component`` -> ``компонент``, ``directive`` -> ``директив``: a casefolded English
    word, its ending dropped (at least 4 letters kept), in the letters a Russian loanword
    would use. An approximation for fuzzy matching, not a transliteration standard."""
    for ending in _ENGLISH_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 4 and not word.endswith("ss"):
            word = word[: -len(ending)]
            break
    for group, cyrillic in _LOANWORD_GROUPS:
        word = word.replace(group, cyrillic)
    return word.translate(_LOANWORD_LETTERS)


def latin_cognate_stems(question: str, limit: int) -> list[str]:
    """The question's Latin content words spelt as Russian loanwords
    (:func:`cyrillic_loanword`), at least 4 letters: the words Russian technical text borrows
    from English (компонент, директива, сервер, реактивность) that a Russian index stems
    within an edit or two of them. The mirror of :func:`cognate_stems`."""

    def spelt(word: str) -> str | None:
        if not word.isascii() or not word.isalpha():
            return None
        stem = cyrillic_loanword(word)
        return stem if stem.isalpha() and all(is_cyrillic(c) for c in stem) else None

    return _fuzzy_words(question, limit, spelt)


def _fuzzy_words(question: str, limit: int, spelt: Callable[[str], str | None]) -> list[str]:
    """The distinct ``spelt`` forms (None: skip the word) of the question's content words,
    at least 4 characters, each cut to 40, at most ``limit``: the fuzzy terms of one index."""
    found: list[str] = []
    for word in words(question):
        if word in STOP_WORDS:
            continue
        stem = spelt(word)
        if stem is not None and len(stem) >= 4 and stem not in found:
            found.append(stem[:40])
        if len(found) >= limit:
            break
    return found


def cognate_stems(question: str, limit: int) -> list[str]:
    """The question's Cyrillic content words, transliterated (the resolver's table) with one
    Russian case ending stripped, at least 4 letters long: names and loanwords that English
    text spells within an edit or two (``varshavy`` -> ``varshav``, ``teorii`` -> ``teori``,
    which the English stemmer made of ``theory``: 1 edit). Measured on XQuAD, fuzzy matching of
    these doubles the share of Russian questions whose English paragraph is found
    (docs/search.md, "Languages")."""

    def spelt(word: str) -> str | None:
        if not any(is_cyrillic(c) for c in word):
            return None
        stem = strip_ending(transliterate(word))
        return stem if stem.isalnum() else None

    return _fuzzy_words(question, limit, spelt)
