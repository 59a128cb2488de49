"""Hybrid's fusion rule (kg/search/fusion.py): confidence-weighted reciprocal rank fusion."""

from __future__ import annotations

import pytest

from kg.search.fusion import confidence_weights, fuse_chunks, lead, vector_floor
from kg.search.models import ChunkHit
from kg.settings import ChunkSettings, SearchSettings

WEIGHTS = {"text": 1.0, "vector": 1.0, "graph": 1.0}


def hits(*pairs: tuple[str, float]) -> list[ChunkHit]:
    return [ChunkHit(id=cid, text=cid, document_id="d", document_path="d.md", score=s)
            for cid, s in pairs]  # fmt: skip


def ranking(prefix: str, scores: list[float]) -> list[ChunkHit]:
    return hits(*((f"{prefix}{i}", s) for i, s in enumerate(scores)))


FLAT = [0.700, 0.700, 0.699, 0.699, 0.698, 0.697, 0.696, 0.694, 0.692, 0.690]
PEAKED = [1.0, 0.9, 0.1, 0.05, 0.04, 0.03, 0.02, 0.02, 0.01, 0.01]


def test_lead_is_scale_free_and_bounded() -> None:
    assert lead([], 3) == 0.0
    assert lead([0.4], 3) == 1.0  # one hit: nothing to doubt it against
    assert lead([0.5, 0.5, 0.5], 3) == 0.0  # flat: says nothing
    assert lead(PEAKED, 3) == pytest.approx((1.0 - 0.1) / (1.0 - 0.01))
    assert lead([10 * s for s in PEAKED], 3) == pytest.approx(lead(PEAKED, 3))
    assert lead(PEAKED, 3) > lead(FLAT, 3)
    assert lead([3.0, 2.0], 3) == 1.0  # shorter than the rank: the last counts
    assert 0.0 <= lead([2.0, 3.0, 1.0], 2) <= 1.0  # out of order: still bounded


def test_a_signal_that_found_nothing_is_left_out() -> None:
    rankings = {"text": ranking("t", PEAKED), "vector": [], "graph": ranking("g", PEAKED)}
    weights = confidence_weights(rankings, WEIGHTS, lead_rank=3, anchor="text")
    assert set(weights) == {"text", "graph"}
    # Left out of the scaling too: first in every ranking that counts is still 1.0.
    alone = {"text": ranking("x", PEAKED), "vector": []}
    fused = fuse_chunks(alone, {"text": 1.0, "vector": 1.0}, 60)
    assert fused[0].score == pytest.approx(0.5)  # the empty ranking weighs in the scale...
    kept = confidence_weights(alone, WEIGHTS, lead_rank=3, anchor="text")
    fused = fuse_chunks(alone, kept, 60)
    assert fused[0].score == pytest.approx(1.0)  # ...unless confidence leaves it out


def test_a_peaked_signal_counts_more_than_a_flat_one() -> None:
    rankings = {"text": ranking("t", PEAKED), "vector": ranking("v", FLAT),
                "graph": ranking("g", PEAKED)}  # fmt: skip
    weights = confidence_weights(rankings, WEIGHTS, lead_rank=3, anchor="text")
    assert weights["text"] == 1.0  # the anchor counts as set
    assert weights["graph"] > 0.9
    assert weights["vector"] < 0.2
    off = confidence_weights(rankings, WEIGHTS, lead_rank=None, anchor="text")
    assert off == WEIGHTS  # `off`: the weights as set
    zero = confidence_weights(rankings, {"text": 1.0, "graph": 0.0}, lead_rank=3, anchor=None)
    assert set(zero) == {"text"}  # a 0 or missing weight: left out


def test_hybrid_keeps_the_text_hits_when_the_others_are_noise() -> None:
    text = ranking("t", PEAKED)
    noise = {"vector": ranking("v", FLAT), "graph": ranking("g", FLAT)}
    rankings = {"text": text, **noise}
    weights = confidence_weights(rankings, WEIGHTS, lead_rank=3, anchor="text")
    fused = [c.id for c in fuse_chunks(rankings, weights, 5)]
    assert fused[:2] == ["t0", "t1"]
    assert set(fused[:5]) >= {"t0", "t1", "t2"}
    # Plain equal weights put the noise's first hits level with text's.
    plain = [c.id for c in fuse_chunks(rankings, WEIGHTS, 5)]
    assert plain[:3] == ["g0", "t0", "v0"]


