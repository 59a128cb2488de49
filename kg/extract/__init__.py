"""The extraction stage: chunks to validated entities and relations (or imported triplets).

Modules, one job each: ``schema`` (the Pydantic contract), ``predicates`` (UPPER_SNAKE
normalization), ``ontology`` (allowed types/predicates), ``prompts`` (every prompt + versions),
``client`` (the LLM client), ``cache`` (SQLite cache), ``budget`` (usage, ceilings, estimates),
``importer`` (triplets JSONL).
"""

from kg.extract.budget import Estimate, Usage, estimate
from kg.extract.cache import ExtractionCache
from kg.extract.client import NOT_RUN, ChunkOutcome, ExtractionRun, Extractor
from kg.extract.importer import ImportedDocument, ImportResult, read_triplets
from kg.extract.ontology import Ontology, load_ontology, ontology_from_settings
from kg.extract.predicates import is_valid_predicate, normalize_predicate
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
    "ExtractionCache",
    "ExtractionResult",
    "ExtractionRun",
    "Extractor",
    "ImportResult",
    "ImportedDocument",
    "Ontology",
    "Usage",
    "estimate",
    "is_valid_predicate",
    "load_ontology",
    "normalize_predicate",
    "ontology_from_settings",
    "read_triplets",
]
