"""The rerank stage (kg.search.rerank) against a hostile or broken endpoint, over real HTTP.

The endpoint is the scripted loopback server of tests/fakererank.py, spoken to through kg's own
client (httpx). Whatever it answers (bad indexes or scores, a body too big, too slow, too deep
or a compression bomb, a redirect, an echo of the API key), the search keeps its fused order,
says why, ends within its bounds and never shows the key.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import math
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from kg.search.models import ChunkHit, RerankOutcome
from kg.search.rerank import MAX_RESPONSE_BYTES, Reranker
from kg.settings import RerankSettings
from tests.fakererank import RerankReply, ScriptedReranker

SECRET = "rerank-key-never-shown"
QUERY = "Where are payments stored in the ledger?"
CHUNKS = [
    ChunkHit(id=f"c{i}", text=t, document_id=f"d{i}", document_path=f"{i}.md", score=1 - i / 10)
    for i, t in enumerate(
        [
            "Couriers deliver orders across the city.",
            "The ledger keeps payments.",
            "Payments are stored in the ledger database.",
            "Nothing relevant here.",
        ]
    )
]
#: What a client may hold while it refuses a body: the bounded body and change, far below the
#: tens or hundreds of MB that the hostile bodies below would take if read or inflated whole.
MEMORY_BOUND = 4 * MAX_RESPONSE_BYTES
MISSING = object()


@pytest.fixture(params=["cohere", "tei"])
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedReranker]:
    with ScriptedReranker(shape=request.param) as scripted:
        yield scripted


def _rerank(server: ScriptedReranker, **fields: Any) -> tuple[list[ChunkHit], RerankOutcome]:
    settings = RerankSettings(
        enabled=True, url=server.url, shape=server.shape, api_key=SECRET, **fields
    )
    return asyncio.run(Reranker(settings).rerank(QUERY, CHUNKS))


def _refused(
    server: ScriptedReranker, reason: str, **fields: Any
) -> tuple[list[ChunkHit], RerankOutcome]:
    """Rerank, and check the fused order stands and the outcome says why, without the secrets."""
    chunks, outcome = _rerank(server, **fields)
    assert chunks == CHUNKS  # the fused order, untouched, no rerank scores
    assert not outcome.applied
    assert outcome.reranked == len(CHUNKS)
    assert outcome.error is not None
    assert reason in outcome.error
    assert SECRET not in outcome.error
    assert server.url not in outcome.error
    return chunks, outcome


def _answer(shape: str, *items: dict[str, Any]) -> Any:
    """A response in ``shape`` from generic ``index``/``score`` items (MISSING: left out)."""
    key = "score" if shape == "tei" else "relevance_score"
    rows = [
        {("index" if k == "index" else key): v for k, v in item.items() if v is not MISSING}
        for item in items
    ]
    return rows if shape == "tei" else {"results": rows}


def _refused_in_bounded_memory(server: ScriptedReranker, reply: RerankReply) -> int:
    """Check ``reply`` is refused as too big, and return the peak of the Python memory (every
    thread's) that took. A good call first, so that first imports do not count."""
    assert _rerank(server)[1].applied
    server.script(reply)
    tracemalloc.start()
    try:
        _refused(server, f"response over {MAX_RESPONSE_BYTES} bytes")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def _last_sent(server: ScriptedReranker) -> int:
    """The body bytes the server got onto the wire for the last answer before the client hung
    up (waiting for the server's thread to notice)."""
    deadline = time.monotonic() + 10
    while len(server.sent) < len(server.requests) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(server.sent) == len(server.requests), "the server never finished its answer"
    return server.sent[-1]


# -- indexes and scores --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "reason"),
    [
        ([{"index": -1, "score": 1}], "index -1 not in 0..3"),
        ([{"index": 4, "score": 1}], "index 4 not in 0..3"),
        ([{"index": 10**30, "score": 1}], f"index {10**30} not in 0..3"),
        ([{"index": 10**400, "score": 1}], "index (a huge integer) not in 0..3"),
        ([{"index": 1, "score": 2}, {"index": 1, "score": 1}], "index 1 scored twice"),
        ([{"index": True, "score": 1}], "index (a boolean) not in 0..3"),
        ([{"index": 1.5, "score": 1}], "index (a float) not in 0..3"),
        ([{"index": 1.0, "score": 1}], "index (a float) not in 0..3"),
        ([{"index": "1", "score": 1}], "index (a string) not in 0..3"),
        ([{"index": [1], "score": 1}], "index (a list) not in 0..3"),
        ([{"index": None, "score": 1}], "index (null or missing) not in 0..3"),
        ([{"index": MISSING, "score": 1}], "index (null or missing) not in 0..3"),
        ([{"index": 0, "score": math.nan}], "of index 0 not a number"),
        ([{"index": 0, "score": math.inf}], "of index 0 not a number"),
        ([{"index": 0, "score": -math.inf}], "of index 0 not a number"),
        ([{"index": 0, "score": "0.9"}], "of index 0 not a number"),
        ([{"index": 0, "score": True}], "of index 0 not a number"),
        ([{"index": 0, "score": None}], "of index 0 not a number"),
        ([{"index": 0, "score": MISSING}], "of index 0 not a number"),
        ([{"index": 0, "score": 10**400}], "of index 0 not a number"),
        ([{"index": i, "score": 1} for i in range(5)], "5 scores for 4 documents"),
        # A good score first does not save a bad one after it.
        ([{"index": 0, "score": 1}, {"index": 7, "score": 0.5}], "index 7 not in 0..3"),
    ],
)
def test_bad_indexes_and_scores_leave_the_order(
    server: ScriptedReranker, items: list[dict[str, Any]], reason: str
) -> None:
    server.script(RerankReply(payload=_answer(server.shape, *items)))
    _refused(server, reason)


