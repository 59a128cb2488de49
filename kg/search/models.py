"""Request and response models of local search: one shape for REST, the CLI's --json and tests."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from kg.basemodel import Model
from kg.instants import AsOf
from kg.languages import LANGUAGES, LanguageCode
from kg.models import RELATION_TYPE_RE, no_nul

# The modes live in kg.modes, which the CLI's help reads without pydantic; re-exported here.
from kg.modes import MODES as MODES
from kg.modes import SEARCH_MODES as SEARCH_MODES
from kg.modes import Mode as Mode
from kg.modes import SearchMode as SearchMode
from kg.scope import NamespaceList

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
# Hop counts a search or template may expand: each has its own rendered Cypher text (bounds of
# a variable-length pattern cannot be parameters), so this tuple is the whitelist.
DEPTHS = (1, 2, 3)
MIN_DEPTH, MAX_DEPTH = DEPTHS[0], DEPTHS[-1]
MAX_RELATION_FILTERS = 50


def _relation_type(value: str) -> str:
    # fullmatch: a trailing newline or anything after the name never passes.
    if RELATION_TYPE_RE.fullmatch(value) is None:
        raise ValueError(
            "must be a predicate: a letter, then letters, digits or underscores (max 64)"
        )
    return value


# A relation filter names facts' predicates (e.g. DEPENDS_ON), whatever Neo4j type stores them.
RelationType = Annotated[str, StringConstraints(max_length=64), AfterValidator(_relation_type)]
Depth = Annotated[
    int,
    Field(ge=MIN_DEPTH, le=MAX_DEPTH, description=f"Hops to expand, {MIN_DEPTH}..{MAX_DEPTH}."),
]


class SearchRequest(Model):
    """POST /search/local body."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    mode: SearchMode = "graph"
    depth: Depth = 2
    limit: int = Field(20, ge=1, le=MAX_LIMIT)
    as_of: AsOf | None = None
    relation_types: list[RelationType] | None = Field(None, max_length=MAX_RELATION_FILTERS)
    namespaces: NamespaceList | None = None

    @field_validator("query")
    @classmethod
    def _no_control_characters(cls, value: str) -> str:
        no_nul(value)
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class EntityHit(Model):
    id: str
    name: str
    type: str
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    score: float
    hops: int = 0


class RelationHit(Model):
    source: str
    source_name: str
    target: str
    target_name: str
    type: str
    description: str = ""
    weight: float
    valid_from: str | None = None
    valid_to: str | None = None
    chunk_ids: list[str] = Field(default_factory=list)
    hops: int
    score: float


class ChunkHit(Model):
    id: str
    text: str
    document_id: str
    document_path: str
    score: float
    rerank_score: float | None = Field(
        None,
        description="The rerank endpoint's score, when search.rerank reordered this chunk "
        "(``score`` stays the retrieval score).",
    )


#: Names one translation may list, and the longest name kept.
MAX_TRANSLATED_NAMES = 20
MAX_TRANSLATED_NAME_CHARS = 200


def _cut_translation(value: Any) -> Any:
    """A faithful translation may be longer than its question: it is cut, never refused (only
    a question's first words are searched anyway), so a verbose translator costs no re-ask."""
    return value[:MAX_QUERY_CHARS] if isinstance(value, str) else value


def _few_names(value: Any) -> Any:
    """At most ``MAX_TRANSLATED_NAMES`` names; a longer "name" than any stored one is dropped."""
    if not isinstance(value, list):
        return value
    kept = [v for v in value if not (isinstance(v, str) and len(v) > MAX_TRANSLATED_NAME_CHARS)]
    return kept[:MAX_TRANSLATED_NAMES]


class TranslatedQuestion(Model):
    """The question in one language, with the names it mentions as written in that language."""

    language: LanguageCode
    text: Annotated[str, BeforeValidator(_cut_translation)] = Field(
        min_length=1, max_length=MAX_QUERY_CHARS
    )
    entities: Annotated[
        list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_TRANSLATED_NAME_CHARS)]],
        BeforeValidator(_few_names),
    ] = Field(default_factory=list, max_length=MAX_TRANSLATED_NAMES)


class QuestionTranslation(Model):
    """What the LLM answers when asked to translate a question (kg.search.translate)."""

    translations: list[TranslatedQuestion] = Field(min_length=1, max_length=len(LANGUAGES))


class RerankOutcome(Model):
    """What the rerank stage did to one search (search.rerank; docs/search.md, "Rerank")."""

    applied: bool = Field(description="True when the endpoint's scores set the chunks' order.")
    reranked: int = Field(description="Chunks sent to the endpoint (the fused top N).")
    error: str | None = Field(
        None, description="Why the endpoint's answer was not used; the fused order stands."
    )
    took_ms: float = 0.0


class SearchResponse(Model):
    entities: list[EntityHit]
    relations: list[RelationHit]
    chunks: list[ChunkHit]
    template: str
    took_ms: float
    translations: list[TranslatedQuestion] = Field(
        default_factory=list,
        description="The question as searched in the corpus's other languages "
        "(search.translate, with an LLM configured).",
    )
    translation_error: str | None = Field(
        None, description="Why translation failed; the search ran on the question alone."
    )
    rerank: RerankOutcome | None = Field(
        None, description="The rerank stage's outcome; null when search.rerank is off."
    )


class EntityDetail(Model):
    """One entity as ``GET /entities/{id}`` returns it (never its embedding)."""

    id: str
    name: str
    type: str
    description: str | None = None
    aliases: list[str] = Field(default_factory=list)
    degree: int = Field(description="Relationships of any kind, both directions.")
    mentions: int = Field(description="Chunks that mention the entity.")


class Neighborhood(Model):
    """An entity's ranked neighbourhood within ``depth`` hops."""

    entity: EntityDetail
    entities: list[EntityHit]
    relations: list[RelationHit]
    truncated: bool = Field(description="True when the row cap cut the expansion short.")


class NamespaceInfo(Model):
    """One namespace (a document source) with what it holds (``kg namespaces``,
    ``GET /namespaces``)."""

    namespace: str = Field(
        description="The `kg ingest --namespace` name, or the ingested folder's absolute path."
    )
    documents: int
    chunks: int
    facts: int = Field(description="Facts with provenance in the namespace (shared ones too).")
    entities: int = Field(description="Entities mentioned in the namespace (shared ones too).")


class TemplateInfo(Model):
    name: str
    description: str
    parameters: dict[str, Any]
    row_cap: int


class TemplateResult(Model):
    template: str
    rows: list[dict[str, Any]]
    truncated: bool
    took_ms: float


@runtime_checkable
class SearchBackend(Protocol):
    """What the surface needs from the search use case (``kg.search.service.SearchService``).

    ``AsyncKnowledgeGraph(service_factory=...)`` takes any object of this shape, so tests and
    embedders can put a stand-in behind the one composition root.
    """

    async def startup(self) -> dict[str, str]: ...

    async def check_model(self) -> None: ...

    async def local_search(self, req: SearchRequest) -> SearchResponse: ...

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult: ...

    async def get_entity(self, entity_id: str) -> EntityDetail: ...

    async def neighborhood(
        self,
        entity_id: str,
        depth: int,
        *,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        limit: int | None = None,
    ) -> Neighborhood: ...

    def templates(self) -> list[TemplateInfo]: ...

    async def health(self) -> bool: ...
