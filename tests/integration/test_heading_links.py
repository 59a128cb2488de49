"""A one-word heading is not a name (issue 40, item 1).

A ``--graph metadata`` ingest makes each heading a ``Section`` entity, mentioned only by its own
section: a one-word heading that is an ordinary word ("Application") then looks as specific as
a name, and a question containing the word linked to it. Here a question that `text` answers
with the test client's page must not be answered with the section that happens to be headed by
one of its words, in any mode that fuses the graph. Neo4j is real; no LLM.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.ingest import ingest
from kg.search.global_models import RoutedRequest
from kg.search.models import SearchRequest, SearchResponse
from kg.search.routed import routed_search
from kg.settings import Settings
from tests.graphdata import tuned, with_service

_FILLER = " ".join(
    f"Paragraph {i} says more about headers, cookies and query strings." for i in range(40)
)
DOCS = {
    "requests.md": (
        "# Requests\n\nThe request object carries the method, the headers and the body of an "
        f"incoming call. {_FILLER}\n\n## Application\n\nThe request's app attribute is the "
        f"application that received it. {_FILLER}\n\n## Body\n\nRead the body as bytes, "
        f"text or JSON. {_FILLER}\n"
    ),
    "testclient.md": (
        "# Test Client\n\nTo test your application, use the async HTTP client: it sends "
        "requests to the application in process, with no server, and returns the responses "
        f"for your assertions. {_FILLER}\n\n## Fixtures\n\nShare one client between tests. "
        f"{_FILLER}\n"
    ),
    "routing.md": (
        "# Routing\n\nEvery route maps a path to an endpoint of the application; mount a "
        f"sub-application under a path prefix. {_FILLER}\n"
    ),
    "middleware.md": (
        "# Middleware\n\nMiddleware wraps the application: every request passes through it "
        f"before the endpoint. {_FILLER}\n"
    ),
    "lifespan.md": (
        "# Lifespan\n\nStartup and shutdown handlers run when the application starts and "
        f"stops; an async HTTP client opened there lives as long as the application. {_FILLER}\n"
    ),
}
QUESTION = "How do I test my application with an async HTTP client?"


@pytest.fixture(scope="module")
def docs_graph(driver: Driver, settings: Settings, tmp_path_factory: Any) -> Iterator[Driver]:
    from tests.conftest import _wipe

    root: Path = tmp_path_factory.mktemp("docs")
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    _wipe(driver, settings.neo4j.database)
    ingest(settings, driver, root, graph="metadata")
    yield driver
    _wipe(driver, settings.neo4j.database)


def _files(settings: Settings, mode: str) -> list[str]:
    if mode == "auto":  # the router picks local search for a how-to question
        request = RoutedRequest(query=QUESTION, mode="auto", limit=10)
        routed = with_service(settings, lambda s: routed_search(s, settings, request))
        assert routed.local is not None, routed.mode
        found: SearchResponse = routed.local
    else:
        found = with_service(
            settings, lambda s: s.local_search(SearchRequest(query=QUESTION, mode=mode, limit=10))
        )
    return list(dict.fromkeys(c.document_path for c in found.chunks))


def test_a_one_word_heading_in_a_question_does_not_outrank_the_text_answer(
    docs_graph: Driver, settings: Settings
) -> None:
    sections = {
        r["name"]
        for r in docs_graph.execute_query(
            "MATCH (e:Entity {type: 'Section'}) RETURN e.name AS name",
            database_=settings.neo4j.database,
        ).records
    }
    assert "Application" in sections  # the failure's condition holds in this graph
    assert _files(settings, "text")[0] == "testclient.md"
    for mode in ("hybrid", "auto"):
        assert _files(settings, mode)[0] == "testclient.md", mode
    # The graph signal linked the heading only, so it said it knew nothing and fusion left it
    # out: `hybrid` ranks as it does without the graph, though the heading's section leads the
    # graph alone. At the graph's full weight, as before, that section moves `hybrid`.
    no_graph = tuned(settings, fusion_weights={**settings.search.fusion_weights, "graph": 0.0})
    assert _chunks(settings, "hybrid") == _chunks(no_graph, "hybrid")
    as_a_name = tuned(settings, unlinked_graph_weight=1.0)
    assert _chunks(as_a_name, "hybrid") != _chunks(no_graph, "hybrid")


def test_graph_mode_restarts_at_the_text_hits_when_a_heading_is_all_it_links(
    docs_graph: Driver, settings: Settings
) -> None:
    # The walk from the heading alone leads with its section; restarted at the text
    # signal's hits too, in proportion to the weak link's weight, `graph` answers as `text`.
    assert _files(tuned(settings, text_reset=0), "graph")[0] == "requests.md"
    assert _files(settings, "graph")[0] == "testclient.md"
    # the restarts are `graph` mode's: `hybrid` fuses the text ranking itself
    assert _chunks(tuned(settings, text_reset=0), "hybrid") == _chunks(settings, "hybrid")


def _chunks(settings: Settings, mode: str) -> list[str]:
    found: SearchResponse = with_service(
        settings, lambda s: s.local_search(SearchRequest(query=QUESTION, mode=mode, limit=10))
    )
    return [c.id for c in found.chunks]
