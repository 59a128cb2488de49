"""Start-up plans the search templates with the parameter shapes a search sends."""

from __future__ import annotations

from kg.cypher.guard import Guard
from kg.search.startup import warm_up_calls as _warm_up_calls
from kg.settings import Settings


def test_warm_up_calls_are_valid_and_cover_every_search_template() -> None:
    settings = Settings()
    # Preparing validates against the templates' models and does no I/O (no driver needed).
    guard = Guard(None, settings)  # type: ignore[arg-type]
    calls = _warm_up_calls(
        settings.search, settings.resolve.embedding_dim, settings.chunks.embedding_dim
    )
    texts = {(name, guard.prepare(name, params).text) for name, params in calls}
    # search expands in memory (kg.search.relations): the relation graph's page is planned,
    # the expansion template only when a graph too large to keep needs it
    assert "seed_expansion" not in {n for n, _ in texts}
    assert {n for n, _ in texts} >= {
        "entity_links", "counted_links", "entity_seeds", "passage_hop", "graph_evidence",
        "entity_details", "relation_page",
        "chunks_by_text", "chunks_by_vector",
    }  # fmt: skip
    # Plans are cached per list-size bucket: each list-taking template gets 1, 10 and 100.
    sizes = {len(p["entity_ids"]) for n, p in calls if n == "passage_hop"}
    assert sizes == {1, 10, 100}
