"""Hubs past the seeds are reached but not expanded (``hub_degree``), in the real templates.

A seed S reaches a hub H (30 leaf relations) and an ordinary node M (one more relation) at
hop 1. With ``hub_degree`` 10, hop 2 expands M but not H; unset, H's leaves come too. Seeded
at H itself (hop 1), the hub is expanded whatever the bound.
"""

from __future__ import annotations

from typing import Any

import pytest
from neo4j import Driver

from kg.search.models import SearchRequest
from kg.settings import Settings
from tests.graphdata import tuned, with_service

_GRAPH = """
UNWIND $entities AS id
CREATE (:Entity {id: id, name: id, type: 'Service'})
WITH count(*) AS made
UNWIND $relations AS row
MATCH (s:Entity {id: row[0]}), (t:Entity {id: row[1]})
CREATE (s)-[:RELATED_TO {predicate: 'RELATED_TO', weight: row[2],
                         validFrom: date('2020-01-01')}]->(t)
"""
LEAVES = [f"leaf-{i}" for i in range(30)]


@pytest.fixture
def hub_graph(clean_graph: Driver, settings: Settings) -> Driver:
    relations = [["S", "H", 0.9], ["S", "M", 0.5], ["M", "N", 0.4]]
    relations += [["H", leaf, 0.8] for leaf in LEAVES]
    clean_graph.execute_query(
        _GRAPH,
        {"entities": ["S", "H", "M", "N", *LEAVES], "relations": relations},
        database_=settings.neo4j.database,
    )
    return clean_graph


def _pairs(settings: Settings, seeds: list[str], **bounds: Any) -> set[tuple[str, str, int]]:
    params = {"entity_ids": seeds, "depth": 2, **bounds}
    result = with_service(settings, lambda s: s.run_template("seed_expansion", params))
    return {(r["source"]["id"], r["target"]["id"], r["hop"]) for r in result.rows}


def test_a_hub_past_the_seeds_is_reached_not_expanded(
    hub_graph: Driver, settings: Settings
) -> None:
    bounded = _pairs(settings, ["S"], hub_degree=10)
    assert bounded == {("S", "H", 1), ("S", "M", 1), ("M", "N", 2)}
    unbounded = _pairs(settings, ["S"])
    assert {("H", leaf, 2) for leaf in LEAVES} <= unbounded
    assert _pairs(settings, ["S"], hub_degree=31) == unbounded  # H has 31 relationships


def test_a_seed_that_is_a_hub_is_expanded(hub_graph: Driver, settings: Settings) -> None:
    found = _pairs(settings, ["H"], hub_degree=10)
    assert {("H", leaf, 1) for leaf in LEAVES} <= found
    assert ("S", "H", 1) in found
    assert not any(hop == 2 and "leaf" in t for _, t, hop in found)


def test_search_uses_the_setting(hub_graph: Driver, settings: Settings) -> None:
    def names(hub_degree: int | None) -> set[str]:
        tuned_settings = tuned(settings, hub_degree=hub_degree)
        found = with_service(
            tuned_settings,
            lambda s: s.local_search(SearchRequest(query="S", depth=2, limit=100)),
        )
        return {e.name for e in found.entities}

    assert not names(10) & set(LEAVES)
    assert set(LEAVES) <= names(None)