@pytest.mark.parametrize(
    "payload",
    ["a string", 42, None, True, {}, [], {"results": {"0": 1}}, {"results": None}, [[0, 1.0]]],
)
def test_a_top_level_value_of_the_wrong_type_leaves_the_order(
    server: ScriptedReranker, payload: Any
) -> None:
    if server.shape == "cohere" and isinstance(payload, list) and payload:
        payload = {"results": payload}  # the same wrong items, in the cohere envelope
    server.script(RerankReply(payload=payload))
    _refused(server, "malformed response")


def test_an_answer_in_the_other_shape_leaves_the_order(server: ScriptedReranker) -> None:
    other = "cohere" if server.shape == "tei" else "tei"
    server.script(RerankReply(payload=_answer(other, {"index": 0, "score": 1})))
    _refused(server, "malformed response")


@pytest.mark.parametrize("depth", [100_000, 1_000_000])
def test_a_deeply_nested_body_leaves_the_order(server: ScriptedReranker, depth: int) -> None:
    # Under the size bound, but deeper than the JSON parser can recurse.
    body = _answer(server.shape, {"index": 0, "score": 1})
    text = json.dumps(body).replace("1}", '1, "document": ' + "[" * depth + "]" * depth + "}")
    assert len(text) < MAX_RESPONSE_BYTES
    server.script(RerankReply(raw_body=text))
    _refused(server, "nested too deeply")


