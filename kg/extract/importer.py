"""Import ready-made triplets (JSON Lines) instead of calling an LLM.

One JSON document per line (see docs/import-format.md)::

    {"id": "adr-7", "title": "ADR 7", "text": "...",
     "triplets": [{"subject": "Payments", "predicate": "depends on", "object": "Ledger",
                   "subject_type": "Service", "valid_from": "2024-03"}]}

Each line passes through the same :class:`ExtractionResult` contract as LLM output, so the
graph cannot tell imported facts from extracted ones. A line that is not a document at all (bad
JSON, no text) is reported with its line number and skipped. Inside a good line, a triplet or
entity declaration that fails validation drops alone, reported with its line number, its index
and the reason; the document, its text and its valid triplets still load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from kg.basemodel import Model
from kg.errors import ConfigError
from kg.extract.ontology import Ontology
from kg.extract.schema import (
    DroppedItem,
    ExtractedEntity,
    ExtractedRelation,
    ExtractionResult,
    describe_error,
    salvage,
)
from kg.limits import cut_key, cut_name, is_valid_unicode

__all__ = ["DEFAULT_ENTITY_TYPE", "ImportResult", "ImportedDocument", "read_triplets"]

DEFAULT_ENTITY_TYPE = "Entity"


class _Triplet(Model):
    model_config = ConfigDict(extra="forbid")  # a misspelt key must not vanish silently

    subject: str
    predicate: str
    object: str
    subject_type: str | None = None
    object_type: str | None = None
    description: str = ""
    weight: float = Field(0.5, ge=0.0, le=1.0)
    valid_from: str | None = None
    valid_to: str | None = None

    @field_validator("subject", "predicate", "object")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("weight", mode="before")
    @classmethod
    def _no_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be a number from 0 to 1")
        return value


class _Entity(Model):
    """An optional declaration: the type, description and other names the text gives."""

    model_config = ConfigDict(extra="forbid")

    name: str
    type: str | None = None
    description: str = ""
    aliases: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class _Line(Model):
    model_config = ConfigDict(extra="ignore")  # room for the caller's own metadata

    id: str | None = None
    title: str
    text: str
    # Items are validated one by one (see _to_result), so one bad item drops alone.
    entities: list[Any] = Field(default_factory=list)
    triplets: list[Any] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty when given")
        # The id is the document's path, an indexed key: bounded, kept distinct (kg/limits.py).
        return cut_key(value.strip()) if value is not None else None

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        return cut_name(value)  # a title names the document's Topic entity (kg/limits.py)


@dataclass(frozen=True)
class ImportedDocument:
    """A document with its facts; ``id`` is the file's own id, if it gave one."""

    id: str | None
    title: str
    text: str
    result: ExtractionResult
    line: int = 0
    dropped: tuple[DroppedItem, ...] = ()


@dataclass(frozen=True)
class ImportResult:
    documents: list[ImportedDocument] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def _declared(raw: list[Any], ontology: Ontology | None) -> tuple[list[_Entity], list[DroppedItem]]:
    kept: list[_Entity] = []
    dropped: list[DroppedItem] = []
    for i, item in enumerate(raw):
        try:
            declared = _Entity.model_validate(item)
            # The same rules as extracted entities (name length, ontology type ...).
            ExtractedEntity.model_validate(
                {"name": declared.name, "type": declared.type or DEFAULT_ENTITY_TYPE},
                context={"ontology": ontology},
            )
        except ValidationError as exc:
            dropped.append(DroppedItem("entities", i, describe_error(exc)))
            continue
        kept.append(declared)
    return kept, dropped


