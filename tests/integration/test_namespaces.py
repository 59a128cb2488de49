"""Namespaces (issue 28) against the real server: scope, scoped keys, forget, listing, migrate.

Two namespaces share two entities (AuthService, PostgreSQL) and one fact (AuthService
DEPENDS_ON PostgreSQL). Everything ``beta`` contributed carries the marker ``zephyr`` (or is
the document ``vault.md``): an ``alpha`` caller must never see it, through the library, every
REST endpoint, every MCP tool and every template, whatever the body asks. One alias of beta's
has no marker ("Gateway Edge" of AuthService): it must not even match for alpha. The LLM is the
scripted OpenAI-compatible server of tests/fakellm.py, the one stand-in the tests allow.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, LiteralString

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from neo4j import Driver

from api.app import create_app
from kg import KnowledgeGraph, NotFoundError, ScopeDenied, bound_namespaces, scope
from kg.cypher import REGISTRY
from kg.graph.meta import MODEL_VERSION, read_model, stamp
from kg.search.models import SearchRequest
from kg.search.service import SearchService
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, free_port, verified_once_factory
from tests.clienv import cli_env
from tests.conftest import _wipe
from tests.fakellm import Reply, ScriptedLLM
from tests.graphdata import record_reads, with_service
from tests.graphsnap import _clean
from tests.mcpserver import mcp_http_server

REPO = Path(__file__).resolve().parents[2]
ALPHA_KEY = "alpha-key-5b1d9e"
BETA_KEY = "beta-key-0c7f21"
ADMIN_KEY = "admin-key-e93a44"
MARKERS = ("zephyr", "vault")  # what only beta's text holds, casefolded
# Aimed at beta's text ("secrets") without naming it: responses that echo the question stay
# free of the markers unless beta's data leaks.
QUESTION = "Which secrets does AuthService read, and what is stored in PostgreSQL?"

ALPHA_DOCS = {
    "auth.md": "# Auth\n\nAuthService keeps its sessions in PostgreSQL.\n",
    "ledger.md": "# Ledger\n\nLedger writes its journal to PostgreSQL.\n",
}
BETA_DOCS = {
    "vault.md": "# Vault\n\nZephyrvault stores zephyr secrets in PostgreSQL, and AuthService "
    "reads them from Zephyrvault.\n",
}


def _entity(name: str, kind: str, description: str = "", aliases: tuple[str, ...] = ()) -> Any:
    return {"name": name, "type": kind, "description": description, "aliases": list(aliases)}


def _extraction(chunk: str) -> dict[str, Any]:
    """What the scripted LLM extracts from a chunk: beta's chunk (it names Zephyrvault) gives
    the shared entities its own aliases and descriptions, all marked ``zephyr``."""
    beta = "Zephyrvault" in chunk
    entities, relations = [], []
    if "AuthService" in chunk:
        entities.append(
            _entity("AuthService", "Service", "zephyr auth", ("ZephyrAuth", "Gateway Edge"))
            if beta
            else _entity("AuthService", "Service")
        )
    if "PostgreSQL" in chunk:
        entities.append(
            _entity("PostgreSQL", "Database", "zephyr store", ("PGZephyr",))
            if beta
            else _entity("PostgreSQL", "Database", "the relational database", ("Postgres",))
        )
    if "Ledger" in chunk:
        entities.append(_entity("Ledger", "Service", "the journal"))
        relations.append(("Ledger", "USES", "PostgreSQL", "journal storage"))
    if beta:
        entities.append(_entity("Zephyrvault", "Service", "zephyr secrets"))
        relations += [
            ("Zephyrvault", "USES", "PostgreSQL", "zephyr storage"),
            ("AuthService", "CALLS", "Zephyrvault", "zephyr reads"),
            ("AuthService", "DEPENDS_ON", "PostgreSQL", "zephyr dependency"),
        ]
    elif "AuthService" in chunk:
        relations.append(("AuthService", "DEPENDS_ON", "PostgreSQL", ""))
    return {
        "entities": entities,
        "relations": [
            {"source": s, "target": t, "predicate": p, "description": d, "weight": 0.9}
            for s, p, t, d in relations
        ],
    }


def responder(request: dict[str, Any]) -> Reply:
    schema = json.dumps(request.get("tools") or request.get("response_format") or {})
    user = "\n".join(
        str(m.get("content") or "") for m in request["messages"] if m["role"] == "user"
    )
    if '"choice"' in schema:  # /query: the hostile one names beta's entity
        asked = user.casefold()
        entity = (
            "Zephyrvault"
            if "secret store" in asked
            else "Gateway Edge"  # beta's alias of AuthService: no marker in it
            if "edge gateway" in asked
            else "AuthService"
        )
        return Reply(payload={"choice": {"template": "entity_sources", "entity": entity}})
    if "insufficient_context" in schema:  # /answer: cite the first chunk offered
        found = re.search(r"\[chunk (\S+)\]", user)
        if found is None:
            return Reply(payload={"insufficient_context": True, "answer": "", "citations": []})
        return Reply(
            payload={
                "insufficient_context": False,
                "answer": "It uses PostgreSQL.",
                "citations": [{"chunk_id": found.group(1)}],
                "confidence": 0.8,
            }
        )
    chunk = str(request["messages"][-1].get("content") or "")
    return Reply(payload=_extraction(chunk))


def _folder(root: Path, docs: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def fingerprint(driver: Driver, namespace: str) -> tuple[frozenset[Any], frozenset[Any]]:
    """The namespace's own graph: its documents, chunks, entities and facts (nodes), the
    relations, mentions, PART_OF, NEXT and ABOUT links among them, without timestamps."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n) WHERE (n:Document AND n.source = $ns) OR (n:Chunk AND n.namespace = $ns)"
        " OR ((n:Entity OR n:Fact) AND $ns IN n.namespaces)"
        " RETURN labels(n) AS labels, properties(n) AS props",
        ns=namespace,
    )
    rels, _, _ = driver.execute_query(
        "MATCH (a)-[r]->(b) WHERE ($ns IN coalesce(r.namespaces, []))"
        " OR (a:Chunk AND a.namespace = $ns) OR (a:Fact AND $ns IN a.namespaces)"
        " RETURN type(r) AS type, a.id AS a, b.id AS b, properties(r) AS props",
        ns=namespace,
    )
    return (
        frozenset((tuple(sorted(r["labels"])), _clean(r["props"])) for r in nodes),
        frozenset((r["type"], r["a"], r["b"], _clean(r["props"])) for r in rels),
    )


