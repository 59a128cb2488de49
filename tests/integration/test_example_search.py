"""What a user does: ingest the bundled example, then ask a question that needs two hops."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from neo4j import Driver

from kg.graph.driver import open_async_driver
from kg.ingest import ingest
from kg.resolve import make_embedder
from kg.search.global_models import RoutedResponse
from kg.search.models import SearchRequest, SearchResponse
from kg.search.service import SearchService
from kg.settings import Settings
from tests.clienv import cli_env

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


async def _search(settings: Settings, request: SearchRequest) -> SearchResponse:
    driver = open_async_driver(settings.neo4j)
    try:
        service = SearchService(driver, settings, make_embedder(settings.resolve))
        return await service.local_search(request)
    finally:
        await driver.close()


def test_two_hop_question_on_the_example_returns_the_chain_and_its_sources(
    clean_graph: Driver, settings: Settings
) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    # Which database does checkout's data end up in? Checkout Web -CALLS-> Payments API
    # -STORES_DATA_IN-> PostgreSQL 16: two hops, stated in different documents.
    rels = ["CALLS", "STORES_DATA_IN"]
    request = SearchRequest(query="Checkout Web", depth=2, limit=50, relation_types=rels)
    response = asyncio.run(_search(settings, request))
    names = {e.name: e.hops for e in response.entities}
    assert names.get("Checkout Web") == 0
    assert names.get("Payments API") == 1
    assert names.get("PostgreSQL 16") == 2
    hops = {(r.source_name, r.type, r.target_name): r.hops for r in response.relations}
    assert hops.get(("Checkout Web", "CALLS", "Payments API")) == 1
    assert hops.get(("Payments API", "STORES_DATA_IN", "PostgreSQL 16")) == 2
    assert {r.type for r in response.relations} <= set(rels)
    # The chunks that state those facts come back with their documents.
    supporting = {c.document_path for c in response.chunks}
    assert "architecture-overview.md" in supporting
    assert supporting & {"services/payments-api.md", "plans/payments-postgres16-migration.md"}
    assert all(c.document_id and c.text for c in response.chunks)
    # At depth 1 the second hop is out of reach.
    shallow = asyncio.run(
        _search(
            settings, SearchRequest(query="Checkout Web", depth=1, limit=50, relation_types=rels)
        )
    )
    assert "PostgreSQL 16" not in {e.name for e in shallow.entities}


def test_as_of_sees_the_owner_of_that_time(clean_graph: Driver, settings: Settings) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)

    def owners(as_of: str) -> set[str]:
        req = SearchRequest.model_validate(
            {"query": "AuthService", "depth": 1, "limit": 50, "as_of": as_of,
             "relation_types": ["OWNED_BY"]}
        )  # fmt: skip
        res = asyncio.run(_search(settings, req))
        return {r.target_name for r in res.relations if r.source_name == "AuthService"}

    assert owners("2023-06-01") == {"Team Identity"}
    assert owners("2024-06-01") == {"Team Platform Security"}


def test_cli_search_json_is_the_rest_body(clean_graph: Driver, settings: Settings) -> None:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    env = cli_env(settings)
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", "Checkout Web", "--depth", "2", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    routed = RoutedResponse.model_validate(json.loads(proc.stdout))  # POST /search's body
    assert routed.requested == "auto"
    assert routed.reason
    assert routed.local is not None, routed.mode  # a question naming an entity stays local
    assert "AuthService" in {e.name for e in routed.local.entities}
    bad = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", "Checkout Web", "--depth", "4"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "depth" in bad.stderr
