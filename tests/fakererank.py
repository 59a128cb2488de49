"""A scripted rerank HTTP server on loopback: the rerank endpoint's stand-in for tests.

No reranking model runs here, so tests talk to this server through kg's real client
(:mod:`kg.search.rerank`, over httpx). It speaks ``POST /rerank`` in both shapes in use:

- ``cohere`` (Cohere, Jina, vLLM, llama.cpp server): ``{model?, query, documents, top_n?}`` ->
  ``{"results": [{"index", "relevance_score"}]}``, best first, ``top_n`` of them;
- ``tei`` (text-embeddings-inference): ``{query, texts}`` -> ``[{"index", "score"}]``.

Each request is answered by the next scripted :class:`RerankReply` or, when the script is
empty, by scoring every document with ``score(query, document)`` (by default: how many of the
query's words it contains). HTTP, JSON, status codes and timing are real. A hostile endpoint is
scripted too: any bytes as the body, any headers (a ``Content-Encoding`` it did not apply),
chunked framing, or a body trickled a byte at a time; ``sent`` counts the body bytes each
answer got onto the wire before the client hung up.

Usage::

    with ScriptedReranker(shape="tei") as server:
        server.script(RerankReply(status=500))
        settings = RerankSettings(enabled=True, url=server.url, shape="tei")
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal


@dataclass
class RerankReply:
    """One scripted answer: ``payload`` is JSON-encoded, ``raw_body`` sent verbatim.

    ``headers`` are added to (or replace) the defaults; ``chunked`` sends the body in chunked
    framing with no ``Content-Length``; ``trickle_s`` pauses before each byte of the body."""

    payload: Any = None
    status: int = 200
    raw_body: str | bytes | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = False
    trickle_s: float = 0.0


def word_overlap(query: str, document: str) -> float:
    """Default score: the query's distinct words found in the document."""
    words = set(re.findall(r"\w+", query.lower()))
    return float(len(words & set(re.findall(r"\w+", document.lower()))))


@dataclass
class ScriptedReranker:
    """Threaded loopback server; use as a context manager."""

    shape: Literal["cohere", "tei"] = "cohere"
    score: Callable[[str, str], float] = word_overlap
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    _queue: deque[RerankReply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/rerank"

    def script(self, *replies: RerankReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def answer(self, request: dict[str, Any]) -> Any:
        """The scored answer in this server's shape."""
        texts = request.get("texts" if self.shape == "tei" else "documents") or []
        scored = sorted(
            ((i, self.score(str(request.get("query", "")), str(t))) for i, t in enumerate(texts)),
            key=lambda pair: -pair[1],
        )
        if self.shape == "tei":
            return [{"index": i, "score": s} for i, s in scored]
        top_n = request.get("top_n") or len(scored)
        return {
            "id": "scripted",
            "model": request.get("model", "scripted"),
            "results": [{"index": i, "relevance_score": s} for i, s in scored[:top_n]],
        }

    def __enter__(self) -> ScriptedReranker:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                # A client that hung up between requests is no error of the server's.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    owner.headers.append(dict(self.headers))
                    reply = owner._queue.popleft() if owner._queue else None
                if reply is None:
                    reply = RerankReply(payload=owner.answer(body))
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if isinstance(reply.raw_body, bytes):
                    data = reply.raw_body
                elif reply.raw_body is not None:
                    data = reply.raw_body.encode()
                else:
                    data = json.dumps(reply.payload).encode()
                sent = 0
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json"}
                    if reply.chunked:
                        headers["Transfer-Encoding"] = "chunked"
                    else:
                        headers["Content-Length"] = str(len(data))
                    for name, value in {**headers, **reply.headers}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    step = 1 if reply.trickle_s else 64 * 1024
                    view = memoryview(data)
                    for start in range(0, len(data), step):
                        part = view[start : start + step]
                        if reply.trickle_s:
                            time.sleep(reply.trickle_s)
                        if reply.chunked:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        else:
                            self.wfile.write(part)
                        sent += len(part)
                    if reply.chunked:
                        self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout and size tests)
                finally:
                    with owner._lock:
                        owner.sent.append(sent)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
