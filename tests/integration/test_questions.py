"""POST /answer and POST /query over real HTTP, on the bundled example corpus.

The LLM is the scripted OpenAI-compatible HTTP server of tests/fakellm.py (the one stand-in
the tests allow), reached through the real openai and instructor clients; Neo4j is real.
"""

from __future__ import annotations

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
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"

OWNED_IN_2023 = {
    "choice": {
        "template": "relations_valid_at",
        "entity": "AuthService",
        "as_of": "2023-06-30",
        "relation_types": ["OWNED_BY"],
    }
}


def _llm_settings(settings: Settings, llm: ScriptedLLM) -> Settings:
    answer = settings.answer.model_validate(
        {"base_url": llm.base_url, "api_key": "test", "model": "scripted", "max_calls": 3}
    )
    return api_settings(settings, require_auth=False).model_copy(update={"answer": answer})


@pytest.fixture(scope="module")
def corpus(driver: Driver, settings: Settings) -> Iterator[Driver]:
    """The bundled example, ingested once for the module (triplets: no LLM) and wiped after."""
    from tests.conftest import ingested_example

    yield from ingested_example(driver, settings)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def scripted(llm: ScriptedLLM) -> Iterator[ScriptedLLM]:
    llm.reset()
    llm.responder = None
    yield llm
    llm.reset()
    llm.responder = None


@pytest.fixture(scope="module")
def client(corpus: Driver, settings: Settings, llm: ScriptedLLM) -> Iterator[httpx.Client]:
    app = create_app(_llm_settings(settings, llm), service_factory=verified_once_factory)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


def _counts(driver: Driver, database: str) -> tuple[int, int, list[Any]]:
    records, _, _ = driver.execute_query(
        "MATCH (n) WITH count(n) AS nodes "
        "OPTIONAL MATCH ()-[r]->() WITH nodes, count(r) AS rels "
        "OPTIONAL MATCH (e:Entity) WITH nodes, rels, e ORDER BY e.id "
        "RETURN nodes, rels, collect(e.name) AS names",
        database_=database,
    )
    row = records[0]
    return row["nodes"], row["rels"], row["names"]


def _tool_schema(request: dict[str, Any]) -> str:
    return json.dumps(request.get("tools") or request.get("response_format") or {})


