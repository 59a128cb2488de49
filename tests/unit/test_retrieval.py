"""The pure parts of local search: words, linking, PageRank over passages, fusion."""

from __future__ import annotations

import numpy as np
import pytest

from kg.search.fusion import fuse
from kg.search.retrieval import (
    MAX_NGRAMS,
    MAX_PHRASES,
    Ngram,
    longest_links,
    pagerank,
    personalized_pagerank,
    question_ngrams,
    shortest,
    specificity,
    spellings,
)
from kg.words import Lexicon, form, words


def test_words_are_casefolded_runs_in_any_script() -> None:
    assert words("Leland, North Carolina — Команда финансов!") == [
        "leland",
        "north",
        "carolina",
        "команда",
        "финансов",
    ]


def test_forms_that_could_only_match_noise_are_refused() -> None:
    assert form("The") is None
    assert form("of the") is None
    assert form("C") is None
    assert form("1986") is None
    assert form("Kiss and Tell") == ("kiss", "and", "tell")
    assert form("Acme") == ("acme",)


def test_lexicon_matches_whole_words_longest_first() -> None:
    lexicon = Lexicon()
    lexicon.add("New York", "ny")
    lexicon.add("New York Times", "nyt")
    lexicon.add("Ledger DB", "ledger")
    lexicon.add("Платежи", "ru")
    text = "The New York Times wrote about the ledger db; Newark is not New Yorkish. ПЛАТЕЖИ."
    assert lexicon.find(text) == {"nyt", "ledger", "ru"}
    assert lexicon.find("new york") == {"ny"}
    assert lexicon.find("Ledger DBs") == set()  # a word boundary, not a prefix


def test_question_ngrams_skip_stop_word_only_grams_and_come_longest_first() -> None:
    grams = question_ngrams("Who directed the film shot in Leland, North Carolina?", 4)
    texts = [g.words for g in grams]
    assert ("leland", "north", "carolina") in texts
    assert ("the",) not in texts
    assert ("in",) not in texts
    sizes = [len(t) for t in texts]
    assert sizes == sorted(sizes, reverse=True)
    assert len(question_ngrams("word " * 2000, 8)) <= MAX_NGRAMS


def test_a_long_question_keeps_its_single_words_past_the_bounds() -> None:
    # 24 words have 164 n-grams of up to 8 words: cut longest first at 128 (the template's
    # bound), the last single words were lost, and with them the names most often asked.
    question = (
        "What is the population ranking of the city that has a courthouse in James Glisson's "
        "birthplace in the country that passed the Judiciary Act of 1869 McRae"
    )
    grams = question_ngrams(question, 8)
    assert len(grams) > MAX_PHRASES
    assert ("mcrae",) in [g.words for g in grams]
    sizes = [len(g.words) for g in grams]
    assert sizes == sorted(sizes, reverse=True)
    cut = question_ngrams(question, 8, limit=40)
    assert ("mcrae",) in [g.words for g in cut]
    assert max(len(g.words) for g in cut) < 8  # the longest are the ones left out
    found = spellings(grams, MAX_PHRASES)
    assert len(found) == MAX_PHRASES
    assert ("mcrae",) in found
    assert max(len(s) for s in found) < 8
    assert shortest([("a", "b", "c"), ("d",), ("e", "f")], 2) == [("d",), ("e", "f")]


def test_longest_links_prefer_the_longer_name_and_keep_ambiguity() -> None:
    grams = question_ngrams("Who starred in Kiss and Tell with Shirley Temple", 4)
    hits = {
        ("kiss", "and", "tell"): ["film"],
        ("tell",): ["william-tell"],
        ("shirley", "temple"): ["actress", "other-shirley"],
    }
    linked = longest_links(grams, hits)
    assert set(linked) == {"film", "actress", "other-shirley"}
    assert linked["film"] == Ngram(3, 6, ("kiss", "and", "tell"))


def test_specificity_falls_with_mentions() -> None:
    assert specificity(0) == specificity(1) == 1.0
    assert 1.0 > specificity(2) > specificity(500) > 0.1


def test_pagerank_finds_the_bridge_passage() -> None:
    # q names A; passage a is about A and mentions B; passage b is about B. A hub H is
    # mentioned by everything. The bridge passage b must outrank the unrelated passage x.
    edges = [
        ("c:a", "e:A", 1.0),
        ("c:a", "e:B", 1.0),
        ("c:b", "e:B", 1.0),
        ("c:x", "e:X", 1.0),
        *((f"c:{p}", "e:H", 1.0) for p in "abx"),
    ]
    scores = personalized_pagerank(edges, {"e:A": 1.0}, damping=0.5, iterations=50)
    assert scores["c:a"] > scores["c:b"] > scores.get("c:x", 0.0)
    assert sum(scores.values()) == pytest.approx(1.0)
    assert personalized_pagerank(edges, {}, damping=0.5, iterations=5) == {}


def test_pagerank_mass_on_a_dead_end_returns_to_the_seeds() -> None:
    scores = personalized_pagerank([], {"e:A": 2.0, "e:B": 2.0}, damping=0.5, iterations=10)
    assert scores == {"e:A": pytest.approx(0.5), "e:B": pytest.approx(0.5)}


def test_pagerank_does_not_depend_on_the_order_the_edges_were_read_in() -> None:
    # Two imports of one corpus read the passage graph in different orders; float sums in
    # another order differ in the last bits, which used to swap passages whose scores are equal
    # in exact arithmetic (and then their ids could not break the tie).
    rng = np.random.default_rng(7)
    nodes, edges = 60, 300
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    weight = rng.choice([1.0, 4.0, 0.3], edges)
    restart = np.zeros(nodes)
    restart[:3] = [1.0, 0.5, 0.25]
    first = pagerank(src, dst, weight, restart, damping=0.5, iterations=30)
    for _ in range(20):
        order = rng.permutation(edges)
        again = pagerank(src[order], dst[order], weight[order], restart, damping=0.5, iterations=30)
        assert np.array_equal(first, again)


def test_fusion_is_weighted_and_scaled() -> None:
    fused = fuse({"text": ["a", "b"], "vector": ["b", "a"], "graph": ["c"]},
                 {"text": 1.0, "vector": 1.0, "graph": 1.0}, k=60)  # fmt: skip
    assert fused["a"] == pytest.approx(fused["b"])
    assert fused["a"] > fused["c"]
    only_text = fuse({"text": ["a"], "vector": ["b"]}, {"text": 1.0}, k=60)
    assert only_text == {"a": pytest.approx(1.0)}
    assert fuse({"text": ["a"]}, {}, k=60) == {}


def test_question_ngrams_skip_words_too_long_to_link() -> None:
    grams = question_ngrams("PaymentService " + "数据库" * 600, 8)
    assert [g.words for g in grams] == [("paymentservice",)]
