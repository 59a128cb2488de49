"""The extraction stage: chunks to validated entities and relations (or imported triplets).

Modules, one job each: ``schema`` (the Pydantic contract), ``predicates`` (UPPER_SNAKE
normalization), ``ontology`` (allowed types/predicates), ``prompts`` (every prompt + versions),
``backend`` (the extraction contract, the choice of backend), ``client`` (the LLM backend),
``cache`` (SQLite cache), ``budget`` (usage, ceilings, estimates), ``importer`` (triplets JSONL).
"""

from kg.extract.backend import (
    NOT_RUN,
    ChunkOutcome,
    ExtractionBackend,
    ExtractionRun,
    make_extractor,
    run_sync,
)
from kg.extract.budget import Estimate, Usage, estimate
from kg.extract.cache import ExtractionCache
from kg.extract.client import LLMExtractor
from kg.extract.importer import ImportedDocument, ImportResult, read_triplets
from kg.extract.ontology import Ontology, load_ontology, ontology_from_settings
from kg.extract.predicates import canonical_predicate, is_valid_predicate, normalize_predicate
from kg.extract.prompts import PROMPT_VERSION, SCHEMA_VERSION
from kg.extract.schema import ExtractedEntity, ExtractedRelation, ExtractionResult

__all__ = [
    "NOT_RUN",
    "PROMPT_VERSION",
    "SCHEMA_VERSION",
    "ChunkOutcome",
    "Estimate",
    "ExtractedEntity",
    "ExtractedRelation",
    "ExtractionBackend",
    "ExtractionCache",
    "ExtractionResult",
    "ExtractionRun",
    "ImportResult",
    "ImportedDocument",
    "LLMExtractor",
    "Ontology",
    "Usage",
    "canonical_predicate",
    "estimate",
    "is_valid_predicate",
    "load_ontology",
    "make_extractor",
    "normalize_predicate",
    "ontology_from_settings",
    "read_triplets",
    "run_sync",
]
