"""Issue 39, "not tested yet": global search and community reports under scoped keys.

Namespace ``alpha`` is the example corpus (its triplets); ``beta`` adds a few documents whose
every name and word carries the marker ``zephyr``, some linked to alpha's entities, so the
communities built over both include alpha's alone, beta's alone, and mixed ones. A caller
scoped to alpha must read exactly the reports whose members all lie in alpha, through the
library, REST, the template, and the map-reduce prompts sent to the LLM (the scripted
OpenAI-compatible server of tests/fakellm.py, the one stand-in the tests allow).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg import KnowledgeGraph
from kg.communities.build import build_communities
from kg.ingest import ingest
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.conftest import _wipe
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"
ALPHA_KEY = "alpha-key-global-41f0"
ADMIN_KEY = "admin-key-global-9c2e"
MARKER = "zephyr"
QUESTION = "What are the main parts of the platform and who owns them?"

_BETA = [
    ("Zephyrvault", "STORES", "Zephyr Secrets"),
    ("Zephyrvault", "REPLICATES_TO", "Zephyr Mirror"),
    ("Zephyr Mirror", "BACKS_UP", "Zephyr Secrets"),
    ("Zephyr Secrets", "ROTATED_BY", "Zephyr Rotator"),
    ("Zephyr Rotator", "RUNS_ON", "Zephyr Cluster"),
    ("Zephyrvault", "RUNS_ON", "Zephyr Cluster"),
    # beta's links to alpha's entities: communities with members of both
    ("AuthService", "READS_FROM", "Zephyrvault"),
    ("Payments Service", "READS_FROM", "Zephyr Secrets"),
]


def _beta_triplets(path: Path) -> Path:
    lines = [
        {
            "id": f"zephyr-{i}.md",
            "title": f"Zephyr note {i}",
            "text": f"{s} {p.lower().replace('_', ' ')} {o} (zephyr).",
            "triplets": [
                {"subject": s, "predicate": p, "object": o, "description": f"zephyr: {s} {p} {o}"}
            ],
        }
        for i, (s, p, o) in enumerate(_BETA)
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


@pytest.fixture(scope="module")
def graph(
    driver: Driver, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, set[str]]]:
    """Both namespaces ingested and clustered; every community id by who may read it."""
    tmp = tmp_path_factory.mktemp("scoped-global")
    _wipe(driver, settings.neo4j.database)
    (tmp / "alpha").mkdir()
    (tmp / "beta").mkdir()
    ingest(settings, driver, tmp / "alpha", triplets=TRIPLETS, namespace="alpha")
    ingest(settings, driver, tmp / "beta", triplets=_beta_triplets(tmp / "b.jsonl"),
           namespace="beta")  # fmt: skip
    build_communities(settings, driver)
    records = driver.execute_query(
        "MATCH (c:Community) RETURN c.id AS id, c.level AS level, c.namespaces AS ns"
    ).records
    by = {"alpha": set(), "hidden": set(), "mixed": set(), "level0": set()}
    for r in records:
        ns = set(r["ns"] or [])
        by["alpha" if ns == {"alpha"} else "hidden"].add(r["id"])
        if ns == {"alpha", "beta"}:
            by["mixed"].add(r["id"])
        if r["level"] == 0:
            by["level0"].add(r["id"])
    # What makes the checks below able to fail: reports alpha may read, and mixed ones it may not.
    assert by["alpha"] & by["level0"]
    assert by["mixed"] & by["level0"]
    assert len(by["alpha"] & by["level0"]) <= 50  # one global search (limit 50) shows them all
    yield by
    _wipe(driver, settings.neo4j.database)


def _clean(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    assert MARKER not in text.casefold(), text[:2000]
    return text


def _report_ids(found: Any) -> set[str]:
    return {r.id for r in found.reports}


def test_the_library_reads_alpha_reports_only(
    graph: dict[str, set[str]], settings: Settings
) -> None:
    with KnowledgeGraph(settings) as kg:
        everything = kg.global_search(QUESTION, limit=50)
        assert _report_ids(everything) & graph["mixed"]  # unscoped, the mixed ones show
        scoped = kg.global_search(QUESTION, namespaces=["alpha"], limit=50)
        _clean(scoped.model_dump(mode="json"))
        assert _report_ids(scoped) == graph["alpha"] & graph["level0"]
        rows = kg.run_template(
            "community_reports", {"level": 0, "limit": 500, "namespaces": ["alpha"]}
        ).rows
        assert {r["id"] for r in rows} == graph["alpha"] & graph["level0"]
        _clean(rows)


@pytest.fixture(scope="module")
def api(graph: dict[str, set[str]], settings: Settings) -> Iterator[httpx.Client]:
    keys = json.dumps([{"key": ALPHA_KEY, "namespaces": ["alpha"]}, ADMIN_KEY])
    secured = api_settings(settings, api_keys=keys)
    with (
        LiveServer(create_app(secured, service_factory=verified_once_factory)) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        yield http


def _rest_ids(payload: dict[str, Any]) -> set[str]:
    """The report ids of a /search/global or a routed /search response."""
    found = payload.get("global_search") or payload
    return {str(r["id"]) for r in found["reports"]}


def test_a_scoped_key_reads_alpha_reports_only_over_rest(
    graph: dict[str, set[str]], api: httpx.Client
) -> None:
    alpha = {"Authorization": f"Bearer {ALPHA_KEY}"}
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    wanted = graph["alpha"] & graph["level0"]
    for path, body in (
        ("/search/global", {"query": QUESTION, "limit": 50}),
        ("/search", {"query": QUESTION, "mode": "global", "limit": 50}),
    ):
        resp = api.post(path, json=body, headers=alpha)
        assert resp.status_code == 200, resp.text
        _clean(resp.json())
        assert _rest_ids(resp.json()) == wanted, path
        unscoped = api.post(path, json=body, headers=admin).json()
        assert _rest_ids(unscoped) & graph["mixed"], path
    for level in (0, 1, 2):
        resp = api.post(
            "/templates/community_reports", json={"level": level, "limit": 500}, headers=alpha
        )
        assert resp.status_code == 200, resp.text
        assert {r["id"] for r in resp.json()["rows"]} <= graph["alpha"]
        _clean(resp.json())


def test_the_map_reduce_prompts_of_a_scoped_caller_hold_no_other_namespace(
    graph: dict[str, set[str]], settings: Settings
) -> None:
    def respond(request: dict[str, Any]) -> Reply:
        system = str(request["messages"][0]["content"])
        text = "\n".join(str(m.get("content") or "") for m in request["messages"])
        cited = re.findall(r"\[([^\]]+)\]", text.split("<material>")[-1])
        first = [c.split(", ")[0] for c in cited]
        if "batch of community reports" in system:
            return Reply(payload={"points": [{"description": "Teams own parts", "score": 70,
                                              "citations": first[:1]}]})  # fmt: skip
        return Reply(payload={"answer": "Teams own the parts.", "citations": first[:1]})

    with ScriptedLLM(responder=respond) as llm:
        configured = settings.model_copy(
            update={
                "llm": settings.llm.model_copy(
                    update={"base_url": llm.base_url, "model": "scripted", "max_retries": 1}
                ),
                "communities": settings.communities.model_copy(update={"global_answer": "llm"}),
            }
        )
        with KnowledgeGraph(configured) as kg:
            scoped = kg.global_search(QUESTION, namespaces=["alpha"], limit=50)
            asked = json.dumps(llm.requests, ensure_ascii=False)
            assert llm.calls >= 2  # a map and the reduce: the prompts were sent
            assert MARKER not in asked.casefold()
            _clean(scoped.model_dump(mode="json"))
            assert scoped.answer == "Teams own the parts."
            llm.reset()
            kg.global_search(QUESTION, limit=50)
            # unscoped, the mixed reports reach the prompt: the check above can fail
            assert MARKER in json.dumps(llm.requests, ensure_ascii=False).casefold()
