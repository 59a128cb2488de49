"""An optional ontology: the entity types and predicates an extraction may use.

It comes from ``ExtractSettings.allowed_entity_types`` / ``allowed_predicates`` or from a YAML
or JSON file (see ``schema/ontology.example.yaml``)::

    entity_types: [Service, Team, Database]
    predicates: [CALLS, OWNED_BY, "depends on"]   # normalized to UPPER_SNAKE

Either list may be absent, meaning "anything goes" for that part.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kg.errors import ConfigError
from kg.extract.predicates import canonical_predicate
from kg.settings import ExtractSettings

__all__ = ["Ontology", "load_ontology", "ontology_from_settings"]

_TYPE_RE = re.compile(r"^\w[\w .\-/]*$")


@dataclass(frozen=True)
class Ontology:
    """Allowed entity types (matched case-insensitively) and predicates (normalized)."""

    entity_types: tuple[str, ...] | None = None
    predicates: tuple[str, ...] | None = None

    @classmethod
    def build(
        cls, entity_types: Iterable[str] | None = None, predicates: Iterable[str] | None = None
    ) -> Ontology:
        """Clean and de-duplicate the lists, keeping their first spelling and order."""
        types = None
        if entity_types is not None:
            seen: dict[str, str] = {}
            for raw in entity_types:
                t = " ".join(str(raw).split())
                if not t:
                    continue
                if not _TYPE_RE.match(t):
                    raise ValueError(f"entity type {raw!r}: use letters, digits, space, - . /")
                seen.setdefault(t.casefold(), t)
            types = tuple(seen.values())
        preds = None
        if predicates is not None:
            preds = tuple(dict.fromkeys(canonical_predicate(str(p)) for p in predicates))
        return cls(types, preds)

    @property
    def empty(self) -> bool:
        return self.entity_types is None and self.predicates is None

    def canonical_type(self, value: str) -> str | None:
        """The allowed spelling of ``value``, or None when it is not allowed."""
        if self.entity_types is None:
            return value
        folded = value.casefold()
        for t in self.entity_types:
            if t.casefold() == folded:
                return t
        return None

    def allows_predicate(self, predicate: str) -> bool:
        return self.predicates is None or predicate in self.predicates

    @property
    def fingerprint(self) -> str:
        """Short hash for cache keys: a changed ontology must not reuse old extractions."""
        if self.empty:
            return "none"
        body = json.dumps(
            {"types": self.entity_types, "predicates": self.predicates}, sort_keys=True
        )
        return hashlib.sha256(body.encode()).hexdigest()[:16]


def load_ontology(path: Path) -> Ontology:
    """Read an ontology file (``.yaml``/``.yml``/``.json``)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read ontology file {path}: {exc.strerror or exc}") from exc
    data: Any
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"ontology file {path} is not valid: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"ontology file {path}: expected a mapping at the top level")
    types = data.get("entity_types")
    preds = data.get("predicates")
    for key, value in (("entity_types", types), ("predicates", preds)):
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ConfigError(f"ontology file {path}: {key} must be a list of strings")
    try:
        return Ontology.build(types, preds)
    except ValueError as exc:
        raise ConfigError(f"ontology file {path}: {exc}") from exc


def ontology_from_settings(settings: ExtractSettings) -> Ontology:
    """Merge the file (if any) with the lists in settings; settings lists win per part."""
    base = load_ontology(settings.ontology_file) if settings.ontology_file else Ontology()
    try:
        return Ontology.build(
            settings.allowed_entity_types
            if settings.allowed_entity_types is not None
            else base.entity_types,
            settings.allowed_predicates
            if settings.allowed_predicates is not None
            else base.predicates,
        )
    except ValueError as exc:
        raise ConfigError(f"allowed entity types/predicates: {exc}") from exc
