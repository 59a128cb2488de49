"""Guarded Cypher: a registry of named read-only templates and the guard that runs them."""

from kg.cypher.guard import Guard, Prepared, plain
from kg.cypher.lucene import escape_lucene
from kg.cypher.templates import REGISTRY, TEMPLATES, Registry, Template
from kg.errors import translate, validation_errors

__all__ = [
    "REGISTRY",
    "TEMPLATES",
    "Guard",
    "Prepared",
    "Registry",
    "Template",
    "escape_lucene",
    "plain",
    "translate",
    "validation_errors",
]
