"""References between the documents of a run, found in their text (no LLM).

A chunk of one document references another document of the run when it

- names the other's **title** (words compared by Snowball stems, casefolded, so the Russian
  «согласно Положению о премировании» names «Положение о премировании»); only titles of two
  or more content words, or with a digit in them, are looked for: a one-word title
  (``Glossary``, «Отпуск») names a common thing more often than the document;
- gives a **numbered reference** equal to the one that identifies the other (the first in its
  title, or in its file name): «Договор № 15/2024», «Приложению № 2», «Положения № 4»,
  ``ГОСТ Р 7.0.97-2016``, «Федеральный закон № 152-ФЗ», ``Policy 4.2``, ``Appendix 2``,
  ``Contract No. 15/2024``. Nouns match on their stem (any case form), and a kind is one across
  languages (``Contract No. 15`` is «Договор № 15»).

A numbered reference that identifies no document of the run (a law, a standard, a contract
kept elsewhere) is a *loose* reference: the document graph makes it a ``Reference`` entity the
chunk mentions, named in one canonical spelling (``152-ФЗ``, ``ГОСТ Р 7.0.97-2016``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kg.languages import stems
from kg.models import Chunk, Document
from kg.words import STOP_WORDS, words

__all__ = ["Numbered", "References", "find", "numbered", "own_reference"]

# Noun stem (any case form follows) -> the kind it is, one across languages.
_KINDS: Mapping[str, str] = {
    "договор": "contract",
    "contract": "contract",
    "agreement": "contract",
    "приложени": "appendix",
    "appendix": "appendix",
    "annex": "appendix",
    "attachment": "appendix",
    "положени": "provision",
    "приказ": "order",
    "order": "order",
    "регламент": "regulation",
    "regulation": "regulation",
    "инструкци": "instruction",
    "instruction": "instruction",
    "политик": "policy",
    "policy": "policy",
    "policies": "policy",
    "распоряжени": "directive",
    "протокол": "minutes",
}
_RU_NOUNS = "договор|приложени|положени|приказ|регламент|инструкци|политик|распоряжени|протокол"
_NUMBER = r"([0-9A-Za-zА-Яа-я][\w./-]{0,30}?)(?=[.,;:)»\"]?(?:\s|$))"
# «Договор поставки № 15/2024»: up to three words between the noun and «№», none of them
# another numbered noun (so «Приложение к Договору № 15» is the contract's reference).
_RU_NUMBERED = re.compile(
    rf"(?<!\w)({_RU_NOUNS})\w*((?:\s+(?!(?:{_RU_NOUNS}))[^\s№]{{1,30}}){{0,3}}?)\s*№\s*{_NUMBER}",
    re.IGNORECASE,
)
_EN_NUMBERED = re.compile(
    r"(?<!\w)(contract|agreement|order|regulation|instruction)s?\s+"
    rf"(?:no\.?|number|#)\s*{_NUMBER}",
    re.IGNORECASE,
)
_EN_PLAIN = re.compile(
    r"(?<!\w)(policy|appendix|annex|attachment)\s+(\d+(?:\.\d+)*|[A-Z])(?![\w.]*\w)",
    re.IGNORECASE,
)
_GOST = re.compile(
    r"(?<!\w)ГОСТ(\s+Р)?(\s+ИСО(?:/МЭК)?)?\s+(\d+(?:\.\d+)*)\s*[-–—]\s*(\d{2,4})(?!\d)"
)
_LAW = re.compile(r"(?<!\w)(\d{1,4})\s*[-–—]\s*ФЗ(?!\w)")


@dataclass(frozen=True)
class Numbered:
    """One numbered reference: its kind and number (the key two spellings share), the
    canonical name a loose reference's entity gets, and where it starts."""

    kind: str
    number: str
    name: str
    start: int

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.number)


def _kind(noun: str) -> str:
    noun = noun.casefold()
    for stem, kind in _KINDS.items():
        if noun.startswith(stem):
            return kind
    return noun


def _number(raw: str) -> str:
    return raw.strip(".,;:/-").replace("–", "-").replace("—", "-").casefold()


_RU_NAMES = {
    "contract": "Договор",
    "appendix": "Приложение",
    "provision": "Положение",
    "order": "Приказ",
    "regulation": "Регламент",
    "instruction": "Инструкция",
    "policy": "Политика",
    "directive": "Распоряжение",
    "minutes": "Протокол",
}


