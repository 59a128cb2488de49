"""Pure parts of issue 26's search and LLM bounds: router phrases, error fields, token counts,
bounded decoding."""

from __future__ import annotations

import gzip

import pytest

from kg.cypher.params import MAX_PHRASE_CHARS, NameLinksParams
from kg.errors import KGError, QueryRejected, only_sent
from kg.llm.bounded import ResponseTooLarge, _decoded, counted, estimate_tokens
from kg.search.models import TranslatedQuestion
from kg.search.router import phrases


@pytest.mark.parametrize(
    "question",
    [
        "漢" * 201,
        "What is " + "a" * 201 + "?",
        "See https://example.com/" + "x" * 210,
        " ".join(["b" * 60] * 4),  # four words of 60: a 243-character phrase
    ],
)
def test_router_phrases_fit_the_template(question: str) -> None:
    grams = phrases(question)
    assert all(len(p) <= MAX_PHRASE_CHARS for p in grams)
    if grams:
        NameLinksParams.model_validate({"phrases": grams})


def test_router_phrases_keep_ordinary_words() -> None:
    assert "payments api" in phrases("Which database does the Payments API use?")


def test_only_fields_the_caller_sent_are_named() -> None:
    mine = QueryRejected("bad", errors=[{"field": "depth", "reason": "no"}])
    assert only_sent(mine, ["query", "depth"], "search") is mine
    internal = QueryRejected("bad", errors=[{"field": "phrases.0", "reason": "too long"}])
    turned = only_sent(internal, ["query", "depth"], "routed search")
    assert type(turned) is KGError
    assert "phrases" in str(turned)
    assert "bug in kg" in str(turned)


def test_a_verbose_translation_is_cut_not_refused() -> None:
    found = TranslatedQuestion.model_validate(
        {"language": "en", "text": "w " * 3000, "entities": ["n" * 300, *map(str, range(30))]}
    )
    assert len(found.text) == 2000
    assert len(found.entities) == 20
    assert "n" * 300 not in found.entities


def test_token_estimate_and_plausible_counts() -> None:
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("漢" * 4) == 3  # 12 bytes of UTF-8
    assert counted(110, 100) == 110  # a plausible report is kept
    assert counted(20, 100_000) == 25_000  # a claim far below the text: a quarter of it
    assert counted(10**30, 100) == 400  # far above: four times it
    assert counted(float("inf"), 100) == 400
    assert counted(None, 100) == 100  # no report: kg's estimate
    assert counted("20", 100) == 100
    assert counted(-5, 100) == 25


def test_a_compressed_answer_is_decoded_within_the_bound() -> None:
    body = b'{"a": 1}'
    assert _decoded(gzip.compress(body), "gzip", 100) == body
    bomb = gzip.compress(b" " * 10_000_000)  # ~10 kB that decode to 10 MB
    with pytest.raises(ResponseTooLarge):
        _decoded(bomb, "gzip", 1_000_000)
    assert _decoded(body, "identity", 100) == body


def test_a_streamed_answer_is_metered_from_its_deltas_and_usage_chunk() -> None:
    import json

    import httpx2

    from kg.llm.bounded import _account
    from kg.llm.protocol import CallMeter

    def event(body: object) -> str:
        return f"data: {json.dumps(body)}\n\n"

    args = [{"function": {"arguments": "x" * 400}}]
    stream = (
        event({"choices": [{"delta": {"tool_calls": args}}]})
        + event({"choices": [{"delta": {"content": "y" * 400}}]})
        + event({"choices": [], "usage": {"prompt_tokens": 10**30, "completion_tokens": 150}})
        + "data: [DONE]\n\n"
    )
    request = httpx2.Request(
        "POST",
        "http://llm/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "z" * 400}], "stream": True},
    )
    meter = CallMeter()
    _account(request, stream.encode(), meter, streamed=True)
    # 800+ bytes of deltas: ~200 tokens measured, 150 claimed is within 4x and believed;
    # 10^30 prompt tokens for ~100 measured is clamped to 4x the measure
    assert meter.completion_tokens == 150
    assert 400 <= meter.prompt_tokens <= 420
    assert meter.exchanges == 1
    cut = CallMeter()  # a stream cut before its usage chunk: kg's own measure
    _account(request, stream.encode()[:600], cut, streamed=True)
    assert 100 <= cut.completion_tokens <= 110
