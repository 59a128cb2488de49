"""Pair scoring: how likely two surface forms of the same type name one entity.

The score is in [0, 1] with a method naming the evidence. Strong evidence (equal normalized
keys) scores near 1. Otherwise string similarity leads and the embedding cosine can only
raise it: with the offline hashing embedder the cosine repeats the spelling signal, while a
semantic embedder adds meaning.

The token guard is what keeps hard negatives apart. Every core token of each side must find
a partner on the other side (equal, or a near spelling of a long word, e.g. a typo or a Russian
case ending); digits must agree exactly. ``AuthService``/``AuthzService`` (authentication vs
authorization), ``Java``/``JavaScript`` and ``PaymentService``/``PaymentsGateway`` fail it,
so however close their spelling, they can at most reach the uncertain band, where only an
LLM adjudicator (if enabled) may join them.

The code rule is stricter and comes first: digit runs and short letter runs (``eu``, ``ru``,
``13``, ``v``, a person's initial) identify by being exact, so two names whose multisets of
codes differ are never merged by spelling, whatever the rest of the name shares:
``k8s-eu-1``/``k8s-ru-1``/``k8s-eu-2``, ``PostgreSQL 13``/``PostgreSQL 16``,
``eu-west-1``/``us-west-1``, ``v1.27``/``v1.29``. Only two rules may pair names whose codes
differ, because there the difference is the evidence: an acronym (``IAM`` vs its words) and
initials (``J. Smith`` vs ``John Smith``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz import fuzz

from kg.resolve.normalize import CODE_MAX_LEN, Form, letterwise
from kg.resolve.persons import readings, same_person

_DIGITS = re.compile(r"\d+")
TOKEN_MATCH = 85.0  # rapidfuzz ratio two long tokens need to count as one word misspelt
TOKEN_MIN_LEN = 5  # shorter tokens must be equal: "auth"/"oath", "v1"/"v2"
COMPACT_MATCH = 90.0  # whole-name ratio that excuses a different word split plus a typo
COMPACT_MIN_LEN = 8
SKELETON_MIN_LEN = 3  # "pl" (Apple/Эппл) or "jr" (Jira/Джира) is too little to go on
SKELETON_MIN_SPELLING = 60.0  # and the spelling keys must still look alike (Раст/Rust: 75)
PERSON_APART = 0.5  # two people's names: below the uncertain band, never adjudicated


@dataclass(frozen=True, slots=True)
class Score:
    """A pair's score, the evidence behind it; ``guarded`` is False when the guard capped it."""

    value: float
    method: str
    guarded: bool = True


def _token_match(a: str, b: str, min_len: int) -> bool:
    if a == b:
        return True
    if len(a) < min_len or len(b) < min_len or a[0] != b[0]:
        return False
    if _DIGITS.search(a) or _DIGITS.search(b):
        return False
    return fuzz.ratio(a, b) >= TOKEN_MATCH


