"""The registry of named, read-only Cypher templates: the only Cypher search ever runs.

A template is a name, a description, a parameter model and its pre-rendered texts (one per
variant, i.e. per hop count). Callers choose a template by name and pass data; data becomes
``$parameters`` after validation and never query text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import LiteralString

from kg.cypher import render
from kg.cypher.params import (
    DEPTHS,
    ChunkPageParams,
    ChunksByTextParams,
    ChunksByVectorParams,
    ChunksDatedAfterParams,
    CommunityReportsParams,
    EntityDetailsParams,
    EntityLinksParams,
    EntityPageParams,
    EntityParams,
    EntitySeedsParams,
    EntitySourcesParams,
    EvidenceChunksParams,
    FactPageParams,
    FactsByVectorParams,
    GraphEvidenceParams,
    MentionPageParams,
    NameLinksParams,
    NamePageParams,
    NamespacesParams,
    NeighborhoodParams,
    NoParams,
    PassageHopParams,
    PathsBetweenParams,
    RelationPageParams,
    RelationsValidAtParams,
    SeedExpansionParams,
    TemplateParams,
)
from kg.errors import NotFoundError
from kg.search.models import TemplateInfo


@dataclass(frozen=True)
class Template:
    """One named query. ``texts`` maps a variant (``default``, ``depth1`` ...) to its text.

    A ``packed`` template returns one record whose ``rows`` column is the list of its rows (at
    most ``$read_rows``, which the guard sets); the guard unpacks it, so callers see rows as
    from any other template. One record instead of hundreds: the driver's per-record cost
    (one Bolt message, one event-loop turn each) dominated large results.
    """

    name: str
    description: str
    params: type[TemplateParams]
    texts: Mapping[str, LiteralString]
    row_cap: int
    packed: bool = False
    # False: its rows hold no temporal values, so the guard hands them on without a walk
    # converting temporals (measured: a tenth of a search's CPU on the example graph).
    temporal: bool = True
    # False: it reads the whole graph whatever the scope (the per-process caches and counts
    # search keeps, filtered in memory by the scope).
    scoped: bool = True
    # True: scoped, but it also returns some of the whole graph (the counts counted_links
    # reads beside its scoped links).
    counts_whole_graph: bool = False

    @property
    def whole_graph(self) -> bool:
        """Some of what it returns is the whole graph's (every unscoped template, and
        counted_links): a scoped caller may not run it by name; local search runs it for them
        and shows them only what lies in their scope."""
        return not self.scoped or self.counts_whole_graph

    def text_for(self, params: TemplateParams) -> LiteralString:
        return self.texts[params.variant()]

    def info(self) -> TemplateInfo:
        return TemplateInfo(
            name=self.name,
            description=self.description,
            parameters=self.params.model_json_schema(),
            row_cap=self.row_cap,
        )


def _one(text: LiteralString) -> Mapping[str, LiteralString]:
    return MappingProxyType({"default": text})


def _depths(kind: str) -> Mapping[str, LiteralString]:
    """Every whitelisted depth rendered once, at import."""
    texts: dict[str, LiteralString] = {}
    for depth in DEPTHS:
        texts[f"depth{depth}"] = (
            render.expansion(depth) if kind == "expansion" else render.paths_between(depth)
        )
    return MappingProxyType(texts)


class Registry:
    """Templates by name. Building one does no I/O; tests may build their own."""

    def __init__(self, templates: Iterable[Template]) -> None:
        by_name: dict[str, Template] = {}
        for template in templates:
            if template.name in by_name:
                raise ValueError(f"duplicate template name {template.name!r}")
            by_name[template.name] = template
        self._by_name = MappingProxyType(by_name)

    def get(self, name: str) -> Template:
        try:
            return self._by_name[name]
        except KeyError:
            raise NotFoundError(
                f"no template named {name[:80]!r}; known: {', '.join(self._by_name)}"
            ) from None

    def __iter__(self) -> Iterator[Template]:
        return iter(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> list[str]:
        return list(self._by_name)

    def infos(self) -> list[TemplateInfo]:
        return [t.info() for t in self]

    def with_templates(self, *extra: Template) -> Registry:
        """A copy with more templates (tests add deliberately slow or bad ones)."""
        return Registry([*self, *extra])


# Global search reads community reports (kg communities build) by rank; see docs/communities.md.
# Reports embed their members' text: a scoped caller reads only reports whose members all lie
# in its namespaces (Community.namespaces, written by kg communities build).
_COMMUNITY_REPORTS: LiteralString = (
    "MATCH (c:Community) WHERE c.level = $level\n"
    "  AND ($namespaces IS NULL OR (size(coalesce(c.namespaces, [])) > 0\n"
    "       AND all(x IN c.namespaces WHERE x IN $namespaces)))\n"
    "RETURN c.id AS id, c.level AS level, c.size AS size, c.rank AS rank, c.title AS title,\n"
    "       c.summary AS summary, c.findings AS findings, c.report_kind AS report_kind\n"
    "ORDER BY c.rank DESC, c.id\n"
    "LIMIT $limit"
)

# The router's linking: candidates by phrase; kg/search/router.py keeps exact whole-word matches.
_NAME_LINKS: LiteralString = (
    "UNWIND $phrases AS phrase\n"
    "CALL (phrase) {\n"
    "  CALL db.index.fulltext.queryNodes('entity_names', phrase, {limit: $fetch})"
    " YIELD node, score\n"
    "  WITH node, score\n"
    "  WHERE " + render.in_scope("node") + "\n"
    "    AND " + render.named("node", "$patterns[phrase]") + "\n"
    "  RETURN node\n"
    "  ORDER BY score DESC, node.id\n"
    "  LIMIT $per_phrase\n"
    "}\n"
    "RETURN DISTINCT node.name AS name,\n"
    "       coalesce(" + render.aliased("node") + ", []) AS aliases\n"
    "LIMIT $limit"
)

TEMPLATES: tuple[Template, ...] = (
    Template(
        name="entity_neighborhood",
        description="An entity's relations and neighbours up to `depth` hops, both directions; "
        "bounded per hop (fanout, frontier_cap); optional as_of and relation-type filter.",
        params=NeighborhoodParams,
        texts=_depths("expansion"),
        row_cap=10_000,
        packed=True,
    ),
    Template(
        name="seed_expansion",
        description="Local search's expansion: the neighbourhood of several seed entities at "
        "once, each relation reported at the first hop it was reached.",
        params=SeedExpansionParams,
        texts=_depths("expansion"),
        row_cap=10_000,
        packed=True,
    ),
    Template(
        name="paths_between",
        description="Up to 10 shortest paths between two entities, at most `depth` hops, "
        "shortest first.",
        params=PathsBetweenParams,
        texts=_depths("paths"),
        row_cap=100,
    ),
    Template(
        name="entity_sources",
        description="An entity with the chunks that mention it and their documents.",
        params=EntitySourcesParams,
        texts=_one(render.ENTITY_SOURCES),
        row_cap=1000,
    ),
    Template(
        name="relations_valid_at",
        description="An entity's relations valid at `as_of` (validFrom <= as_of and validTo "
        "absent or later), newest first.",
        params=RelationsValidAtParams,
        texts=_one(render.RELATIONS_VALID_AT),
        row_cap=10_000,
    ),
    Template(
        name="entity_by_id",
        description="One entity with its degree and number of mentioning chunks.",
        params=EntityParams,
        texts=_one(render.ENTITY_BY_ID),
        row_cap=1,
    ),
    Template(
        name="entity_details",
        description="Name, type, description and aliases of up to 200 entities by id.",
        params=EntityDetailsParams,
        texts=_one(render.ENTITY_DETAILS),
        row_cap=200,
        packed=True,
        temporal=False,
    ),
    Template(
        name="entity_seeds",
        description="Candidate entities for a question: vector index and fulltext index hits.",
        params=EntitySeedsParams,
        texts=_one(render.ENTITY_SEEDS),
        row_cap=1,
    ),
    Template(
        name="chunks_by_vector",
        description="Chunks nearest to an embedding (vector search baseline), with documents.",
        params=ChunksByVectorParams,
        texts=_one(render.CHUNKS_BY_VECTOR),
        row_cap=1000,
        packed=True,
        temporal=False,
    ),
    Template(
        name="facts_by_vector",
        description="Facts (relations as text: subject, predicate, object) nearest to an "
        "embedding of the question, with both ends' ids and provenance chunk ids.",
        params=FactsByVectorParams,
        texts=_one(render.FACTS_BY_VECTOR),
        row_cap=100,
        temporal=False,
    ),
    Template(
        name="fact_page",
        description="A page of facts in id order, after a given id: both ends' ids and the "
        "embedding; local search keeps the fact vectors per process and graph change.",
        params=FactPageParams,
        texts=_one(render.FACT_PAGE),
        row_cap=5000,
        packed=True,
        temporal=False,
        scoped=False,
    ),
    Template(
        name="entity_page",
        description="A page of entities in id order, after a given id: name, type, namespaces "
        "and the embedding; local search keeps the entity vectors per process and graph change.",
        params=EntityPageParams,
        texts=_one(render.ENTITY_PAGE),
        row_cap=5000,
        packed=True,
        temporal=False,
        scoped=False,
    ),
    Template(
        name="chunk_page",
        description="A page of chunks in id order, after a given id, with their embeddings; "
        "local search keeps the chunk vectors per process and graph change.",
        params=ChunkPageParams,
        texts=_one(render.CHUNK_PAGE),
        row_cap=5000,
        packed=True,
        temporal=False,
        scoped=False,
    ),
    Template(
        name="graph_evidence",
        description="The graph signal's last read: chunks by id with their documents, and the "
        "description and aliases of entities by id; each row says its kind.",
        params=GraphEvidenceParams,
        texts=_one(render.GRAPH_EVIDENCE),
        row_cap=1200,
        packed=True,
        temporal=False,
    ),
    Template(
        name="evidence_chunks",
        description="Chunks cited by relations (chunk_ids) or mentioning given entities, with "
        "their documents and which of the entities they mention.",
        params=EvidenceChunksParams,
        texts=_one(render.EVIDENCE_CHUNKS),
        row_cap=5000,
        packed=True,
        temporal=False,
    ),
    Template(
        name="chunks_by_text",
        description="Chunks whose text or document title match the question's words (Lucene "
        "BM25 in each language's fulltext index, chunk_text_en and chunk_text_ru, each "
        "stemming its language), with documents and the language of the index that found each.",
        params=ChunksByTextParams,
        texts=MappingProxyType(
            {"default": render.CHUNKS_BY_TEXT, "ranked": render.CHUNKS_BY_TEXT_RANKED}
        ),
        row_cap=2000,
        packed=True,
        temporal=False,
    ),
    Template(
        name="chunks_dated_after",
        description="Of the given chunks, those whose document is dated (its own date: front "
        "matter, file metadata, title) after as_of: a search as of a date leaves them out.",
        params=ChunksDatedAfterParams,
        texts=_one(render.CHUNKS_DATED_AFTER),
        row_cap=2000,
        temporal=False,
    ),
    Template(
        name="corpus_languages",
        description="How many chunks each language's index holds (en, ru).",
        params=NoParams,
        texts=_one(render.CORPUS_LANGUAGES),
        row_cap=1,
        scoped=False,
    ),
    Template(
        name="entity_links",
        description="Entities whose name or alias matches each phrase (question n-grams, "
        "quoted), with how many chunks mention each.",
        params=EntityLinksParams,
        texts=_one(render.ENTITY_LINKS),
        row_cap=10_000,
    ),
    Template(
        name="counted_links",
        description="entity_links with the whole graph's graph_counts in its first row: local "
        "search's linking and its freshness check in one round trip.",
        params=EntityLinksParams,
        texts=_one(render.COUNTED_LINKS),
        row_cap=10_001,
        packed=True,
        temporal=False,
        counts_whole_graph=True,
    ),
    Template(
        name="graph_counts",
        description="How many entities, MENTIONS links and relationships the graph holds "
        "(count store): the stamp of the linking filter's name forms.",
        params=NoParams,
        texts=_one(render.GRAPH_COUNTS),
        row_cap=1,
        temporal=False,
        scoped=False,
    ),
    Template(
        name="name_page",
        description="A page of entity names and aliases in id order, after a given id: the "
        "linking filter reads every name once per process and graph change.",
        params=NamePageParams,
        texts=_one(render.NAME_PAGE),
        row_cap=10_000,
        packed=True,
        temporal=False,
        scoped=False,
    ),
    Template(
        name="mention_page",
        description="A page of the passage graph in chunk id order, after a given id: each "
        "chunk's title and the entities it mentions; local search keeps the whole graph per "
        "process and graph change.",
        params=MentionPageParams,
        texts=_one(render.MENTION_PAGE),
        row_cap=10_000,
        packed=True,
        temporal=False,
        scoped=False,
    ),
    Template(
        name="relation_page",
        description="A page of the relation graph in entity id order, after a given id: each "
        "entity's name, type, namespaces and degree, and its relations to entities; local "
        "search keeps the whole graph per process and graph change.",
        params=RelationPageParams,
        texts=_one(render.RELATION_PAGE),
        row_cap=10_000,
        packed=True,
        scoped=False,
    ),
    Template(
        name="passage_hop",
        description="One hop of the passage graph: the chunks mentioning each entity and the "
        "entities those chunks mention, with mention counts.",
        params=PassageHopParams,
        texts=_one(render.PASSAGE_HOP),
        row_cap=10_000,
        packed=True,
        temporal=False,
    ),
    Template(
        name="relation_types",
        description="The predicates facts in the graph use, with the relationship type that "
        "stores each (its own, or RELATED for the long tail).",
        params=NoParams,
        texts=_one(render.RELATION_TYPES),
        row_cap=10_000,
    ),
    Template(
        name="community_reports",
        description="Global search: the best-ranked community reports of one level (title, "
        "summary, findings with citations), from `kg communities build`.",
        params=CommunityReportsParams,
        texts=_one(_COMMUNITY_REPORTS),
        row_cap=500,
    ),
    Template(
        name="namespaces",
        description="The namespaces (document sources: a `kg ingest --namespace` name or a "
        "folder's absolute path) with their document, chunk, fact and entity counts.",
        params=NamespacesParams,
        texts=_one(render.NAMESPACES),
        row_cap=10_000,
        temporal=False,
    ),
    Template(
        name="name_links",
        description="The router: entities whose name or alias matches phrases of a question "
        "(fulltext index entity_names), with their aliases.",
        params=NameLinksParams,
        texts=_one(_NAME_LINKS),
        row_cap=500,
    ),
)

REGISTRY = Registry(TEMPLATES)
