"""Local search against a real Neo4j holding the small graph of tests/graphdata.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.errors import NotFoundError
from kg.search.global_models import RoutedResponse
from kg.search.models import EntityDetail, Neighborhood, SearchRequest, SearchResponse
from kg.search.service import SearchService
from kg.settings import Settings
from tests.clienv import cli_env
from tests.graphdata import record_reads, tuned, with_service, write_test_graph

REPO = Path(__file__).resolve().parents[2]
TWO_HOPS = "Who owns what the Payment Service depends on?"


@pytest.fixture
def graph(clean_graph: Driver, settings: Settings) -> Driver:
    write_test_graph(clean_graph, settings)
    return clean_graph


def _search(settings: Settings, **request: object) -> SearchResponse:
    req = SearchRequest.model_validate(request)
    return with_service(settings, lambda s: s.local_search(req))


def test_two_hop_question_returns_the_owner_and_the_supporting_chunks(
    graph: Driver, settings: Settings
) -> None:
    one_seed = tuned(settings, seeds=1)
    response = _search(one_seed, query=TWO_HOPS, depth=2, limit=20)
    hops = {e.id: e.hops for e in response.entities}
    assert hops["payment"] == 0
    assert hops["ledger"] == 1
    assert hops["finance"] == 2
    relations = {(r.source, r.type, r.target): r for r in response.relations}
    assert relations["payment", "DEPENDS_ON", "ledger"].hops == 1
    assert relations["ledger", "OWNED_BY", "finance"].hops == 2
    assert relations["payment", "DEPENDS_ON", "ledger"].valid_from == "2020-01-01"
    chunks = {c.id: c for c in response.chunks}
    assert {"c-pay-1", "c-pay-2"} <= set(chunks)
    assert chunks["c-pay-2"].document_path == "docs/payments.md"
    assert chunks["c-pay-2"].document_id == "doc-pay"
    for items in (response.entities, response.relations, response.chunks):
        scores = [i.score for i in items]
        assert scores == sorted(scores, reverse=True)
    assert response.template == "seed_expansion"
    # One hop less and the owner is out of reach.
    shallow = _search(one_seed, query=TWO_HOPS, depth=1, limit=20)
    assert "finance" not in {e.id for e in shallow.entities}
    assert "c-pay-2" in {c.id for c in shallow.chunks}  # it MENTIONS the Ledger DB


def test_scores_follow_similarity_weight_type_and_hops(graph: Driver, settings: Settings) -> None:
    response = _search(tuned(settings, seeds=1), query=TWO_HOPS, depth=2)
    rel = {(r.source, r.type, r.target): r for r in response.relations}
    seed = next(e for e in response.entities if e.id == "payment")
    depends = rel["payment", "DEPENDS_ON", "ledger"]
    assert depends.score == pytest.approx(seed.score * 0.9 * 0.95 / 2)
    owned = rel["ledger", "OWNED_BY", "finance"]
    assert owned.score == pytest.approx(seed.score * 0.9 * 0.95 * 0.8 * 0.85 / 3)


def test_as_of_counts_only_relations_valid_then(graph: Driver, settings: Settings) -> None:
    one_seed = tuned(settings, seeds=1)
    question = "Where is the Payment Service hosted?"

    def hosts(**extra: object) -> set[str]:
        response = _search(one_seed, query=question, depth=1, **extra)
        return {r.target for r in response.relations if r.type == "HOSTED_ON"}

    assert hosts(as_of="2021-01-01") == {"mainframe"}
    assert hosts(as_of="2022-06-30T00:00:00Z") == {"k8s"}  # validTo is exclusive
    assert hosts() == {"k8s"}  # default: now
    assert hosts(as_of="2010-01-01") == set()  # before validFrom
    # DEPENDS_ON starts 2020-01-01 (a DATE); a datetime as_of compares with it correctly.
    early = _search(one_seed, query=question, depth=1, as_of="2019-12-31T23:00:00+00:00")
    assert "DEPENDS_ON" not in {r.type for r in early.relations}


def test_relations_valid_at_template(graph: Driver, settings: Settings) -> None:
    result = with_service(
        settings,
        lambda s: s.run_template(
            "relations_valid_at", {"entity_id": "payment", "as_of": "2021-05-05"}
        ),
    )
    assert {(r["type"], r["target"]) for r in result.rows} == {
        ("DEPENDS_ON", "ledger"),
        ("HOSTED_ON", "mainframe"),
    }


def test_relation_type_filter_limits_the_expansion(graph: Driver, settings: Settings) -> None:
    response = _search(
        tuned(settings, seeds=1), query=TWO_HOPS, depth=3, relation_types=["DEPENDS_ON"]
    )
    assert {r.type for r in response.relations} == {"DEPENDS_ON"}
    unicode = _search(settings, query="Finance Team", depth=1, relation_types=["ЯВЛЯЕТСЯ_ЧАСТЬЮ"])
    assert {r.type for r in unicode.relations} == {"ЯВЛЯЕТСЯ_ЧАСТЬЮ"}
    assert "c-ru-1" in {c.id for c in unicode.chunks}


def test_vector_mode_returns_chunks_only(graph: Driver, settings: Settings) -> None:
    response = _search(settings, query="Ledger DB owned by the Finance Team", mode="vector")
    assert response.entities == []
    assert response.relations == []
    assert response.chunks[0].id == "c-pay-2"
    assert response.template == "chunks_by_vector"


def test_hybrid_mode_fuses_text_vector_and_graph_chunks(graph: Driver, settings: Settings) -> None:
    response = _search(settings, query="Ledger DB owned by the Finance Team", mode="hybrid")
    assert response.entities
    assert response.template == "chunks_by_text+chunks_by_vector+seed_expansion"
    assert response.chunks[0].id == "c-pay-2"
    assert len({c.id for c in response.chunks}) == len(response.chunks)


def test_text_mode_finds_words_in_text_and_title_in_any_script(
    graph: Driver, settings: Settings
) -> None:
    response = _search(settings, query="Who owns the Ledger DB?", mode="text")
    assert response.template == "chunks_by_text"
    assert (response.entities, response.relations) == ([], [])
    assert response.chunks[0].id == "c-pay-2"
    # Russian text is found by its words, and a chunk by its document's title.
    russian = _search(settings, query="команда финансов", mode="text")
    # The Russian chunk first; the English one on the finance team after it, through the
    # question's English gloss (команда -> team, финансов -> finance: kg.glossary).
    assert [c.id for c in russian.chunks] == ["c-ru-1", "c-pay-2"]
    title = _search(settings, query="Платежи", mode="text")
    found = [c.id for c in title.chunks]
    assert found[0] == "c-ru-1"
    # then the English chunks of the payments document (платежи -> payment, through the gloss)
    assert found[1:]
    assert all(cid.startswith("c-pay-") for cid in found[1:])
    assert _search(settings, query="???", mode="text").chunks == []


def test_limit_bounds_every_list(graph: Driver, settings: Settings) -> None:
    response = _search(settings, query=TWO_HOPS, depth=3, limit=2)
    assert len(response.entities) <= 2
    assert len(response.relations) <= 2
    assert len(response.chunks) <= 2


def test_a_question_matching_nothing_returns_empty_lists(
    clean_graph: Driver, settings: Settings
) -> None:
    response = _search(settings, query="anything at all", mode="hybrid")
    assert (response.entities, response.relations, response.chunks) == ([], [], [])


def test_entity_neighborhood_and_lookup(graph: Driver, settings: Settings) -> None:
    async def scenario(service: SearchService) -> tuple[EntityDetail, Neighborhood]:
        return await service.get_entity("ledger"), await service.neighborhood("ledger", 2)

    entity, hood = with_service(settings, scenario)
    assert entity.name == "Ledger DB"
    assert entity.degree == 4  # DEPENDS_ON, OWNED_BY, and two MENTIONS
    assert entity.mentions == 2
    assert hood.entity.id == "ledger"
    reached = {e.id: e.hops for e in hood.entities}
    assert reached["payment"] == 1
    assert reached["acme"] == 2
    with pytest.raises(NotFoundError):
        with_service(settings, lambda s: s.get_entity("no-such-entity"))
    with pytest.raises(NotFoundError):
        with_service(settings, lambda s: s.neighborhood("no-such-entity", 1))


def test_paths_between_shortest_first(graph: Driver, settings: Settings) -> None:
    graph.execute_query(
        "MATCH (a:Entity {id: 'payment'}), (b:Entity {id: 'acme'}) "
        "CREATE (a)-[:FUNDED_BY {weight: 0.3}]->(b)",
        database_=settings.neo4j.database,
    )
    result = with_service(
        settings,
        lambda s: s.run_template(
            "paths_between", {"source_id": "payment", "target_id": "acme", "depth": 3}
        ),
    )
    lengths = [row["hops"] for row in result.rows]
    assert lengths[0] == 1
    assert lengths == sorted(lengths)
    assert 3 in lengths
    longest = result.rows[lengths.index(3)]
    assert [n["id"] for n in longest["nodes"]] == ["payment", "ledger", "finance", "acme"]
    short = with_service(
        settings,
        lambda s: s.run_template(
            "paths_between", {"source_id": "payment", "target_id": "acme", "depth": 2}
        ),
    )
    assert [row["hops"] for row in short.rows] == [1]


def test_entity_sources(graph: Driver, settings: Settings) -> None:
    result = with_service(
        settings, lambda s: s.run_template("entity_sources", {"entity_id": "finance"})
    )
    assert {(r["chunk_id"], r["document_path"]) for r in result.rows} == {
        ("c-pay-2", "docs/payments.md"),
        ("c-ru-1", "docs/ru/платежи.md"),
    }


def test_templates_are_listed_with_their_parameters(driver: Driver, settings: Settings) -> None:
    async def listing(service: SearchService) -> dict[str, object]:
        return {t.name: t for t in service.templates()}

    infos = with_service(settings, listing)
    for name in ("entity_neighborhood", "paths_between", "entity_sources", "relations_valid_at"):
        assert name in infos
    hood = infos["entity_neighborhood"]
    assert hood.parameters["properties"]["depth"]["maximum"] == 3  # type: ignore[attr-defined]
    assert with_service(settings, lambda s: s.health()) is True


def test_cli_json_is_the_routed_body_for_a_local_mode_too(
    graph: Driver, settings: Settings
) -> None:
    env = cli_env(settings, KG_SEARCH__SEEDS="1")  # none of the caller's KG_ or NEO4J_
    run = [sys.executable, "-m", "cli.main", "search", TWO_HOPS, "--depth", "2", "--mode",
           "graph", "--json"]  # fmt: skip
    proc = subprocess.run(run, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    # Every mode prints POST /search's body; a local mode's result is POST /search/local's.
    routed = RoutedResponse.model_validate_json(proc.stdout)
    assert (routed.requested, routed.mode, routed.reason) == ("graph", "graph", "requested")
    assert routed.local is not None
    response = routed.local
    assert {"ledger", "finance"} <= {e.id for e in response.entities}
    expected = _search(tuned(settings, seeds=1), query=TWO_HOPS, depth=2, mode="graph")
    assert response.model_dump(exclude={"took_ms"}) == expected.model_dump(exclude={"took_ms"})

    bad = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", "x", "--depth", "4"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert bad.returncode == 2
    assert "--depth" in bad.stderr
    table = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", TWO_HOPS],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "160"},
        cwd=REPO,
        check=False,
    )
    assert table.returncode == 0, table.stderr
    assert "Finance Team" in table.stdout
    assert "docs/payments.md" in table.stdout


def test_a_name_written_after_a_search_links_at_the_next_one(
    graph: Driver, settings: Settings
) -> None:
    """Linking asks only about n-grams some name has (the forms kept per process); whether the
    graph moved since they were read comes back with the links themselves (counted_links), so
    a name written between two searches links at the second."""
    question = "What does the Zorblax Gateway depend on?"
    db = settings.neo4j.database

    async def run(service: SearchService) -> tuple[SearchResponse, SearchResponse]:
        req = SearchRequest(query=question, mode="graph", depth=1)
        before = await service.local_search(req)
        graph.execute_query(
            "MATCH (c:Chunk {id: 'c-pay-1'}) "
            "CREATE (c)-[:MENTIONS]->(:Entity {id: 'zorblax', name: 'Zorblax Gateway', "
            "type: 'service', aliases: []})",
            database_=db,
        )
        return before, await service.local_search(req)

    before, after = with_service(settings, run)
    assert "zorblax" not in {e.id for e in before.entities}
    assert {e.id: e.hops for e in after.entities}.get("zorblax") == 0
    assert "c-pay-1" in {c.id for c in after.chunks}


def test_hybrid_reads_only_what_it_shows_and_sees_a_chunk_written_between_searches(
    graph: Driver, settings: Settings
) -> None:
    """In hybrid the vector signal ranks the chunk vectors kept per process (ids only) and the
    graph signal ranks ids; the texts and documents of the chunks shown are read after fusion.
    A chunk written after a search is in the kept vectors at the next one: the graph's counts
    that linking read say the vectors moved (read on every search: ``counts_ttl_s=0``; the
    default's later reading is the next test's)."""
    from kg.resolve.embed import make_chunk_embedder

    question = "Which service settles invoices for the Ledger DB?"
    text = "Invoices for the Ledger DB are settled by the Billing Service each night."
    vector_only = tuned(settings, fusion_weights={"vector": 1.0}, counts_ttl_s=0)
    db = settings.neo4j.database
    vector = [float(x) for x in make_chunk_embedder(settings.chunks).embed([text])[0]]

    async def run(
        service: SearchService,
    ) -> tuple[SearchResponse, SearchResponse, list[tuple[str, Any]]]:
        reads = record_reads(service)
        req = SearchRequest(query=question, mode="hybrid", limit=5)
        before = await service.local_search(req)
        graph.execute_query(
            "MATCH (d:Document {id: 'doc-pay'}) "
            "CREATE (c:Chunk {id: 'c-pay-9', index: 9, text: $text, sha256: 'c-pay-9', "
            "embedding: $vector, title: d.title, document_id: d.id})-[:PART_OF]->(d)",
            text=text,
            vector=vector,
            database_=db,
        )
        return before, await service.local_search(req), reads

    before, after, reads = with_service(vector_only, run)
    ran = [name for name, _ in reads]
    assert "c-pay-9" not in {c.id for c in before.chunks}
    assert after.chunks[0].id == "c-pay-9"
    assert after.chunks[0].text == text
    assert after.chunks[0].document_path == "docs/payments.md"
    for chunk in [*before.chunks, *after.chunks]:
        assert chunk.text, chunk
        assert chunk.document_id, chunk
    assert {e.id: e.description for e in after.entities}["ledger"] == "Double-entry ledger."
    # the kept vectors, read twice (the chunk moved the counts), never the index
    assert ran.count("chunk_page") == 2
    assert "chunks_by_vector" not in ran
    assert ran.count("graph_evidence") == 2


def test_hybrid_reads_the_texts_it_shows_beside_the_text_read(
    graph: Driver, settings: Settings
) -> None:
    """The graph and vector signals rank in memory and finish while the text signal's read
    runs: the texts of their first chunks and the shown entities' details are read then, beside
    it, and the text read brings the texts of its own first chunks; nothing is read after
    fusion. The text read is held back here (200 ms) so that it is surely the last to finish."""
    question = "Which service settles invoices for the Ledger DB?"
    db = settings.neo4j.database

    async def run(service: SearchService) -> tuple[SearchResponse, list[str]]:
        req = SearchRequest(query=question, mode="hybrid", limit=5)
        await service.local_search(req)  # the kept structures are read once
        events: list[str] = []
        guarded = service.guard.run

        async def observed(name: str, params: Any) -> Any:
            events.append(f"start {name}")
            if name == "chunks_by_text":
                await asyncio.sleep(0.2)
            result = await guarded(name, params)
            events.append(f"end {name}")
            return result

        service.guard.run = observed  # type: ignore[method-assign]
        return await service.local_search(req), events

    response, events = with_service(settings, run)
    assert sorted(e for e in events if e.startswith("start")) == [
        "start chunks_by_text",
        "start graph_evidence",
    ], events
    assert events.index("start graph_evidence") < events.index("end chunks_by_text"), events
    assert response.chunks
    assert response.entities
    stored = {
        r["id"]: (r["text"], r["path"])
        for r in graph.execute_query(
            "MATCH (c:Chunk)-[:PART_OF]->(d:Document) RETURN c.id AS id, c.text AS text, "
            "d.path AS path",
            database_=db,
        ).records
    }
    for chunk in response.chunks:
        assert (chunk.text, chunk.document_path) == stored[chunk.id], chunk
    ledger = {e.id: e for e in response.entities}["ledger"]
    assert ledger.description == "Double-entry ledger."


def test_fuzzy_seeds_take_their_vector_half_from_the_kept_entity_vectors(
    graph: Driver, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question that names no entity is seeded from the entities nearest to it and the
    names its words match: the nearest come from the entity vectors kept per process (read
    once, ``entity_page``), and ``entity_seeds`` asks the fulltext index only. It ranks as the
    vector index did (on this small graph the index is exact); with too many vectors to keep
    the index is asked, as before."""
    import kg.search.entity_vectors as entity_vectors

    question = "Which team owns the money systems?"
    req = SearchRequest(query=question, mode="graph", depth=1)

    async def run(service: SearchService) -> tuple[SearchResponse, list[tuple[str, Any]]]:
        reads = record_reads(service)
        await service.local_search(req)
        return await service.local_search(req), reads

    kept, kept_reads = with_service(settings, run)
    # none kept (the first page of one already holds more than the most kept): the index
    monkeypatch.setattr(entity_vectors, "MAX_BYTES", 0)
    monkeypatch.setattr(entity_vectors, "PAGE", 1)
    index, index_reads = with_service(settings, run)

    seeds = [p for name, p in kept_reads if name == "entity_seeds"]
    assert len(seeds) == 2
    assert all(p.embedding is None for p in seeds)
    assert [name for name, _ in kept_reads].count("entity_page") == 1
    assert all(p.embedding for name, p in index_reads if name == "entity_seeds")
    assert kept.entities
    assert [(e.id, e.hops) for e in kept.entities] == [(e.id, e.hops) for e in index.entities]
    assert [e.score for e in kept.entities] == pytest.approx([e.score for e in index.entities])
    assert [c.id for c in kept.chunks] == [c.id for c in index.chunks]
    for entity in kept.entities:  # the details of a seed ranked from the kept vectors
        assert entity.name
        assert entity.name != entity.id