class Corpus:
    def __init__(self, settings: Settings, llm: ScriptedLLM, alpha_alone: Any) -> None:
        self.settings = settings
        self.llm = llm
        self.alpha_alone = alpha_alone

    def ids(self, driver: Driver) -> dict[str, str]:
        records, _, _ = driver.execute_query("MATCH (e:Entity) RETURN e.name AS n, e.id AS id")
        return {r["n"]: r["id"] for r in records}

    def chunk_ids(self, driver: Driver) -> list[str]:
        """Every chunk, alpha's and beta's."""
        records, _, _ = driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id ORDER BY id")
        return [str(r["id"]) for r in records]


@pytest.fixture(scope="module")
def corpus(driver: Driver, settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("namespaces")
    _wipe(driver, settings.neo4j.database)
    with ScriptedLLM(responder=responder) as llm:
        own = settings.model_copy(deep=True)
        own.llm.base_url = llm.base_url
        own.extract.cache_path = tmp / "cache.sqlite"
        own.answer = own.answer.model_validate(
            {"base_url": llm.base_url, "api_key": "test", "model": "scripted", "max_calls": 3}
        )
        own.search.query_timeout_s = 60  # a busy shared machine, a cold server
        with KnowledgeGraph(own) as graph:
            graph.ingest(_folder(tmp / "alpha", ALPHA_DOCS), namespace="alpha")
            alone = fingerprint(driver, "alpha")
            graph.ingest(_folder(tmp / "beta", BETA_DOCS), namespace="beta")
            graph.build_communities()
        yield Corpus(own, llm, alone)
    _wipe(driver, settings.neo4j.database)


def _clean_of_beta(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    lowered = text.casefold()
    for marker in MARKERS:
        assert marker not in lowered, f"{marker!r} leaked: {text[:2000]}"
    return text


# -- the data model ------------------------------------------------------------------------------


def test_every_element_carries_its_namespaces(corpus: Corpus, driver: Driver) -> None:
    chunks, _, _ = driver.execute_query(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document) RETURN c.namespace AS ns, d.source AS source"
    )
    assert chunks
    assert all(r["ns"] == r["source"] for r in chunks)
    assert {r["ns"] for r in chunks} == {"alpha", "beta"}
    entities, _, _ = driver.execute_query(
        "MATCH (e:Entity) RETURN e.name AS name, e.namespaces AS ns, e.aliases AS aliases,"
        " e.alias_sources AS sources, e.description_source AS described"
    )
    by_name = {r["name"]: r for r in entities}
    assert sorted(by_name["PostgreSQL"]["ns"]) == ["alpha", "beta"]
    assert by_name["Zephyrvault"]["ns"] == ["beta"]
    assert by_name["Ledger"]["ns"] == ["alpha"]
    aliases = dict(
        zip(by_name["PostgreSQL"]["aliases"], by_name["PostgreSQL"]["sources"], strict=True)
    )
    assert aliases == {"Postgres": "alpha", "PGZephyr": "beta"}
    assert by_name["AuthService"]["described"] == "beta"  # alpha gave it no description
    facts, _, _ = driver.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) MATCH (f:Fact {id: r.key})"
        " RETURN a.name + ' ' + r.predicate + ' ' + b.name AS fact, r.namespaces AS ns,"
        " f.namespaces AS fact_ns"
    )
    found = {r["fact"]: sorted(r["ns"]) for r in facts}
    assert all(sorted(r["fact_ns"]) == sorted(r["ns"]) for r in facts)
    assert found["AuthService DEPENDS_ON PostgreSQL"] == ["alpha", "beta"]
    assert found["Zephyrvault USES PostgreSQL"] == ["beta"]
    assert found["Ledger USES PostgreSQL"] == ["alpha"]
    communities, _, _ = driver.execute_query("MATCH (c:Community) RETURN c.namespaces AS ns")
    assert communities
    assert all(r["ns"] for r in communities)