def _prompt(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


# -- /query -----------------------------------------------------------------------------------


def test_query_picks_the_as_of_template_and_returns_the_2023_owner(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    scripted.script(Reply(payload=OWNED_IN_2023))
    resp = client.post("/query", json={"question": "Who owned AuthService in 2023?"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["template"] == "relations_valid_at"
    assert body["choice"]["entity"] == "AuthService"
    [linked] = body["entities"]
    assert linked["name"] == "AuthService"
    assert body["parameters"]["entity_id"] == linked["id"]
    assert body["parameters"]["as_of"].startswith("2023-06-30")
    assert body["parameters"]["relation_types"] == ["OWNED_BY"]
    owners = {r["target_name"] for r in body["result"]["rows"] if r["source"] == linked["id"]}
    assert owners == {"Team Identity"}
    assert body["usage"]["calls"] == 1
    assert body["usage"]["prompt_tokens"] > 0
    # The LLM was offered the user-facing templates only, and the graph's predicates.
    [request] = scripted.requests
    offered = _tool_schema(request)
    assert "relations_valid_at" in offered
    assert "paths_between" in offered
    for internal in ("entity_seeds", "chunks_by_vector", "evidence_chunks", "seed_expansion"):
        assert internal not in offered
    assert "embedding" not in offered
    assert "OWNED_BY" in _prompt(request)
    # The returned parameters rerun the same template directly, with the same rows.
    rerun = client.post("/templates/relations_valid_at", json=body["parameters"])
    assert rerun.status_code == 200, rerun.text
    assert rerun.json()["rows"] == body["result"]["rows"]
    # And in 2024 the same question has the new owner.
    later = {**OWNED_IN_2023["choice"], "as_of": "2024-06-30"}
    scripted.script(Reply(payload={"choice": later}))
    resp = client.post("/query", json={"question": "Who owned AuthService in mid 2024?"})
    rows = resp.json()["result"]["rows"]
    assert {r["target_name"] for r in rows if r["source"] == linked["id"]} == {
        "Team Platform Security"
    }


def test_query_with_bad_parameters_is_reasked_then_422(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    bad = {
        "choice": {
            "template": "paths_between",
            "source": "Checkout Web",
            "target": "PostgreSQL",
            "depth": 9,
        }
    }
    scripted.script(*[Reply(payload=bad)] * 3)
    resp = client.post("/query", json={"question": "How is Checkout Web tied to PostgreSQL?"})
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert [e["field"] for e in body["errors"]] == ["depth"]
    assert scripted.calls == 3  # the first answer and two re-asks: the request's budget
    assert "less than or equal to 3" in _prompt(scripted.requests[-1])


def test_query_that_fits_no_template_is_422_with_the_template_list(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    scripted.script(Reply(payload={"choice": {"template": "none", "reason": "a haiku request"}}))
    resp = client.post("/query", json={"question": "Write a haiku about Kafka"})
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    for name in ("relations_valid_at", "entity_neighborhood", "paths_between"):
        assert name in detail
    assert resp.json()["errors"][0]["field"] == "question"


def test_cypher_smuggled_through_parameters_is_inert(
    client: httpx.Client, scripted: ScriptedLLM, corpus: Driver, settings: Settings
) -> None:
    before = _counts(corpus, settings.neo4j.database)
    injected_name = {
        "choice": {
            "template": "entity_neighborhood",
            "entity": "AuthService'}) DETACH DELETE e //",
            "depth": 1,
        }
    }
    scripted.script(Reply(payload=injected_name))
    resp = client.post("/query", json={"question": "Neighbours of AuthService"})
    assert resp.status_code in (200, 422), resp.text
    bad_type = {
        "choice": {
            "template": "relations_valid_at",
            "entity": "AuthService",
            "as_of": "2023-06-30",
            "relation_types": ["OWNED_BY]->() DETACH DELETE n //"],
        }
    }
    scripted.script(*[Reply(payload=bad_type)] * 3)
    resp = client.post("/query", json={"question": "Who owned AuthService in 2023?"})
    assert resp.status_code == 422, resp.text
    assert resp.json()["errors"][0]["field"].startswith("relation_types")
    lucene = {"choice": {"template": "entity_by_id", "entity": "*:* OR name:*"}}
    scripted.script(Reply(payload=lucene))
    resp = client.post("/query", json={"question": "What is everything?"})
    assert resp.status_code == 422, resp.text
    assert _counts(corpus, settings.neo4j.database) == before


# -- /answer ----------------------------------------------------------------------------------


def _user(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    return "\n".join(str(m.get("content") or "") for m in users)


def _first_chunk(request: dict[str, Any]) -> str:
    found = re.search(r"\[chunk (\S+)\]", _user(request))
    assert found, "the prompt lists no chunk"
    return found.group(1)


def _cite_first_chunk(request: dict[str, Any]) -> Reply:
    return Reply(
        payload={
            "insufficient_context": False,
            "answer": "Team Platform Security owns AuthService since 2024-03-01.",
            "citations": [{"chunk_id": _first_chunk(request)}],
            "confidence": 0.8,
        }
    )


def test_answer_cites_the_context_it_was_given(client: httpx.Client, scripted: ScriptedLLM) -> None:
    scripted.responder = _cite_first_chunk
    resp = client.post("/answer", json={"question": "Who owns AuthService?"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["insufficient_context"] is False
    assert body["mode"] == "hybrid"
    context_chunks = {c["id"] for c in body["context"]["chunks"]}
    assert body["citations"]
    assert all(c["chunk_id"] in context_chunks for c in body["citations"])
    assert body["usage"]["calls"] == 1
    assert body["usage"]["prompt_tokens"] > 0
    # Relations are in the context under their stable ids.
    for rel in body["context"]["relations"]:
        ends = f"{rel['source']}|{rel['type']}|{rel['target']}"
        assert rel["id"] == f"{ends}|{rel['valid_from'] or ''}"
    # The system prompt makes "not in the context" acceptable.
    assert "insufficient_context" in _prompt(scripted.requests[0])


def test_auto_answers_ask_the_router_as_search_does(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    """``auto`` means the router in answers too: as_of sends the question to graph search, a
    whole-corpus question runs hybrid (answers cite passages, not community reports)."""
    scripted.responder = _cite_first_chunk
    dated = {"question": "Who owns AuthService?", "as_of": "2023-06-30"}
    resp = client.post("/answer", json=dated)
    assert resp.status_code == 200, resp.text
    assert resp.json()["mode"] == "graph"
    resp = client.post("/answer", json={"question": "What are the main risks overall?"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["mode"] == "hybrid"


def test_an_invented_citation_is_reasked(client: httpx.Client, scripted: ScriptedLLM) -> None:
    invented = {
        "insufficient_context": False,
        "answer": "Team Identity.",
        "citations": [{"chunk_id": "chk_invented000000"}],
        "confidence": 0.9,
    }
    scripted.script(Reply(payload=invented))
    scripted.responder = _cite_first_chunk
    resp = client.post("/answer", json={"question": "Who owns AuthService?"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["usage"]["calls"] == 2
    assert body["citations"][0]["chunk_id"] != "chk_invented000000"
    assert "not in the context" in _prompt(scripted.requests[-1])


def test_a_misquote_is_reasked_and_relations_are_citable(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    def reply(request: dict[str, Any]) -> Reply:
        if scripted.calls == 1:  # a real chunk, but a quote it does not contain
            cite = {"chunk_id": _first_chunk(request), "quote": "words nobody wrote"}
        else:
            found = re.search(r"\[relation (\S+)\]", _user(request))
            assert found
            cite = {"relation_id": found.group(1)}
        return Reply(
            payload={
                "insufficient_context": False,
                "answer": "See the cited fact.",
                "citations": [cite],
                "confidence": 0.7,
            }
        )

    scripted.responder = reply
    resp = client.post("/answer", json={"question": "Who owns AuthService?", "mode": "graph"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["usage"]["calls"] == 2
    assert "quote is not in" in _prompt(scripted.requests[-1])
    ids = {r["id"] for r in body["context"]["relations"]}
    assert body["citations"][0]["relation_id"] in ids
    assert body["mode"] == "graph"


def test_insufficient_context_is_said_not_guessed(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    scripted.script(
        Reply(
            payload={
                "insufficient_context": True,
                "answer": "The context does not say.",
                "citations": [],
                "confidence": 0.0,
            }
        )
    )
    question = {"question": "What is the CEO's favourite colour?", "mode": "text"}
    resp = client.post("/answer", json=question)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["insufficient_context"] is True
    assert body["citations"] == []
    assert body["confidence"] == 0.0
    assert body["mode"] == "text"


def test_an_answer_that_never_validates_stops_at_the_budget(
    client: httpx.Client, scripted: ScriptedLLM
) -> None:
    scripted.responder = lambda _: Reply(
        payload={
            "insufficient_context": False,
            "answer": "Guess.",
            "citations": [],
            "confidence": 1.0,
        }
    )
    resp = client.post("/answer", json={"question": "Who owns AuthService?"})
    assert resp.status_code == 502, resp.text
    assert resp.json()["error"] == "llm_failed"
    assert scripted.calls == 3


def test_kg_query_on_the_example_returns_the_2023_owner(
    corpus: Driver, settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.script(Reply(payload=OWNED_IN_2023))
    env = cli_env(settings, KG_EXTRACT__BASE_URL=scripted.base_url, KG_EXTRACT__MODEL="m")
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "query", "Who owned AuthService in 2023?", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["template"] == "relations_valid_at"
    assert {r["target_name"] for r in body["result"]["rows"]} == {"Team Identity"}


def test_kg_ask_prints_the_answer_and_its_sources(
    corpus: Driver, settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.responder = _cite_first_chunk
    env = cli_env(settings, KG_EXTRACT__BASE_URL=scripted.base_url, KG_EXTRACT__MODEL="m")
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", "Who owns AuthService?", "--mode", "graph"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Team Platform Security owns AuthService" in done.stdout
    assert "[1] " in done.stdout  # the cited source, by document
    assert "1 LLM call(s)" in done.stdout
    invalid = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", "Who?", "--depth", "7"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert invalid.returncode == 2
    assert "--depth" in invalid.stderr
