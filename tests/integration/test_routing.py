"""``neo4j://`` end to end against the real server: the driver asks it for a routing table
(Community serves a one-member table, so the code path of a cluster runs here), reads go to
READ routing, writes to the writer, and one graph reads its own writes through one bookmark
chain (docs/scaling.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from neo4j import Driver, GraphDatabase

from kg import AsyncKnowledgeGraph, KnowledgeGraph, StoreError
from kg.settings import Settings
from tests.neo4j_backend import Neo4jTarget, routing_uri

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"


def _routed(settings: Settings, target: Neo4jTarget) -> Settings:
    """The test server's settings with a routing URI (``neo4j://``, same host and port)."""
    if target.backend == "testcontainers":
        # A port-mapped container advertises its inside port (7687), which the host cannot
        # reach: routing needs NEO4J_server_bolt_advertised__address set to the mapped one.
        pytest.skip("the container advertises an address the host cannot reach")
    uri = routing_uri(settings.neo4j.uri)
    return settings.model_copy(update={"neo4j": settings.neo4j.model_copy(update={"uri": uri})})


def test_the_server_advertises_the_address_clients_reach(
    settings: Settings, neo4j_server: Neo4jTarget
) -> None:
    """A routing table lists the server's advertised Bolt address; a client that cannot
    reach it could connect but never query. The local server advertises the loopback
    address and port it binds (kg/localserver/config.py)."""
    routed = _routed(settings, neo4j_server)
    parts = urlsplit(routed.neo4j.uri)
    auth = (routed.neo4j.username, routed.neo4j.password.get_secret_value())
    with GraphDatabase.driver(routed.neo4j.uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "CALL dbms.routing.getRoutingTable({}, $db) YIELD servers "
            "UNWIND servers AS s RETURN s.role AS role, s.addresses AS addresses",
            db=routed.neo4j.database,
            routing_="r",
        )
    roles = {r["role"]: set(r["addresses"]) for r in records}
    assert set(roles) == {"WRITE", "READ", "ROUTE"}
    assert all(roles.values())
    if neo4j_server.backend == "local":
        # one server: every role is the loopback address and port it binds
        for addresses in roles.values():
            assert addresses == {f"{parts.hostname}:{parts.port}"}


def test_sync_graph_reads_its_own_writes_through_routing(
    clean_graph: Driver, settings: Settings, neo4j_server: Neo4jTarget
) -> None:
    routed = _routed(settings, neo4j_server)
    with KnowledgeGraph(routed) as graph:
        summary = graph.ingest(EXAMPLE, graph="metadata")
        assert summary.documents_new == 14
        chain = graph.driver.execute_query_bookmark_manager
        written = chain.get_bookmarks()
        assert written, "the ingest's writes left no bookmark"
        found = graph.search("Who owns AuthService?", mode="text", limit=5)
        assert found.chunks, "a search right after the ingest must see it"
        # reads wait for the writes' chain and add nothing to it
        assert chain.get_bookmarks() == written
        # the reads waited on the writes' chain: the reader's guard holds the write driver's
        reader = graph._reader
        assert reader is not None
        assert reader.service.guard.bookmarks is chain  # type: ignore[attr-defined]


def test_async_graph_reads_its_own_writes_through_routing(
    clean_graph: Driver, settings: Settings, neo4j_server: Neo4jTarget
) -> None:
    routed = _routed(settings, neo4j_server)

    async def main() -> tuple[int, int, bool]:
        async with AsyncKnowledgeGraph(routed) as graph:
            summary = await graph.ingest(EXAMPLE, graph="metadata")
            found = await graph.search("Who owns AuthService?", mode="hybrid", limit=5)
            assert graph._sync is not None
            chain = graph._sync.execute_query_bookmark_manager
            shared = graph.service.guard.bookmarks is chain  # type: ignore[attr-defined]
            return summary.documents_new, len(found.chunks), shared

    new, chunks, shared = asyncio.run(main())
    assert new == 14
    assert chunks > 0
    assert shared


def test_guarded_reads_refuse_writes_on_a_routed_read(
    clean_graph: Driver, settings: Settings, neo4j_server: Neo4jTarget
) -> None:
    """What READ routing means on a cluster: a write sent in a READ session fails (here the
    one server refuses it; on a cluster it would reach a secondary, which cannot write)."""
    routed = _routed(settings, neo4j_server)

    async def main() -> None:
        async with AsyncKnowledgeGraph(routed) as graph:
            guard = graph.service.guard  # type: ignore[attr-defined]
            await guard._read("probe", "CREATE (:RoutingProbe) RETURN 1 AS one", {}, 1)

    with pytest.raises(StoreError, match="probe"):
        asyncio.run(main())
    records, _, _ = clean_graph.execute_query("MATCH (n:RoutingProbe) RETURN count(n) AS n")
    assert records[0]["n"] == 0


def test_every_read_carries_the_write_chain_to_the_server(
    clean_graph: Driver, settings: Settings, neo4j_server: Neo4jTarget
) -> None:
    """The server sees the write chain on each read: a bookmark it cannot parse, put in the
    chain, fails the next search with the server's own refusal; replaced by a real write's
    bookmark, the same search runs (after that write)."""
    routed = _routed(settings, neo4j_server)
    bad = "FB:kg-test-not-a-bookmark"
    with clean_graph.session(database=settings.neo4j.database) as session:
        session.run("CREATE (:RoutingProbe)").consume()
        written = session.last_bookmarks().raw_values

    async def main() -> None:
        async with AsyncKnowledgeGraph(routed) as graph:
            assert graph._sync is not None
            chain = graph._sync.execute_query_bookmark_manager
            chain.update_bookmarks((), (bad,))
            with pytest.raises(StoreError, match="InvalidBookmark"):
                await graph.search("Who owns AuthService?", mode="text")
            chain.update_bookmarks((bad,), written)
            await graph.search("Who owns AuthService?", mode="text")
            assert chain.get_bookmarks() == set(written)

    asyncio.run(main())
