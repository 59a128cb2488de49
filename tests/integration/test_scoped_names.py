"""Issue 39, C1: a scoped caller's name match is checked against what its scope may read.

The entity index (``entity_names``) holds a name and every alias in one document, so a hit
does not say which of them matched. Scoped, the templates check the hit again with a Java
regular expression of the searched words (kg.cypher.lucene, kg.cypher.render.named). These
tests hold that check to the real index on the real server: whenever the index matches a
name, the regular expression does too (else scoped search would lose in-scope names), and it
matches no name the index does not (else an out-of-scope alias could still be inferred).
"""

from __future__ import annotations

import pytest
from neo4j import Driver

from kg import scope
from kg.cypher.lucene import any_word_regex, escape_lucene, phrase_regex
from kg.cypher.params import ChunksByTextParams, EntityLinksParams, EntitySeedsParams
from kg.search.service import SearchService
from kg.settings import Settings
from tests.graphdata import with_service

NAMES = (
    "OAuth-Gateway Beta",
    "auth_service",
    "AuthService",
    "Сервис Аутентификации",
    "Сервис аутентификации пользователей",
    "O'Neil Payments",
    "IPv6 gateway",
    "Trudovoy kodeks 2024",
    "payments.api.v2",
    "ЁЖИК Service",
)
PHRASES = (
    ["oauth", "gateway"],
    ["gateway", "beta"],
    ["gateway"],
    ["oauth"],
    ["auth"],
    ["service"],
    ["auth_service"],
    ["authservice"],
    ["сервис", "аутентификации"],
    ["аутентификации"],
    ["сервис"],
    ["o", "neil"],
    ["neil", "payments"],
    ["ipv6"],
    ["ipv6", "gateway"],
    ["kodeks", "2024"],
    ["payments"],
    ["api"],
    ["ёжик"],
    ["ежик"],
    ["beta", "gateway"],
    ["payments.api.v2"],
    ["O'Neil", "payments"],
)
TEXTS = (
    "How does the OAuth gateway work?",
    "auth-svc service",
    "Что делает сервис?",
    "O'Neil",
    "payments.api.v2",
    "(gateway) OR beta*",
)


@pytest.fixture(scope="module")
def named(driver: Driver, settings: Settings) -> Driver:
    """One entity per name, no aliases, indexed."""
    db = settings.neo4j.database
    driver.execute_query("MATCH (e:ScopedNameProbe) DETACH DELETE e", database_=db)
    driver.execute_query(
        "UNWIND range(0, size($names) - 1) AS i"
        " CREATE (:Entity:ScopedNameProbe {id: 'probe-' + i, name: $names[i], aliases: []})",
        names=list(NAMES),
        database_=db,
    )
    driver.execute_query("CALL db.awaitIndexes(60)", database_=db)
    yield driver
    driver.execute_query("MATCH (e:ScopedNameProbe) DETACH DELETE e", database_=db)


def _index_hits(driver: Driver, db: str, query: str) -> set[str]:
    records = driver.execute_query(
        "CALL db.index.fulltext.queryNodes('entity_names', $q, {limit: 1000}) YIELD node"
        " WHERE node:ScopedNameProbe RETURN node.name AS name",
        q=query,
        database_=db,
    ).records
    return {str(r["name"]) for r in records}


def _regex_hits(driver: Driver, db: str, pattern: str) -> set[str]:
    records = driver.execute_query(
        "MATCH (e:ScopedNameProbe) WHERE e.name =~ $p RETURN e.name AS name",
        p=pattern,
        database_=db,
    ).records
    return {str(r["name"]) for r in records}


def test_a_phrase_matches_a_name_as_the_index_does(named: Driver, settings: Settings) -> None:
    db = settings.neo4j.database
    for words in PHRASES:
        quoted = '"' + " ".join(words) + '"'
        assert _regex_hits(named, db, phrase_regex(words)) == _index_hits(named, db, quoted), words


def test_a_question_matches_a_name_as_the_index_does(named: Driver, settings: Settings) -> None:
    db = settings.neo4j.database
    for text in TEXTS:
        query = escape_lucene(text)
        index = _index_hits(named, db, query)
        assert index, text  # each question finds something, so the comparison can fail
        assert _regex_hits(named, db, any_word_regex(query)) == index, text


def test_nothing_to_search_matches_nothing(named: Driver, settings: Settings) -> None:
    db = settings.neo4j.database
    assert _regex_hits(named, db, phrase_regex([])) == set()
    assert _regex_hits(named, db, any_word_regex("")) == set()
    # a word cannot close the quoting: \E is not a word's
    assert _regex_hits(named, db, phrase_regex(["\\E.*\\Q"])) == set()


TIED = 30  # names the fulltext index scores alike for "widget"


@pytest.fixture(scope="module")
def tied(driver: Driver, settings: Settings) -> Driver:
    """Names of one length that all hold "widget" (equal scores), written in descending id
    order so that the index's own order of equal scores is not the ids' order."""
    db = settings.neo4j.database
    driver.execute_query("MATCH (e:ScopedTieProbe) DETACH DELETE e", database_=db)
    driver.execute_query(
        "UNWIND range($n - 1, 0, -1) AS i"
        " CREATE (:Entity:ScopedTieProbe {id: 'tie-' + right('00' + toString(i), 3),"
        " name: 'widget ' + toString(i + 100), namespaces: ['alpha'], aliases: [],"
        " alias_sources: []})",
        n=TIED,
        database_=db,
    )
    driver.execute_query(
        "UNWIND range($n - 1, 0, -1) AS i"
        " CREATE (:Chunk:ChunkEn:ScopedTieProbe {id: 'tie-chunk-' + right('00' + toString(i), 3),"
        " text: 'widget note ' + toString(i + 100), namespace: 'alpha'})",
        n=TIED,
        database_=db,
    )
    driver.execute_query("CALL db.awaitIndexes(60)", database_=db)
    yield driver
    driver.execute_query("MATCH (e:ScopedTieProbe) DETACH DELETE e", database_=db)


def test_scoped_to_every_namespace_a_fulltext_read_keeps_the_same_tied_hits(
    tied: Driver, settings: Settings
) -> None:
    """Issue 41: a fulltext index orders equal scores by how many hits it is asked for, and a
    scoped read asked for more: on the Vue guide 11 of 32 graph searches scoped to the graph's
    only namespace ranked differently. Both now ask alike and break ties by id."""

    async def run(service: SearchService) -> dict[str, tuple[list[str], ...]]:
        out: dict[str, tuple[list[str], ...]] = {}
        for label, namespaces in (("unscoped", None), ("scoped", ["alpha"])):
            with scope.scoped(namespaces):
                seeds = await service.guard.run(
                    "entity_seeds", EntitySeedsParams(text="widget", k=5)
                )
                links = await service.guard.run(
                    "entity_links", EntityLinksParams(phrases=[["widget"]], per_phrase=5)
                )
                chunks = await service.guard.run(
                    "chunks_by_text", ChunksByTextParams(text="widget", k=5)
                )
            out[label] = (
                [str(h["id"]) for h in seeds.rows[0]["fulltext"]],
                [str(r["id"]) for r in links.rows],
                [str(r["id"]) for r in chunks.rows],
            )
        return out

    found = with_service(settings, run)
    first = [f"tie-{i:03d}" for i in range(5)]
    assert found["unscoped"] == (first, first, [f"tie-chunk-{i:03d}" for i in range(5)])
    assert found["scoped"] == found["unscoped"]
