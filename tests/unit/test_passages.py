"""The in-memory passage graph: built from mention pages, expanded as passage_hop walks."""

from __future__ import annotations

import numpy as np

from kg.search.passages import build

# c1 (titled "Ada") mentions Ada and Lovelace Prize; c2 mentions the prize and Babbage; c3
# mentions Babbage and Engine; c4 mentions nothing the others do.
ROWS = [
    ("c1", "Ada", [("ada", "Ada"), ("prize", "Lovelace Prize")]),
    ("c2", None, [("prize", "Lovelace Prize"), ("babbage", "Babbage")]),
    ("c3", "Engine", [("babbage", "Babbage"), ("engine", "Analytical engine")]),
    ("c4", "Orbit", [("orbit", "Orbit")]),
]


def _chunks(mask: np.ndarray, ids: tuple[str, ...]) -> set[str]:
    return {ids[i] for i in np.flatnonzero(mask)}


def test_build_keeps_both_directions_and_the_about_flag() -> None:
    g = build(ROWS)
    assert g.chunk_ids == ("c1", "c2", "c3", "c4")
    assert dict(zip(g.entity_ids, g.mentions.tolist(), strict=True)) == {
        "ada": 1, "prize": 2, "babbage": 2, "engine": 1, "orbit": 1,
    }  # fmt: skip
    owner, ends, about = g.links(np.ones(4, dtype=bool))
    pairs = {
        (g.chunk_ids[c], g.entity_ids[e]): bool(a)
        for c, e, a in zip(owner, ends, about, strict=True)
    }
    # a chunk is about the entity its title names (by form: "Ada" == "ada"), not the others
    assert pairs[("c1", "ada")] is True
    assert pairs[("c4", "orbit")] is True
    assert not any(v for k, v in pairs.items() if k not in {("c1", "ada"), ("c4", "orbit")})
    assert len(pairs) == 7


def test_expand_walks_hop_by_hop_and_stops() -> None:
    g = build(ROWS)
    ada = g.entity_at["ada"]
    one, expanded = g.expand([ada], 1, per_entity=50, frontier_cap=200)
    assert _chunks(one, g.chunk_ids) == {"c1"}
    assert {g.entity_ids[i] for i in np.flatnonzero(expanded)} == {"ada"}
    two, _ = g.expand([ada], 2, per_entity=50, frontier_cap=200)
    assert _chunks(two, g.chunk_ids) == {"c1", "c2"}
    three, _ = g.expand([ada], 3, per_entity=50, frontier_cap=200)
    assert _chunks(three, g.chunk_ids) == {"c1", "c2", "c3"}  # never c4: not connected
    many, _ = g.expand([ada], 10, per_entity=50, frontier_cap=200)
    assert _chunks(many, g.chunk_ids) == {"c1", "c2", "c3"}


def test_expand_bounds_chunks_per_entity_and_the_frontier() -> None:
    g = build(ROWS)
    prize = g.entity_at["prize"]
    capped, _ = g.expand([prize], 1, per_entity=1, frontier_cap=200)
    assert _chunks(capped, g.chunk_ids) == {"c1"}  # only its first chunk
    # c1 and c2 reach ada (1 mention) and babbage (2): a frontier of one keeps ada, the more
    # specific, so babbage's c3 is not reached at the second hop
    narrow, expanded = g.expand([prize], 2, per_entity=50, frontier_cap=1)
    assert _chunks(narrow, g.chunk_ids) == {"c1", "c2"}
    assert {g.entity_ids[i] for i in np.flatnonzero(expanded)} == {"prize", "ada"}