def test_namespaces_are_listed_with_their_counts(corpus: Corpus) -> None:
    with KnowledgeGraph(corpus.settings) as graph:
        listed = {n.namespace: n for n in graph.namespaces()}
        assert set(listed) == {"alpha", "beta"}
        assert (listed["alpha"].documents, listed["alpha"].chunks) == (2, 2)
        assert (listed["beta"].documents, listed["beta"].chunks) == (1, 1)
        assert listed["beta"].facts == 3
        assert listed["alpha"].facts == 2
        assert [n.namespace for n in graph.namespaces(namespaces=["beta"])] == ["beta"]


# -- the scope, through the library --------------------------------------------------------------


def test_a_scoped_search_sees_nothing_of_the_other_namespace(
    corpus: Corpus, driver: Driver
) -> None:
    ids = corpus.ids(driver)
    question = QUESTION
    with KnowledgeGraph(corpus.settings) as graph:
        for mode in ("text", "vector", "graph", "hybrid"):
            scoped = graph.search(question, mode=mode, namespaces=["alpha"], limit=20)
            _clean_of_beta(scoped.model_dump(mode="json"))
            assert all(c.document_path in ALPHA_DOCS for c in scoped.chunks), mode
            everything = graph.search(question, mode=mode, limit=20)
            assert any(c.document_path == "vault.md" for c in everything.chunks), mode
        graph_hit = graph.search("AuthService", mode="graph", namespaces=["alpha"])
        assert "AuthService" in {e.name for e in graph_hit.entities}
        global_hit = graph.global_search("AuthService PostgreSQL", namespaces=["alpha"])
        _clean_of_beta(global_hit.model_dump(mode="json"))
        entity = graph.entity(ids["PostgreSQL"], namespaces=["alpha"])
        assert entity.aliases == ["Postgres"]
        assert entity.description == "the relational database"
        assert graph.entity(ids["AuthService"], namespaces=["alpha"]).description is None
        assert "ZephyrAuth" in graph.entity(ids["AuthService"]).aliases  # unscoped: all
        with pytest.raises(NotFoundError):
            graph.entity(ids["Zephyrvault"], namespaces=["alpha"])
        hood = graph.neighborhood(ids["AuthService"], 2, namespaces=["alpha"])
        _clean_of_beta(hood.model_dump(mode="json"))
        assert {r.target_name for r in hood.relations} >= {"PostgreSQL"}
        assert all(r.description == "" for r in hood.relations if r.type == "DEPENDS_ON")


def _ranking(response: Any) -> tuple[Any, ...]:
    return (
        [(c.id, round(c.score, 9)) for c in response.chunks],
        [(e.id, round(e.score, 9)) for e in response.entities],
        [(r.source, r.type, r.target, round(r.score, 9)) for r in response.relations],
    )


def test_a_search_scoped_to_every_namespace_ranks_as_an_unscoped_one(corpus: Corpus) -> None:
    """Issue 41: a scope is a filter over what search keeps, not another path. Scoped to all
    the graph's namespaces, every mode returns the unscoped ranking, scores included."""
    with KnowledgeGraph(corpus.settings) as graph:
        for question in (QUESTION, "AuthService", "Where does Ledger write its journal?"):
            for mode in ("text", "vector", "graph", "hybrid"):
                unscoped = graph.search(question, mode=mode, limit=20)
                every = graph.search(question, mode=mode, limit=20, namespaces=["alpha", "beta"])
                assert _ranking(every) == _ranking(unscoped), (question, mode)
                assert unscoped.chunks, (question, mode)


def test_a_scoped_search_makes_no_more_guarded_reads_than_an_unscoped_one(
    corpus: Corpus,
) -> None:
    """Scoped and unscoped, graph, hybrid and vector read through the same kept structures, in
    the same round trips; scoped, only alpha's chunks come back. No mode asks a vector index
    (approximate, asked for more candidates when scoped, it ranked scoped searches apart)."""

    async def run(service: SearchService) -> dict[tuple[str, str], list[str]]:
        reads = record_reads(service)
        ran: dict[tuple[str, str], list[str]] = {}
        for mode in ("graph", "hybrid", "vector"):
            request = SearchRequest(query=QUESTION, mode=mode, limit=20)
            await service.local_search(request)  # the kept structures are read once
            for label, namespaces in (("unscoped", None), ("scoped", ["alpha"])):
                reads.clear()
                with scope.scoped(namespaces):
                    found = await service.local_search(request)
                ran[mode, label] = sorted(name for name, _ in reads)
                if namespaces:
                    _clean_of_beta(found.model_dump(mode="json"))
                    assert found.chunks, mode
                    assert all(c.document_path in ALPHA_DOCS for c in found.chunks), mode
        return ran

    ran = with_service(corpus.settings, run)
    for mode in ("graph", "hybrid", "vector"):
        unscoped, scoped = ran[mode, "unscoped"], ran[mode, "scoped"]
        assert len(scoped) <= len(unscoped), (mode, scoped, unscoped)
        assert scoped == unscoped, mode  # the same templates, each once
        assert not {"passage_hop", "facts_by_vector", "chunks_by_vector"} & set(scoped), scoped