def numbered(text: str) -> list[Numbered]:
    """Every numbered reference in ``text``, in order of position."""
    found: list[Numbered] = []
    for m in _RU_NUMBERED.finditer(text):
        kind, number = _kind(m[1]), _number(m[3])
        if number:
            found.append(Numbered(kind, number, f"{_RU_NAMES[kind]} № {number}", m.start()))
    for m in _EN_NUMBERED.finditer(text):
        kind, number = _kind(m[1]), _number(m[2])
        if number:
            found.append(Numbered(kind, number, f"{m[1].title()} No. {number}", m.start()))
    for m in _EN_PLAIN.finditer(text):
        kind, number = _kind(m[1]), _number(m[2])
        found.append(Numbered(kind, number, f"{m[1].title()} {m[2]}", m.start()))
    for m in _GOST.finditer(text):
        number = f"{m[3]}-{m[4]}"
        prefix = "ГОСТ" + (" Р" if m[1] else "") + (" ИСО" if m[2] else "")
        found.append(Numbered("gost", number, f"{prefix} {number}", m.start()))
    for m in _LAW.finditer(text):
        found.append(Numbered("law", m[1], f"{m[1]}-ФЗ", m.start()))
    return sorted(found, key=lambda n: n.start)


def own_reference(title: str, path: str = "") -> tuple[str, str] | None:
    """The numbered reference that identifies a document: the first in its title, else in its
    file name (``dogovor_15-2024.md`` has none; ``Policy 4.2.md`` has ``Policy 4.2``)."""
    for text in (title, path.rsplit("/", 1)[-1].rsplit(".", 1)[0].replace("_", " ")):
        refs = numbered(text)
        if refs:
            return refs[0].key
    return None


def _title_form(title: str) -> tuple[str, ...] | None:
    """A title's stems, when it is specific enough to be looked for in other documents."""
    found = words(title)
    content = [w for w in found if w not in STOP_WORDS]
    if not content or len(found) > 12:
        return None
    if len(content) >= 2 or any(c.isdigit() for w in content for c in w):
        return stems(found)
    return None


@dataclass
class References:
    """What :func:`find` found: (chunk id, referencing document id, referenced document id),
    and per chunk the loose references (canonical names) it gives."""

    links: set[tuple[str, str, str]] = field(default_factory=set)
    loose: dict[str, set[str]] = field(default_factory=dict)


class _Titles:
    """Titles (as stem sequences) of the run's documents, looked up by their first stem."""

    def __init__(self) -> None:
        self._by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}

    def add(self, title: str, doc_id: str) -> None:
        key = _title_form(title)
        if key is not None:
            self._by_first.setdefault(key[0], []).append((key, doc_id))

    def find(self, text: str) -> set[str]:
        tokens = stems(words(text))
        found: set[str] = set()
        for i, token in enumerate(tokens):
            for key, doc_id in self._by_first.get(token, ()):
                if tokens[i : i + len(key)] == key:
                    found.add(doc_id)
        return found


def find(
    documents: Sequence[Document],
    chunks: Mapping[str, Sequence[Chunk]],
    aliases: Mapping[str, Iterable[str]] | None = None,
) -> References:
    """References between ``documents`` (and loose ones) in their ``chunks`` (by document id).

    ``aliases``: more names a document is known by (its front matter's ``aliases:``).
    """
    titles = _Titles()
    owners: dict[tuple[str, str], set[str]] = {}
    for doc in documents:
        for name in (doc.title, *(aliases or {}).get(doc.id, ())):
            titles.add(name, doc.id)
        own = own_reference(doc.title, doc.path)
        if own is not None:
            owners.setdefault(own, set()).add(doc.id)
    found = References()
    for doc in documents:
        for chunk in chunks.get(doc.id, ()):
            targets = titles.find(chunk.text)
            for ref in numbered(chunk.text):
                owner = owners.get(ref.key, set())
                if len(owner) == 1:  # two documents claiming one number: neither is meant
                    targets |= owner
                elif not owner:
                    found.loose.setdefault(chunk.id, set()).add(ref.name)
            found.links.update((chunk.id, doc.id, t) for t in targets if t != doc.id)
    return found