def test_a_scope_walks_only_its_chunks_and_counts_its_mentions() -> None:
    """c1 and c2 are alpha's, c3 and c4 beta's: from Ada, alpha's walk stops at c2 (Babbage's
    c3 is beta's), and Babbage's mention count in alpha is 1 of its 2."""
    g = build(ROWS, ["alpha", "alpha", "beta", "beta"])
    alpha = g.within(["alpha"])
    ada = alpha.entity_at["ada"]
    reached, _ = alpha.expand([ada], 10, per_entity=50, frontier_cap=200)
    assert _chunks(reached, alpha.chunk_ids) == {"c1", "c2"}
    counts = dict(zip(alpha.entity_ids, alpha.mentions.tolist(), strict=True))
    assert counts == {"ada": 1, "prize": 2, "babbage": 1, "engine": 0, "orbit": 0}
    owner, ends, _ = alpha.links(np.ones(4, dtype=bool))
    assert {alpha.chunk_ids[c] for c in owner} == {"c1", "c2"}
    assert {alpha.entity_ids[e] for e in ends} == {"ada", "prize", "babbage"}
    # Beta from its own Engine never reaches alpha's chunks, and the views are remembered.
    beta = g.within(["beta"])
    walked, _ = beta.expand([beta.entity_at["engine"]], 10, per_entity=50, frontier_cap=200)
    assert _chunks(walked, beta.chunk_ids) == {"c3"}
    assert g.within(["alpha"]) is alpha


def test_a_scope_holding_every_chunk_is_the_whole_graph() -> None:
    """So a search scoped to a graph's only namespaces ranks exactly as an unscoped one."""
    g = build(ROWS, ["alpha", "alpha", "beta", "beta"])
    assert g.within(["beta", "alpha"]) is g
    assert g.within(["alpha", "beta", "gamma"]) is g
    # a chunk without a namespace is in no scope
    untagged = build(ROWS, ["alpha", None, "alpha", "alpha"])
    view = untagged.within(["alpha"])
    assert view is not untagged
    assert dict(zip(view.entity_ids, view.mentions.tolist(), strict=True))["prize"] == 1


def test_kept_vectors_answer_within_a_scope() -> None:
    from kg.search.chunk_vectors import build as chunk_matrix
    from kg.search.kept import RowNamespaces

    rows = [
        {"id": "a1", "embedding": [1.0, 0.0], "namespace": "alpha"},
        {"id": "b1", "embedding": [1.0, 0.1], "namespace": "beta"},
        {"id": "a2", "embedding": [0.0, 1.0], "namespace": "alpha"},
        {"id": "n1", "embedding": [1.0, 0.0], "namespace": None},
    ]
    matrix = chunk_matrix(rows, 2)
    assert [cid for cid, _ in matrix.nearest([1.0, 0.0], 2)] == ["a1", "n1"]
    assert [cid for cid, _ in matrix.nearest([1.0, 0.0], 5, ["alpha"])] == ["a1", "a2"]
    assert [cid for cid, _ in matrix.nearest([1.0, 0.0], 5, ["beta"])] == ["b1"]
    assert matrix.nearest([1.0, 0.0], 5, ["gamma"]) == []
    facts = RowNamespaces.of([["alpha", "beta"], [], ["beta"], ["beta", "beta"]])
    assert facts.mask(["alpha"]).tolist() == [True, False, False, False]
    assert facts.mask(["beta", "gamma"]).tolist() == [True, False, True, True]
    assert facts.mask(["beta", "gamma"]) is facts.mask(["gamma", "beta"])


def test_chunk_ranks_follow_id_order_whatever_order_the_pages_came_in() -> None:
    from kg.search.passages import id_ranks

    assert list(id_ranks(["a", "b", "c"])) == [0, 1, 2]
    assert list(id_ranks(["c", "a", "b"])) == [2, 0, 1]
    assert list(id_ranks([])) == []


