"""Communities on the example corpus: Leiden, reports (extractive and LLM), cache and budget."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.communities.build import build_communities
from kg.ingest import ingest
from kg.settings import Settings
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


@pytest.fixture
def example(clean_graph: Driver, settings: Settings) -> Driver:
    ingest(settings, clean_graph, EXAMPLE, triplets=TRIPLETS)
    return clean_graph


def _communities(driver: Driver) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(
        "MATCH (c:Community) OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c) "
        "OPTIONAL MATCH (c)-[:PARENT]->(p:Community) "
        "WITH c, p, collect(e.id) AS members "
        "RETURN c {.*, members: members, parent: p.id, parent_level: p.level} AS c ORDER BY c.id"
    )
    return [dict(r["c"]) for r in records]


def _llm_settings(settings: Settings, llm: ScriptedLLM, tmp_path: Path, **extra: Any) -> Settings:
    return settings.model_copy(
        update={
            "llm": settings.llm.model_copy(
                update={"base_url": llm.base_url, "model": "scripted", "max_retries": 2}
            ),
            "communities": settings.communities.model_copy(
                update={
                    "reports": "llm",
                    "cache_path": tmp_path / "reports.sqlite",
                    "max_cluster_size": 1000,
                    **extra,
                }
            ),
        }
    )


def _citable(request: dict[str, Any]) -> list[str]:
    """The relation and passage ids of the context the request carries."""
    text = "\n".join(str(m.get("content") or "") for m in request["messages"])
    body = text.split("<context>")[-1]
    ids = []
    for line in body.splitlines():
        match = re.match(r"^- (\S+) \| ", line)
        if match and ("|" in match.group(1) or ":" in match.group(1) or "#" in match.group(1)):
            ids.append(match.group(1))
    return ids


def _report(citations: list[str]) -> dict[str, Any]:
    return {
        "title": "Scripted community",
        "summary": "A community the scripted model describes.",
        "findings": [{"summary": "A fact", "explanation": "", "citations": citations}],
        "rating": 7.5,
    }


def test_extractive_build_is_deterministic_and_keeps_structure_out(
    example: Driver, settings: Settings
) -> None:
    first = build_communities(settings, example)
    assert first.communities > 0
    assert first.entities > 0
    assert first.reports_llm == 0
    assert first.llm_calls == 0
    stored = _communities(example)
    assert len(stored) == first.communities
    for c in stored:
        assert c["size"] == len(c["members"]) >= 2
        assert c["title"]
        assert c["summary"]
        assert c["report_kind"] == "extractive"
        assert 0 <= c["rank"] <= 10
        findings = json.loads(c["findings"])
        assert all(f["citations"] for f in findings)
        if c["parent"] is not None:
            assert c["parent_level"] == c["level"] - 1
    # Only entities are members; chunks and documents never are.
    records, _, _ = example.execute_query(
        "MATCH (n)-[:IN_COMMUNITY]->(:Community) WHERE NOT n:Entity RETURN count(n) AS n"
    )
    assert records[0]["n"] == 0
    # Same graph, same seed: the same communities (ids and all), nothing deleted or rewritten.
    second = build_communities(settings, example)
    assert second.deleted == 0
    again = _communities(example)
    assert [(c["id"], c["members"], c["updated_at"]) for c in again] == [
        (c["id"], c["members"], c["updated_at"]) for c in stored
    ]


def test_a_smaller_cluster_cap_makes_a_hierarchy(example: Driver, settings: Settings) -> None:
    small = settings.model_copy(
        update={"communities": settings.communities.model_copy(update={"max_cluster_size": 4})}
    )
    summary = build_communities(small, example)
    assert summary.levels >= 2
    stored = _communities(example)
    children = [c for c in stored if c["parent"] is not None]
    assert children
    by_id = {c["id"]: c for c in stored}
    for child in children:
        assert set(child["members"]) <= set(by_id[child["parent"]]["members"])
    # Rebuilding with the default cap replaces them all.
    rebuilt = build_communities(settings, example)
    assert rebuilt.deleted > 0
    assert len(_communities(example)) == rebuilt.communities


def test_llm_report_with_an_invalid_citation_is_reasked_then_cached(
    example: Driver, settings: Settings, tmp_path: Path
) -> None:
    state = {"first": True}

    def respond(request: dict[str, Any]) -> Reply:
        citable = _citable(request)
        assert citable, "the context lists citable ids"
        if state["first"]:
            state["first"] = False
            return Reply(payload=_report(["not-a-real-id"]))
        return Reply(payload=_report(citable[:2]))

    with ScriptedLLM(responder=respond) as llm:
        configured = _llm_settings(settings, llm, tmp_path)
        summary = build_communities(configured, example)
        n = summary.communities
        assert n > 0
        assert summary.reports_llm == n
        assert summary.reports_failed == 0
        assert llm.calls == n + 1  # one re-ask for the invalid citation
        reask = [r for r in llm.requests if "not in the context" in json.dumps(r["messages"])]
        assert len(reask) == 1
        stored = _communities(example)
        assert {c["report_kind"] for c in stored} == {"llm"}
        assert {c["rank"] for c in stored} == {7.5}
        for c in stored:
            cited = {x for f in json.loads(c["findings"]) for x in f["citations"]}
            assert "not-a-real-id" not in cited

        llm.reset()
        again = build_communities(configured, example)
        assert llm.calls == 0  # unchanged graph: every report from the cache
        assert again.reports_cached == n
        assert again.llm_calls == 0

        dry = build_communities(configured, example, dry_run=True)
        assert dry.estimated_calls == 0
        assert dry.reports_cached == n
        assert llm.calls == 0


def test_the_budget_stops_llm_reports_and_the_rest_are_extractive(
    example: Driver, settings: Settings, tmp_path: Path
) -> None:
    with ScriptedLLM(responder=lambda r: Reply(payload=_report(_citable(r)[:1]))) as llm:
        configured = _llm_settings(settings, llm, tmp_path, max_calls=1, max_cluster_size=4)
        dry = build_communities(configured, example, dry_run=True)
        assert dry.estimated_calls == dry.communities > 1
        assert llm.calls == 0
        summary = build_communities(configured, example)
        assert llm.calls == 1
        assert summary.stopped_by_budget
        assert "max_calls=1" in (summary.budget_reason or "")
        assert summary.reports_llm == 1
        assert summary.reports_extractive == summary.communities - 1
        kinds = [c["report_kind"] for c in _communities(example)]
        assert kinds.count("llm") == 1


def test_an_incremental_ingest_leaves_communities_until_the_next_build(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLE, folder)
    lines = [json.loads(x) for x in TRIPLETS.read_text().splitlines()]
    triplets = tmp_path / "t.jsonl"
    triplets.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in lines) + "\n")
    ingest(settings, clean_graph, folder, triplets=triplets)
    before = build_communities(settings, clean_graph)
    # Prune two documents: entities only they supported go, community membership or not.
    kept = lines[:-2]
    triplets.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in kept) + "\n")
    ingest(settings, clean_graph, folder, triplets=triplets, prune=True)
    orphans = clean_graph.execute_query(
        "MATCH (e:Entity) WHERE NOT EXISTS { (e)-[r]-() WHERE type(r) <> 'IN_COMMUNITY' } "
        "RETURN count(e) AS n"
    ).records[0]["n"]
    assert orphans == 0
    # Communities stay as built (smaller where members went) until the next build.
    assert len(_communities(clean_graph)) == before.communities
    after = build_communities(settings, clean_graph)
    assert len(_communities(clean_graph)) == after.communities
    unplaced = clean_graph.execute_query(
        "MATCH (e:Entity) WHERE (e)-[]-(:Entity) AND NOT (e)-[:IN_COMMUNITY]->() "
        "RETURN count(e) AS n"
    ).records[0]["n"]
    assert unplaced == 0


def test_a_dead_report_endpoint_is_named_with_the_settings_to_change(
    example: Driver, settings: Settings, tmp_path: Path
) -> None:
    with ScriptedLLM(responder=lambda r: Reply(payload={})) as llm:
        configured = _llm_settings(settings, llm, tmp_path, max_cluster_size=4)
        dead_url = llm.base_url
    # the scripted server is closed now: nothing listens on its port
    summary = build_communities(configured, example)
    assert summary.reports_failed == summary.communities > 0
    error = summary.report_error or ""
    assert f"the LLM endpoint {dead_url}" in error
    assert "KG_REPORTS__BASE_URL or KG_LLM__BASE_URL" in error
    assert summary.reports_extractive == summary.communities  # nothing lost: extractive ones
