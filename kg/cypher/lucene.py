"""Turning a free-text question into a safe Lucene query for the fulltext index."""

from __future__ import annotations

import re
from itertools import pairwise

_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')
_WORD = re.compile(r"\w")
_OPERATORS = frozenset({"AND", "OR", "NOT", "TO"})
MAX_TERMS = 64
#: Most tokens a query may analyze to. Lucene refuses a query of more than 1,024 clauses
#: (``IndexSearcher.maxClauseCount``), and the entity index has two fields (name, aliases),
#: so each token costs two clauses; 256 leaves room to spare.
MAX_TOKENS = 256
# Scripts the standard analyzer cuts into one token per character (Han, kana, Hangul ...):
# a 1,000-character Chinese question has no spaces, yet analyzes to 1,000 tokens.
_PER_CHARACTER_FROM = 0x2E80


def _token_cost(char: str, in_run: bool) -> tuple[int, bool]:
    """An upper bound on the tokens ``char`` adds, and whether it continues a word run."""
    if ord(char) >= _PER_CHARACTER_FROM or not char.isalnum():
        # one token each at most (punctuation makes none, but counting it is safe)
        return 1, False
    return (0 if in_run else 1), True


def _within_budget(term: str, budget: int) -> tuple[str, int]:
    """The longest prefix of ``term`` that analyzes to at most ``budget`` tokens, and its cost."""
    cost = 0
    in_run = False
    for i, char in enumerate(term):
        add, in_run = _token_cost(char, in_run)
        if cost + add > budget:
            return term[:i], cost
        cost += add
    return term, cost


def escape_lucene(text: str, max_terms: int = MAX_TERMS, max_tokens: int = MAX_TOKENS) -> str:
    """Every character Lucene treats as syntax escaped; operator words lower-cased.

    The result is a plain OR of terms, so a question holding ``"`` or ``title:(x OR y)``
    searches for those words rather than failing to parse. It is bounded by words
    (``max_terms``) and by the tokens the analyzer can cut them into (``max_tokens``), so a
    long question in a script without spaces stays under Lucene's clause limit: its first
    part is searched. Empty when nothing is searchable.
    """
    terms: list[str] = []
    budget = max_tokens
    for raw in text.replace("\x00", " ").split():
        if not _WORD.search(raw):
            continue
        term = raw.lower() if raw in _OPERATORS else raw
        term, cost = _within_budget(term, budget)
        if term and _WORD.search(term):
            terms.append(_SPECIAL.sub(r"\\\1", term))
            budget -= cost
        if len(terms) >= max_terms or budget <= 0:
            break
    return " ".join(terms)


# -- what a hit matched ---------------------------------------------------------------------------
# The entity index holds a name and every alias in one document, whoever gave them, so a hit
# does not say which matched. A scoped read checks it again against the name and the aliases
# its scope gave (kg.cypher.render.named) with a Java regular expression of the words the
# query searched: word-bounded and case-blind as the standard analyzer is, each word quoted
# (\Q...\E; a word is letters, digits and underscores, so it cannot hold \E).
_WORDS = re.compile(r"\w+")
_REGEX_FLAGS = "(?isU)"  # DOTALL, Unicode case and word classes
NEVER = "(?!)"


# Word breaks (Unicode UAX #29, the standard tokenizer's rules): one of these between two
# letters, or between two digits, joins them into one word ("o'neil", "payments.api", "3.14").
_JOINS_LETTERS = ".'’:·"
_JOINS_DIGITS = ".,;'’"


def _class(chars: str) -> str:
    return "[" + "".join("\\" + c if c in "\\[]^-&" else c for c in chars) + "]"


def _joiners(before: str, after: str) -> str:
    """What joins the characters ``before`` and ``after`` into one word when alone between."""
    if before.isalpha() and after.isalpha():
        return _JOINS_LETTERS
    if before.isdigit() and after.isdigit():
        return _JOINS_DIGITS
    return ""


def _per_character(char: str) -> bool:
    return ord(char) >= _PER_CHARACTER_FROM


def _between(before: str, after: str) -> str:
    """A word break between two words, the last character of one and the first of the next."""
    if _per_character(before) or _per_character(after):
        return r"\W*"
    joins = _joiners(before, after)
    if not joins:
        return r"\W+"
    return r"(?:\W{2,}|[^\w" + _class(joins)[1:-1] + "])"


def _word(word: str) -> tuple[str, str, str]:
    """``word`` as a literal with a word break on each side (none around a per-character
    script, whose every character is a word of its own)."""
    left = right = ""
    first, last = word[0], word[-1]
    if not _per_character(first):
        left = r"(?<!\w)"
        if first.isalpha() or first.isdigit():
            near = r"\p{L}" if first.isalpha() else r"\p{Nd}"
            left += "(?<!" + near + _class(_joiners(first, first)) + ")"
    if not _per_character(last):
        right = r"(?!\w)"
        if last.isalpha() or last.isdigit():
            near = r"\p{L}" if last.isalpha() else r"\p{Nd}"
            right += "(?!" + _class(_joiners(last, last)) + near + ")"
    return left, r"\Q" + word + r"\E", right


def _tokens(text: str) -> list[str]:
    """The words the standard tokenizer cuts ``text`` into (runs of word characters, joined
    across one joining character: "O'Neil", "3.14"), in the text's own case."""
    tokens: list[str] = []
    end = -1
    for match in _WORDS.finditer(text):
        gap = text[end : match.start()]
        if tokens and len(gap) == 1 and gap in _joiners(tokens[-1][-1], match.group()[0]):
            tokens[-1] += gap + match.group()
        else:
            tokens.append(match.group())
        end = match.end()
    return tokens


def phrase_regex(words: list[str]) -> str:
    """A regex that a name or alias matches when it holds ``words`` in order as words
    (``"oauth gateway"`` in "OAuth-Gateway Beta"), as a quoted phrase query would."""
    words = _tokens(" ".join(words))
    if not words:
        return NEVER
    left, inner, _ = _word(words[0])
    for before, word in pairwise(words):
        inner += _between(before[-1], word[0]) + _word(word)[1]
    right = _word(words[-1])[2]
    return _REGEX_FLAGS + ".*" + left + inner + right + ".*"


def any_word_regex(query: str) -> str:
    """A regex that a name or alias matches when it holds any word of ``query`` (an escaped
    query of :func:`escape_lucene`: a plain OR of terms)."""
    words = list(dict.fromkeys(_tokens(query)))
    if not words:
        return NEVER
    return _REGEX_FLAGS + ".*(?:" + "|".join("".join(_word(w)) for w in words) + ").*"
