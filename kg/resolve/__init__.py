"""Entity resolution: many surface forms in, one canonical entity per real thing out.

Public API::

    embedder = make_embedder(settings.resolve)
    resolver = Resolver(settings.resolve, embedder, adjudicator=None)
    resolver.add_known(known_entities)
    res = resolver.resolve(mentions)   # res.entity_ids, res.entities, res.merges, res.new_ids
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kg.resolve.adjudicate import (
        Adjudicator,
        LLMAdjudicator,
        SameEntity,
        Side,
        make_adjudicator,
    )
    from kg.resolve.embed import Embedder, HashingEmbedder, OpenAIEmbedder, make_embedder
    from kg.resolve.resolver import Resolution, ResolutionStats, Resolver

# Loaded on first use: a search needs the embedder, not the resolver or its LLM adjudicator.
_HOME = {
    **dict.fromkeys(
        ("Adjudicator", "LLMAdjudicator", "SameEntity", "Side", "make_adjudicator"),
        "kg.resolve.adjudicate",
    ),
    **dict.fromkeys(
        ("Embedder", "HashingEmbedder", "OpenAIEmbedder", "make_embedder"), "kg.resolve.embed"
    ),
    **dict.fromkeys(("Resolution", "ResolutionStats", "Resolver"), "kg.resolve.resolver"),
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'kg.resolve' has no attribute {name!r}")


__all__ = [
    "Adjudicator",
    "Embedder",
    "HashingEmbedder",
    "LLMAdjudicator",
    "OpenAIEmbedder",
    "Resolution",
    "ResolutionStats",
    "Resolver",
    "SameEntity",
    "Side",
    "make_adjudicator",
    "make_embedder",
]
