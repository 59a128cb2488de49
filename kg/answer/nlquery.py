"""Questions to templates, never to Cypher (``kg query``, ``POST /query``).

The LLM picks one of the user-facing registry templates and fills its parameters, answering
with :class:`TemplateChoice`: a discriminated union of LLM-facing parameter models (entity
*names*, not ids; no embeddings; internal templates such as seed lookups, vector search or
evidence fetches are not offered), so instructor validates the choice and re-asks with the
reason. Predicates are checked against the graph's catalogue. Names are then resolved to ids
by search linking (the ``entity_seeds`` template: the fulltext index over names and aliases),
and the template runs through the guard exactly as ``POST /templates/{name}`` runs it. The
response carries the template and the parameters it ran with, so they can be reused.

A question that no template fits, a choice that never validates, or a name the graph does
not know is a :class:`~kg.errors.QueryRejected` (422) naming the field; Cypher is never
written by the LLM.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from kg.basemodel import Model
from kg.errors import QueryRejected
from kg.instants import AsOf
from kg.llm import LLMEndpoint, LLMUsage, ReaskFailed, ask
from kg.models import no_nul
from kg.scope import NamespaceList
from kg.search.models import (
    MAX_QUERY_CHARS,
    MAX_RELATION_FILTERS,
    Depth,
    RelationType,
    TemplateResult,
)
from kg.settings import Settings

__all__ = ["QueryRequest", "QueryResponse", "ResolvedEntity", "TemplateChoice", "query"]

#: Candidates read per name when linking it to an entity.
_LINK_CANDIDATES = 10
_MAX_PREDICATES_SHOWN = 200


class TemplateRunner(Protocol):
    """What questions to templates need from search (``kg.search.SearchService`` has it)."""

    async def run_template(self, name: str, params: dict[str, Any]) -> TemplateResult: ...


def _known_predicates(values: list[str] | None, info: ValidationInfo) -> list[str] | None:
    context = info.context if isinstance(info.context, dict) else {}
    known = context.get("predicates")
    if values and known is not None:
        unknown = [v for v in values if v not in known]
        if unknown:
            shown = ", ".join(sorted(known)[:_MAX_PREDICATES_SHOWN])
            raise ValueError(f"unknown predicate(s) {unknown}; the graph has: {shown}")
    return values


EntityName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200, strip_whitespace=True),
    AfterValidator(no_nul),
    Field(description="An entity's name as the question says it (not an id)."),
]
Predicates = Annotated[
    list[RelationType] | None,
    Field(
        min_length=1,
        max_length=MAX_RELATION_FILTERS,
        description="Only these predicates (from the catalogue), or null for all.",
    ),
    AfterValidator(_known_predicates),
]


class _Choice(Model):
    model_config = ConfigDict(extra="forbid")

    def names(self) -> dict[str, str]:
        """Parameter -> entity name to resolve."""
        return {}

    def params(self, ids: dict[str, str]) -> dict[str, Any]:
        """The registry template's parameters, names replaced by resolved ids."""
        raise NotImplementedError


class NeighborhoodChoice(_Choice):
    """An entity's relations and neighbours within `depth` hops (what is X connected to?)."""

    template: Literal["entity_neighborhood"]
    entity: EntityName
    depth: Depth = 1
    as_of: AsOf | None = Field(None, description="Only relations valid at this date.")
    relation_types: Predicates = None
    limit: int = Field(50, ge=1, le=200)

    def names(self) -> dict[str, str]:
        return {"entity": self.entity}

    def params(self, ids: dict[str, str]) -> dict[str, Any]:
        return {
            "entity_id": ids["entity"],
            "depth": self.depth,
            "as_of": _iso(self.as_of),
            "relation_types": self.relation_types,
            "limit": self.limit,
        }


class PathsChoice(_Choice):
    """Shortest paths between two entities (how is X connected to Y?)."""

    template: Literal["paths_between"]
    source: EntityName
    target: EntityName
    depth: Depth = 3
    as_of: AsOf | None = Field(None, description="Only relations valid at this date.")
    relation_types: Predicates = None
    limit: int = Field(10, ge=1, le=10)

    def names(self) -> dict[str, str]:
        return {"source": self.source, "target": self.target}

    def params(self, ids: dict[str, str]) -> dict[str, Any]:
        return {
            "source_id": ids["source"],
            "target_id": ids["target"],
            "depth": self.depth,
            "as_of": _iso(self.as_of),
            "relation_types": self.relation_types,
            "limit": self.limit,
        }