def _write_chunk(driver: Driver, database: str, chunk_id: str, text: str) -> None:
    """A chunk of doc-pay with its vector, written by ``driver`` (its own bookmarks)."""
    from kg.resolve.embed import make_chunk_embedder

    vector = [float(x) for x in make_chunk_embedder(Settings().chunks).embed([text])[0]]
    driver.execute_query(
        "MATCH (d:Document {id: 'doc-pay'}) "
        "CREATE (c:Chunk {id: $id, index: 9, text: $text, sha256: $id, "
        "embedding: $vector, title: d.title, document_id: d.id})-[:PART_OF]->(d)",
        id=chunk_id,
        text=text,
        vector=vector,
        database_=database,
    )


def test_the_graph_counts_are_trusted_for_counts_ttl_s_then_read_again(
    graph: Driver, settings: Settings
) -> None:
    """Searches within ``search.counts_ttl_s`` of a counts read make no other (a round trip
    less per search); another process's write (a driver of its own) shows once it passed.
    The TTL's clock is the test's, so a slow machine cannot change what it sees."""
    question = "Which service settles invoices for the Ledger DB?"
    text = "Invoices for the Ledger DB are settled by the Billing Service each night."
    ttl = 60.0
    vector_only = tuned(settings, fusion_weights={"vector": 1.0}, counts_ttl_s=ttl)
    req = SearchRequest(query=question, mode="hybrid", limit=5)
    now = [1000.0]

    async def run(service: SearchService) -> tuple[list[str], list[str], list[str], list[str]]:
        service.context.names.clock = lambda: now[0]
        reads = record_reads(service)
        await service.local_search(req)
        now[0] += ttl / 2
        await service.local_search(req)
        within = [name for name, _ in reads]
        _write_chunk(graph, settings.neo4j.database, "c-pay-9", text)
        stale = await service.local_search(req)
        now[0] += ttl
        after = await service.local_search(req)
        ran = [name for name, _ in reads][len(within) :]
        return within, ran, [c.id for c in stale.chunks], [c.id for c in after.chunks]

    within, ran, stale, found = with_service(vector_only, run)
    assert within.count("graph_counts") == 1
    assert ran.count("graph_counts") == 1  # the TTL passed once
    assert ran.count("chunk_page") == 1  # the counts moved: the vectors read again
    assert "c-pay-9" not in stale  # the documented delay, no longer than the TTL
    assert found[0] == "c-pay-9"


