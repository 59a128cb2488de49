"""The zero-LLM document graph: entities from what documents declare, mentions by exact match.

Entities come from the documents' own structure, never from an LLM:

- the **title** (type ``Topic``; a trailing parenthetical also gives an alias:
  ``Kiss and Tell (1945 film)`` is found as ``Kiss and Tell``); every chunk of the document
  MENTIONS it (the document is about it);
- **headings** (type ``Section``), mentioned by the chunk that holds them (a one-word heading
  such as ``Usage`` only there);
- **link targets**: Markdown links to another document of the run (its title) and wiki links
  ``[[Target]]`` / ``[[Target|label]]`` (type ``Topic``), mentioned where the link is;
- **declared entities**: a Markdown front matter's ``entities:`` list, and its ``aliases:``
  (aliases of the title);
- **category folders**: each folder above a document (relative to the ingest root) is a
  ``Category`` entity named by the folder without its ordering prefix (``01_hr`` -> ``hr``,
  the folder path kept as an alias); the document's title entity is ``IN_CATEGORY`` of its
  folder, a folder of its parent folder, and the document's first chunk mentions its folder;
- **references** (kg/docrefs.py): a chunk naming another document of the run by its title or
  by its numbered reference (a Markdown link to it too) gives the title entity ``REFERENCES``
  the other's title entity. (With ``build(loose=True)``, a numbered reference to a law or a
  standard no document of the run is, ``152-ФЗ`` or ``ГОСТ Р 7.0.97-2016``, is a
  ``Reference`` entity the chunk mentions: off by default, measured in docs/architecture.md.)

Relations a document states hold from the document's date (``validFrom``; none without one),
so a search ``as_of`` an earlier date does not follow them; each cites the chunks that state it.

A candidate whose name or alias equals (as words, casefolded) a name or alias of an entity
already in the graph or resolved in this run is that entity, whatever its type; only the rest
become new entities. Then every chunk of the run is scanned for every known name and alias
(:class:`kg.words.Lexicon`: exact word boundaries, casefolded, longest match first), which adds
Chunk-MENTIONS->Entity wherever a known entity occurs, including the mentions an LLM missed.
No LLM call is made.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath
from typing import Literal

import yaml

from kg import docrefs
from kg.limits import cut_name
from kg.models import Chunk, Document, KnownEntity, ResolvedEntity
from kg.names import heading_text, plain_name
from kg.resolve.cluster import entity_id, type_key
from kg.resolve.embed import Embedder
from kg.words import Lexicon, form

TOPIC = "Topic"
SECTION = "Section"
CATEGORY = "Category"
REFERENCE = "Reference"
#: The types of the entities the document graph makes: a folder's own structure, not things its
#: text names (the graph signal takes links to them as weak evidence).
STRUCTURE_TYPES = frozenset({TOPIC, SECTION, CATEGORY, REFERENCE})
IN_CATEGORY = "IN_CATEGORY"
REFERENCES = "REFERENCES"
#: The predicates the document graph writes: each gets a relationship type of its own.
PREDICATES = (IN_CATEGORY, REFERENCES)
#: Of those, the predicates whose relations get no fact (graph model 5's relation-as-text): as
#: fact seeds, a reference's text (two titles) drew search to documents titled like the
#: question, and a category's (a folder name) helped one dev folder and cost another, vue-ru,
#: where folder names are common words (docs/architecture.md, "The folder's structure").
FACTLESS = PREDICATES
# Loose references become entities only for kinds whose number names one thing everywhere (a
# law, a standard); «Приложение № 2» or ``Appendix 2`` means another thing in every contract.
_LOOSE_KINDS = ("gost", "law")
# Edge weights (0..1) the graph signal's propagation multiplies (docs/architecture.md, "The
# document graph", measures them on bench/data/company-folder).
REFERENCE_WEIGHT = 0.3
CATEGORY_WEIGHT = 0.5
_ORDERING_PREFIX = re.compile(r"^\d+(?:[._\-\s)]+|(?=[^\W\d_]))")

_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_RST_UNDERLINE = re.compile(r"""^([=\-~^"'`#*+:.<>_])\1{2,}\s*$""")
_MD_LINK = re.compile(r"(?<!!)\[([^\]\n]{1,200})\]\(([^)\s]{1,500})(?:\s+\"[^\"]*\")?\)")
_WIKI_LINK = re.compile(r"\[\[([^\]|\n]{1,200})(?:\|([^\]\n]{1,200}))?\]\]")
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_MAX_DECLARED = 64


@dataclass
class Candidate:
    """An entity a document declares, and the chunks that declare it."""

    name: str
    type: str
    aliases: list[str] = field(default_factory=list)
    chunk_ids: set[str] = field(default_factory=set)


@dataclass
class DocGraph:
    """What the document graph adds: new entities and (chunk id, entity id) mentions."""

    entities: list[ResolvedEntity]
    mentions: set[tuple[str, str]]
    relations: list[Link] = field(default_factory=list)


@dataclass(frozen=True)
class Link:
    """A relation the documents' structure states, with the chunks that state it."""

    source: str
    target: str
    predicate: str
    chunk_ids: tuple[str, ...]
    valid_from: date | None = None
    weight: float = 0.5


def category_name(folder: str) -> str:
    """``01_hr`` -> ``hr``, ``02-Договоры_2024`` -> ``Договоры 2024``: a folder's name without a
    leading ordering number and with ``_`` / ``-`` as spaces (the folder itself if nothing
    is left)."""
    name = " ".join(_ORDERING_PREFIX.sub("", folder).replace("_", " ").replace("-", " ").split())
    return cut_name(name or folder)


def title_aliases(title: str) -> list[str]:
    """``Kiss and Tell (1945 film)`` -> ``["Kiss and Tell"]``."""
    base = _PARENTHETICAL.sub("", title).strip()
    return [base] if base and base != title.strip() else []


def front_matter(text: str) -> dict[str, object]:
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}
    try:
        data = yaml.safe_load(match.group(1))
    except (yaml.YAMLError, RecursionError):  # deep nesting is hostile, not a crash
        return {}
    return data if isinstance(data, dict) else {}


