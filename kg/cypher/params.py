"""Parameter models of the guarded templates: the only way data reaches a query.

Every model forbids unknown fields, bounds every list, string and number, and turns itself
into the ``$parameter`` map of its Cypher text with :meth:`TemplateParams.cypher_params`.
``variant`` picks one of a template's pre-rendered texts (the hop count), never text itself.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from kg.basemodel import Model
from kg.cypher.lucene import any_word_regex, escape_lucene, phrase_regex
from kg.instants import AsOf
from kg.languages import LANGUAGES, LanguageCode
from kg.models import no_nul
from kg.scope import NamespaceList
from kg.search.models import DEPTHS, MAX_RELATION_FILTERS, Depth, RelationType
from kg.words import MAX_WORD_CHARS

__all__ = ["DEPTHS", "Depth"]  # re-exported: the rule itself lives in kg.search.models

MAX_ID_CHARS = 256
MAX_IDS = 200
MAX_ROWS = 10_000
MAX_EMBEDDING_DIM = 8192
#: Longest text one fulltext query takes (only its first 64 words are searched: kg.cypher.lucene).
#: Texts kg builds from a question (with its translations and names) are cut to it, never refused.
MAX_TEXT_CHARS = 4000
#: Longest phrase the router's ``name_links`` looks up (a name is at most 300 characters, and a
#: phrase past this length is a run of letters no name equals).
MAX_PHRASE_CHARS = 200
#: How many more candidates than kept a scoped read asks a vector or fulltext index for:
#: Neo4j 5.26's index queries cannot filter first, so the scope filters what they return
#: (docs/search.md, "Scopes", measures what it costs).
SCOPE_OVERFETCH = 10
#: Most candidates one index call is asked for, scoped or not.
MAX_FETCH = 10_000


#: Keys of the validation context that carry the vector indexes' dimensions (the guard sets
#: them): the entity index's and the chunk index's.
EMBEDDING_DIM_CONTEXT = "embedding_dim"
CHUNK_EMBEDDING_DIM_CONTEXT = "chunk_embedding_dim"


def _usable_vector(values: list[float], info: ValidationInfo) -> list[float]:
    """What the entity vector index accepts (see :func:`_check_vector`)."""
    return _check_vector(values, info, EMBEDDING_DIM_CONTEXT, "entity_embedding")


def _usable_chunk_vector(values: list[float], info: ValidationInfo) -> list[float]:
    """What the chunk vector index accepts (see :func:`_check_vector`)."""
    return _check_vector(values, info, CHUNK_EMBEDDING_DIM_CONTEXT, "chunk_embedding")


def _check_vector(values: list[float], info: ValidationInfo, key: str, index: str) -> list[float]:
    """What a vector index accepts, checked before Neo4j sees it: the index's dimension,
    finite numbers, and a positive, finite length (Neo4j sums the squares in doubles, so a
    zero vector, or values near 1e155, fail there as a server error)."""
    context = info.context if isinstance(info.context, dict) else {}
    dim = context.get(key)
    if isinstance(dim, int) and len(values) != dim:
        raise ValueError(
            f"must have {dim} numbers, the dimension of the {index} vector index; got {len(values)}"
        )
    if not all(math.isfinite(v) for v in values):
        raise ValueError("must hold finite numbers only")
    square_sum = sum(v * v for v in values)
    if square_sum == 0:
        raise ValueError("must not be a zero vector (it has no direction)")
    if not math.isfinite(square_sum):
        raise ValueError("values are too large: the vector's length overflows; normalize it")
    return values


def _usable_fact_vector(values: list[float], info: ValidationInfo) -> list[float]:
    """What the fact vector index accepts: the chunk embedder's vectors (graph model 5)."""
    return _check_vector(values, info, CHUNK_EMBEDDING_DIM_CONTEXT, "fact_embedding")


