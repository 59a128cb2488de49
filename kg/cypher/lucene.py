"""Turning a free-text question into a safe Lucene query for the fulltext index."""

from __future__ import annotations

import re

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
