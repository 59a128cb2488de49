"""The extraction contract: what an LLM (or an import file) must produce for one chunk.

These Pydantic models are instructor's ``response_model``. Their validators are the quality
gate: when one fails, instructor sends the error back to the model and asks again, so every
message here is written for the LLM to act on. An optional :class:`~kg.extract.ontology.Ontology`
arrives through the validation context (``context={"ontology": ...}``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kg.basemodel import Model
from kg.extract.ontology import Ontology
from kg.extract.predicates import canonical_predicate, normalize_predicate
from kg.limits import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, cut_name
from kg.names import plain_name

__all__ = [
    "DroppedItem",
    "ExtractedEntity",
    "ExtractedRelation",
    "ExtractionResult",
    "normalize_predicate",
    "parse_partial_date",
    "salvage",
]

MAX_NAME_LENGTH = MAX_NAME_CHARS  # the one bound on names (kg/limits.py)
MAX_ALIASES = 64  # per extracted entity; the writer bounds the stored list too
_YEAR = re.compile(r"^(\d{4})$")
_YEAR_MONTH = re.compile(r"^(\d{4})-(\d{1,2})$")
_FULL = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ].*)?$")


def parse_partial_date(value: Any) -> date | None:
    """ISO dates as texts state them: ``2024`` -> 2024-01-01, ``2024-03`` -> 2024-03-01."""
    if value is None or isinstance(value, date):
        return value.date() if isinstance(value, datetime) else value
    if isinstance(value, int) and not isinstance(value, bool) and 1000 <= value <= 9999:
        return date(value, 1, 1)
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO date string, got {type(value).__name__}")
    text = value.strip()
    if not text or text.lower() in {"null", "none", "unknown", "n/a"}:
        return None
    try:
        if m := _YEAR.match(text):
            return date(int(m[1]), 1, 1)
        if m := _YEAR_MONTH.match(text):
            return date(int(m[1]), int(m[2]), 1)
        if m := _FULL.match(text):
            return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a real date: {exc}") from exc
    raise ValueError(f"{text!r} is not an ISO date; use YYYY, YYYY-MM or YYYY-MM-DD")


def _clean_name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    text = plain_name(value)  # `"timeout"` is timeout (kg/names.py)
    if not text:
        raise ValueError("must not be empty (nor only quotes or Markdown marks)")
    if len(text) > MAX_NAME_LENGTH:
        raise ValueError(f"is longer than {MAX_NAME_LENGTH} characters; use a short name")
    return text


def _clean_text(value: Any) -> str:
    """A description: stripped, and cut at the bound (kg/limits.py) rather than refused."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return cut_name(value.strip(), MAX_DESCRIPTION_CHARS)


