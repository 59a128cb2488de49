"""A scripted OpenAI-compatible HTTP server on loopback: the LLM stand-in for tests.

No machine here can reach a real LLM, so tests talk to this server through the real
``openai`` and ``instructor`` clients. It speaks ``POST /v1/chat/completions`` and
``POST /v1/embeddings`` and nothing else is faked: HTTP, JSON, status codes and timing are real.

Each request is answered by the next scripted :class:`Reply` or, when the script is empty, by
the ``responder`` callable (request JSON -> Reply). A Reply's ``payload`` is what the model
"says": a dict is JSON-encoded. When the request offers tools, the payload is returned as a
tool call to the first tool (instructor's TOOLS mode); otherwise as message content (JSON modes).

A request with ``"stream": true`` is answered with server-sent chat-completion chunks, as
OpenAI streams: the payload's text in pieces of ``chunk_chars`` (``chunk_delay_s`` apart), a
last chunk with the finish reason, a ``usage`` chunk when the request asked for it
(``stream_options.include_usage``), then ``data: [DONE]``. ``stream_forever`` keeps sending
empty chunks after the text instead of ending (each with ``padding`` bytes beside the delta,
which no parser reads but every byte bound counts). ``streams_cut`` counts the streams whose
client closed the connection before the end; ``stream_cut`` is set when one does.

Usage::

    with ScriptedLLM() as llm:
        llm.script(Reply(status=429), Reply(payload={"entities": [], "relations": []}))
        client = openai.OpenAI(base_url=llm.base_url, api_key="test")
        ...
        assert llm.calls == 2
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    payload: Any = None
    status: int = 200
    delay_s: float = 0.0
    raw_body: str | None = None  # sent verbatim (e.g. broken JSON at the HTTP level)
    prompt_tokens: int = 50
    completion_tokens: int = 20
    chunk_chars: int = 12  # streamed: the text in pieces of this many characters
    chunk_delay_s: float = 0.0  # streamed: the pause before each piece
    stream_forever: bool = False  # streamed: after the text, empty chunks until the client goes
    padding: int = 0  # streamed: bytes of an unread field in every chunk


@dataclass
class ScriptedLLM:
    """Threaded loopback server; use as a context manager."""

    responder: Callable[[dict[str, Any]], Reply] | None = None
    #: Optional ``(text, dimensions) -> vector`` for ``/v1/embeddings`` (a scripted multilingual
    #: model); unset, vectors are hash-derived.
    embed: Callable[[str, int], list[float]] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    streams_cut: int = 0
    stream_cut: threading.Event = field(default_factory=threading.Event)
    _queue: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def calls(self) -> int:
        """Chat-completion requests received (embeddings excluded)."""
        with self._lock:
            return sum(1 for r in self.requests if r.get("_path", "").endswith("/completions"))

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.streams_cut = 0
            self.stream_cut.clear()

    def __enter__(self) -> ScriptedLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                # the client dropped a kept-alive connection (e.g. after a stream it cut)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_path"] = self.path
                with owner._lock:
                    owner.requests.append(body)
                    reply = owner._queue.popleft() if owner._queue else None
                if reply is None:
                    if self.path.endswith("/embeddings"):
                        reply = Reply(payload=None)
                    elif owner.responder is not None:
                        reply = owner.responder(body)
                    else:
                        reply = Reply(status=500, payload={"error": "script exhausted"})
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if body.get("stream") is True and reply.status < 400 and reply.raw_body is None:
                    self._stream(reply, body)
                else:
                    self._send(reply, body)

            def _stream(self, reply: Reply, request: dict[str, Any]) -> None:
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for event in _chunks(reply, request):
                        data = f"data: {json.dumps(event)}\n\n".encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    with owner._lock:
                        owner.streams_cut += 1
                    owner.stream_cut.set()
                    self.close_connection = True

            def _send(self, reply: Reply, request: dict[str, Any]) -> None:
                if reply.raw_body is not None:
                    data = reply.raw_body.encode()
                elif reply.status >= 400:
                    data = json.dumps(
                        {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
                    ).encode()
                elif self.path.endswith("/embeddings"):
                    data = json.dumps(_embeddings(request, owner.embed)).encode()
                else:
                    data = json.dumps(_completion(reply, request)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _completion(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    content = reply.payload if isinstance(reply.payload, str) else json.dumps(reply.payload)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    finish = "stop"
    tools = request.get("tools") or []
    if tools:
        name = tools[0]["function"]["name"]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_scripted",
                    "type": "function",
                    "function": {"name": name, "arguments": content},
                }
            ],
        }
        finish = "tool_calls"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _chunks(reply: Reply, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The chat-completion chunks of a streamed answer (see the module docstring)."""
    content = reply.payload if isinstance(reply.payload, str) else json.dumps(reply.payload)
    tools = request.get("tools") or []
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": request.get("model", "scripted")}  # fmt: skip
    extra = {"padding": "p" * reply.padding} if reply.padding else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**base, "choices": [choice], **extra}

    if tools:
        name = tools[0]["function"]["name"]
        call = {"index": 0, "id": "call_scripted", "type": "function",
                "function": {"name": name, "arguments": ""}}  # fmt: skip
        yield chunk({"role": "assistant", "content": None, "tool_calls": [call]})
    else:
        yield chunk({"role": "assistant", "content": ""})
    step = max(1, reply.chunk_chars)
    for start in range(0, len(content), step):
        if reply.chunk_delay_s:
            time.sleep(reply.chunk_delay_s)
        piece = content[start : start + step]
        if tools:
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        else:
            yield chunk({"content": piece})
    while reply.stream_forever:
        time.sleep(reply.chunk_delay_s or 0.02)
        yield chunk({})
    yield chunk({}, "tool_calls" if tools else "stop")
    if (request.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                 "total_tokens": reply.prompt_tokens + reply.completion_tokens}  # fmt: skip
        yield {**base, "choices": [], "usage": usage}


def _embeddings(
    request: dict[str, Any], embed: Callable[[str, int], list[float]] | None = None
) -> dict[str, Any]:
    """Deterministic pseudo-embeddings (enough to exercise the OpenAI embeddings client), or
    ``embed``'s."""
    import hashlib

    inputs = request.get("input") or []
    if isinstance(inputs, str):
        inputs = [inputs]
    dim = int(request.get("dimensions") or 16)
    data = []
    for i, text in enumerate(inputs):
        if embed is not None:
            data.append({"object": "embedding", "index": i, "embedding": embed(str(text), dim)})
            continue
        digest = hashlib.sha256(str(text).lower().encode()).digest()
        vec = [((digest[j % len(digest)] / 255.0) - 0.5) for j in range(dim)]
        data.append({"object": "embedding", "index": i, "embedding": vec})
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", "scripted"),
        "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
    }
