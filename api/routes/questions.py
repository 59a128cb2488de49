"""POST /answer and POST /query: questions answered through the LLM, from guarded reads only.

``/answer`` retrieves with local search and has the LLM answer from that context, citing it
(kg/answer/cited.py); with ``"stream": true`` it answers in server-sent events (``delta``
events with the text, then one ``answer`` event with the usual body, or one ``error``
event). ``/query`` has the LLM pick one registry template and its parameters, then runs it
through the guard as ``POST /templates/{name}`` does (kg/answer/nlquery.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import ServerSentEvent
from litestar.response.base import ASGIResponse
from litestar.response.sse import ServerSentEventMessage

from api.errors import reported
from api.routes._docs import SECURED, errors
from kg import (
    AnswerDelta,
    AnswerRequest,
    AnswerResponse,
    AsyncKnowledgeGraph,
    QueryRequest,
    QueryResponse,
)


class QuestionController(Controller):
    path = "/"
    tags = ["questions"]  # noqa: RUF012  (Litestar reads these as class attributes)
    security = SECURED

    @post(
        "/answer",
        operation_id="answer",
        summary="Answer a question, with citations",
        description=(
            "Retrieves context with local search (`mode`, `depth`, `as_of`, `limit`), then "
            "asks the LLM to answer from that context only. Every citation names a chunk or "
            "relation of the returned `context` (an invented one is re-asked); when the "
            "context does not answer the question, `insufficient_context` is true. `usage` "
            "counts LLM calls and tokens (bounded per request by KG_ANSWER__MAX_CALLS and "
            "KG_ANSWER__MAX_TOKENS).\n\n"
            'With `"stream": true` the answer comes as server-sent events '
            '(`text/event-stream`): `delta` events `{"text": ...}` with the answer\'s text '
            "as the LLM writes it, then one `answer` event with the body above, its citations "
            "validated the same way but never re-asked; or, instead of `answer`, one `error` "
            'event `{"status", "error", "detail"}` (an invented citation: 502). '
            "Errors before the first event (the request, its scope, the LLM refusing the "
            "call) are the plain JSON errors below. A client that disconnects stops the LLM call."
        ),
        status_code=200,
        responses=errors(408, 413, 415, 422, 429, 502, 504),
    )
    async def answer(
        self,
        data: JSONBody[AnswerRequest],
        graph: NamedDependency[AsyncKnowledgeGraph],
        request: Request[Any, Any, Any],
    ) -> AnswerResponse:
        if not data.stream:
            return await graph.answer_request(data)
        events = graph.answer_stream_request(data)
        # the first event is awaited here: an error before it is a plain JSON response
        first = await anext(events)
        stream = _EventStream(_sse(request, first, events))
        return stream  # type: ignore[return-value]  # a Response is sent as it is

    @post(
        "/query",
        operation_id="query",
        summary="Run a question as a template",
        description=(
            "The LLM picks one user-facing template (GET /templates) and fills its parameters "
            "(entity names, linked to ids here); it runs read-only through the guard, as "
            "POST /templates/{name} does. The response says which template ran and with "
            "which parameters, so it can be rerun directly. No fitting template, parameters "
            "that never validate, or an unknown entity: 422. The LLM never writes Cypher."
        ),
        status_code=200,
        responses=errors(408, 413, 415, 422, 429, 502, 504),
    )
    async def query(
        self,
        data: JSONBody[QueryRequest],
        graph: NamedDependency[AsyncKnowledgeGraph],
    ) -> QueryResponse:
        return await graph.query_request(data)


class _EventStream(ServerSentEvent):
    """A stream sent as ``text/event-stream``: Litestar lets the handler's media type (JSON,
    for the body the route documents) override the one of a response it returns."""

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:
        kwargs["media_type"] = None
        return super().to_asgi_response(*args, **kwargs)


def _message(event: AnswerDelta | AnswerResponse) -> ServerSentEventMessage:
    kind = "delta" if isinstance(event, AnswerDelta) else "answer"
    return ServerSentEventMessage(data=event.model_dump_json(), event=kind)


async def _sse(
    request: Request[Any, Any, Any],
    first: AnswerDelta | AnswerResponse,
    events: AsyncGenerator[AnswerDelta | AnswerResponse, None],
) -> AsyncGenerator[ServerSentEventMessage, None]:
    """The stream's events; an error after the first one is the last event (a cancelled
    stream, its client gone, closes the LLM's connection as it unwinds)."""
    try:
        yield _message(first)
        async with aclosing(events):
            async for event in events:
                yield _message(event)
    except Exception as exc:
        body, _ = reported(request, exc)
        data = {"status": body.status_code, "error": body.error, "detail": body.detail}
        yield ServerSentEventMessage(data=json.dumps(data), event="error")