def _to_predicate(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return canonical_predicate(value)  # DEPENDS_ON for "зависит от" too


Name = Annotated[str, BeforeValidator(_clean_name)]
Text = Annotated[str, BeforeValidator(_clean_text)]
PartialDate = Annotated[date | None, BeforeValidator(parse_partial_date)]
Predicate = Annotated[str, BeforeValidator(_to_predicate)]


def _ontology(info: ValidationInfo) -> Ontology | None:
    context = info.context
    if isinstance(context, dict):
        ontology = context.get("ontology")
        if isinstance(ontology, Ontology) and not ontology.empty:
            return ontology
    return None


class ExtractedEntity(Model):
    """A named thing the text talks about."""

    model_config = ConfigDict(extra="ignore")

    name: Name = Field(description="The name as written in the text, in the source language.")
    type: Name = Field(description="A short type such as Service, Team, Person, Policy.")
    description: Text = Field("", description="One sentence from the text about the entity.")
    aliases: list[str] = Field(
        default_factory=list, description="Other names or abbreviations used in the text."
    )

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ValueError("must be a list of strings")
        # Bounded: over-long or surplus aliases are dropped, never stored (hostile input).
        kept = [str(v) for v in value if v is not None and len(str(v)) <= MAX_NAME_LENGTH]
        return kept[:MAX_ALIASES]

    @field_validator("type")
    @classmethod
    def _type_in_ontology(cls, value: str, info: ValidationInfo) -> str:
        ontology = _ontology(info)
        if ontology is None:
            return value
        allowed = ontology.canonical_type(value)
        if allowed is None:
            options = ", ".join(ontology.entity_types or ())
            raise ValueError(f"entity type {value!r} is not allowed; use one of: {options}")
        return allowed

    @model_validator(mode="after")
    def _dedupe_aliases(self) -> ExtractedEntity:
        seen = {self.name.casefold()}
        kept: list[str] = []
        for alias in self.aliases:
            alias = plain_name(alias)
            if alias and alias.casefold() not in seen:
                seen.add(alias.casefold())
                kept.append(alias)
        self.aliases = kept
        return self


class ExtractedRelation(Model):
    """A directed fact ``source -[predicate]-> target`` between two extracted entities."""

    model_config = ConfigDict(extra="ignore")

    source: Name = Field(description="Name of the source entity (must be in entities).")
    target: Name = Field(description="Name of the target entity (must be in entities).")
    predicate: Predicate = Field(description="The relation in UPPER_SNAKE_CASE, e.g. DEPENDS_ON.")
    description: Text = Field("", description="The sentence or clause that states the fact.")
    weight: float = Field(0.5, ge=0.0, le=1.0, description="Confidence/strength from 0 to 1.")
    valid_from: PartialDate = Field(None, description="When the fact became true, if stated.")
    valid_to: PartialDate = Field(None, description="When the fact stopped being true, if stated.")

    @field_validator("predicate")
    @classmethod
    def _predicate_in_ontology(cls, value: str, info: ValidationInfo) -> str:
        ontology = _ontology(info)
        if ontology is not None and not ontology.allows_predicate(value):
            options = ", ".join(ontology.predicates or ())
            raise ValueError(f"predicate {value!r} is not allowed; use one of: {options}")
        return value

    @model_validator(mode="after")
    def _ordered_dates(self) -> ExtractedRelation:
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError(f"valid_to {self.valid_to} is before valid_from {self.valid_from}")
        return self


class ExtractionResult(Model):
    """Everything extracted from one chunk: entities, and relations between them."""

    model_config = ConfigDict(extra="ignore")

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)

    @model_validator(mode="after")
    def _relations_join_entities(self) -> ExtractionResult:
        """Merge duplicate entities; every relation end must name an extracted entity."""
        merged: dict[tuple[str, str], ExtractedEntity] = {}
        for entity in self.entities:
            key = (entity.name.casefold(), entity.type.casefold())
            if key in merged:
                first = merged[key]
                aliases = first.aliases + [a for a in entity.aliases if a not in first.aliases]
                description = max(first.description, entity.description, key=len)
                merged[key] = first.model_copy(
                    update={"aliases": aliases, "description": description}
                )
            else:
                merged[key] = entity
        self.entities = list(merged.values())

        by_name: dict[str, str] = {}
        by_alias: dict[str, str] = {}
        for entity in self.entities:
            by_name.setdefault(entity.name.casefold(), entity.name)
            for alias in entity.aliases:
                by_alias.setdefault(alias.casefold(), entity.name)

        def resolve(name: str) -> str | None:
            folded = name.casefold()
            return by_name.get(folded) or by_alias.get(folded)

        problems: list[str] = []
        fixed: list[ExtractedRelation] = []
        for i, rel in enumerate(self.relations):
            source, target = resolve(rel.source), resolve(rel.target)
            for end, found, name in (
                ("source", source, rel.source),
                ("target", target, rel.target),
            ):
                if found is None:
                    problems.append(
                        f"relations[{i}] ({rel.source} -{rel.predicate}-> {rel.target}): "
                        f"{end} {name!r} is not one of the extracted entities"
                    )
            if source is not None and target is not None:
                fixed.append(rel.model_copy(update={"source": source, "target": target}))
        if problems:
            raise ValueError(
                "; ".join(problems)
                + ". Add each missing entity to `entities` or drop the relation."
            )
        self.relations = fixed
        return self


@dataclass(frozen=True)
class DroppedItem:
    """One entity or relation left out of an extraction because it failed validation."""

    kind: str  # "entities" or "relations" (the importer says "triplets")
    index: int
    reason: str

    def where(self) -> str:
        return f"{self.kind}[{self.index}]"


def describe_error(exc: ValidationError) -> str:
    """A validation error as one line: ``field: message; ...``."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def salvage(
    entities: Sequence[Any], relations: Sequence[Any], *, ontology: Ontology | None = None
) -> tuple[ExtractionResult, list[DroppedItem]]:
    """Keep every valid entity and relation of a raw extraction; report each one dropped.

    Used once instructor's re-asks are spent, and by the importer: one bad item costs only
    itself, never the chunk or document around it. A relation whose end names no kept entity
    is dropped too (never written dangling).
    """
    context = {"ontology": ontology}
    dropped: list[DroppedItem] = []
    kept_entities: list[ExtractedEntity] = []
    for i, raw in enumerate(entities):
        try:
            kept_entities.append(ExtractedEntity.model_validate(raw, context=context))
        except ValidationError as exc:
            dropped.append(DroppedItem("entities", i, describe_error(exc)))
    known = {e.name.casefold() for e in kept_entities}
    known.update(a.casefold() for e in kept_entities for a in e.aliases)
    kept_relations: list[ExtractedRelation] = []
    for i, raw in enumerate(relations):
        try:
            rel = ExtractedRelation.model_validate(raw, context=context)
        except ValidationError as exc:
            dropped.append(DroppedItem("relations", i, describe_error(exc)))
            continue
        missing = [n for n in (rel.source, rel.target) if n.casefold() not in known]
        if missing:
            names = ", ".join(repr(n) for n in missing)
            dropped.append(DroppedItem("relations", i, f"names no kept entity: {names}"))
            continue
        kept_relations.append(rel)
    result = ExtractionResult.model_validate(
        {
            "entities": [e.model_dump() for e in kept_entities],
            "relations": [r.model_dump() for r in kept_relations],
        },
        context=context,
    )
    return result, dropped