def _initials_match(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """``J. Smith`` ~ ``John Smith``: same words in order, some given only as initials.

    The word an initial stands for must be a word (letters, longer than a code), so
    ``k8s-e-1`` is not ``k8s-eu-1`` "with an initial".
    """
    if len(a) != len(b) or len(a) < 2:
        return False
    initials = 0
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if _initial_of(x, y) or _initial_of(y, x):
            initials += 1
            continue
        return False
    full_words = sum(1 for x, y in zip(a, b, strict=True) if x == y and len(x) > 1)
    return initials > 0 and full_words > 0


def _initial_of(initial: str, word: str) -> bool:
    return len(initial) == 1 and len(word) > CODE_MAX_LEN and word.isalpha() and word[0] == initial


def codes_conflict(a: Form, b: Form) -> bool:
    """The two names differ in a digit run or a short code (see the module docstring)."""
    return a.codes != b.codes


def skeletons_match(a: Form, b: Form) -> bool:
    """A Cyrillic and a Latin name with one consonant skeleton of >= 3 consonants.

    ``Раст``/``Rust`` (rst), ``ГитХаб``/``GitHub`` (gtb), ``Виндоус``/``Windows`` (vnd).
    Within one script two spellings are a choice, not a transliteration, so never there.
    """
    return (
        a.cyrillic != b.cyrillic
        and a.skeleton == b.skeleton
        and len(a.skeleton) >= SKELETON_MIN_LEN
        and fuzz.ratio(a.phonetic, b.phonetic) >= SKELETON_MIN_SPELLING
    )


def derivations_match(a: Form, b: Form) -> bool:
    """``audit logging service`` ~ ``AuditLogService``, ``Rate Limiting Service`` ~ ``RateLimiter``.

    Same words up to one English derivational ending (-ing, -er, -ed). Only for descriptive
    names (at least one side of two or more words): between single-word brands an ending
    is a different product (``Docker``/``Dock``, ``Packer``/``Pack``).
    """
    return (
        not a.cyrillic
        and not b.cyrillic
        and max(len(a.core), len(b.core)) >= 2
        and a.derived == b.derived
    )


def vendors_compatible(a: Form, b: Form) -> bool:
    """``Apache Kafka`` ~ ``Kafka``, but ``Google Cloud`` is not ``Amazon Cloud``."""
    return a.vendor is None or b.vendor is None or a.vendor == b.vendor


def tokens_compatible(a: Form, b: Form) -> bool:
    """Each core token of each side has a partner on the other side, and digits agree.

    Tokens are compared by their spelling key, so a transliteration can partner its English
    spelling; across scripts a 4-letter word may be near (``Азур``/``Azure``).
    """
    if a.core_digits != b.core_digits:
        return False
    if not vendors_compatible(a, b):
        return False
    min_len = TOKEN_MIN_LEN - 1 if a.cyrillic != b.cyrillic else TOKEN_MIN_LEN
    xs, ys = a.phonetic_core, b.phonetic_core
    if all(any(_token_match(x, y, min_len) for y in ys) for x in xs) and all(
        any(_token_match(y, x, min_len) for x in xs) for y in ys
    ):
        return True
    shortest = min(len(a.core_compact), len(b.core_compact))
    return (
        shortest >= COMPACT_MIN_LEN and fuzz.ratio(a.core_compact, b.core_compact) >= COMPACT_MATCH
    )


def string_similarity(a: Form, b: Form) -> float:
    """Best of spelling-key ratio and token-sort ratio over the core tokens, in [0, 1]."""
    phon = fuzz.ratio(a.phonetic, b.phonetic)
    tokens = fuzz.token_sort_ratio(" ".join(a.core), " ".join(b.core))
    return max(phon, tokens) / 100.0


def concepts_match(a: Form, b: Form) -> bool:
    """Same content words once translated (``AuthService`` ~ «сервис аутентификации»).

    Digits must agree, and so must the codes, but for those the concept key has expanded:
    a known abbreviation (``служба ИБ`` ~ «Служба информационной безопасности») is its words
    there; across scripts a short code may be a word of the other language (``No.`` / «№»).
    """
    if not a.concept or a.concept != b.concept or a.digits != b.digits:
        return False
    if not vendors_compatible(a, b):
        return False
    if a.cyrillic != b.cyrillic or a.mixed or b.mixed:
        return True
    differing = set(a.codes).symmetric_difference(b.codes)
    return differing <= a.expanded | b.expanded


def short_forms_match(a: Form, b: Form) -> bool:
    """One abbreviation in two scripts: ``РЖД`` / ``RZD``, ``ЦБ`` / ``CB``."""
    return (
        a.short is not None
        and b.short is not None
        and a.cyrillic != b.cyrillic
        and letterwise(a.short) == letterwise(b.short)
    )


def score_pair(
    a: Form, b: Form, cosine: float, merge_threshold: float, *, person: bool = False
) -> Score:
    """Score two forms of the same type; unguarded scores stay below ``merge_threshold``.

    ``person``: the type names people, so two names that both read as a person's name are
    judged by surname and initials alone (kg/resolve/persons.py): ``Петров И. И.`` and
    ``Петрова И. И.`` look alike and are two people.
    """
    if a.compact == b.compact:
        return Score(1.0, "exact-normalized")
    if person and readings(a.text) and readings(b.text):
        if same_person(a.text, b.text):
            return Score(0.92, "person-name")
        # the rule decides alone: another surname (or gender, or initials) is another person,
        # not a pair to ask an LLM about
        return Score(PERSON_APART, "person-name", guarded=False)
    same_digits = a.digits == b.digits
    conflict = codes_conflict(a, b)
    if same_digits and not conflict and vendors_compatible(a, b):
        if a.core_compact == b.core_compact:
            return Score(0.97, "exact-core")
        if a.phonetic == b.phonetic:
            return Score(0.93, "transliteration" if a.cyrillic != b.cyrillic else "phonetic")
        if (a.cyrillic or b.cyrillic) and a.stem_key == b.stem_key:
            return Score(0.9, "inflection")
        if skeletons_match(a, b):
            return Score(0.89, "transliteration")
        if derivations_match(a, b):
            return Score(0.88, "derivation")
    if concepts_match(a, b):
        return Score(0.92, "translation")
    if short_forms_match(a, b):
        return Score(0.93, "transliteration")
    if same_digits and _initials_match(a.tokens, b.tokens):
        return Score(0.88, "initials")
    if (a.short is not None and a.short in b.acronyms) or (
        b.short is not None and b.short in a.acronyms
    ):
        return Score(0.95, "acronym")
    text = string_similarity(a, b)
    value = max(text, 0.5 * max(cosine, 0.0) + 0.5 * text)
    cap = merge_threshold - 0.01
    if value <= cap:  # already below: the guard could not lower it (and it is the slow part)
        return Score(value, "embedding+string")
    if conflict or not tokens_compatible(a, b):
        return Score(cap, "embedding+string", guarded=False)
    return Score(value, "embedding+string")
