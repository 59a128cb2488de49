"""The rerank stage's settings, request bodies and strict response check (kg.search.rerank).

The HTTP path runs against a scripted loopback server in tests/integration/test_rerank.py.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from pydantic import ValidationError

from kg.search.rerank import MAX_RESPONSE_BYTES, RerankFailed, decoded, parse_scores, request_body
from kg.settings import RerankSettings, Settings


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_rerank_is_off_by_default() -> None:
    rerank = Settings().search.rerank
    assert rerank.enabled is False
    assert rerank.url is None
    assert rerank.api_key is None
    assert (rerank.shape, rerank.top_n, rerank.timeout_s) == ("cohere", 20, 5.0)


def test_rerank_settings_come_from_nested_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_SEARCH__RERANK__ENABLED", "true")
    monkeypatch.setenv("KG_SEARCH__RERANK__URL", "http://127.0.0.1:8080/rerank")
    monkeypatch.setenv("KG_SEARCH__RERANK__API_KEY", "rerank-secret-key")
    monkeypatch.setenv("KG_SEARCH__RERANK__SHAPE", "tei")
    monkeypatch.setenv("KG_SEARCH__RERANK__TOP_N", "7")
    monkeypatch.setenv("KG_SEARCH__RERANK__TIMEOUT_S", "1.5")
    monkeypatch.setenv("KG_SEARCH__RERANK__MAX_DOC_CHARS", "300")
    monkeypatch.setenv("KG_SEARCH__RERANK__MODEL", "bge-reranker-v2-m3")
    monkeypatch.setenv("KG_SEARCH__FANOUT", "40")  # the section's other fields still read
    s = Settings()
    rerank = s.search.rerank
    assert rerank.enabled
    assert rerank.url == "http://127.0.0.1:8080/rerank"
    assert rerank.api_key is not None
    assert rerank.api_key.get_secret_value() == "rerank-secret-key"
    assert "rerank-secret-key" not in repr(s)
    assert (rerank.shape, rerank.top_n, rerank.timeout_s, rerank.max_doc_chars) == (
        "tei",
        7,
        1.5,
        300,
    )
    assert rerank.model == "bge-reranker-v2-m3"
    assert s.search.fanout == 40


@pytest.mark.parametrize(
    "fields",
    [
        {"enabled": True},  # no URL
        {"enabled": True, "url": "ftp://host/rerank"},
        {"url": "http://h/rerank", "top_n": 0},
        {"url": "http://h/rerank", "top_n": 201},
        {"url": "http://h/rerank", "timeout_s": 0},
        {"url": "http://h/rerank", "shape": "openai"},
        {"url": "http://h/rerank", "max_doc_chars": 10},
    ],
)
def test_bad_rerank_settings_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RerankSettings.model_validate(fields)


def test_request_bodies_in_both_shapes() -> None:
    cohere = RerankSettings(url="http://h/rerank", model="jina-reranker-v2")
    assert request_body(cohere, "q", ["a", "b"]) == {
        "query": "q",
        "documents": ["a", "b"],
        "top_n": 2,
        "model": "jina-reranker-v2",
    }
    assert "model" not in request_body(RerankSettings(url="http://h/rerank"), "q", ["a"])
    tei = RerankSettings(url="http://h/rerank", shape="tei", model="ignored")
    assert request_body(tei, "q", ["a", "b"]) == {"query": "q", "texts": ["a", "b"]}


def _body(value: object) -> bytes:
    return json.dumps(value).encode()


def test_scores_are_read_by_index_in_both_shapes() -> None:
    cohere = {"results": [{"index": 2, "relevance_score": 0.9, "document": {"text": "c"}}]}
    assert parse_scores("cohere", _body(cohere), 3) == {2: 0.9}
    tei = [{"index": 1, "score": 3}, {"index": 0, "score": -1.5}]
    assert parse_scores("tei", _body(tei), 2) == {1: 3.0, 0: -1.5}


@pytest.mark.parametrize(
    ("shape", "body", "reason"),
    [
        ("cohere", b"not json", "not JSON"),
        ("cohere", b"\xff\xfe", "not JSON"),
        ("cohere", _body([{"index": 0, "score": 1}]), "results"),  # the tei shape
        ("tei", _body({"results": [{"index": 0, "relevance_score": 1}]}), "list"),
        ("cohere", _body({"results": []}), "results"),
        ("cohere", _body({"results": [{"index": 3, "relevance_score": 1}]}), "index 3"),
        ("cohere", _body({"results": [{"index": -1, "relevance_score": 1}]}), "index -1"),
        ("cohere", _body({"results": [{"index": "0", "relevance_score": 1}]}), r"index \(a string"),
        ("cohere", _body({"results": [{"index": True, "relevance_score": 1}]}), r"index \(a bool"),
        ("cohere", _body({"results": [{"index": 1.0, "relevance_score": 1}]}), r"index \(a float"),
        ("cohere", _body({"results": [{"index": 10**400, "relevance_score": 1}]}), "a huge int"),
        ("cohere", _body({"results": [{"relevance_score": 1}]}), r"index \(null or missing"),
        ("cohere", _body({"results": ["x"]}), r"index \(null or missing"),
        ("cohere", _body("x"), "results"),
        ("tei", _body(None), "list"),
        ("tei", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (
            "cohere",
            _body({"results": [{"index": 0, "relevance_score": 1}] * 2}),
            "scored twice",
        ),
        (
            "cohere",
            _body({"results": [{"index": i, "relevance_score": 1} for i in range(4)]}),
            "4 scores for 3",
        ),
        ("cohere", b'{"results": [{"index": 0, "relevance_score": NaN}]}', "not a number"),
        ("tei", b'[{"index": 0, "score": Infinity}]', "not a number"),
        ("tei", b'[{"index": 0, "score": -Infinity}]', "not a number"),
        ("tei", _body([{"index": 0, "score": False}]), "not a number"),
        ("tei", _body([{"index": 0, "score": "0.5"}]), "not a number"),
        ("tei", _body([{"index": 0, "score": None}]), "not a number"),
        ("tei", _body([{"index": 0, "score": 10**400}]), "not a number"),
        ("tei", _body([{"index": 0, "relevance_score": 0.5}]), "not a number"),
    ],
)
def test_malformed_responses_are_refused(shape: str, body: bytes, reason: str) -> None:
    with pytest.raises(RerankFailed, match=reason):
        parse_scores(shape, body, 3)


def test_an_index_the_endpoint_wrote_is_never_quoted() -> None:
    # The endpoint was sent the key, so its text may carry it: a bad index shows only its type.
    for index in ["Bearer rerank-secret-key", ["rerank-secret-key"], {"k": "rerank-secret-key"}]:
        with pytest.raises(RerankFailed) as raised:
            parse_scores("tei", _body([{"index": index, "score": 1}]), 3)
        assert "rerank-secret-key" not in str(raised.value)


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _raw_deflate(data: bytes) -> bytes:
    squeeze = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return squeeze.compress(data) + squeeze.flush()


@pytest.mark.parametrize(
    ("codings", "body"),
    [
        ([], b"[]"),
        (["identity"], b"[]"),
        (["gzip"], _gzip(b"[]")),
        (["x-gzip"], _gzip(b"[]")),
        (["GZip "], _gzip(b"[]")),
        (["deflate"], zlib.compress(b"[]")),
        (["deflate"], _raw_deflate(b"[]")),
        (["deflate", "gzip"], _gzip(zlib.compress(b"[]"))),  # applied in this order
    ],
)
def test_content_codings_are_undone(codings: list[str], body: bytes) -> None:
    assert decoded(codings, body).strip() == b"[]"


def test_a_body_inflating_to_exactly_the_bound_is_kept() -> None:
    assert decoded(["gzip"], _gzip(b" " * MAX_RESPONSE_BYTES)) == b" " * MAX_RESPONSE_BYTES


@pytest.mark.parametrize(
    ("codings", "body", "reason"),
    [
        (["gzip"], _gzip(b" " * (MAX_RESPONSE_BYTES + 1)), "response over"),
        (["gzip", "gzip"], _gzip(_gzip(b" " * (8 * MAX_RESPONSE_BYTES))), "response over"),
        (["deflate"], zlib.compress(b" " * (MAX_RESPONSE_BYTES + 1)), "response over"),
        (["gzip"], b"[]", "corrupt"),
        (["gzip"], _gzip(b"[]")[:-4], "corrupt"),  # cut short
        (["gzip"], _gzip(b"[]") + b"junk", "corrupt"),
        (["deflate"], b"\xff\xfe", "corrupt"),
        (["gzip", "gzip"], _gzip(b"[]"), "corrupt"),  # one layer short
        (["br"], b"[]", "not supported"),
        (["compress"], b"[]", "not supported"),
        (["rerank-secret-key"], b"[]", "not supported"),
    ],
)
def test_bad_or_oversized_codings_are_refused(codings: list[str], body: bytes, reason: str) -> None:
    with pytest.raises(RerankFailed, match=reason) as raised:
        decoded(codings, body)
    assert "rerank-secret-key" not in str(raised.value)