EntityId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(no_nul)
]
Embedding = Annotated[
    list[float],
    Field(min_length=1, max_length=MAX_EMBEDDING_DIM),
    AfterValidator(_usable_vector),
]
ChunkEmbedding = Annotated[
    list[float],
    Field(min_length=1, max_length=MAX_EMBEDDING_DIM),
    AfterValidator(_usable_chunk_vector),
]
FactEmbedding = Annotated[
    list[float],
    Field(min_length=1, max_length=MAX_EMBEDDING_DIM),
    AfterValidator(_usable_fact_vector),
]
#: A word of a linking phrase: letters, digits or underscores only, so a phrase is data in
#: quotes and never Lucene syntax.
Word = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WORD_CHARS, pattern=r"^\w+$")]


def as_of_params(as_of: date | datetime | None) -> dict[str, Any]:
    """One instant in the four shapes a stored validFrom/validTo may have.

    Cypher does not compare a DATE with a DATETIME (the result is null), so each template
    compares a stored value with the parameter of its own type. A date means its midnight UTC;
    a naive datetime is taken as UTC.
    """
    if as_of is None:
        return {"as_of_dt": None, "as_of_local": None, "as_of_date": None, "as_of_text": None}
    if isinstance(as_of, datetime):
        instant = as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)
    else:
        instant = datetime.combine(as_of, time(0), tzinfo=UTC)
    instant = instant.astimezone(UTC)
    return {
        "as_of_dt": instant,
        "as_of_local": instant.replace(tzinfo=None),
        "as_of_date": instant.date(),
        "as_of_text": instant.isoformat(),
    }


