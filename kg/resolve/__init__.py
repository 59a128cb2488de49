"""Entity resolution: many surface forms in, one canonical entity per real thing out.

Public API::

    embedder = make_embedder(settings.resolve)
    resolver = Resolver(settings.resolve, embedder, adjudicator=None)
    resolver.add_known(known_entities)
    res = resolver.resolve(mentions)   # res.entity_ids, res.entities, res.merges, res.new_ids
"""

from kg.resolve.adjudicate import Adjudicator, LLMAdjudicator, SameEntity, Side, make_adjudicator
from kg.resolve.embed import Embedder, HashingEmbedder, OpenAIEmbedder, make_embedder
from kg.resolve.resolver import Resolution, ResolutionStats, Resolver

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
