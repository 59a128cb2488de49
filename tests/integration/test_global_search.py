"""Global search and the router on the example corpus, offline and with the scripted LLM."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg.client import AsyncKnowledgeGraph
from kg.communities.build import build_communities
from kg.ingest import ingest
from kg.search.global_models import GlobalSearchResponse, RoutedRequest
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
QUESTION = "What are the main parts of the platform and who owns them?"


@pytest.fixture(scope="module")
def example(driver: Driver, settings: Settings) -> Iterator[Driver]:
    """The example, ingested and clustered once for the module (wiped before and after)."""
    from tests.conftest import _wipe

    _wipe(driver, settings.neo4j.database)
    ingest(settings, driver, EXAMPLE, triplets=TRIPLETS)
    build_communities(settings, driver)
    yield driver
    _wipe(driver, settings.neo4j.database)


def _routed(settings: Settings, **body: Any) -> Any:
    async def run() -> Any:
        async with AsyncKnowledgeGraph(settings) as graph:
            return await graph.routed_search(RoutedRequest.model_validate(body))

    return asyncio.run(run())


def _ids(driver: Driver) -> set[str]:
    records, _, _ = driver.execute_query(
        "MATCH (c:Chunk) RETURN c.id AS id UNION MATCH ()-[r]->() WHERE r.key IS NOT NULL "
        "RETURN r.key AS id UNION MATCH (c:Community) RETURN c.id AS id"
    )
    return {r["id"] for r in records}


def test_the_cli_routes_a_corpus_question_to_global_with_cited_context(
    example: Driver, settings: Settings
) -> None:
    env = cli_env(settings)
    built = subprocess.run(
        [sys.executable, "-m", "cli.main", "communities", "build", "--json"],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=REPO,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["communities"] > 0
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", QUESTION, "--json"],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["requested"] == "auto"
    assert body["mode"] == "global", body["reason"]
    assert "main" in body["reason"]
    reports = body["global_search"]["reports"]
    assert reports
    known = _ids(example)
    cited = [c for r in reports for f in r["findings"] for c in f["citations"]]
    assert cited
    assert set(cited) <= known
    # The human-readable output says which mode ran and why.
    text = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", QUESTION],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=REPO,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "mode: global" in text.stdout


def test_auto_sends_entity_questions_to_hybrid(example: Driver, settings: Settings) -> None:
    # Round 3 (issue 25): named entities seed hybrid's graph signal; text hits are kept.
    response = _routed(settings, query="Who owns AuthService?")
    assert response.mode == "hybrid"
    assert "AuthService" in response.linked
    assert response.local is not None
    assert response.local.entities
    passage = _routed(settings, query="How long are refresh tokens valid?")
    assert passage.mode == "hybrid"
    assert passage.local is not None
    how_to = _routed(settings, query="How do I see all the main services?")  # global cues
    assert how_to.mode == "hybrid", how_to.reason
    explicit = _routed(settings, query="anything at all", mode="global", limit=3)
    assert explicit.reason == "requested"
    assert explicit.global_search is not None
    assert len(explicit.global_search.reports) <= 3


def test_rest_global_and_routed_search(example: Driver, settings: Settings) -> None:
    app = create_app(
        api_settings(settings, require_auth=False), service_factory=verified_once_factory
    )
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        resp = http.post("/search/global", json={"query": QUESTION, "limit": 3})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["mode"] == "global", body["reason"]
        assert 0 < len(body["reports"]) <= 3
        routed = http.post("/search", json={"query": QUESTION})
        assert routed.status_code == 200, routed.text
        assert routed.json()["mode"] == "global"
        bad = http.post("/search/global", json={"query": QUESTION, "level": 99})
        assert bad.status_code == 422


def _material_ids(request: dict[str, Any]) -> list[str]:
    text = "\n".join(str(m.get("content") or "") for m in request["messages"])
    material = text.split("<material>")[-1]
    return re.findall(r"\[([^\]]+)\]", material)


def _llm(settings: Settings, llm: ScriptedLLM, **communities: Any) -> Settings:
    return settings.model_copy(
        update={
            "llm": settings.llm.model_copy(
                update={"base_url": llm.base_url, "model": "scripted", "max_retries": 2}
            ),
            "communities": settings.communities.model_copy(
                update={"global_answer": "llm", **communities}
            ),
        }
    )


def test_map_reduce_reasks_an_invented_citation_and_cites_the_points(
    example: Driver, settings: Settings
) -> None:
    state = {"invented": False}

    def respond(request: dict[str, Any]) -> Reply:
        system = str(request["messages"][0]["content"])
        first = [x.split(", ")[0] for x in _material_ids(request)]
        if "batch of community reports" in system:
            if not state["invented"]:
                state["invented"] = True
                return Reply(payload={"points": [{"description": "x", "score": 50,
                                                  "citations": ["invented-id"]}]})  # fmt: skip
            return Reply(payload={"points": [{"description": "Teams own services", "score": 80,
                                              "citations": first[:2]}]})  # fmt: skip
        return Reply(payload={"answer": "The platform has parts owned by teams.",
                              "citations": first[:1]})  # fmt: skip

    with ScriptedLLM(responder=respond) as llm:
        configured = _llm(settings, llm, global_batch=5)
        response = _routed(configured, query=QUESTION, mode="global", limit=10)
        found: GlobalSearchResponse = response.global_search
        assert found.answer == "The platform has parts owned by teams."
        batches = -(-len(found.reports) // 5)
        assert found.llm_calls == batches + 1 + 1  # maps, one re-ask, the reduce
        assert llm.calls == found.llm_calls
        assert found.citations
        assert set(found.citations) <= {c for p in found.points for c in p.citations}
        assert "invented-id" not in {c for p in found.points for c in p.citations}
        assert not found.stopped_by_budget


def test_the_per_request_budget_stops_global_search(example: Driver, settings: Settings) -> None:
    def respond(request: dict[str, Any]) -> Reply:
        first = [x.split(", ")[0] for x in _material_ids(request)]
        return Reply(payload={"points": [{"description": "p", "score": 10,
                                          "citations": first[:1]}]})  # fmt: skip

    with ScriptedLLM(responder=respond) as llm:
        configured = _llm(settings, llm, global_batch=2, global_max_calls=1)
        response = _routed(configured, query=QUESTION, mode="global", limit=10)
        found = response.global_search
        assert found.stopped_by_budget
        assert llm.calls == 1  # one map; no call left for the other batches or the reduce
        assert found.llm_calls == 1
        assert found.answer is None
        assert found.reports


def test_the_optional_llm_classifier_decides_and_the_rules_are_the_fallback(
    example: Driver, settings: Settings
) -> None:
    question = "How long are refresh tokens valid?"  # the rules say hybrid

    def configured(llm: ScriptedLLM) -> Settings:
        return settings.model_copy(
            update={
                "llm": settings.llm.model_copy(update={"base_url": llm.base_url}),
                "communities": settings.communities.model_copy(update={"router_llm": True}),
            }
        )

    choice = {"mode": "global", "reason": "asks for the big picture"}
    with ScriptedLLM(responder=lambda r: Reply(payload=choice)) as llm:
        response = _routed(configured(llm), query=question)
        assert response.mode == "global"
        assert response.reason == "LLM classifier: asks for the big picture"
        assert llm.calls == 1
    with ScriptedLLM(responder=lambda r: Reply(status=500)) as llm:
        response = _routed(configured(llm), query=question)
        assert response.mode == "hybrid"
        assert llm.calls >= 1
    # A how-to question stays on hybrid: the classifier is not asked.
    with ScriptedLLM(responder=lambda r: Reply(payload=choice)) as llm:
        response = _routed(configured(llm), query="How do I rotate the OAuth signing keys?")
        assert response.mode == "hybrid"
        assert llm.calls == 0