class TemplateParams(Model):
    """Base of every template's parameters.

    ``namespaces`` keeps a template to those namespaces (kg/scope.py); the guard sets it from
    the caller's scope and passes it to every template as ``$namespaces``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespaces: NamespaceList | None = None

    def fetch(self, k: int) -> int:
        """Candidates to ask an index for to keep ``k``: more when scoped (the index cannot
        filter first), bounded."""
        return min(k * SCOPE_OVERFETCH, MAX_FETCH) if self.namespaces else k

    def text_fetch(self, k: int) -> int:
        """Candidates to ask a fulltext index for to keep ``k``: as many scoped or not. Lucene
        orders equal scores by how many hits it was asked for, so with fewer asked unscoped a
        search scoped to every namespace ranked apart (Vue guide, `graph`: 11 of 32 questions);
        the templates break ties by id. Asking a fulltext index for ten times more cost no
        measurable time (scoped `text` was as fast as unscoped)."""
        return min(k * SCOPE_OVERFETCH, MAX_FETCH)

    def variant(self) -> str:
        """Which pre-rendered text to run; templates without variants have one."""
        return "default"

    def relation_type_filter(self) -> list[str] | None:
        """Types the guard must find in the graph before running (None: no filter)."""
        return None

    def cypher_params(self) -> dict[str, Any]:
        return self.model_dump()


class _Expansion(TemplateParams):
    depth: Depth = 2
    as_of: AsOf | None = Field(None, description="Count only relations valid at this instant.")
    relation_types: list[RelationType] | None = Field(
        None, min_length=1, max_length=MAX_RELATION_FILTERS
    )
    fanout: int = Field(50, ge=1, le=500, description="Relations read per node and hop.")
    frontier_cap: int = Field(200, ge=1, le=5000, description="Nodes expanded per hop.")
    limit: int = Field(500, ge=1, le=MAX_ROWS)
    hub_degree: int | None = Field(
        None,
        ge=1,
        le=1_000_000_000,
        description="Past the first hop, nodes with more relationships than this are reached "
        "but not expanded (none: every node is).",
    )

    def variant(self) -> str:
        return f"depth{self.depth}"

    def relation_type_filter(self) -> list[str] | None:
        return self.relation_types

    def _common(self) -> dict[str, Any]:
        return {
            "relation_types": self.relation_types,
            "hub_degree": self.hub_degree,
            "fanout": self.fanout,
            "frontier_cap": self.frontier_cap,
            "limit": self.limit,
            **as_of_params(self.as_of),
        }


class SeedExpansionParams(_Expansion):
    """Expand several seed entities at once (local search)."""

    entity_ids: list[EntityId] = Field(min_length=1, max_length=50)

    def cypher_params(self) -> dict[str, Any]:
        return {"entity_ids": self.entity_ids, **self._common()}


class NeighborhoodParams(_Expansion):
    """Expand one entity."""

    entity_id: EntityId

    def cypher_params(self) -> dict[str, Any]:
        return {"entity_ids": [self.entity_id], **self._common()}


class PathsBetweenParams(TemplateParams):
    source_id: EntityId
    target_id: EntityId
    depth: Depth = 3
    as_of: AsOf | None = None
    relation_types: list[RelationType] | None = Field(
        None, min_length=1, max_length=MAX_RELATION_FILTERS
    )
    limit: int = Field(10, ge=1, le=100)

    def variant(self) -> str:
        return f"depth{self.depth}"

    def relation_type_filter(self) -> list[str] | None:
        return self.relation_types

    def cypher_params(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "target_id": self.target_id,
            "relation_types": self.relation_types,
            "limit": self.limit,
            **as_of_params(self.as_of),
        }


class EntityParams(TemplateParams):
    entity_id: EntityId


class EntityDetailsParams(TemplateParams):
    entity_ids: list[EntityId] = Field(min_length=1, max_length=MAX_IDS)
    limit: int = Field(MAX_IDS, ge=1, le=MAX_IDS)


class EntitySourcesParams(TemplateParams):
    entity_id: EntityId
    limit: int = Field(50, ge=1, le=1000)


class RelationsValidAtParams(TemplateParams):
    entity_id: EntityId
    as_of: AsOf
    relation_types: list[RelationType] | None = Field(
        None, min_length=1, max_length=MAX_RELATION_FILTERS
    )
    limit: int = Field(100, ge=1, le=MAX_ROWS)

    def relation_type_filter(self) -> list[str] | None:
        return self.relation_types

    def cypher_params(self) -> dict[str, Any]:
        return {
            "entity_id": self.entity_id,
            "relation_types": self.relation_types,
            "limit": self.limit,
            **as_of_params(self.as_of),
        }


class EntitySeedsParams(TemplateParams):
    """Vector and fulltext candidates for a question.

    ``text`` is plain text: it is escaped here, so Lucene syntax in it is searched for, never
    parsed. Without ``embedding`` only the fulltext index is asked.
    """

    embedding: Embedding | None = None
    text: Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS), AfterValidator(no_nul)] = ""
    k: int = Field(20, ge=1, le=500)

    def cypher_params(self) -> dict[str, Any]:
        text = escape_lucene(self.text)
        return {
            "embedding": self.embedding,
            "text": text,
            # scoped, what a fulltext hit must match in its visible name or aliases
            "pattern": any_word_regex(text) if self.namespaces else None,
            "k": self.k,
            "fetch": self.fetch(self.k),
            "text_fetch": self.text_fetch(self.k),
        }


#: How many more neighbours than kept the chunk vector index is asked for (HNSW recall).
VECTOR_OVERSAMPLING = 4


class ChunksByVectorParams(TemplateParams):
    embedding: ChunkEmbedding
    k: int = Field(20, ge=1, le=1000)

    def cypher_params(self) -> dict[str, Any]:
        return {
            "embedding": self.embedding,
            "k": self.k,
            "candidates": self.fetch(self.k * VECTOR_OVERSAMPLING),
        }


_LuceneText = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS), AfterValidator(no_nul)]
#: Fuzzy terms are costly (each expands to up to 50 index terms): few, and plain words only.
MAX_FUZZY_WORDS = 32
_FuzzyWord = Annotated[str, StringConstraints(min_length=4, max_length=40, pattern=r"^\w+$")]


class ChunksByTextParams(TemplateParams):
    """Fulltext (BM25) over chunk text and title in every language's index.

    ``text`` (plain text, escaped here) goes to each index; ``texts`` may give one language
    its own text instead (a translation, or a transliteration: kg.search.signals.text). The
    index names come from :mod:`kg.languages`, never from the caller.
    """

    text: _LuceneText
    texts: dict[LanguageCode, _LuceneText] = Field(default_factory=dict)
    fuzzy: dict[LanguageCode, list[_FuzzyWord]] = Field(
        default_factory=dict,
        description="Words a language's index also matches within 1 edit (2 from 7 letters): "
        "a Russian question's transliterated stems against English text, an English question's "
        "loanword spellings against Russian text (kg.search.signals.text).",
    )
    k: int = Field(20, ge=1, le=1000)
    ranked_only: bool = Field(
        False,
        description="Ids, languages and scores, with texts and documents for each language's "
        "first `texted` chunks only: hybrid ranks ids and reads the texts of the other chunks "
        "it shows (graph_evidence).",
    )
    texted: int = Field(
        0,
        ge=0,
        le=1000,
        description="With `ranked_only`: how many chunks a language gives with their texts.",
    )

    def variant(self) -> str:
        return "ranked" if self.ranked_only else "default"

    @field_validator("fuzzy")
    @classmethod
    def _few_fuzzy_words(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        if any(len(words) > MAX_FUZZY_WORDS for words in value.values()):
            raise ValueError(f"at most {MAX_FUZZY_WORDS} fuzzy words per language")
        return value

    def cypher_params(self) -> dict[str, Any]:
        queries = []
        for language in LANGUAGES:
            text = escape_lucene(self.texts.get(language.code, self.text))
            fuzzy = [
                f"{escape_lucene(w)}~{1 if len(w) < 7 else 2}"
                for w in self.fuzzy.get(language.code, [])
            ]
            text = " ".join([text, *fuzzy]).strip()
            if text:
                queries.append({"language": language.code, "index": language.index, "text": text})
        return {
            "queries": queries,
            "k": self.k,
            "fetch": self.text_fetch(self.k),
            "limit": self.k * len(LANGUAGES),
            "texted": self.texted,
        }


def _phrase_patterns(quoted: list[str], phrases: list[Any]) -> dict[str, str]:
    """Each quoted phrase's regex (kg.cypher.lucene.phrase_regex): scoped, a hit through an
    alias that another namespace gave does not count (kg.cypher.render.named)."""
    return {
        q: phrase_regex(list(p) if isinstance(p, list) else [p])
        for q, p in zip(quoted, phrases, strict=True)
    }


class EntityLinksParams(TemplateParams):
    """Question n-grams to look up among names and aliases, each as a quoted phrase."""

    phrases: list[Annotated[list[Word], Field(min_length=1, max_length=16)]] = Field(
        min_length=1, max_length=128
    )
    per_phrase: int = Field(5, ge=1, le=50)
    limit: int = Field(1000, ge=1, le=MAX_ROWS)

    def cypher_params(self) -> dict[str, Any]:
        quoted = ['"' + " ".join(words) + '"' for words in self.phrases]
        return {
            "phrases": quoted,
            "patterns": _phrase_patterns(quoted, self.phrases) if self.namespaces else {},
            "per_phrase": self.per_phrase,
            "fetch": self.text_fetch(self.per_phrase),
            "limit": self.limit,
        }


class NamePageParams(TemplateParams):
    """One page of entity names and aliases, by id after ``after`` (the linking filter)."""

    after: str = Field("", max_length=MAX_ID_CHARS)
    limit: int = Field(2000, ge=1, le=MAX_ROWS)


class RelationPageParams(TemplateParams):
    """One page of the relation graph, by entity id after ``after``: each entity's degree and
    outgoing relations to entities (the per-process relation graph, kg.search.relations)."""

    after: str = Field("", max_length=MAX_ID_CHARS)
    limit: int = Field(500, ge=1, le=MAX_ROWS)
    per_entity: int = Field(2000, ge=1, le=10_000)


class FactsByVectorParams(TemplateParams):
    """The facts (relations as text) nearest to the question's chunk embedding."""

    embedding: FactEmbedding
    k: int = Field(5, ge=1, le=100)

    def cypher_params(self) -> dict[str, Any]:
        # More neighbours asked than kept, as chunks_by_vector does: the index is approximate.
        return {
            "embedding": self.embedding,
            "k": self.k,
            "candidates": self.fetch(self.k * VECTOR_OVERSAMPLING),
        }


