"""GET /entities/{id} and its neighbourhood."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import PathParameter, QueryParameter

from api.routes._docs import SECURED, errors
from kg import MAX_DEPTH, MIN_DEPTH, AsyncKnowledgeGraph, EntityDetail, Neighborhood

#: Ids are opaque strings; the bound keeps hostile input small before it reaches a query.
EntityId = Annotated[
    str, PathParameter(min_length=1, max_length=256, description="The entity's `id`.")
]
#: ?namespace=a&namespace=b: keep to those namespaces (a scoped key's, at most).
Namespaces = Annotated[
    list[str] | None,
    QueryParameter(
        query="namespace",
        min_items=1,
        max_items=50,
        description="Keep to these namespaces (repeat the parameter); default: every "
        "namespace the key may read.",
    ),
]
Depth = Annotated[
    int,
    QueryParameter(
        ge=MIN_DEPTH, le=MAX_DEPTH, description=f"Hops to expand, {MIN_DEPTH}..{MAX_DEPTH}."
    ),
]


class EntityController(Controller):
    path = "/entities"
    tags = ["entities"]  # noqa: RUF012
    security = SECURED

    @get(
        "/{entity_id:str}",
        operation_id="getEntity",
        summary="One entity",
        description="The entity's properties (without its embedding). Outside the caller's "
        "namespaces it is not found; a scoped caller sees only the aliases and description "
        "its namespaces gave.",
        responses=errors(404, 422, 429, 504),
    )
    async def get_entity(
        self,
        entity_id: EntityId,
        graph: NamedDependency[AsyncKnowledgeGraph],
        namespaces: Namespaces = None,
    ) -> EntityDetail:
        return await graph.entity(entity_id, namespaces=namespaces)

    @get(
        "/{entity_id:str}/neighborhood",
        operation_id="getEntityNeighborhood",
        summary="An entity's neighbourhood",
        description="Entities and relations within `depth` hops of the entity.",
        responses=errors(404, 422, 429, 504),
    )
    async def neighborhood(
        self,
        entity_id: EntityId,
        graph: NamedDependency[AsyncKnowledgeGraph],
        depth: Depth = 2,
        namespaces: Namespaces = None,
    ) -> Neighborhood:
        return await graph.neighborhood(entity_id, depth, namespaces=namespaces)
