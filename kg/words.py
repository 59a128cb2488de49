"""Words as kg compares names: casefolded ``\\w+`` runs, shared by the document graph's mention
scan and the search's question linking, so a name found in a chunk is found in a question.

A *form* is a name or alias as a tuple of words. Forms that carry no information (only stop
words, or one short word) are never matched: ``The``, ``It`` or ``C`` would otherwise link to
every text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

_WORD = re.compile(r"\w+")

MAX_FORM_WORDS = 12
#: Longest word linking sends to the fulltext index (a run of CJK characters is one ``\w+``).
MAX_WORD_CHARS = 64

# Function words of English and Russian: a name made only of these is not a name.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours one two first new
    и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее
    мне было вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был
    него до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо ней
    для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того
    потому этого какой совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда зачем
    всех никогда можно при наконец два об другой хоть после над больше тот через эти нас про всего
    них какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя
    такой им более всегда конечно всю между
    """.split()  # noqa: SIM905 - a list literal of 250 words reads worse
)


def words(text: str) -> list[str]:
    """Casefolded word runs of ``text`` (letters, digits and underscores of any script)."""
    return [m.group().casefold() for m in _WORD.finditer(text)]


def form(text: str) -> tuple[str, ...] | None:
    """``text`` as a matchable form, or None when it could only match noise."""
    found = tuple(words(text))
    if not found or len(found) > MAX_FORM_WORDS:
        return None
    content = [w for w in found if w not in STOP_WORDS]
    if not content:
        return None
    if len(found) == 1 and (len(found[0]) < 3 or found[0].isdigit()):
        return None
    return found


class Lexicon:
    """Forms to entity ids, matched longest first over a text's words (a trie by prefixes).

    ``find`` walks the words once; at each position it extends the n-gram only while it is the
    prefix of some form, so its cost is about the text's length, whatever the lexicon's size.
    A match consumes its words: the longest form wins (``New York Times`` over ``New York``).
    """

    def __init__(self) -> None:
        self._forms: dict[tuple[str, ...], set[str]] = {}
        self._prefixes: set[tuple[str, ...]] = set()

    def __len__(self) -> int:
        return len(self._forms)

    def add(self, name: str, entity_id: str) -> bool:
        key = form(name)
        if key is None:
            return False
        self._forms.setdefault(key, set()).add(entity_id)
        for n in range(1, len(key)):
            self._prefixes.add(key[:n])
        return True

    def add_all(self, names: Iterable[str], entity_id: str) -> None:
        for name in names:
            self.add(name, entity_id)

    def get(self, key: tuple[str, ...]) -> set[str]:
        return self._forms.get(key, set())

    def matches(self, tokens: list[str]) -> Iterator[tuple[int, int, set[str]]]:
        """``(start, end, entity ids)`` of the longest forms in ``tokens``, left to right."""
        i = 0
        while i < len(tokens):
            best: tuple[int, set[str]] | None = None
            end = i + 1
            while end <= len(tokens):
                key = tuple(tokens[i:end])
                hit = self._forms.get(key)
                if hit:
                    best = (end, hit)
                if key not in self._prefixes:
                    break
                end += 1
            if best is None:
                i += 1
                continue
            yield i, best[0], best[1]
            i = best[0]

    def find(self, text: str) -> set[str]:
        """Ids of every entity whose name or alias occurs in ``text`` (exact words, casefolded)."""
        found: set[str] = set()
        for _start, _end, ids in self.matches(words(text)):
            found |= ids
        return found
