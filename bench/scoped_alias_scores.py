"""How much another namespace's text moves a scoped caller's scores (issue 39).

A scoped caller never matches through an alias outside its scope (kg.cypher.render.named),
but the entity index scores a hit over the whole document: every alias, whoever gave it. This
measures what that leaves: the score one phrase gets for an entity whose visible name and
aliases are the same, with 0..63 more aliases from another namespace that hold the phrase's
word, or do not. Then the same for chunk text, whose BM25 statistics are the whole index's:
alpha's one chunk holding a word, while beta's 1,000 chunks hold it in 0..1,000 of them.
Deterministic (Lucene BM25 on a throwaway Neo4j); prints two tables.

    .venv/bin/python bench/scoped_alias_scores.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neo4j import GraphDatabase

from kg.graph.schema import apply_schema
from kg.localserver import throwaway_server

EXTRA = (0, 1, 4, 16, 63)
PHRASE = '"gateway"'
BETA_CHUNKS = 1000
HOLDING = (0, 1, 2, 10, 100, 1000)


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
            chunk_scores = [_chunk_score(driver, db, holding) for holding in HOLDING]
    score = {str(r["id"]): float(r["score"]) for r in records}
    print(f"phrase {PHRASE}; alpha sees name AuthService, alias 'Auth Gateway' in every row")
    print("beta's aliases | hold the word: score (x alone) | do not: score (x alone)")
    for extra in EXTRA:
        cells = []
        for holds in (True, False):
            value, alone = score[f"{holds}-{extra}"], score[f"{holds}-0"]
            cells.append(f"{value:.3f} ({value / alone:.2f})")
        print(f"{extra:>14} | {cells[0]:>28} | {cells[1]:>22}")
    print()
    print(f"query 'merger'; alpha: 10 chunks, one holds it; beta: {BETA_CHUNKS} chunks")
    print("beta's chunks holding it | alpha's chunk score (x none)")
    for holding, value in zip(HOLDING, chunk_scores, strict=True):
        print(f"{holding:>24} | {value:.4f} ({value / chunk_scores[0]:.3f})")


def _chunk_score(driver: Any, db: str, holding: int) -> float:
    """Alpha's chunk's score for 'merger' when ``holding`` of beta's chunks hold the word."""
    driver.execute_query("MATCH (c:Chunk) DETACH DELETE c", database_=db)
    alpha = [("a" + str(i), "alpha", "A merger was agreed." if i == 0 else "Plain text.")
             for i in range(10)]  # fmt: skip
    beta = [("b" + str(i), "beta", "They discussed the merger." if i < holding else "Other text.")
            for i in range(BETA_CHUNKS)]  # fmt: skip
    driver.execute_query(
        "UNWIND $rows AS r CREATE (:Chunk:ChunkEn {id: r[0], namespace: r[1], text: r[2],"
        " title: ''})",
        rows=[list(r) for r in alpha + beta],
        database_=db,
    )
    driver.execute_query("CALL db.awaitIndexes(60)", database_=db)
    records = driver.execute_query(
        "CALL db.index.fulltext.queryNodes('chunk_text_en', 'merger', {limit: 2000})"
        " YIELD node, score WHERE node.id = 'a0' RETURN score",
        database_=db,
    ).records
    return float(records[0]["score"])


if __name__ == "__main__":
    main()
