"""How much another namespace's aliases move a scoped caller's name scores (issue 39, C1).

A scoped caller never matches through an alias outside its scope (kg.cypher.render.named),
but the entity index scores a hit over the whole document: every alias, whoever gave it. This
measures what that leaves: the score one phrase gets for an entity whose visible name and
aliases are the same, with 0..63 more aliases from another namespace that hold the phrase's
word, or do not. Deterministic (Lucene BM25 on a throwaway Neo4j); prints one table.

    .venv/bin/python bench/scoped_alias_scores.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neo4j import GraphDatabase

from kg.graph.schema import apply_schema
from kg.localserver import throwaway_server

EXTRA = (0, 1, 4, 16, 63)
PHRASE = '"gateway"'


def main() -> None:
    with throwaway_server(heap="512m", pagecache="128m") as settings:
        auth = (settings.neo4j.username, settings.neo4j.password.get_secret_value())
        db = settings.neo4j.database
        with GraphDatabase.driver(settings.neo4j.uri, auth=auth) as driver:
            apply_schema(driver, database=db, dimension=8)
            rows = []
            for holds in (True, False):
                for extra in EXTRA:
                    other = [
                        ("Gateway Edge " if holds else "Edge Node ") + str(i) for i in range(extra)
                    ]
                    rows.append(
                        {
                            "id": f"{holds}-{extra}",
                            "aliases": ["Auth Gateway", *other],
                            "sources": ["alpha"] + ["beta"] * extra,
                        }
                    )
            driver.execute_query(
                "UNWIND $rows AS r CREATE (:Entity {id: r.id, name: 'AuthService',"
                " aliases: r.aliases, alias_sources: r.sources, namespaces: ['alpha', 'beta']})",
                rows=rows,
                database_=db,
            )
            driver.execute_query("CALL db.awaitIndexes(60)", database_=db)
            records = driver.execute_query(
                "CALL db.index.fulltext.queryNodes('entity_names', $q, {limit: 100})"
                " YIELD node, score RETURN node.id AS id, score",
                q=PHRASE,
                database_=db,
            ).records
    score = {str(r["id"]): float(r["score"]) for r in records}
    print(f"phrase {PHRASE}; alpha sees name AuthService, alias 'Auth Gateway' in every row")
    print("beta's aliases | hold the word: score (x alone) | do not: score (x alone)")
    for extra in EXTRA:
        cells = []
        for holds in (True, False):
            value, alone = score[f"{holds}-{extra}"], score[f"{holds}-0"]
            cells.append(f"{value:.3f} ({value / alone:.2f})")
        print(f"{extra:>14} | {cells[0]:>28} | {cells[1]:>22}")


if __name__ == "__main__":
    main()
