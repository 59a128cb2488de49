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
  (aliases of the title).

A candidate whose name or alias equals (as words, casefolded) a name or alias of an entity
already in the graph or resolved in this run is that entity, whatever its type; only the rest
become new entities. Then every chunk of the run is scanned for every known name and alias
(:class:`kg.words.Lexicon`: exact word boundaries, casefolded, longest match first), which adds
Chunk-MENTIONS->Entity wherever a known entity occurs, including the mentions an LLM missed.
No LLM call is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import yaml

from kg.limits import cut_name
from kg.models import Chunk, Document, KnownEntity, ResolvedEntity
from kg.names import heading_text, plain_name
from kg.resolve.cluster import entity_id, type_key
from kg.resolve.embed import Embedder
from kg.words import Lexicon, form

TOPIC = "Topic"
SECTION = "Section"

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
) -> DocGraph:
    """New entities from the documents' structure, and every mention of every known name.

    ``chunks`` maps a document id to the chunks written for it; ``known`` is what the graph
    holds plus what resolution produced in this run.
    """
    lexicon = Lexicon()
    for entity in known:
        lexicon.add_all([entity.name, *entity.aliases], entity.id)
    titles = {d.path: d.title for d in documents}
    new: dict[str, ResolvedEntity] = {}
    mentions: set[tuple[str, str]] = set()
    # A one-word heading ("Usage", "Examples") names its section, not a thing the rest of the
    # corpus talks about: it is not looked for in other chunks.
    local: set[str] = set()
    for doc in documents:
        for cand in candidates(doc, chunks.get(doc.id, ()), titles):
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
    for doc in documents:
        for chunk in chunks.get(doc.id, ()):
            mentions.update((chunk.id, eid) for eid in lexicon.find(chunk.text) - local)
    entities = list(new.values())
    if entities:
        vectors = embedder.embed([e.name for e in entities])
        for entity, vector in zip(entities, vectors, strict=True):
            entity.embedding = [float(x) for x in vector]
    return DocGraph(entities=entities, mentions=mentions)


def _add_aliases(entity: ResolvedEntity, aliases: Iterable[str]) -> None:
    for alias in aliases:
        alias = alias.strip()
        if alias and alias != entity.name and alias not in entity.aliases and form(alias):
            entity.aliases.append(alias)
