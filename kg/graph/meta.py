"""The graph's model stamp: one ``(:KgMeta {id: 'kg'})`` node with the model version.

kg refuses to write into, or search, a graph written by another model rather than mixing two
models silently. A graph with data but no stamp was written before stamps existed (model 1).
Later changes to the model or its indexes bump :data:`MODEL_VERSION` and add a step to
:mod:`kg.graph.migrate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import LiteralString

from neo4j import AsyncDriver, Driver

from kg.errors import GraphModelError

# 1: one relationship type per predicate, document ids from the relative path alone.
# 2: bounded relationship types with the predicate on every relation (RELATED for the long
#    tail), a (:Predicate) catalogue, document ids scoped by their source.
MODEL_VERSION = 2

_READ: LiteralString = """
OPTIONAL MATCH (m:KgMeta {id: 'kg'})
RETURN m.model_version AS version,
       EXISTS { MATCH (:Document) } OR EXISTS { MATCH (:Entity) } AS has_data
"""

_STAMP: LiteralString = """
MERGE (m:KgMeta {id: 'kg'})
SET m.model_version = $version, m.updated_at = datetime()
"""


@dataclass(frozen=True)
class GraphModel:
    version: int | None  # None: an empty graph that no kg has stamped yet
    has_data: bool

    @property
    def effective(self) -> int | None:
        if self.version is not None:
            return self.version
        return 1 if self.has_data else None


def read_model(driver: Driver, database: str) -> GraphModel:
    records, _, _ = driver.execute_query(_READ, database_=database)
    version = records[0]["version"]
    return GraphModel(int(version) if version is not None else None, bool(records[0]["has_data"]))


def stamp(driver: Driver, database: str, version: int = MODEL_VERSION) -> None:
    driver.execute_query(_STAMP, version=version, database_=database)


async def check_current_async(driver: AsyncDriver, database: str) -> None:
    """For readers (search): refuse a graph of another model, saying what to do."""
    records, _, _ = await driver.execute_query(_READ, database_=database, routing_="r")
    version = records[0]["version"]
    model = GraphModel(int(version) if version is not None else None, bool(records[0]["has_data"]))
    _refuse_other(model.effective)


def ensure_current(driver: Driver, database: str, *, write: bool = True) -> None:
    """Stamp an empty graph (when ``write``); refuse a graph of another model, saying what to do."""
    model = read_model(driver, database)
    found = model.effective
    if found is None:
        if write:
            stamp(driver, database)
        return
    _refuse_other(found)


def _refuse_other(found: int | None) -> None:
    if found is None:
        return
    if found < MODEL_VERSION:
        raise GraphModelError(
            f"this graph was written by an older kg (graph model {found}; this kg writes model "
            f"{MODEL_VERSION}). Run `kg migrate` to convert it in place, or rebuild it: "
            "delete the graph (MATCH (n) DETACH DELETE n) and run `kg ingest` again."
        )
    if found > MODEL_VERSION:
        raise GraphModelError(
            f"this graph was written by a newer kg (graph model {found}; this kg knows up to "
            f"{MODEL_VERSION}). Upgrade kg to use it."
        )