def test_a_write_of_the_service_s_own_chain_shows_at_once_despite_the_ttl(
    graph: Driver, settings: Settings
) -> None:
    """A write through the write chain the service reads after (the library's sync driver)
    moves its bookmarks: the next search reads the counts again, whatever the TTL."""
    from kg.graph.driver import open_async_driver, open_driver
    from kg.resolve import make_embedder

    question = "Which service settles invoices for the Ledger DB?"
    text = "Invoices for the Ledger DB are settled by the Billing Service each night."
    vector_only = tuned(settings, fusion_weights={"vector": 1.0}, counts_ttl_s=60)
    req = SearchRequest(query=question, mode="hybrid", limit=5)

    async def main() -> tuple[list[str], list[str]]:
        with open_driver(settings.neo4j) as writer:
            async with open_async_driver(settings.neo4j) as driver:
                service = SearchService(
                    driver,
                    vector_only,
                    make_embedder(settings.resolve),
                    bookmarks=writer.execute_query_bookmark_manager,
                )
                await service.local_search(req)
                reads = record_reads(service)
                _write_chunk(writer, settings.neo4j.database, "c-pay-9", text)
                after = await service.local_search(req)
                return [name for name, _ in reads], [c.id for c in after.chunks]

    ran, found = asyncio.run(main())
    assert ran.count("graph_counts") == 1
    assert found[0] == "c-pay-9"


def test_the_router_asks_only_about_phrases_that_could_name_something(
    graph: Driver, settings: Settings
) -> None:
    """``auto``'s linking sends the fulltext index only the phrases some name or alias has
    the words of (and any phrase with no form, such as a bare number): the same links, a
    fraction of the lookups."""
    from kg.search.routed import link

    question = "Who owns the Ledger DB that the payment service uses in 2024?"

    async def run(service: SearchService) -> tuple[list[str], list[str], list[Any]]:
        reads = record_reads(service)
        kept = await service.naming_phrases(
            ["ledger db", "the weather", "2024", "payment", "payment service", "ledger"]
        )
        linked = await link(service, question)
        return kept, linked, [params for name, params in reads if name == "name_links"]

    kept, linked, sent = with_service(settings, run)
    assert kept == ["ledger db", "2024", "payment service", "ledger"]
    assert linked == ["Ledger DB", "Payment Service"]
    phrases = sent[0]["phrases"]
    assert "ledger db" in phrases
    assert "owns" not in phrases
    assert len(phrases) <= 6
