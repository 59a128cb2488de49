"""The query router: ``mode=auto`` picks text, hybrid, graph or global search, and says why.

Rules over features of the question, in order (docs/search.md, "The router"):

1. a relation-type filter or an ``as_of`` date was given -> **graph**: both only mean
   something over relations of named entities;
2. a how-to or "what is" question (``How do I ...``, ``How to ...``, ``What is X?``, ``Как
   ...?``, ``Что такое ...``) -> **hybrid**, whatever else it says: its answer is a passage,
   and a path that drops the text hits loses it (docs: 27 how-to questions, sec@3 51.9 when
   they went to graph or vector, 88.9 on text);
3. the question quotes exact words ("..." or `...`) and names no entity -> **text**: the
   fulltext index is the signal that matches them;
4. the question asks about the corpus as a whole -> **global**: aggregation cues ("main",
   "overall", "all the", "overview", "основные", "какие вообще", "в целом" ...) or words that
   name the corpus itself ("corpus", "documentation", "knowledge base"), even when it also
   names entities (in a live graph generic words such as "platform" are often aliases);
5. a weak aggregation cue ("most", "all", "which teams") and no entity named -> **global**;
6. otherwise -> **hybrid**: text, vector and graph fused, which is never below its best part
   on the four dev sets (docs/search.md, "Hybrid"); the entities the question names seed its
   graph signal.

The rules were written after the labelled set in ``tests/data/router/questions.tsv`` and tuned
only on its dev part; the test part (a third, chosen by a hash of the question) is reported in
docs/benchmarks.md. Linking is a callback: the service links through a read-only template,
tests through a list of names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kg.cypher.params import MAX_PHRASE_CHARS
from kg.words import MAX_WORD_CHARS

__all__ = ["STOP_WORDS", "Route", "RoutedMode", "phrases", "route", "words"]

_WORD = re.compile(r"\w+")

# Function words (English, Russian) that never make a phrase worth linking on their own.
STOP_WORDS = frozenset(
    """
    a an the of in on at to for from by with and or but not no is are was were be been being do
    does did what which who whom whose when where why how that this these those it its they them
    their there here all any some most many more much main about into over under than then so if
    can could should would will shall may might must have has had me my we our you your he she
    и в во на с со к ко по о об от до из за для при без над под что кто как где когда какой
    какие какая каков почему ли не ни же бы это этот эта эти тот та те все всё его её их мы вы
    они он она оно у а но или да
    """.split()  # noqa: SIM905 - a word list reads better as text
)

RoutedMode = Literal["text", "hybrid", "graph", "global"]

MAX_PHRASE_WORDS = 4
MAX_PHRASES = 64

# Strong cues: a question with one of these is about the corpus as a whole.
_STRONG = re.compile(
    r"\b(main|overall|overview|summari[sz]e|summary|in general|general|high-level|whole|"
    r"key themes|themes|trends|recurring|across|everything|all (?:the )?\w+|"
    r"most (?:important|critical|often)|biggest|major|"
    r"corpus|knowledge base|documentation|all documents|"
    r"основн\w*|вообще|в целом|общ(?:ий|ая|ее|ие|ую|ей|их)|обзор\w*|обобщ\w*|главн\w*|"
    r"ключев\w*|"
    r"перечисли|чаще всего|наиболее|повторя\w*|всех|всей|всё|все)\b",
    re.IGNORECASE,
)
# How-to and definition questions: their answer is a passage, so the text hits must stay.
_HOW_TO = re.compile(
    r"^\W*(?:how (?:do|can|could|should|would|does) (?:i|we|you|one)\b|how to\b|"
    r"как (?:мне |нам |можно )?\w+(?:ть|ти|чь|ться)\b)",
    re.IGNORECASE,
)
# "What is X?" with X one or two words, or "что такое": a definition.
_WHAT_IS = re.compile(
    r"^\W*(?:what(?: is|'s) (?:an? |the )?(?!this\b|these\b)[\w.\-]+(?: [\w.\-]+)?\W*$|"
    r"что так(?:ое|ой|ая)\b)",
    re.IGNORECASE,
)
# Exact words asked for: quoted or in backticks.
_QUOTED = re.compile(r"[\"“«`][^\"”»`]{2,}[\"”»`]")
# Weak cues: aggregation that also occurs in questions about one entity; they make a question
# global only when it names no entity ("Which teams own the most services?").
_WEAK = re.compile(r"\b(most|all|many|which teams|какие команды|больше всего)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    """The mode that runs and why."""

    mode: RoutedMode
    reason: str
    linked: tuple[str, ...] = ()
    cues: tuple[str, ...] = field(default_factory=tuple)
    #: A how-to or "what is" question: whatever else decides, its path keeps the text hits.
    keeps_text: bool = False


def words(text: str) -> list[str]:
    """Casefolded word runs (letters, digits, underscores of any script)."""
    return [m.group().casefold() for m in _WORD.finditer(text)]


def phrases(question: str) -> list[str]:
    """Word n-grams (1..4) of the question, as the linker looks them up; bounded.

    A run of more than ``MAX_WORD_CHARS`` letters (a Chinese or Japanese sentence is one
    ``\\w+`` run, so is a URL's path) is part of no phrase, and a phrase is at most
    ``MAX_PHRASE_CHARS`` long: no name is made of such words, and the ``name_links`` template
    takes no longer phrase. The question is never refused for them."""
    tokens = words(question)
    out: list[str] = []
    seen: set[str] = set()
    for size in range(MAX_PHRASE_WORDS, 0, -1):
        for start in range(len(tokens) - size + 1):
            gram = tokens[start : start + size]
            if all(t in STOP_WORDS for t in gram) or (size == 1 and len(gram[0]) < 3):
                continue
            if any(len(t) > MAX_WORD_CHARS for t in gram):
                continue
            text = " ".join(gram)
            if len(text) > MAX_PHRASE_CHARS:
                continue
            if text not in seen:
                seen.add(text)
                out.append(text)
    return out[:MAX_PHRASES]


def link_by_names(question: str, names: Iterable[str]) -> list[str]:
    """Names (or aliases) whose words occur in the question as a whole run of words."""
    grams = set(phrases(question))
    return sorted({n for n in names if " ".join(words(n)) in grams})


def route(
    question: str,
    *,
    linked: Sequence[str],
    relation_filter: bool = False,
    as_of: bool = False,
) -> Route:
    """Pick a mode for ``question`` given the entities it links to and the request's filters."""
    found = tuple(sorted(set(linked)))
    if relation_filter or as_of:
        given = " and ".join(
            x for x, on in (("a relation-type filter", relation_filter), ("as_of", as_of)) if on
        )
        return Route("graph", f"{given} given: a question over relations of entities", found)
    if _HOW_TO.search(question) or _WHAT_IS.search(question):
        kind = "a how-to" if _HOW_TO.search(question) else 'a "what is"'
        return Route(
            "hybrid",
            f"{kind} question: its answer is a passage, text hits kept",
            found,
            keeps_text=True,
        )
    if not found and (quoted := _QUOTED.findall(question)):
        return Route("text", f"quotes exact words ({', '.join(quoted)}) and names no entity")
    strong = tuple(m.group(0).lower() for m in _STRONG.finditer(question))
    weak = tuple(m.group(0).lower() for m in _WEAK.finditer(question))
    cues = tuple(dict.fromkeys(strong + weak))
    if strong:
        linked_note = f"; names {', '.join(found)}" if found else ""
        return Route(
            "global",
            f"asks about the corpus as a whole ({', '.join(cues)}){linked_note}",
            found,
            cues,
        )
    if weak and not found:
        return Route("global", f"aggregates ({', '.join(weak)}) and names no entity", found, cues)
    if found:
        note = f"; aggregation cue ({', '.join(cues)}) is about them" if cues else ""
        return Route(
            "hybrid", f"names entities of the graph: {', '.join(found)}{note}; fused", found, cues
        )
    return Route("hybrid", "names no entity of the graph and asks no aggregate: fused", found)
