"""A scripted OpenAI-compatible HTTP server on loopback: the LLM stand-in for tests.

No machine here can reach a real LLM, so tests talk to this server through the real
``openai`` and ``instructor`` clients. It speaks ``POST /v1/chat/completions`` and
``POST /v1/embeddings`` and nothing else is faked: HTTP, JSON, status codes and timing are real.

Each request is answered by the next scripted :class:`Reply` or, when the script is empty, by
the ``responder`` callable (request JSON -> Reply). A Reply's ``payload`` is what the model
"says": a dict is JSON-encoded. When the request offers tools, the payload is returned as a
tool call to the first tool (instructor's TOOLS mode); otherwise as message content (JSON modes).

Usage::

    with ScriptedLLM() as llm:
        llm.script(Reply(status=429), Reply(payload={"entities": [], "relations": []}))
        client = openai.OpenAI(base_url=llm.base_url, api_key="test")
        ...
        assert llm.calls == 2
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
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


@dataclass
class ScriptedLLM:
    """Threaded loopback server; use as a context manager."""

    responder: Callable[[dict[str, Any]], Reply] | None = None
    #: Optional ``(text, dimensions) -> vector`` for ``/v1/embeddings`` (a scripted multilingual
    #: model); unset, vectors are hash-derived.
    embed: Callable[[str, int], list[float]] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
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

    def __enter__(self) -> ScriptedLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

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
                self._send(reply, body)

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