class SourcesChoice(_Choice):
    """The document chunks that mention an entity (where is X written about?)."""

    template: Literal["entity_sources"]
    entity: EntityName
    limit: int = Field(10, ge=1, le=50)

    def names(self) -> dict[str, str]:
        return {"entity": self.entity}

    def params(self, ids: dict[str, str]) -> dict[str, Any]:
        return {"entity_id": ids["entity"], "limit": self.limit}


class ValidAtChoice(_Choice):
    """An entity's relations valid at one date (who owned X in 2023? what did X depend on
    in March 2023?). For a year or month, use a date inside it."""

    template: Literal["relations_valid_at"]
    entity: EntityName
    as_of: AsOf = Field(description="The date (YYYY-MM-DD) the question asks about.")
    relation_types: Predicates = None
    limit: int = Field(50, ge=1, le=200)

    def names(self) -> dict[str, str]:
        return {"entity": self.entity}

    def params(self, ids: dict[str, str]) -> dict[str, Any]:
        return {
            "entity_id": ids["entity"],
            "as_of": _iso(self.as_of),
            "relation_types": self.relation_types,
            "limit": self.limit,
        }


class EntityChoice(_Choice):
    """One entity: its type, description, aliases, degree and mentions (what is X?)."""

    template: Literal["entity_by_id"]
    entity: EntityName

    def names(self) -> dict[str, str]:
        return {"entity": self.entity}

    def params(self, ids: dict[str, str]) -> dict[str, Any]:
        return {"entity_id": ids["entity"]}


class NoFit(_Choice):
    """No template answers this question."""

    template: Literal["none"]
    reason: str = Field(max_length=500, description="Why no template fits.")


Choice = Annotated[
    NeighborhoodChoice | PathsChoice | SourcesChoice | ValidAtChoice | EntityChoice | NoFit,
    Field(discriminator="template"),
]
#: The templates offered to the LLM, in the order the prompt lists them.
OFFERED: tuple[type[_Choice], ...] = (
    ValidAtChoice,
    NeighborhoodChoice,
    PathsChoice,
    SourcesChoice,
    EntityChoice,
)
OFFERED_NAMES: tuple[str, ...] = tuple(
    str(m.model_fields["template"].annotation.__args__[0])  # type: ignore[union-attr]
    for m in OFFERED
)


class TemplateChoice(Model):
    """The LLM's pick: one template and its parameters, or `none`."""

    choice: Choice


class QueryRequest(Model):
    """``POST /query`` body."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    namespaces: NamespaceList | None = None

    @field_validator("question")
    @classmethod
    def _plain(cls, value: str) -> str:
        no_nul(value)
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class ResolvedEntity(Model):
    """A name from the question, linked to an entity of the graph."""

    parameter: str = Field(description="The choice's parameter (`entity`, `source`, ...).")
    given: str = Field(description="The name the LLM gave.")
    id: str
    name: str
    type: str = ""


class QueryResponse(Model):
    """``POST /query`` response: what ran, with what, and its rows."""

    template: str = Field(description="The registry template that ran.")
    parameters: dict[str, Any] = Field(
        description="Its parameters, ids resolved: `POST /templates/{template}` with this body "
        "runs it again."
    )
    choice: dict[str, Any] = Field(description="The LLM's choice as it gave it (names).")
    entities: list[ResolvedEntity]
    result: TemplateResult
    usage: LLMUsage
    took_ms: float


_SYSTEM = """\
You translate a question about a knowledge graph into ONE named, read-only query template \
and its parameters. You never write Cypher or any other query language.

Templates (field `template`):
{templates}
- none: no template answers the question (give the reason).

