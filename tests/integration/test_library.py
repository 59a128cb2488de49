"""The library surface (kg.KnowledgeGraph / AsyncKnowledgeGraph) against the real server.

The LLM, where one is needed, is the scripted OpenAI-compatible server in tests/fakellm.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from neo4j import Driver

from kg import (
    AsyncKnowledgeGraph,
    EntityDetail,
    KnowledgeGraph,
    Neighborhood,
    QueryRejected,
    SearchResponse,
    StoreUnavailable,
)
from kg.settings import Settings
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "platform-docs"
TRIPLETS = REPO / "examples" / "platform-docs.triplets.jsonl"


def test_the_documented_example_runs(
    clean_graph: Driver,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = (REPO / "docs" / "library.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert code is not None
    assert len(code.group(1).strip().splitlines()) <= 10
    monkeypatch.chdir(REPO)
    for key, value in {
        "KG_NEO4J__URI": settings.neo4j.uri,
        "KG_NEO4J__USERNAME": settings.neo4j.username,
        "KG_NEO4J__PASSWORD": settings.neo4j.password.get_secret_value(),
        "KG_NEO4J__DATABASE": settings.neo4j.database,
    }.items():
        monkeypatch.setenv(key, value)
    exec(compile(code.group(1), "docs/library.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("14 documents,")
    assert out.strip().splitlines()[-1] == "['Team Platform Security']"  # the question's answer


def test_async_twin_inside_a_running_loop(clean_graph: Driver, settings: Settings) -> None:
    async def main() -> tuple[SearchResponse, EntityDetail, Neighborhood, int, bool]:
        async with AsyncKnowledgeGraph(settings) as graph:
            summary = await graph.ingest(EXAMPLE, triplets=TRIPLETS)
            assert summary.documents_new == 14
            found = await graph.search("Who owns AuthService?", depth=2, limit=5)
            first = found.entities[0].id
            entity = await graph.entity(first)
            hood = await graph.neighborhood(first, 1)
            rows = await graph.run_template("entity_sources", entity_id=first, limit=3)
            return found, entity, hood, len(rows.rows), await graph.health()

    found, entity, hood, sources, healthy = asyncio.run(main())
    assert found.entities
    assert entity.id == found.entities[0].id
    assert hood.entity.id == entity.id
    assert sources > 0
    assert healthy


def test_sync_twin_works_inside_a_running_loop(clean_graph: Driver, settings: Settings) -> None:
    async def notebook_cell() -> SearchResponse:
        # Blocking calls from inside a running loop, as a notebook makes them.
        with KnowledgeGraph(settings) as graph:
            graph.ingest(EXAMPLE, triplets=TRIPLETS)
            return graph.search("What does Checkout Web depend on?")

    response = asyncio.run(notebook_cell())
    assert response.relations


def test_the_sync_twin_has_the_search_use_case_too(clean_graph: Driver, settings: Settings) -> None:
    """``service`` on both twins: the sync one's is the use case its reads go through."""
    with KnowledgeGraph(settings) as graph:
        graph.ingest(EXAMPLE, graph="metadata")
        service = graph.service
        assert service is graph.service  # one per open graph, not one per call
        assert [t.name for t in service.templates()] == [t.name for t in graph.templates()]
        assert graph.search("AuthService", mode="text", limit=3).chunks
    with pytest.raises(RuntimeError, match="open the graph first"):
        _ = graph.service


def test_caller_mistakes_and_outages_are_kg_errors(clean_graph: Driver, settings: Settings) -> None:
    with KnowledgeGraph(settings) as graph:
        with pytest.raises(QueryRejected) as bad:
            graph.search("q", depth=7)
        assert [e["field"] for e in bad.value.errors] == ["depth"]
    down = settings.model_copy(
        update={"neo4j": settings.neo4j.model_copy(update={"uri": "bolt://127.0.0.1:9"})}
    )
    with pytest.raises(StoreUnavailable), KnowledgeGraph(down):
        pass


def test_overrides_build_settings_per_section(settings: Settings) -> None:
    graph = KnowledgeGraph(settings, search={"fanout": 7}, write={"batch_size": 11})
    assert (graph.settings.search.fanout, graph.settings.write.batch_size) == (7, 11)
    assert graph.settings.neo4j.uri == settings.neo4j.uri  # the rest is kept


def test_llm_adjudication_setting_is_wired_into_ingest(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    # "Warsaw" / "Варшава" score inside the uncertain band (0.857): only the LLM can join them.
    # (Moscow / Москва no longer do: the lexicon translates «Москва».)
    lines = [
        {"id": "a", "title": "A", "text": "The office is in Warsaw.",
         "triplets": [{"subject": "Office", "predicate": "located in", "object": "Warsaw",
                       "object_type": "Location"}]},
        {"id": "b", "title": "B", "text": "Склад находится в Варшава.",
         "triplets": [{"subject": "Склад", "predicate": "located in", "object": "Варшава",
                       "object_type": "Location"}]},
    ]  # fmt: skip
    path = tmp_path / "cities.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")
    with ScriptedLLM() as llm:
        llm.responder = lambda _request: Reply(payload={"same": True, "reason": "exonym"})
        wired = settings.model_copy(deep=True)
        wired.resolve.llm_adjudication = True
        wired.llm.base_url = llm.base_url
        with KnowledgeGraph(wired) as graph:
            graph.ingest(tmp_path, triplets=path)
        calls = llm.calls
    assert calls >= 1
    cities = clean_graph.execute_query(
        "MATCH (e:Entity) WHERE e.name IN ['Warsaw', 'Варшава'] OR 'Варшава' IN e.aliases "
        "RETURN count(e) AS n"
    ).records[0]["n"]
    assert cities == 1
