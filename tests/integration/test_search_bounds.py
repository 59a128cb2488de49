"""Texts kg builds from a question stay within what the templates take (issue 26, breaks 2 and 3),
and a slow translator costs a search at most its own deadline.

Over real HTTP (the app on loopback, the real Neo4j) and the CLI as a user runs it; the LLM is
the scripted OpenAI-compatible server (tests/fakellm.py).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from neo4j import Driver

from api.app import create_app
from kg.client import KnowledgeGraph
from kg.settings import Settings
from tests.apiserver import LiveServer, api_settings, verified_once_factory
from tests.clienv import cli_env
from tests.fakellm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]

# A Russian question of 2,000 characters naming no entity, and its faithful English translation
# of 1,995 characters: together with the names they outgrow one fulltext query (4,000).
QUESTION = ("Где и как хранятся все эти старые записи? " * 60)[:2000]
TRANSLATION = {
    "translations": [
        {
            "language": "en",
            "text": ("Where and how are all these old records kept? " * 60)[:1995],
            "entities": ["Old Records Archive", "Record Keeper"],
        }
    ]
}
# Long unbroken runs of word characters: no phrase of them fits the router's name lookup.
LONG_TOKENS = [
    "漢" * 201,
    "What is " + "a" * 201 + "?",
    "Where is https://example.com/" + "x" * 210 + " described?",
    "決済サービスはどのデータベースにトランザクションを保存していますか" * 8,  # Japanese, 264
    "支付服务把交易记录保存在哪个数据库里面以及为什么这样设计" * 9,  # Chinese, 252
]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "payments.md").write_text(
        "# Payments API\n\nThe Payments API stores every transaction in PostgreSQL 16.\n"
    )
    (tmp_path / "delivery.md").write_text(
        "# Delivery\n\nCouriers deliver orders across the city; a planner draws the routes.\n"
    )
    return tmp_path


def _settings(settings: Settings, llm: ScriptedLLM, **search: Any) -> Settings:
    chunks = {"embedder": "hashing", "embedding_dim": settings.resolve.embedding_dim}
    answer = {"base_url": llm.base_url, "api_key": "test", "model": "scripted", "max_calls": 2}
    return settings.model_copy(
        update={
            "chunks": settings.chunks.model_copy(update=chunks),
            "answer": settings.answer.model_validate(answer),
            "search": settings.search.model_validate(
                {**settings.search.model_dump(), "translate": True, **search}
            ),
        }
    )


@pytest.fixture
def served(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> Iterator[httpx.Client]:
    configured = _settings(settings, llm)
    with KnowledgeGraph(configured) as graph:
        graph.ingest(corpus, graph="metadata")
    app = create_app(
        api_settings(configured, require_auth=False), service_factory=verified_once_factory
    )
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


@pytest.mark.parametrize("mode", ["graph", "hybrid"])
def test_a_long_faithful_translation_does_not_fail_local_search(
    served: httpx.Client, llm: ScriptedLLM, mode: str
) -> None:
    llm.responder = lambda request: Reply(payload=TRANSLATION)
    resp = served.post("/search/local", json={"query": QUESTION, "mode": mode})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["translation_error"] is None
    assert [t["language"] for t in body["translations"]] == ["en"]
    assert llm.calls == 1


def test_a_verbose_translator_is_cut_not_reasked(served: httpx.Client, llm: ScriptedLLM) -> None:
    verbose = {
        "translations": [
            {
                "language": "en",
                "text": "Where are the records kept? " * 200,  # 5,600 characters
                "entities": ["x" * 500, *(f"Name {i}" for i in range(40))],
            }
        ]
    }
    llm.responder = lambda request: Reply(payload=verbose)
    resp = served.post("/search/local", json={"query": QUESTION, "mode": "hybrid"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["translation_error"] is None
    (translation,) = body["translations"]
    assert len(translation["text"]) == 2000
    assert len(translation["entities"]) == 20
    assert "x" * 500 not in translation["entities"]
    assert llm.calls == 1


@pytest.mark.parametrize("question", LONG_TOKENS, ids=["han", "a201", "url", "ja", "zh"])
def test_long_unbroken_tokens_do_not_fail_routed_search(
    served: httpx.Client, llm: ScriptedLLM, question: str
) -> None:
    llm.responder = lambda request: Reply(status=500)  # translation fails: reported, not raised
    resp = served.post("/search", json={"query": question})
    assert resp.status_code == 200, resp.text
    assert resp.json()["mode"] in {"text", "vector", "graph", "hybrid", "global"}  # what ran
    for mode in ("graph", "hybrid"):
        local = served.post("/search/local", json={"query": question, "mode": mode})
        assert local.status_code == 200, local.text


def test_cli_search_takes_a_long_han_question(
    clean_graph: Driver, settings: Settings, corpus: Path
) -> None:
    with KnowledgeGraph(settings) as graph:
        graph.ingest(corpus, graph="metadata")
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "search", "漢" * 201],
        cwd=REPO, env=cli_env(settings, PYTHONPATH=str(REPO)), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "phrases" not in proc.stdout + proc.stderr


def test_a_stalling_translator_costs_the_search_only_its_deadline(
    clean_graph: Driver, settings: Settings, llm: ScriptedLLM, corpus: Path
) -> None:
    llm.responder = lambda request: Reply(payload=TRANSLATION, delay_s=8)
    configured = _settings(settings, llm, translate_timeout_s=0.5)
    with KnowledgeGraph(configured) as graph:
        graph.ingest(corpus, graph="metadata")
        started = time.monotonic()
        found = graph.search("Где хранятся транзакции?", mode="hybrid")
        took = time.monotonic() - started
    assert took < 4, took
    assert found.translations == []
    assert found.translation_error is not None
    assert "0.5 s" in found.translation_error
    assert "translate_timeout_s" in found.translation_error
