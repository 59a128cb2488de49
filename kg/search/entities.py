"""Entity lookup and an entity's neighbourhood: reads by id, beside the question searches."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from kg.cypher.guard import Guard
from kg.cypher.params import EntityDetailsParams, EntityParams, NeighborhoodParams
from kg.errors import NotFoundError
from kg.search.models import EntityDetail, EntityHit, Neighborhood
from kg.search.ranking import Weights, rank_expansion
from kg.settings import SearchSettings


def entity_detail(row: Mapping[str, Any]) -> dict[str, Any]:
    """The name, type, description and aliases of an ``entity_details`` (or
    ``graph_evidence``) row, as the update of an :class:`EntityHit`. Name and type too: a seed
    that no shown relation touches was ranked from its id alone (a fact's end, a fuzzy
    candidate), and must not be shown with its id for a name."""
    detail: dict[str, Any] = {
        "description": str(row.get("description") or ""),
        "aliases": [str(a) for a in row.get("aliases") or []],
    }
    if row.get("name"):
        detail["name"] = str(row["name"])
    if row.get("type") is not None:
        detail["type"] = str(row["type"])
    return detail


async def entity_details(guard: Guard, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Descriptions and aliases, read only for the entities a response shows."""
    if not entity_ids:
        return {}
    result = await guard.run(
        "entity_details", EntityDetailsParams.model_construct(entity_ids=entity_ids)
    )
    return {str(row["id"]): entity_detail(row) for row in result.rows}


class Entities:
    """One entity by id, and what surrounds it. The constructor does no I/O."""

    def __init__(self, guard: Guard, search: SearchSettings, weights: Weights) -> None:
        self._guard = guard
        self._search = search
        self._weights = weights

    async def get(self, entity_id: str) -> EntityDetail:
        """The entity with its degree and mention count; NotFoundError when absent."""
        result = await self._guard.run(
            "entity_by_id", EntityParams.model_construct(entity_id=entity_id)
        )
        if not result.rows:
            raise NotFoundError(f"no entity with id {entity_id[:200]!r}")
        row = result.rows[0]
        entity = {k: v for k, v in row["entity"].items() if v is not None}
        return EntityDetail(**entity, degree=row["degree"], mentions=row["mentions"])

    async def neighborhood(
        self,
        entity_id: str,
        depth: int = 1,
        *,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        limit: int | None = None,
    ) -> Neighborhood:
        """An entity's ranked neighbourhood within ``depth`` hops."""
        params = NeighborhoodParams.model_construct(
            entity_id=entity_id,
            depth=depth,
            as_of=as_of,
            relation_types=relation_types,
            fanout=self._search.fanout,
            frontier_cap=self._search.frontier_cap,
            hub_degree=self._search.hub_degree,
            limit=min(limit or self._search.row_cap, self._search.row_cap),
        )
        result = await self._guard.run("entity_neighborhood", params)
        entity = await self.get(entity_id)
        ranked = rank_expansion({entity_id: (1.0, entity.model_dump())}, result.rows, self._weights)
        others = [e for e in ranked.entities if e.id != entity_id]
        details = await entity_details(self._guard, [e.id for e in others[:200]])
        return Neighborhood(
            entity=entity,
            entities=[
                EntityHit.model_validate(dataclasses.asdict(e) | details.get(e.id, {}))
                for e in others
            ],
            relations=ranked.relation_hits(len(ranked.relations)),
            truncated=result.truncated,
        )
