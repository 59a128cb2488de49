"""Person names: surname plus initials, in either order and either script.

Why: people are written «Петров Иван Иванович», «И. И. Петров», «Petrov I.I.», «Ivan Petrov»
and «Петрову И. И.» in one folder. The words differ in number and order, so neither spelling
nor word overlap meets them; what identifies a person inside one organisation's documents is
the surname (with its gender: «Петрова» is not «Петров») and the initials of the given name
and patronymic. Two names are one person when some reading of each gives the same surname key
and initials that do not contradict: a given name or patronymic present on both sides must
agree (as a word when both spell it out, by its first letter otherwise).

A reading assigns the surname to one word. With initials present the surname is the one full
word; with two or three full words a Russian name's roles come from the morphology (pymorphy3
tags surnames, given names and patronymics), a Latin one is read both ways (``Ivan Petrov`` and
``Tchaikovsky Pyotr``), and a word ending like a patronymic (``-ovich``, ``-evna``) is never
the surname.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from kg.resolve.normalize import name_key
from kg.resolve.russian import Morphology, has_cyrillic

_WORD = re.compile(r"[^\W\d_]+\.?")
_PATRONYMIC = re.compile(r"(ovich|evich|ovna|evna|ichna|inichna|ich)$")


@dataclass(frozen=True, slots=True)
class PersonName:
    """One reading of a person's name: surname key, then given name and patronymic.

    ``given`` and ``patronymic`` are the spelled-out word's key or a one-letter initial.
    """

    surname: str
    given: str | None
    patronymic: str | None


def _nominative_words(text: str) -> list[str]:
    if has_cyrillic(text):
        text = Morphology.nominative(text)
    return [w for w in _WORD.findall(unicodedata.normalize("NFKC", text))]


def _compatible(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return True
    if len(a) == 1 or len(b) == 1:
        return a[0] == b[0]
    return a == b or (a[:3] == b[:3] and min(len(a), len(b)) >= 4)


@lru_cache(maxsize=1 << 16)
def readings(text: str) -> tuple[PersonName, ...]:
    """Every plausible reading of ``text`` as a person's name; () when it is not one."""
    words = _nominative_words(text)
    if not 1 <= len(words) <= 4:
        return ()
    initials = [name_key(w[0])[:1] for w in words if len(w.rstrip(".")) == 1]
    full = [w.rstrip(".") for w in words if len(w.rstrip(".")) > 1]
    if any(len(w) <= 3 and w.isupper() for w in full):
        # «Петров И.И.» reads as words «Петров», «И.И.»: split glued initials
        split: list[str] = []
        for w in full:
            if w.isupper() and len(w) <= 3:
                initials.extend(name_key(c)[:1] for c in w)
            else:
                split.append(w)
        full = split
    if not full:
        return ()
    if initials:
        if len(full) != 1 or len(initials) > 2:
            return ()
        second = initials[1] if len(initials) > 1 else None
        return (PersonName(name_key(full[0]), initials[0], second),)
    if len(full) == 1 or len(full) > 3:
        return ()
    keys = [name_key(w) for w in full]
    roles = _russian_roles(full) if all(has_cyrillic(w) for w in full) else None
    if roles is not None:
        return (
            PersonName(
                keys[roles.index("Surn")],
                keys[roles.index("Name")] if "Name" in roles else None,
                keys[roles.index("Patr")] if "Patr" in roles else None,
            ),
        )
    out: list[PersonName] = []
    for position, key in enumerate(keys):
        if _PATRONYMIC.search(key) and len(keys) > 1:
            continue
        rest = [k for p, k in enumerate(keys) if p != position]
        patronymics = [k for k in rest if _PATRONYMIC.search(k)]
        givens = [k for k in rest if not _PATRONYMIC.search(k)]
        if len(givens) > 1:
            continue
        out.append(
            PersonName(key, givens[0] if givens else None, patronymics[0] if patronymics else None)
        )
    return tuple(out)


def _russian_roles(words: list[str]) -> list[str] | None:
    """Surn / Name / Patr for each word of a Russian name, when the dictionary is sure."""
    roles: list[str] = []
    for word in words:
        tags = {g for p in Morphology._parses(word.casefold()) for g in p.tag.grammemes}
        found = [role for role in ("Patr", "Name", "Surn") if role in tags]
        if not found:
            return None
        roles.append(found[0] if len(found) == 1 else "?")
    if roles.count("?") == 1:
        missing = [r for r in ("Surn", "Name", "Patr") if r not in roles]
        if len(missing) >= 1:
            roles[roles.index("?")] = "Surn" if "Surn" in missing else missing[0]
    if roles.count("Surn") != 1 or len(set(roles)) != len(roles):
        return None
    return roles


def same_person(a: str, b: str) -> bool:
    """Some reading of ``a`` and some reading of ``b`` name one person (module docstring)."""
    for x in readings(a):
        for y in readings(b):
            if (
                x.surname == y.surname
                and _compatible(x.given, y.given)
                and _compatible(x.patronymic, y.patronymic)
            ):
                return True
    return False


def surname_keys(text: str) -> tuple[str, ...]:
    """The surname keys of every reading: what the resolver indexes candidates by."""
    return tuple(dict.fromkeys(r.surname for r in readings(text)))