class FactPageParams(TemplateParams):
    """One page of facts with their vectors, by id after ``after`` (kg.search.facts)."""

    after: str = Field("", max_length=MAX_ID_CHARS)
    limit: int = Field(1000, ge=1, le=5000)


class EntityPageParams(TemplateParams):
    """One page of entities with their vectors, by id after ``after``
    (kg.search.entity_vectors)."""

    after: str = Field("", max_length=MAX_ID_CHARS)
    limit: int = Field(1000, ge=1, le=5000)


class ChunkPageParams(TemplateParams):
    """One page of chunks with their vectors, by id after ``after`` (kg.search.chunk_vectors)."""

    after: str = Field("", max_length=MAX_ID_CHARS)
    limit: int = Field(1000, ge=1, le=5000)


class MentionPageParams(TemplateParams):
    """One page of the passage graph, by chunk id after ``after``: each chunk's title and the
    entities it mentions (the per-process passage graph, kg.search.passages)."""

    after: str = Field("", max_length=MAX_ID_CHARS)
    limit: int = Field(2000, ge=1, le=MAX_ROWS)
    per_chunk: int = Field(50, ge=1, le=200)


class PassageHopParams(TemplateParams):
    """One hop of the passage graph from some entities (MENTIONS, both ways)."""

    entity_ids: list[EntityId] = Field(min_length=1, max_length=MAX_IDS)
    per_entity: int = Field(50, ge=1, le=1000)
    per_chunk: int = Field(50, ge=1, le=200)
    limit: int = Field(2000, ge=1, le=MAX_ROWS)


