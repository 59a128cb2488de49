"""Bring a graph that a test wrote with raw Cypher into the current graph model.

Test fixtures write typed relations directly (faster and clearer than going through ingest);
the current model also wants each relation's ``predicate``, the ``(:Predicate)`` catalogue and
the model stamp, and chunks their language label. This adds exactly those, keeping every id and
type as the fixture wrote them.
"""

from __future__ import annotations

from neo4j import Driver

from kg.graph.meta import stamp
from kg.graph.migrate import label_chunk_languages


def as_current_model(driver: Driver, database: str) -> None:
    # In batches: the supernode fixture has 100k relations, more than one transaction may hold.
    with driver.session(database=database) as session:
        session.run(
            "MATCH (:Entity)-[r]->(:Entity) WHERE r.predicate IS NULL "
            "CALL (r) { SET r.predicate = type(r) } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
    driver.execute_query(
        "MATCH (:Entity)-[r]->(:Entity) WITH DISTINCT r.predicate AS name, type(r) AS stored "
        "MERGE (p:Predicate {name: name}) ON CREATE SET p.stored_as = stored, p.promoted = false",
        database_=database,
    )
    label_chunk_languages(driver, database)
    stamp(driver, database)
