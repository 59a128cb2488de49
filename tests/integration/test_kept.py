"""What local search keeps per process (kg/search/kept.py), against a real Neo4j: read page by
page through the guard, read again when the graph's counts move, and not read again while a
graph found too large only grows."""

from __future__ import annotations

from typing import Any

import pytest
from neo4j import Driver

from kg.cypher.params import ChunkPageParams
from kg.search.chunk_vectors import ChunkMatrix, build
from kg.search.kept import Kept
from kg.search.service import SearchService
from kg.settings import Settings
from tests.graphdata import CHUNKS, record_reads, tuned, with_service, write_test_graph


@pytest.fixture
def graph(clean_graph: Driver, settings: Settings) -> Driver:
    write_test_graph(clean_graph, settings)
    return clean_graph


def _kept(service: SearchService, most: int) -> Kept[ChunkMatrix]:
    dim = service.settings.chunks.embedding_dim
    return Kept(
        service.guard,
        "chunk_page",
        lambda after, limit: ChunkPageParams.model_construct(after=after, limit=limit),
        lambda rows: build(rows, dim),
        page_size=2,
        most=most,
    )


def _pages(reads: list[tuple[str, Any]]) -> int:
    return sum(name == "chunk_page" for name, _ in reads)


def test_every_chunk_is_read_page_by_page(graph: Driver, settings: Settings) -> None:
    async def run(service: SearchService) -> tuple[ChunkMatrix | None, int]:
        kept = _kept(service, 100)
        stamp = await service.context.names.counts()
        reads = record_reads(service)
        first = await kept.for_stamp(stamp)
        assert await kept.for_stamp(stamp) is first  # same counts: nothing read
        return first, _pages(reads)

    matrix, pages = with_service(settings, run)
    assert matrix is not None
    assert sorted(matrix.ids) == sorted(c[0] for c in CHUNKS)
    assert pages == len(CHUNKS) // 2 + 1
    # each chunk's document, for hybrid's document evidence (kg.search.fusion)
    assert dict(matrix.document_of) == {c[0]: c[1] for c in CHUNKS}


def test_a_graph_too_large_to_keep_is_not_read_again_while_it_grows(
    graph: Driver, settings: Settings
) -> None:
    db = settings.neo4j.database
    grow = (
        "MATCH (d:Document {id: 'doc-pay'}) "
        "CREATE (:Chunk {id: 'c-pay-8', index: 8, text: 'More.', sha256: 'c-pay-8'})"
        "-[:PART_OF]->(d)"
    )

    async def run(service: SearchService) -> list[int]:
        kept = _kept(service, 3)
        reads = record_reads(service)
        pages = []
        assert await kept.for_stamp(await service.context.names.counts()) is None
        pages.append(_pages(reads))
        graph.execute_query(grow, database_=db)
        assert await kept.for_stamp(await service.context.names.counts()) is None
        pages.append(_pages(reads))
        graph.execute_query("MATCH (c:Chunk) WHERE c.id IN ['c-pay-8', 'c-pay-1'] "
                            "DETACH DELETE c", database_=db)  # fmt: skip
        assert await kept.for_stamp(await service.context.names.counts()) is None
        pages.append(_pages(reads))
        return pages

    # the counts read at every call (another driver writes between them)
    first, grown, shrunk = with_service(tuned(settings, counts_ttl_s=0), run)
    assert first == 2  # two pages of 2 rows: past 3, given up
    assert grown == first  # the graph only grew: not read again
    assert shrunk > grown  # a count went down: read again