def _hostile_template_calls(
    ids: dict[str, str], dim: int, chunk_ids: list[str]
) -> dict[str, dict[str, Any]]:
    """Every scoped template with parameters aimed at beta's data."""
    vault, auth = ids["Zephyrvault"], ids["AuthService"]
    return {
        "entity_neighborhood": {"entity_id": auth, "depth": 3},
        "seed_expansion": {"entity_ids": [auth, vault], "depth": 3},
        "paths_between": {"source_id": auth, "target_id": vault},
        "entity_sources": {"entity_id": vault},
        "relations_valid_at": {"entity_id": auth, "as_of": "2030-01-01"},
        "entity_by_id": {"entity_id": vault},
        "entity_details": {"entity_ids": [auth, vault, ids["PostgreSQL"]]},
        "entity_seeds": {"text": "Zephyrvault zephyr PostgreSQL AuthService", "k": 50},
        "chunks_by_vector": {"embedding": [1.0] * dim, "k": 50},
        "facts_by_vector": {"embedding": [1.0] * dim, "k": 50},
        "evidence_chunks": {"entity_ids": [auth, vault, ids["PostgreSQL"]]},
        "graph_evidence": {"chunk_ids": chunk_ids, "entity_ids": [auth, vault, ids["PostgreSQL"]]},
        "chunks_by_text": {"text": "zephyr Zephyrvault secrets PostgreSQL"},
        "entity_links": {"phrases": [["zephyrvault"], ["authservice"], ["postgresql"]]},
        "passage_hop": {"entity_ids": [auth, vault, ids["PostgreSQL"]]},
        "relation_types": {},
        "community_reports": {"level": 0, "limit": 500},
        "namespaces": {},
        "name_links": {"phrases": ["Zephyrvault", "AuthService", "PostgreSQL"]},
        "chunks_dated_after": {"chunk_ids": chunk_ids, "as_of": "1900-01-01"},
    }


def test_every_scoped_template_keeps_to_the_scope(corpus: Corpus, driver: Driver) -> None:
    ids = corpus.ids(driver)
    calls = _hostile_template_calls(
        ids, corpus.settings.chunks.embedding_dim, corpus.chunk_ids(driver)
    )
    assert set(calls) == {t.name for t in REGISTRY if t.scoped and not t.whole_graph}
    with KnowledgeGraph(corpus.settings) as graph:
        for name, params in calls.items():
            rows = graph.run_template(name, {**params, "namespaces": ["alpha"]}).rows
            text = _clean_of_beta(rows)
            if name == "relation_types":
                assert {r["type"] for r in rows} == {"DEPENDS_ON", "USES"}, text
            unscoped = graph.run_template(name, params).rows
            if name in {"entity_sources", "entity_by_id", "paths_between"}:
                assert unscoped, name  # beta's data is there, for a caller who may see it


def test_counted_links_keeps_its_links_to_the_scope(corpus: Corpus, driver: Driver) -> None:
    """Local search links a scoped question through counted_links too (one round trip, as
    unscoped): its links keep to the scope; only its first row, the counts that stamp what
    search keeps, is the whole graph's, and a scoped caller never runs it by name."""
    phrases = {"phrases": [["zephyrvault"], ["authservice"], ["postgresql"]]}
    with KnowledgeGraph(corpus.settings) as graph:
        scoped = graph.run_template("counted_links", {**phrases, "namespaces": ["alpha"]}).rows
        everything = graph.run_template("counted_links", phrases).rows
    assert scoped[0]["kind"] == "counts"
    assert scoped[0] == everything[0]
    links = [r for r in scoped if r["kind"] == "link"]
    _clean_of_beta(links)
    assert {r["name"] for r in links} >= {"AuthService", "PostgreSQL"}
    assert "Zephyrvault" in {r["name"] for r in everything if r["kind"] == "link"}
    # beta's alias of AuthService ("Gateway Edge") links for beta and an unscoped caller only
    alias = {"phrases": [["gateway", "edge"]]}
    with KnowledgeGraph(corpus.settings) as graph:
        for namespaces, expected in (
            (["alpha"], set()),
            (["beta"], {"AuthService"}),
            (None, {"AuthService"}),
        ):
            rows = graph.run_template("counted_links", {**alias, "namespaces": namespaces}).rows
            names = {r["name"] for r in rows if r["kind"] == "link"}
            assert names == expected, (namespaces, names)