# -- the API key -----------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["index", "score", "top", "status"])
def test_an_endpoint_echoing_the_key_never_gets_it_shown_or_logged(
    server: ScriptedReranker, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = f"Bearer {SECRET}"
    replies = {
        "index": RerankReply(payload=_answer(server.shape, {"index": key, "score": 1})),
        "score": RerankReply(payload=_answer(server.shape, {"index": 0, "score": key})),
        "top": RerankReply(payload=key),
        "status": RerankReply(status=401, payload={"error": f"bad key {key}"}),
    }
    server.script(replies[where])
    with caplog.at_level(logging.DEBUG):
        _refused(server, "")
    assert server.headers[0]["Authorization"] == key  # it was sent, so it could be echoed
    assert caplog.records  # the failure is logged ...
    assert SECRET not in caplog.text  # ... without the key, by kg, httpx or httpcore
    assert SECRET not in repr([r.__dict__ for r in caplog.records])


# -- size, time and compression bounds -----------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
def test_a_huge_body_is_refused_at_the_bound_without_reading_it_all(
    server: ScriptedReranker, chunked: bool
) -> None:
    huge = 40 * 1024 * 1024
    head = json.dumps(_answer(server.shape, {"index": 0, "score": 1})).encode()
    body = head + b" " * (huge - len(head))  # valid JSON, were it read to the end
    peak = _refused_in_bounded_memory(server, RerankReply(raw_body=body, chunked=chunked))
    assert peak < MEMORY_BOUND
    assert _last_sent(server) < huge // 2  # the client hung up, it did not drain the rest


def test_a_body_trickled_past_the_timeout_ends_at_the_timeout(server: ScriptedReranker) -> None:
    # One byte every 50 ms: no read waits long, but the whole answer would take over 4 s.
    body = json.dumps(_answer(server.shape, *({"index": i, "score": 1} for i in range(4))))
    assert len(body) * 0.05 > 4
    server.script(RerankReply(raw_body=body, trickle_s=0.05))
    started = time.monotonic()
    _, outcome = _refused(server, "no answer within 0.5 s", timeout_s=0.5)
    assert time.monotonic() - started < 2
    assert outcome.took_ms is not None
    assert 450 < outcome.took_ms < 2000


def _bomb(prefix: bytes, size: int, layers: list[str]) -> bytes:
    """``prefix`` then spaces up to ``size`` bytes, compressed by each of ``layers`` in turn."""
    data = b""
    for layer in layers:
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 31 if layer == "gzip" else 15)
        if not data:  # the innermost layer, streamed: the plain body is never built
            parts = [squeeze.compress(prefix)]
            block = b" " * (1024 * 1024)
            parts += [squeeze.compress(block) for _ in range((size - len(prefix)) // len(block))]
        else:
            parts = [squeeze.compress(data)]
        data = b"".join([*parts, squeeze.flush()])
    return data


@pytest.mark.parametrize(
    "layers", [["gzip"], ["deflate"], ["gzip", "gzip"]], ids=["gzip", "deflate", "gzip-of-gzip"]
)
def test_a_compression_bomb_is_not_inflated_past_the_bound(
    server: ScriptedReranker, layers: list[str]
) -> None:
    prefix = json.dumps(_answer(server.shape, {"index": 0, "score": 1})).encode()
    bomb = _bomb(prefix, 256 * 1024 * 1024, layers)
    assert len(bomb) < MAX_RESPONSE_BYTES  # small on the wire: only inflating it is the risk
    # The header lists the codings in the order they were applied.
    encoding = ", ".join(layers)
    reply = RerankReply(raw_body=bomb, headers={"Content-Encoding": encoding})
    assert _refused_in_bounded_memory(server, reply) < MEMORY_BOUND


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "identity"])
def test_a_compressed_good_answer_is_read(server: ScriptedReranker, encoding: str) -> None:
    plain = json.dumps(_answer(server.shape, {"index": 3, "score": 2}, {"index": 1, "score": 1}))
    body = {
        "gzip": gzip.compress(plain.encode(), mtime=0),
        "deflate": zlib.compress(plain.encode()),
        "identity": plain.encode(),
    }[encoding]
    server.script(RerankReply(raw_body=body, headers={"Content-Encoding": encoding}))
    chunks, outcome = _rerank(server)
    assert outcome.applied, outcome.error
    assert [c.id for c in chunks] == ["c3", "c1", "c0", "c2"]


@pytest.mark.parametrize(
    ("encoding", "body", "reason"),
    [
        ("gzip", b'{"results": []}', "compressed body is corrupt"),  # says gzip, is not
        ("gzip", gzip.compress(b'{"results": []}', mtime=0)[:-12], "compressed body is corrupt"),
        ("br", b"\x0b\x02\x80[]\x03", "Content-Encoding is not supported"),
        (f"x-{SECRET}", b"[]", "Content-Encoding is not supported"),
    ],
)
def test_a_bad_or_unknown_compression_leaves_the_order(
    server: ScriptedReranker, encoding: str, body: bytes, reason: str
) -> None:
    server.script(RerankReply(raw_body=body, headers={"Content-Encoding": encoding}))
    _refused(server, reason)


# -- HTTP misbehaviour ---------------------------------------------------------------------


def test_a_redirect_is_not_followed_and_the_key_stays_home(server: ScriptedReranker) -> None:
    with ScriptedReranker(shape=server.shape) as elsewhere:
        server.script(RerankReply(status=307, headers={"Location": elsewhere.url}))
        _refused(server, "the endpoint answered HTTP 307")
        assert elsewhere.requests == []


def test_a_huge_header_leaves_the_order(server: ScriptedReranker) -> None:
    server.script(RerankReply(payload=[], headers={"X-Padding": "x" * 200_000}))
    _refused(server, "request failed (RemoteProtocolError)")


def test_a_body_cut_short_leaves_the_order(server: ScriptedReranker) -> None:
    headers = {"Content-Length": "1000", "Connection": "close"}
    server.script(RerankReply(raw_body='{"results": [', headers=headers))
    _refused(server, "request failed (RemoteProtocolError)", timeout_s=5)
