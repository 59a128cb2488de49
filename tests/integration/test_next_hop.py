"""Hybrid's next hop: a multi-hop question's second passage (issue 40, item 2).

"Which country was the performer of Night Crawler a citizen of?" names the album; its page names
the performer, and the performer's own page answers. Text and the dense signal find pages with
the question's other words (country, citizen, performer) and not the performer's, which shares
none of them; the graph walks to it two steps out. The next hop ranks the pages of the names
the first passage gives, so the performer's page is in the first three. Neo4j is real; no LLM
(the triplets are given, as `kg ingest --triplets` imports them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.ingest import ingest
from kg.search.models import SearchRequest
from kg.settings import Settings
from tests.graphdata import tuned, with_service

ALBUM = "Night Crawler (album)"


def _passage(title: str, text: str, *triplets: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "id": title,
        "title": title,
        "text": text,
        "triplets": [{"subject": s, "predicate": p, "object": o} for s, p, o in triplets],
    }


PASSAGES = [
    _passage(
        ALBUM,
        "Night Crawler is an album by Ivor Cutler, released in 1983 on Rough Trade Records.",
        ("Night Crawler", "is an album by", "Ivor Cutler"),
        ("Night Crawler", "released in", "1983"),
    ),
    _passage(
        "Ivor Cutler",
        "Cutler was a poet, songwriter and humorist, born in Glasgow, who wrote for the radio.",
        ("Ivor Cutler", "born in", "Glasgow"),
        ("Ivor Cutler", "wrote for", "radio"),
    ),
    _passage(
        "Citizenship",
        "Citizenship is the status of a person recognised as a member of a country.",
        ("Citizenship", "is status of", "person"),
    ),
    _passage(
        "Work permits",
        "A touring performer needs a work permit in each country the tour visits.",
        ("Work permits", "needed by", "touring performer"),
    ),
    # Three pages that share only the year with the album, each longer than the one before:
    # no two alike to any signal, so no ranking here rests on a tie (ties break by chunk id,
    # and the ids follow the folder a test ingests from).
    *(
        _passage(
            f"Year in music {n}",
            "In 1983 the charts of a country changed." + " The radio played it." * n,
            (f"Year in music {n}", "covers", "1983"),
            *((f"Year in music {n}", "names", f"Label {n}{m}") for m in range(n)),
        )
        for n in range(1, 4)
    ),
]
QUESTION = "Which country was the performer of Night Crawler a citizen of?"


@pytest.fixture(scope="module")
def album_graph(driver: Driver, settings: Settings, tmp_path_factory: Any) -> Iterator[Driver]:
    from tests.conftest import _wipe

    root: Path = tmp_path_factory.mktemp("empty")
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    _wipe(driver, settings.neo4j.database)
    ingest(settings, driver, root, triplets=corpus)
    yield driver
    _wipe(driver, settings.neo4j.database)


def _titles(settings: Settings) -> list[str]:
    found = with_service(
        settings,
        lambda s: s.local_search(SearchRequest(query=QUESTION, mode="hybrid", limit=5)),
    )
    return [c.document_path for c in found.chunks]


def test_the_performers_page_comes_with_the_album_through_the_next_hop(
    album_graph: Driver, settings: Settings
) -> None:
    with_hop = _titles(settings)
    assert with_hop[0] == ALBUM
    assert "Ivor Cutler" in with_hop[:3], with_hop
    # without it, the pages that share only the year with the album fill the first five
    without = _titles(tuned(settings, next_hop_weight=0))
    assert without[0] == ALBUM
    assert "Ivor Cutler" not in without, without


def test_a_question_that_names_nothing_takes_no_next_hop(
    album_graph: Driver, settings: Settings
) -> None:
    # no name: the fused ranking is the three signals' alone, with or without the setting
    request = SearchRequest(query="which rights does a citizen hold", mode="hybrid", limit=5)
    on = with_service(settings, lambda s: s.local_search(request))
    off = with_service(tuned(settings, next_hop_weight=0), lambda s: s.local_search(request))
    assert [c.id for c in on.chunks] == [c.id for c in off.chunks]