# -- scoped keys: REST ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(corpus: Corpus) -> Iterator[httpx.Client]:
    keys = json.dumps(
        [
            {"key": ALPHA_KEY, "namespaces": ["alpha"]},
            f"{BETA_KEY}::beta",
            ADMIN_KEY,
        ]
    )
    secured = api_settings(corpus.settings, api_keys=keys)
    with (
        LiveServer(create_app(secured, service_factory=verified_once_factory)) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        yield http


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_scoped_key_reads_nothing_of_another_namespace_over_rest(
    corpus: Corpus, driver: Driver, api: httpx.Client
) -> None:
    ids = corpus.ids(driver)
    alpha = _as(ALPHA_KEY)
    question = QUESTION
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("/search/local", {"query": question, "mode": mode})
        for mode in ("text", "vector", "graph", "hybrid")
    ]
    bodies += [
        ("/search", {"query": question}),
        ("/search", {"query": question, "mode": "global"}),
        ("/search/global", {"query": question}),
        ("/answer", {"question": question, "mode": "hybrid"}),
        ("/query", {"question": "Which chunks mention AuthService?"}),
        ("/query", {"question": "Which chunks mention the secret store?"}),
    ]
    for path, body in bodies:
        resp = api.post(path, json=body, headers=alpha)
        assert resp.status_code in (200, 422), (path, resp.text)
        # The scripted LLM names Zephyrvault for "the secret store": only its own words may
        # come back (the name was not linked, and no closest name of beta's is offered).
        _clean_of_beta(json.loads(resp.text.replace("'Zephyrvault'", "''")))
        # The same body naming beta is refused, naming it; naming alpha is served.
        hostile = api.post(path, json={**body, "namespaces": ["alpha", "beta"]}, headers=alpha)
        assert hostile.status_code == 403, (path, hostile.text)
        assert "'beta'" in hostile.json()["detail"]
        assert hostile.json()["errors"][0]["field"] == "namespaces"
        named = api.post(path, json={**body, "namespaces": ["alpha"]}, headers=alpha)
        assert named.status_code in (200, 422), (path, named.text)
        _clean_of_beta(json.loads(named.text.replace("'Zephyrvault'", "''")))
    # An unscoped key and beta's own key see beta.
    everything = api.post(
        "/search/local", json={"query": question, "mode": "text"}, headers=_as(ADMIN_KEY)
    )
    assert "vault.md" in everything.text
    own = api.post("/search/local", json={"query": question, "mode": "text"}, headers=_as(BETA_KEY))
    assert "vault.md" in own.text
    assert "ledger.md" not in own.text
    # Entities: beta's is not found; a shared one shows alpha's aliases only.
    assert api.get(f"/entities/{ids['Zephyrvault']}", headers=alpha).status_code == 404
    shared = api.get(f"/entities/{ids['PostgreSQL']}", headers=alpha)
    assert shared.status_code == 200
    assert shared.json()["aliases"] == ["Postgres"]
    _clean_of_beta(shared.json())
    refused = api.get(f"/entities/{ids['PostgreSQL']}?namespace=beta", headers=alpha)
    assert refused.status_code == 403
    assert "'beta'" in refused.json()["detail"]
    hood = api.get(f"/entities/{ids['AuthService']}/neighborhood?depth=3", headers=alpha)
    assert hood.status_code == 200
    _clean_of_beta(hood.json())
    assert api.get(f"/entities/{ids['Zephyrvault']}/neighborhood", headers=alpha).status_code == 404
    assert (
        api.get(
            f"/entities/{ids['AuthService']}/neighborhood?namespace=beta", headers=alpha
        ).status_code
        == 403
    )
    # Namespaces: alpha's only.
    listed = api.get("/namespaces", headers=alpha)
    assert [n["namespace"] for n in listed.json()] == ["alpha"]
    assert {n["namespace"] for n in api.get("/namespaces", headers=_as(ADMIN_KEY)).json()} == {
        "alpha",
        "beta",
    }


def test_a_scoped_key_runs_every_template_in_its_scope_only(
    corpus: Corpus, driver: Driver, api: httpx.Client
) -> None:
    ids = corpus.ids(driver)
    alpha = _as(ALPHA_KEY)
    calls = _hostile_template_calls(
        ids, corpus.settings.chunks.embedding_dim, corpus.chunk_ids(driver)
    )
    for name, params in calls.items():
        resp = api.post(f"/templates/{name}", json=params, headers=alpha)
        assert resp.status_code == 200, (name, resp.text)
        _clean_of_beta(resp.json())
        for hostile in (["beta"], ["alpha", "beta"]):
            refused = api.post(
                f"/templates/{name}", json={**params, "namespaces": hostile}, headers=alpha
            )
            assert refused.status_code == 403, (name, refused.text)
            assert "'beta'" in refused.json()["detail"]
    # The whole-graph reads search keeps per process are not for a scoped key.
    needs = {"counted_links": {"phrases": [["zephyrvault"]]}}
    for name in sorted(t.name for t in REGISTRY if t.whole_graph):
        body = needs.get(name, {})
        resp = api.post(f"/templates/{name}", json=body, headers=alpha)
        assert resp.status_code == 403, (name, resp.text)
        assert api.post(f"/templates/{name}", json=body, headers=_as(ADMIN_KEY)).status_code == 200
    # Malformed namespaces are a 422 naming the field.
    bad = api.post("/search/local", json={"query": "x", "namespaces": []}, headers=alpha)
    assert bad.status_code == 422
    assert "namespaces" in bad.text