def _valid_triplets(
    raw: list[Any], ontology: Ontology | None
) -> tuple[list[_Triplet], list[DroppedItem]]:
    kept: list[_Triplet] = []
    dropped: list[DroppedItem] = []
    checked: set[tuple[str, str | None]] = set()
    for i, item in enumerate(raw):
        try:
            t = _Triplet.model_validate(item)
            ExtractedRelation.model_validate(_relation(t), context={"ontology": ontology})
            for name, kind in ((t.subject, t.subject_type), (t.object, t.object_type)):
                if (name, kind) not in checked:  # an entity is checked once per line
                    ExtractedEntity.model_validate(
                        {"name": name, "type": kind or DEFAULT_ENTITY_TYPE},
                        context={"ontology": ontology},
                    )
                    checked.add((name, kind))
        except ValidationError as exc:
            dropped.append(DroppedItem("triplets", i, describe_error(exc)))
            continue
        kept.append(t)
    return kept, dropped


def _relation(t: _Triplet) -> dict[str, Any]:
    return {
        "source": t.subject,
        "target": t.object,
        "predicate": t.predicate,
        "description": t.description,
        "weight": t.weight,
        "valid_from": t.valid_from,
        "valid_to": t.valid_to,
    }


def _to_result(
    line: _Line, ontology: Ontology | None
) -> tuple[ExtractionResult, list[DroppedItem]]:
    declarations, dropped = _declared(line.entities, ontology)
    triplets, bad_triplets = _valid_triplets(line.triplets, ontology)
    dropped += bad_triplets
    entities: dict[str, dict[str, Any]] = {}
    alias_of: dict[str, str] = {}  # any declared alias -> the key of its entity

    def _key(name: str) -> str:
        return " ".join(name.split()).casefold()

    for declared in declarations:
        key = _key(declared.name)
        entities.setdefault(
            key,
            {"name": declared.name, "type": declared.type or DEFAULT_ENTITY_TYPE,
             "description": declared.description, "aliases": list(declared.aliases)},
        )  # fmt: skip
        for alias in declared.aliases:
            alias_of.setdefault(_key(alias), key)

    def entity(name: str, kind: str | None) -> None:
        key = alias_of.get(_key(name), _key(name))
        if key not in entities:
            entities[key] = {"name": name, "type": kind or DEFAULT_ENTITY_TYPE}
        elif kind and entities[key]["type"] == DEFAULT_ENTITY_TYPE:
            entities[key]["type"] = kind  # a later line may know the type

    relations = []
    for t in triplets:
        entity(t.subject, t.subject_type)
        entity(t.object, t.object_type)
        relations.append(_relation(t))
    try:
        # Every item passed on its own above, so the whole passes too (one validation pass).
        result = ExtractionResult.model_validate(
            {"entities": list(entities.values()), "relations": relations},
            context={"ontology": ontology},
        )
    except ValidationError:
        # An item that fails only together with the others (e.g. an alias clash): salvage
        # keeps the rest and reports it, never losing the line.
        result, late = salvage(list(entities.values()), relations, ontology=ontology)
        dropped += late
    return result, dropped


def _valid_strings(data: Any) -> bool:
    """True when every key and string in ``data`` is valid Unicode (iterative: no recursion)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not is_valid_unicode(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def read_triplets(path: Path, *, ontology: Ontology | None = None) -> ImportResult:
    """Read a triplets JSONL file; malformed lines become ``(line_number, reason)`` errors.

    Raises :class:`ConfigError` only when the file itself cannot be read.
    """
    try:
        raw_lines = Path(path).read_bytes().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    documents: list[ImportedDocument] = []
    errors: list[tuple[int, str]] = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            errors.append((number, "not valid UTF-8"))
            continue
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append((number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        except RecursionError:
            errors.append((number, "invalid JSON: nested too deeply"))
            continue
        if not isinstance(data, dict):
            errors.append((number, "expected a JSON object"))
            continue
        if not _valid_strings(data):
            errors.append((number, "not valid Unicode: a lone surrogate escape such as \\ud800"))
            continue
        try:
            line = _Line.model_validate(data)
            result, dropped = _to_result(line, ontology)
        except ValidationError as exc:
            errors.append((number, describe_error(exc)))
            continue
        except RecursionError:  # nesting the JSON parser took, but validation could not
            errors.append((number, "nested too deeply"))
            continue
        documents.append(
            ImportedDocument(line.id, line.title, line.text, result, number, tuple(dropped))
        )
    return ImportResult(documents, errors)