def test_a_walk_reaches_what_a_walk_with_sorted_distinct_ends_reaches() -> None:
    """The walk marks distinct chunks and entities instead of sorting them (np.unique): on
    random graphs, the same chunks and entities, hop for hop."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n_chunks, n_entities = int(rng.integers(1, 60)), int(rng.integers(1, 40))
        rows = [
            (f"c{i:03d}", None, [(f"e{int(e):03d}", f"name {int(e)}")
                                 for e in rng.integers(0, n_entities, int(rng.integers(0, 6)))])
            for i in range(n_chunks)
        ]  # fmt: skip
        graph = build(rows)
        if not graph.entity_ids:
            continue
        starts = [int(e) for e in rng.integers(0, len(graph.entity_ids), 3)]
        chunks, expanded = graph.expand(starts, 3, per_entity=4, frontier_cap=5)
        # the same walk, written with np.unique
        seen = np.zeros(len(graph.chunk_ids), dtype=np.bool_)
        done = np.zeros(len(graph.entity_ids), dtype=np.bool_)
        frontier = np.array(list(dict.fromkeys(starts))[:5], dtype=np.int64)
        for _hop in range(3):
            if not len(frontier):
                break
            done[frontier] = True
            reached = np.unique(np.concatenate([
                graph.entity_chunk[graph.entity_ptr[e] : graph.entity_ptr[e] + min(
                    4, int(graph.entity_ptr[e + 1] - graph.entity_ptr[e]))]
                for e in frontier
            ]).astype(np.int64))  # fmt: skip
            fresh = reached[~seen[reached]]
            if not len(fresh):
                break
            seen[fresh] = True
            ends = np.unique(np.concatenate(
                [graph.chunk_entity[graph.chunk_ptr[c] : graph.chunk_ptr[c + 1]] for c in fresh]
            ).astype(np.int64))  # fmt: skip
            new = ends[~done[ends]]
            frontier = new[np.lexsort((new, graph.mentions[new]))][:5]
        assert (chunks == seen).all()
        assert (expanded == done).all()


# The album's chunk names its own page (about), its performer and a year; the performer's
# own page, a chunk that mentions the performer in passing, three chunks that share only the
# year, a review that names only the album.
HOP_ROWS = [
    ("album", "Privilege (album)", [("privilege", "Privilege (album)"),
                                    ("cutler", "Ivor Cutler"), ("1983", "1983")]),
    ("page", "Ivor Cutler", [("cutler", "Ivor Cutler"), ("glasgow", "Glasgow")]),
    ("passing", "Radio shows", [("cutler", "Ivor Cutler"), ("bbc", "BBC")]),
    ("y1", "A", [("1983", "1983")]),
    ("y2", "B", [("1983", "1983")]),
    ("y3", "C", [("1983", "1983")]),
    ("review", "Reviews", [("privilege", "Privilege (album)")]),
    ("apart", "Orbit", [("orbit", "Orbit")]),
]  # fmt: skip


def test_next_hop_ranks_the_page_of_a_name_the_chunk_shares_first() -> None:
    g = build(HOP_ROWS, namespaces=["a", "a", "b", "a", "a", "a", "a", "a"])
    ranked = dict(g.next_hop("album", about_weight=4.0, limit=10))
    # onward through Ivor Cutler and 1983 (1/2 each), never back through the album's own
    # title: the review that names the album is no hop away
    assert list(ranked) == ["page", "passing", "y1", "y2", "y3"]
    # 1 / (the album's 2 onward names x the name's chunks), 4 times for the name's own page
    assert ranked["page"] == 4.0 / (2 * 3)
    assert ranked["passing"] == 1.0 / (2 * 3)
    assert ranked["y1"] == 1.0 / (2 * 4)
    assert "album" not in ranked
    assert "review" not in ranked
    assert "apart" not in ranked
    # a name the question gives leads nowhere: the question found it already
    assert list(dict(g.next_hop("album", 4.0, 10, skip=frozenset({"cutler"})))) == [
        "y1",
        "y2",
        "y3",
    ]
    assert [cid for cid, _ in g.next_hop("album", about_weight=1.0, limit=2)] == [
        "page",
        "passing",
    ]  # equal scores by id
    assert g.next_hop("unknown", about_weight=4.0, limit=10) == []
    assert g.next_hop("album", about_weight=4.0, limit=0) == []
    # from the review, onward through the album's name: to the album's own page
    assert g.next_hop("review", about_weight=4.0, limit=10) == [("album", 4.0 / (1 * 2))]
    assert g.next_hop("apart", about_weight=4.0, limit=10) == []  # its own title only
    # scoped: the chunks outside the scope are no hop away, and the counts are the scope's
    scoped = dict(g.within(["a"]).next_hop("album", about_weight=4.0, limit=10))
    assert "passing" not in scoped
    assert scoped["page"] == 4.0 / (2 * 2)  # Ivor Cutler has 2 chunks in the scope