def test_an_alias_of_another_namespace_never_matches_for_a_scoped_key(
    corpus: Corpus, driver: Driver, api: httpx.Client
) -> None:
    """Issue 39, C1: beta named AuthService "Gateway Edge" (and "ZephyrAuth"). For alpha no
    template that matches names finds AuthService by those words, and /query suggests
    nothing; alpha's own alias of PostgreSQL still matches, and beta and an unscoped key
    find AuthService by beta's alias."""
    auth, postgres = corpus.ids(driver)["AuthService"], corpus.ids(driver)["PostgreSQL"]

    def found(name: str, params: dict[str, Any], key: str) -> set[str]:
        resp = api.post(f"/templates/{name}", json=params, headers=_as(key))
        assert resp.status_code == 200, (name, resp.text)
        rows = resp.json()["rows"]
        if name == "entity_seeds":
            return {str(h["id"]) for h in rows[0]["fulltext"]}
        if name == "name_links":
            return {corpus.ids(driver)[str(r["name"])] for r in rows}
        return {str(r["id"]) for r in rows}

    probes = {
        "entity_links": [
            {"phrases": [["gateway", "edge"]]},
            {"phrases": [["gateway"]]},
            {"phrases": [["edge"]]},
            {"phrases": [["zephyrauth"]]},
        ],
        "name_links": [{"phrases": ["Gateway Edge"]}, {"phrases": ["edge"]}],
        "entity_seeds": [{"text": "Gateway Edge"}, {"text": "edge"}, {"text": "ZephyrAuth"}],
    }
    for name, bodies in probes.items():
        for body in bodies:
            assert auth in found(name, body, ADMIN_KEY), (name, body)
            assert auth in found(name, body, BETA_KEY), (name, body)
            assert auth not in found(name, body, ALPHA_KEY), (name, body)
    # The library, scoped by argument, the same.
    with KnowledgeGraph(corpus.settings) as graph:
        scoped = graph.run_template(
            "entity_links", {"phrases": [["gateway"]], "namespaces": ["alpha"]}
        )
        assert scoped.rows == []
        assert graph.run_template("entity_links", {"phrases": [["gateway"]]}).rows
    # Alpha's own alias of a shared entity still links for alpha (and is not beta's).
    assert found("entity_links", {"phrases": [["postgres"]]}, ALPHA_KEY) == {postgres}
    assert found("entity_seeds", {"text": "Postgres"}, ALPHA_KEY) == {postgres}
    assert postgres not in found("entity_links", {"phrases": [["pgzephyr"]]}, ALPHA_KEY)
    # /query: the LLM names beta's alias; alpha is told of no entity and offered no name.
    question = {"question": "Which chunks mention the edge gateway?"}
    refused = api.post("/query", json=question, headers=_as(ALPHA_KEY))
    assert refused.status_code == 422, refused.text
    assert "AuthService" not in refused.text
    assert "closest: none" in refused.text
    for key in (BETA_KEY, ADMIN_KEY):
        served = api.post("/query", json=question, headers=_as(key))
        assert served.status_code == 200, served.text


# -- scoped keys: MCP over HTTP ------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_url(corpus: Corpus) -> Iterator[str]:
    port = free_port()
    env = cli_env(
        corpus.settings,
        KG_API__API_KEYS=f"{ALPHA_KEY}::alpha,{ADMIN_KEY}",
        KG_LLM__BASE_URL=corpus.llm.base_url,
        KG_ANSWER__BASE_URL=corpus.llm.base_url,
        KG_ANSWER__API_KEY="test",
        KG_ANSWER__MODEL="scripted",
        KG_SEARCH__QUERY_TIMEOUT_S="60",
    )
    with mcp_http_server(env, port) as url:
        yield url


async def _mcp_calls(
    url: str, key: str, ids: dict[str, str], dim: int, chunk_ids: list[str]
) -> list[tuple[str, bool, Any]]:
    """Every tool, with and without arguments aimed at beta: (what, must be refused, result)."""
    calls: list[tuple[str, dict[str, Any], bool]] = [
        ("search", {"query": QUESTION, "mode": mode}, False)
        for mode in ("text", "vector", "graph", "hybrid")
    ]
    calls += [
        ("answer", {"question": QUESTION, "mode": "hybrid"}, False),
        ("get_entity", {"entity_id": ids["PostgreSQL"]}, False),
        ("get_entity", {"entity_id": ids["Zephyrvault"]}, True),
        ("neighborhood", {"entity_id": ids["AuthService"], "depth": 3}, False),
        ("neighborhood", {"entity_id": ids["Zephyrvault"]}, True),
        ("list_namespaces", {}, False),
        ("list_templates", {}, False),
    ]
    for name, params in _hostile_template_calls(ids, dim, chunk_ids).items():
        calls.append(("run_template", {"name": name, "parameters": params}, False))
        hostile = {**params, "namespaces": ["beta"]}
        calls.append(("run_template", {"name": name, "parameters": hostile}, True))
    calls += [
        ("search", {"query": QUESTION, "namespaces": ["beta"]}, True),
        ("get_entity", {"entity_id": ids["PostgreSQL"], "namespaces": ["beta"]}, True),
        ("neighborhood", {"entity_id": ids["AuthService"], "namespaces": ["alpha", "beta"]}, True),
        ("answer", {"question": QUESTION, "namespaces": ["beta"]}, True),
        ("run_template", {"name": "mention_page", "parameters": {}}, True),
    ]
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    out: list[tuple[str, bool, Any]] = []
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for name, arguments, refuse in calls:
            result = await session.call_tool(name, arguments)
            out.append((f"{name} {json.dumps(arguments)[:160]}", refuse, result))
    return out