Rules:
- Entities are given by their names as the question says them; kg finds their ids.
- Dates are YYYY-MM-DD. For a year or a month, pick a date inside it. Today is {today}.
- relation_types: predicates from this catalogue only, or null for all: {predicates}
- If no template fits, choose `none`. Never force a template onto a question it does not fit."""


def _templates_text() -> str:
    lines = []
    for model, name in zip(OFFERED, OFFERED_NAMES, strict=True):
        doc = " ".join((model.__doc__ or "").split())
        lines.append(f"- {name}: {doc}")
    return "\n".join(lines)


def _iso(value: Any) -> Any:
    return value.isoformat() if value is not None else None


async def _predicates(search: TemplateRunner) -> list[str]:
    result = await search.run_template("relation_types", {})
    return sorted({str(row["type"]) for row in result.rows if row.get("type")})


def _field_errors(error: ValidationError | None) -> list[dict[str, str]]:
    """The LLM's parameter errors by parameter name (the union's tag left out)."""
    if error is None:
        return [{"field": "question", "reason": "the LLM gave no valid template choice"}]
    out: list[dict[str, str]] = []
    for err in error.errors(include_url=False, include_input=False):
        parts = [str(p) for p in err["loc"] if p != "choice" and p not in OFFERED_NAMES]
        out.append({"field": ".".join(parts) or "choice", "reason": err["msg"]})
    return out


def _no_fit(reason: str) -> QueryRejected:
    listed = ", ".join(OFFERED_NAMES)
    return QueryRejected(
        f"no template fits this question ({reason}); the templates are: {listed}. "
        "Run one directly with POST /templates/{name}, or use search or answer instead.",
        errors=[{"field": "question", "reason": f"no template fits; templates: {listed}"}],
    )


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


async def resolve_name(search: TemplateRunner, parameter: str, name: str) -> ResolvedEntity:
    """The entity a name means: an exact (case- and punctuation-blind) name or alias match
    among the fulltext candidates, else one whose name holds every word of ``name``."""
    result = await search.run_template(
        "entity_seeds", {"text": name, "k": _LINK_CANDIDATES, "embedding": None}
    )
    hits = list(result.rows[0].get("fulltext") or []) if result.rows else []

    def forms(hit: dict[str, Any]) -> list[str]:
        return [str(hit.get("name") or ""), *(str(a) for a in hit.get("aliases") or [])]

    wanted, words = _key(name), _words(name)
    exact = [h for h in hits if any(_key(f) == wanted for f in forms(h))]
    close = [h for h in hits if words and any(words <= _words(f) for f in forms(h))]
    chosen = (exact or close or [None])[0]
    if chosen is None:
        seen = ", ".join(repr(str(h.get("name"))) for h in hits[:5]) or "none"
        raise QueryRejected(
            f"no entity named {name[:200]!r} in the graph (closest: {seen})",
            errors=[{"field": parameter, "reason": f"no entity named {name[:200]!r}"}],
        )
    return ResolvedEntity(
        parameter=parameter,
        given=name,
        id=str(chosen["id"]),
        name=str(chosen.get("name") or ""),
        type=str(chosen.get("type") or ""),
    )


async def query(search: TemplateRunner, settings: Settings, request: QueryRequest) -> QueryResponse:
    """Question -> template choice (LLM) -> names linked -> the guarded template's rows."""
    started = time.perf_counter()
    predicates = await _predicates(search)
    system = _SYSTEM.format(
        templates=_templates_text(),
        today=datetime.now(UTC).date().isoformat(),
        predicates=", ".join(predicates[:_MAX_PREDICATES_SHOWN]) or "(none)",
    )
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": request.question},
    ]
    try:
        picked, usage = await ask(
            LLMEndpoint.from_settings(settings),
            TemplateChoice,
            messages,
            context={"predicates": set(predicates)},
        )
    except ReaskFailed as exc:
        errors = _field_errors(exc.error)
        fields = ", ".join(e["field"] for e in errors)
        raise QueryRejected(
            f"the LLM's template choice has invalid parameters ({fields}) after "
            f"{exc.usage.calls} attempt(s)",
            errors=errors,
        ) from exc
    choice = picked.choice
    if isinstance(choice, NoFit):
        raise _no_fit(choice.reason)
    resolved = [await resolve_name(search, p, n) for p, n in choice.names().items()]
    params = choice.params({r.parameter: r.id for r in resolved})
    result = await search.run_template(choice.template, params)
    return QueryResponse(
        template=choice.template,
        parameters=params,
        choice=choice.model_dump(mode="json"),
        entities=resolved,
        result=result,
        usage=usage,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )
