"""Communities: hierarchical Leiden over the entity graph, with reports (docs/communities.md).

Stages: :mod:`~kg.communities.store` (read the graph, write communities),
:mod:`~kg.communities.cluster` (Leiden), :mod:`~kg.communities.reports` (extractive or LLM);
the use case is :func:`~kg.communities.build.build_communities`.
"""