def test_a_scoped_key_reads_nothing_of_another_namespace_over_mcp(
    corpus: Corpus, driver: Driver, mcp_url: str
) -> None:
    ids, chunks = corpus.ids(driver), corpus.chunk_ids(driver)
    dim = corpus.settings.chunks.embedding_dim
    results = asyncio.run(asyncio.wait_for(_mcp_calls(mcp_url, ALPHA_KEY, ids, dim, chunks), 600))
    for what, refuse, result in results:
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        _clean_of_beta(text)
        assert result.is_error == refuse, (what, text)
        if refuse:
            assert "ScopeDenied" in text or "NotFoundError" in text, (what, text)
            assert "NotFoundError" in text or "'beta'" in text or "mention_page" in text, text
    admin = asyncio.run(asyncio.wait_for(_mcp_calls(mcp_url, ADMIN_KEY, ids, dim, chunks), 600))
    seen = json.dumps([[c.model_dump() for c in r.content] for _, _, r in admin]).casefold()
    assert "zephyr" in seen


# -- scope ceiling in the library ----------------------------------------------------------------


def test_a_bound_caller_cannot_widen_its_scope(corpus: Corpus) -> None:
    async def run() -> None:
        from kg import AsyncKnowledgeGraph

        async with AsyncKnowledgeGraph(corpus.settings) as graph:
            with bound_namespaces(["alpha"]):
                found = await graph.search("PostgreSQL zephyr", mode="text")
                _clean_of_beta(found.model_dump(mode="json"))
                with pytest.raises(ScopeDenied, match="'beta'"):
                    await graph.search("PostgreSQL", namespaces=["beta"])
                with pytest.raises(ScopeDenied, match="mention_page"):
                    await graph.run_template("mention_page", {})

    asyncio.run(run())


# -- the CLI -------------------------------------------------------------------------------------


def _kg(corpus: Corpus, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        capture_output=True,
        text=True,
        env=cli_env(corpus.settings, KG_SEARCH__QUERY_TIMEOUT_S="60"),
        cwd=REPO,
        check=False,
        timeout=300,
    )