def test_agreement_raises_a_chunk_that_several_signals_find() -> None:
    text = hits(("a", 9.0), ("b", 8.0), ("c", 1.0), ("d", 0.5))
    graph = hits(("b", 1.0), ("x", 0.9), ("y", 0.1), ("z", 0.05))
    rankings = {"text": text, "graph": graph}
    weights = confidence_weights(rankings, WEIGHTS, lead_rank=3, anchor="text")
    fused = [c.id for c in fuse_chunks(rankings, weights, 5)]
    assert fused[0] == "b"  # second for text, first for a confident graph
    assert fused.index("x") < fused.index("c")


def test_the_anchor_keeps_at_least_its_floor() -> None:
    flat_text = {"text": ranking("t", FLAT), "graph": ranking("g", PEAKED)}
    floored = confidence_weights(flat_text, WEIGHTS, lead_rank=3, anchor="text", anchor_floor=0.75)
    assert floored["text"] == pytest.approx(0.75)  # a flat text ranking gives way a little...
    whole = confidence_weights(flat_text, WEIGHTS, lead_rank=3, anchor="text", anchor_floor=1.0)
    assert whole["text"] == 1.0  # ...or not at all (the round-3 rule)
    peaked = {"text": ranking("t", PEAKED), "graph": ranking("g", FLAT)}
    kept = confidence_weights(peaked, WEIGHTS, lead_rank=3, anchor="text", anchor_floor=0.75)
    assert kept["text"] == pytest.approx(lead(PEAKED, 3))  # above the floor: its own lead
    assert kept["graph"] < 0.2  # a non-anchor never gets a floor


def test_a_signal_given_a_floor_keeps_it_and_the_others_do_not() -> None:
    flat = {"text": ranking("t", FLAT), "vector": ranking("v", FLAT), "graph": ranking("g", FLAT)}
    weights = confidence_weights(
        flat, WEIGHTS, lead_rank=3, anchor="text", anchor_floor=0.75, floors={"vector": 1.0}
    )
    assert weights["text"] == pytest.approx(0.75)
    assert weights["vector"] == 1.0  # a flat-looking dense ranking still counts whole
    assert weights["graph"] < 0.2
    plain = confidence_weights(flat, WEIGHTS, lead_rank=3, anchor="text", anchor_floor=0.75)
    assert plain["vector"] == pytest.approx(weights["graph"])  # no floor: its own lead


def test_the_vector_floor_follows_the_chunk_embedder_unless_set() -> None:
    assert vector_floor(SearchSettings(), ChunkSettings()) == 0.0  # WordLlama
    assert vector_floor(SearchSettings(), ChunkSettings(embedder="e5")) == 1.0
    assert vector_floor(SearchSettings(), ChunkSettings(embedder="openai")) == 0.0
    chosen = SearchSettings(fusion_vector_floor=0.5)
    assert vector_floor(chosen, ChunkSettings(embedder="e5")) == 0.5
    assert vector_floor(chosen, ChunkSettings()) == 0.5


def test_a_document_every_signal_found_leads_though_they_found_different_chunks() -> None:
    # text ranks p1 (a paragraph of "page") 1st, vector p2 (another paragraph of it) 1st;
    # both rank o1 ("other") 2nd. Chunk by chunk o1, the one chunk they share, leads; with
    # the document evidence "page", first for both, leads.
    text = hits(("p1", 9.0), ("o1", 8.0), ("x", 7.0))
    vector = hits(("p2", 0.9), ("o1", 0.8), ("y", 0.7))
    documents = {"o1": "other", "p1": "page", "p2": "page", "x": "x", "y": "y"}
    rankings = {"text": text, "vector": vector}
    plain = [c.id for c in fuse_chunks(rankings, WEIGHTS, 2)]
    assert plain[0] == "o1"
    fused = fuse_chunks(rankings, WEIGHTS, 2, documents=documents, document_weight=3.0)
    assert [c.id for c in fused][:3] == ["p1", "p2", "o1"]
    assert all(0.0 < c.score <= 1.0 for c in fused)  # scaled back to 0..1
    # a weight of 0, or chunks that are their own documents, rank as before
    assert [c.id for c in fuse_chunks(rankings, WEIGHTS, 2, documents=documents)] == plain
    own = {cid: cid for cid in documents}
    assert [
        c.id for c in fuse_chunks(rankings, WEIGHTS, 2, documents=own, document_weight=3.0)
    ] == plain