class EvidenceChunksParams(TemplateParams):
    """Chunks cited by relations (chunk_ids) or mentioning entities (MENTIONS)."""

    chunk_ids: list[EntityId] = Field(default_factory=list, max_length=MAX_IDS * 5)
    entity_ids: list[EntityId] = Field(default_factory=list, max_length=MAX_IDS)
    per_entity: int = Field(10, ge=1, le=200)
    limit: int = Field(500, ge=1, le=5000)


class GraphEvidenceParams(TemplateParams):
    """The graph signal's passages by id, and the entities whose details a response shows."""

    chunk_ids: list[EntityId] = Field(default_factory=list, max_length=MAX_IDS * 5)
    entity_ids: list[EntityId] = Field(default_factory=list, max_length=MAX_IDS)
    limit: int = Field(MAX_IDS * 5, ge=1, le=MAX_IDS * 5)


class ChunksDatedAfterParams(TemplateParams):
    """Which of these chunks belong to documents dated after ``as_of`` (``--as-of`` leaves
    them out of a search; a document without a date is never after)."""

    chunk_ids: list[EntityId] = Field(min_length=1, max_length=MAX_IDS * 10)
    as_of: AsOf

    @staticmethod
    def max_ids() -> int:
        return MAX_IDS * 10

    def cypher_params(self) -> dict[str, Any]:
        return {
            "chunk_ids": self.chunk_ids,
            "as_of_date": as_of_params(self.as_of)["as_of_date"],
            "limit": len(self.chunk_ids),
        }


class NoParams(TemplateParams):
    pass


class NamespacesParams(TemplateParams):
    """The namespaces (document sources) with their counts, by name."""

    limit: int = Field(1000, ge=1, le=MAX_ROWS)


class CommunityReportsParams(TemplateParams):
    """Global search: the best-ranked community reports of one level."""

    level: int = Field(0, ge=0, le=20)
    limit: int = Field(20, ge=1, le=500)


class NameLinksParams(TemplateParams):
    """The router: entities whose name or alias contains a phrase of the question (fulltext,
    each phrase escaped and quoted here, so Lucene syntax in a question is searched for)."""

    phrases: list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_PHRASE_CHARS)]] = (
        Field(min_length=1, max_length=64)
    )
    per_phrase: int = Field(5, ge=1, le=50)
    limit: int = Field(100, ge=1, le=500)

    def cypher_params(self) -> dict[str, Any]:
        quoted = [f'"{escape_lucene(p)}"' for p in self.phrases]
        return {
            "phrases": quoted,
            "patterns": _phrase_patterns(quoted, self.phrases) if self.namespaces else {},
            "per_phrase": self.per_phrase,
            "fetch": self.text_fetch(self.per_phrase),
            "limit": self.limit,
        }