def _strings(value: object) -> list[str]:
    """Declared names, each bounded like every name (kg/limits.py)."""
    if isinstance(value, str):
        return [cut_name(plain_name(value))]
    if isinstance(value, list):
        declared = [v for v in value[:_MAX_DECLARED] if isinstance(v, str | int | float)]
        return [cut_name(plain_name(str(v))) for v in declared]
    return []


def _headings(text: str) -> list[str]:
    """Headings of a chunk, each bounded like every name (kg/limits.py)."""
    found = [heading_text(m.group(1)) for m in _HEADING.finditer(text)]
    lines = text.splitlines()
    for i in range(len(lines) - 1):
        line, under = lines[i].strip(), lines[i + 1].rstrip()
        if line and _RST_UNDERLINE.match(under) and len(under) >= len(line):
            found.append(line)
    return [cut_name(plain_name(h)) for h in found]


def _link_target(doc_path: str, target: str, titles: Mapping[str, str]) -> str | None:
    """The title of the run's document a relative Markdown link points at, if any."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
        return None  # a URL or an anchor in the same page
    path = target.split("#", 1)[0]
    if not path:
        return None
    joined = PurePosixPath(doc_path).parent / path
    parts: list[str] = []
    for part in joined.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return titles.get("/".join(parts))


def candidates(
    doc: Document, chunks: Sequence[Chunk], titles: Mapping[str, str]
) -> list[Candidate]:
    """The entities ``doc`` declares (see the module docstring), with their chunks."""
    if not chunks:
        return []
    meta = front_matter(doc.text)
    doc_title = cut_name(
        plain_name(heading_text(doc.title))
    )  # cut by the loaders; a library caller's too
    title = Candidate(
        doc_title,
        TOPIC,
        [*title_aliases(doc_title), *_strings(meta.get("aliases"))],
        {c.id for c in chunks},
    )
    found = [title]
    for name in _strings(meta.get("entities")):
        found.append(Candidate(name, TOPIC, title_aliases(name), {chunks[0].id}))
    for chunk in chunks:
        for heading in _headings(chunk.text):
            if heading.casefold() != doc_title.casefold():
                found.append(Candidate(heading, SECTION, [], {chunk.id}))
        for match in _MD_LINK.finditer(chunk.text):
            target = _link_target(doc.path, match.group(2), titles)
            if target:
                target = cut_name(plain_name(heading_text(target)))
                found.append(Candidate(target, TOPIC, title_aliases(target), {chunk.id}))
        for match in _WIKI_LINK.finditer(chunk.text):
            name = cut_name(plain_name(match.group(1)))
            found.append(Candidate(name, TOPIC, title_aliases(name), {chunk.id}))
    return [c for c in found if c.name and form(c.name) is not None]


def build(
    documents: Sequence[Document],
    chunks: Mapping[str, Sequence[Chunk]],
    known: Iterable[KnownEntity | ResolvedEntity],
    embedder: Embedder,
    *,
    folders: bool = True,
    references: bool = True,
    category_mentions: Literal["none", "first", "all"] = "first",
    loose: bool = False,
    imported: Collection[str] = frozenset(),
) -> DocGraph:
    """New entities from the documents' structure, and every mention of every known name.

    ``chunks`` maps a document id to the chunks written for it; ``known`` is what the graph
    holds plus what resolution produced in this run. ``folders`` and ``references`` turn the
    category folders and the references off (bench/folder_graph.py compares); with
    ``category_mentions`` a document's category is mentioned by no chunk, its first (the
    default) or all of them; ``loose``: laws and standards no document of the run is become
    ``Reference`` entities (off: a question naming the law linked to that hub alone and lost
    its better seeds; docs/architecture.md, "The document graph", measures each).
    ``imported``: ids of documents from a triplets file, whose paths are ids a user chose
    (``0001:AC/DC``), not folders: they get no categories.
    """
    known = list(known)
    lexicon = Lexicon()
    for entity in known:
        lexicon.add_all([entity.name, *entity.aliases], entity.id)
    new, mentions, title_of, local = _structure(documents, chunks, lexicon)
    relations: list[Link] = []
    if references:
        # Documents of earlier runs are known by their title entities (type Topic): a changed
        # document still finds the unchanged ones it names.
        earlier = [e for e in known if e.type == TOPIC and e.id not in new]
        args = (documents, chunks, title_of, new, lexicon, mentions, loose, earlier)
        relations += _references(*args)
    for doc in documents:
        for chunk in chunks.get(doc.id, ()):
            mentions.update((chunk.id, eid) for eid in lexicon.find(chunk.text) - local)
    if folders:
        filed = [d for d in documents if d.id not in imported]
        relations += _categories(filed, chunks, title_of, new, mentions, category_mentions)
    entities = list(new.values())
    if entities:
        vectors = embedder.embed([e.name for e in entities])
        for entity, vector in zip(entities, vectors, strict=True):
            entity.embedding = [float(x) for x in vector]
    return DocGraph(entities=entities, mentions=mentions, relations=relations)


def _structure(
    documents: Sequence[Document], chunks: Mapping[str, Sequence[Chunk]], lexicon: Lexicon
) -> tuple[dict[str, ResolvedEntity], set[tuple[str, str]], dict[str, str], set[str]]:
    """Titles, headings and links as entities: the new ones, their mentions, each document's
    title entity, and the one-word headings that stay local to their section."""
    titles = {d.path: d.title for d in documents}
    new: dict[str, ResolvedEntity] = {}
    mentions: set[tuple[str, str]] = set()
    title_of: dict[str, str] = {}  # document id -> its title entity
    # A one-word heading ("Usage", "Examples") names its section, not a thing the rest of the
    # corpus talks about: it is not looked for in other chunks.
    local: set[str] = set()
    for doc in documents:
        for n, cand in enumerate(candidates(doc, chunks.get(doc.id, ()), titles)):
            key = form(cand.name)
            assert key is not None  # candidates() kept only matchable names
            ids = lexicon.get(key)
            if ids:
                eid = min(ids)
                if eid in new:
                    _add_aliases(new[eid], cand.aliases)
            else:
                eid = entity_id(" ".join(key), type_key(cand.type))
                new[eid] = ResolvedEntity(eid, cand.name, cand.type)
                if cand.type == SECTION and len(key) == 1:
                    local.add(eid)
                _add_aliases(new[eid], cand.aliases)
                lexicon.add(cand.name, eid)
            lexicon.add_all(new[eid].aliases if eid in new else (), eid)
            mentions.update((cid, eid) for cid in cand.chunk_ids)
            if n == 0 and cand.type == TOPIC:
                title_of[doc.id] = eid
    return new, mentions, title_of, local


def _day(doc: Document) -> date | None:
    try:
        return date.fromisoformat(doc.date) if doc.date else None
    except ValueError:
        return None


def _categories(
    documents: Sequence[Document],
    chunks: Mapping[str, Sequence[Chunk]],
    title_of: Mapping[str, str],
    new: dict[str, ResolvedEntity],
    mentions: set[tuple[str, str]],
    category_mentions: str,
) -> list[Link]:
    """Each document's folders as ``Category`` entities: title IN_CATEGORY folder, a folder
    IN_CATEGORY its parent. A category's id is its folder path's (cleaned), so ``hr/policies``
    and ``legal/policies`` are two categories, and a second run finds the same ones."""
    by_pair: dict[tuple[str, str, date | None], set[str]] = {}
    for doc in documents:
        own = chunks.get(doc.id, ())
        folders = PurePosixPath(doc.path).parts[:-1]
        if not own or not folders:
            continue
        ids: list[str] = []
        for depth in range(1, len(folders) + 1):
            path = "/".join(folders[:depth])
            cleaned = "/".join(category_name(f) for f in folders[:depth])
            eid = entity_id(cleaned.casefold(), type_key(CATEGORY))
            if eid not in new:
                new[eid] = ResolvedEntity(eid, category_name(folders[depth - 1]), CATEGORY)
            _add_aliases(new[eid], [path])
            ids.append(eid)
        # The first chunk at least, so a category is settled like any entity when its last
        # document goes (kg.graph.writer: entities nothing mentions are removed).
        cited = {"none": [], "first": [own[0]], "all": list(own)}[category_mentions] or [own[0]]
        if category_mentions != "none":
            mentions.update((c.id, ids[-1]) for c in cited)
        cited_ids = {c.id for c in cited}
        title = title_of.get(doc.id)
        if title is not None:
            by_pair.setdefault((title, ids[-1], _day(doc)), set()).update(cited_ids)
        for child, parent in zip(ids[1:], ids[:-1], strict=False):
            by_pair.setdefault((child, parent, None), set()).update(cited_ids)
    return [
        Link(src, dst, IN_CATEGORY, tuple(sorted(cids)), since, CATEGORY_WEIGHT)
        for (src, dst, since), cids in sorted(by_pair.items(), key=lambda x: (x[0][0], x[0][1]))
    ]


def _references(
    documents: Sequence[Document],
    chunks: Mapping[str, Sequence[Chunk]],
    title_of: Mapping[str, str],
    new: dict[str, ResolvedEntity],
    lexicon: Lexicon,
    mentions: set[tuple[str, str]],
    loose: bool = True,
    earlier: Sequence[KnownEntity | ResolvedEntity] = (),
) -> list[Link]:
    """REFERENCES between title entities (kg/docrefs.py, and Markdown links to the run's
    documents); loose references to laws and standards become ``Reference`` entities."""
    aliases = {
        d.id: [*title_aliases(d.title), *_strings(front_matter(d.text).get("aliases"))]
        for d in documents
    }
    # Document id -> its title entity; a known title (or named topic) stands in for a document
    # of an earlier run: a target only, it has no chunks here.
    targets: dict[str, str] = dict(title_of)
    own = set(title_of.values())
    stand_ins: list[Document] = []
    for entity in earlier:
        if entity.id not in own:
            stand_in = f"\x00{entity.id}"
            targets[stand_in] = entity.id
            aliases[stand_in] = list(entity.aliases)
            stand_ins.append(Document(stand_in, "", entity.name, "", ""))
    found = docrefs.find([*documents, *stand_ins], chunks, aliases)
    by_path = {d.path: d.id for d in documents}
    for doc in documents:
        for chunk in chunks.get(doc.id, ()):
            for match in _MD_LINK.finditer(chunk.text):
                target = _link_target(doc.path, match.group(2), by_path)
                if target is not None and target != doc.id:
                    found.links.add((chunk.id, doc.id, target))
    dated = {d.id: _day(d) for d in documents}
    by_pair: dict[tuple[str, str, date | None], set[str]] = {}
    for chunk_id, source, target in found.links:
        a, b = title_of.get(source), targets.get(target)
        if a is not None and b is not None and a != b:
            by_pair.setdefault((a, b, dated.get(source)), set()).add(chunk_id)
    for chunk_id, names in sorted(found.loose.items()) if loose else ():
        for name in sorted(names):
            refs = docrefs.numbered(name)
            key = form(name)
            if not refs or refs[0].kind not in _LOOSE_KINDS or key is None:
                continue
            ids = lexicon.get(key)
            eid = min(ids) if ids else entity_id(" ".join(key), type_key(REFERENCE))
            if not ids:
                new[eid] = ResolvedEntity(eid, name, REFERENCE)
                lexicon.add(name, eid)
            mentions.add((chunk_id, eid))
    return [
        Link(src, dst, REFERENCES, tuple(sorted(cids)), since, REFERENCE_WEIGHT)
        for (src, dst, since), cids in sorted(by_pair.items(), key=lambda x: (x[0][0], x[0][1]))
    ]


def _add_aliases(entity: ResolvedEntity, aliases: Iterable[str]) -> None:
    for alias in aliases:
        alias = alias.strip()
        if alias and alias != entity.name and alias not in entity.aliases and form(alias):
            entity.aliases.append(alias)