def test_the_cli_lists_scopes_and_forgets(corpus: Corpus) -> None:
    listed = _kg(corpus, "namespaces", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {n["namespace"] for n in json.loads(listed.stdout)} == {"alpha", "beta"}
    table = _kg(corpus, "namespaces")
    assert "alpha" in table.stdout
    assert "beta" in table.stdout
    found = _kg(corpus, "search", QUESTION, "--mode", "text", "--namespace", "alpha", "--json")
    assert found.returncode == 0, found.stderr
    _clean_of_beta(json.loads(found.stdout))
    both = _kg(corpus, "search", QUESTION, "--mode", "text", "--namespace", "alpha",
               "--namespace", "beta", "--json")  # fmt: skip
    assert "vault.md" in both.stdout
    bad = _kg(corpus, "search", QUESTION, "--namespace", "")
    assert bad.returncode == 2
    assert "--namespace" in bad.stderr
    nothing = _kg(corpus, "forget", "--namespace", "gamma", "--json")
    assert nothing.returncode == 0, nothing.stderr
    assert json.loads(nothing.stdout)["documents"] == 0


# -- migrate and forget (they change the graph: last) -------------------------------------------


def _own(fingerprinted: Any) -> Any:
    """A fingerprint without what two namespaces share (whose attribution a migration from
    model 6 cannot know)."""

    def alone(props: tuple[tuple[str, str], ...]) -> bool:
        return not any(k == "namespaces" and "alpha" in v and "beta" in v for k, v in props)

    nodes, rels = fingerprinted
    return (
        frozenset(n for n in nodes if alone(n[1])),
        frozenset(r for r in rels if alone(r[3])),
    )


_ATTRIBUTION_NODES: LiteralString = (
    "MATCH (n) WHERE n:Chunk OR n:Entity OR n:Fact OR n:Community"
    " RETURN elementId(n) AS id,"
    " n {.namespace, .namespaces, .alias_sources, .description_source} AS p"
)
_ATTRIBUTION_RELS: LiteralString = (
    "MATCH ()-[r]->() RETURN elementId(r) AS id, r {.namespaces, .description_source} AS p"
)


def test_migrate_from_model_6_gives_every_element_its_namespaces(
    corpus: Corpus, driver: Driver
) -> None:
    before = fingerprint(driver, "alpha"), fingerprint(driver, "beta")
    db = corpus.settings.neo4j.database
    saved_nodes = [r.data() for r in driver.execute_query(_ATTRIBUTION_NODES).records]
    saved_rels = [r.data() for r in driver.execute_query(_ATTRIBUTION_RELS).records]
    # As a model 6 kg left the graph: no namespaces anywhere.
    driver.execute_query(
        "MATCH (n) WHERE n:Chunk OR n:Entity OR n:Fact OR n:Community"
        " REMOVE n.namespace, n.namespaces, n.alias_sources, n.description_source"
    )
    driver.execute_query("MATCH ()-[r]->() REMOVE r.namespaces, r.description_source", database_=db)
    stamp(driver, db, 6)
    with KnowledgeGraph(corpus.settings) as graph:
        report = graph.migrate()
    assert report.from_version == 6
    assert report.chunks_scoped == 3
    assert read_model(driver, db).version == MODEL_VERSION
    # What one namespace holds alone comes back exactly as the writer wrote it; what two
    # share gets its namespaces, and unknown attribution ('' : shown to no scoped caller).
    after = fingerprint(driver, "alpha"), fingerprint(driver, "beta")
    assert _own(after[0]) == _own(before[0])
    assert _own(after[1]) == _own(before[1])
    shared, _, _ = driver.execute_query(
        "MATCH (e:Entity {name: 'PostgreSQL'}) RETURN e.alias_sources AS s, e.namespaces AS ns"
    )
    assert set(shared[0]["s"]) == {""}
    assert sorted(shared[0]["ns"]) == ["alpha", "beta"]
    communities, _, _ = driver.execute_query("MATCH (c:Community) RETURN c.namespaces AS ns")
    assert communities
    assert all(r["ns"] for r in communities)
    with KnowledgeGraph(corpus.settings) as graph:
        assert graph.migrate().notes == ["nothing to do"]
    # Put back what the writer knew, for the forget test after.
    restore = "UNWIND $rows AS row MATCH (n) WHERE elementId(n) = row.id SET n += row.p"
    driver.execute_query(restore, rows=saved_nodes)
    driver.execute_query(
        "UNWIND $rows AS row MATCH ()-[r]->() WHERE elementId(r) = row.id SET r += row.p",
        rows=saved_rels,
    )
    assert (fingerprint(driver, "alpha"), fingerprint(driver, "beta")) == before


def test_forget_removes_one_namespace_and_leaves_the_other_as_it_was(
    corpus: Corpus, driver: Driver
) -> None:
    only_beta = """
        MATCH (p:Predicate) WHERE NOT EXISTS {
          MATCH (f:Fact) WHERE f.predicate = p.name AND any(n IN f.namespaces WHERE n <> 'beta')
        } RETURN collect(p.name) AS names"""
    beta_words = set(driver.execute_query(only_beta).records[0]["names"])
    assert beta_words  # beta has predicates of its own: what forgetting it must not leave
    kept = {r["name"] for r in driver.execute_query("MATCH (p:Predicate) RETURN p.name AS name")[0]}
    with KnowledgeGraph(corpus.settings) as graph:
        report = graph.forget("beta")
        # the forgotten text's predicates are gone, and listed by no template (C3)
        assert report.predicates_removed == len(beta_words)
        listed = {str(r["type"]) for r in graph.run_template("relation_types").rows}
        assert listed & beta_words == set()
        assert listed == kept - beta_words
        assert (report.documents, report.chunks) == (1, 1)
        assert (report.facts_removed, report.facts_kept) == (2, 1)
        assert report.entities_removed >= 2  # Zephyrvault and the title entity Vault
        assert report.communities_removed >= 1
        again = graph.forget("beta")
        assert again.to_dict() == {"namespace": "beta", "documents": 0, "chunks": 0,
                                   "facts_removed": 0, "facts_kept": 0, "entities_removed": 0,
                                   "communities_removed": 0,
                                   "predicates_removed": 0}  # fmt: skip
        assert [n.namespace for n in graph.namespaces()] == ["alpha"]
    leftovers, _, _ = driver.execute_query(
        "MATCH (n) WHERE (n:Chunk AND n.namespace = 'beta') OR 'beta' IN coalesce(n.namespaces, [])"
        " OR 'beta' IN coalesce(n.alias_sources, []) OR n.description_source = 'beta'"
        " RETURN count(n) AS n"
    )
    assert leftovers[0]["n"] == 0
    nodes, rels = fingerprint(driver, "alpha")
    alone_nodes, alone_rels = corpus.alpha_alone
    assert (nodes - alone_nodes, alone_nodes - nodes) == (frozenset(), frozenset())
    assert (rels - alone_rels, alone_rels - rels) == (frozenset(), frozenset())
