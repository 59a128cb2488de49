"""POST /answer and POST /query: questions answered through the LLM, from guarded reads only.

``/answer`` retrieves with local search and has the LLM answer from that context, citing it
(kg/answer/cited.py); ``/query`` has the LLM pick one registry template and its parameters, then
runs it through the guard as ``POST /templates/{name}`` does (kg/answer/nlquery.py).
"""

from __future__ import annotations

from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from api.routes._docs import SECURED, errors
from kg import AnswerRequest, AnswerResponse, AsyncKnowledgeGraph, QueryRequest, QueryResponse


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
            "KG_ANSWER__MAX_TOKENS)."
        ),
        status_code=200,
        responses=errors(408, 413, 415, 422, 429, 502, 504),
    )
    async def answer(
        self,
        data: JSONBody[AnswerRequest],
        graph: NamedDependency[AsyncKnowledgeGraph],
    ) -> AnswerResponse:
        return await graph.answer_request(data)

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
