"""The MCP tools: search, answer, get_entity, neighborhood, list_templates, run_template.

Each tool calls the library surface (:class:`kg.AsyncKnowledgeGraph`), so an agent gets
exactly the guarded, read-only behaviour of REST: the same request models and bounds, the same
templates through the same guard. kg errors reach the agent as tool errors with kg's message
(a caller mistake names the field); anything else is reported by the SDK as a bare failure.
Every result is JSON of at most :data:`MAX_RESULT_CHARS` characters: the longest lists are
cut (and ``truncated_for_size`` set) until it fits.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Sequence
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from kg import (
    MAX_DEPTH,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MIN_DEPTH,
    AnswerDelta,
    AnswerMode,
    AnswerRequest,
    AnswerResponse,
    AsyncKnowledgeGraph,
    KGError,
    Mode,
    RoutedRequest,
    observe,
)
from kg import AsOf as AsOfType
from kg.errors import validation_errors
from kg_mcp.arguments import plain_sentence

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: The largest JSON text one tool result may have.
MAX_RESULT_CHARS = 60_000
TOOL_NAMES = (
    "search",
    "answer",
    "get_entity",
    "neighborhood",
    "list_templates",
    "run_template",
    "list_namespaces",
)

INSTRUCTIONS = """\
kg is a temporal knowledge graph built from a team's documents (services, teams, owners, \
dependencies, incidents, with dates). Start with `search` (entities, dated relations and the \
document chunks behind them) or `answer` (a cited answer, or a plain "insufficient context"). \
Use `get_entity` and `neighborhood` with ids from those results. For exact structured questions \
(who owned X at a date, paths between two entities) use `list_templates` and `run_template`. \
Everything is read-only."""

Question = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The question, in plain words."),
]
_MODES = (
    "text: chunks by words (BM25); vector: chunks by meaning; graph: entities linked from the "
    "question, expanded through relations, and their passages; hybrid: the three fused."
)
SearchModeArg = Annotated[
    Mode,
    Field(
        description="auto (default): the router picks text, hybrid, graph or global for the "
        f"question, as `kg search` and POST /search do; {_MODES}; global: community reports "
        "(after `kg communities build`)."
    ),
]
AnswerModeArg = Annotated[
    AnswerMode,
    Field(
        description="auto (default): the router picks text, vector, graph or hybrid for the "
        f"question, as `kg search` and POST /answer do; {_MODES}"
    ),
]
Depth = Annotated[
    int, Field(ge=MIN_DEPTH, le=MAX_DEPTH, description="Hops to expand from matched entities.")
]
AsOf = Annotated[
    str | None,
    Field(
        description="ISO date or datetime: only facts valid then (e.g. 2023-06-30). Default: now."
    ),
]
EntityId = Annotated[
    str,
    Field(min_length=1, max_length=256, description="An entity `id` from search or another tool."),
]
Namespaces = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=1024)]] | None,
    Field(
        min_length=1,
        max_length=50,
        description="Keep to these namespaces (from list_namespaces); default: every one this "
        "connection may read.",
    ),
]
_READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True)


def bounded(data: Any, limit: int = MAX_RESULT_CHARS) -> dict[str, Any]:
    """``data`` as a JSON object of at most ``limit`` characters (longest lists halved)."""
    out: dict[str, Any] = data if isinstance(data, dict) else {"items": data}
    while len(json.dumps(out, default=str)) > limit:
        lists = list(_lists(out))
        if not lists:
            return {"truncated_for_size": True, "detail": "result too large; narrow the call"}
        holder, key = max(lists, key=lambda hk: len(json.dumps(hk[0][hk[1]], default=str)))
        items = holder[key]
        holder[key] = items[: len(items) // 2]
        out["truncated_for_size"] = True
    return out


def _lists(node: Any) -> Any:
    """(container, key) of every non-empty list inside ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, list) and value:
                yield node, key
            yield from _lists(value)
    elif isinstance(node, list):
        for item in node:
            yield from _lists(item)


async def _call(call: Awaitable[T]) -> T:
    try:
        return await call
    except KGError as exc:  # kg's messages are for callers: they name the field, no secrets
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def _dump(model: BaseModel | Sequence[BaseModel]) -> dict[str, Any]:
    if not isinstance(model, BaseModel):
        return bounded([m.model_dump(mode="json") for m in model])
    return bounded(model.model_dump(mode="json"))


#: the names AsyncKnowledgeGraph.run_template takes besides the template's parameters
_RUN_TEMPLATE_OWN = frozenset(
    name
    for name, p in inspect.signature(AsyncKnowledgeGraph.run_template).parameters.items()
    if p.kind is not inspect.Parameter.VAR_KEYWORD
)


class ArgumentError(ToolError):
    """An argument the tool's own checks refused (past the schema): one plain sentence."""


class KgServer(MCPServer[Any]):
    """The SDK's server, answering refused arguments in one plain sentence
    (:mod:`kg_mcp.arguments`) instead of pydantic's report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        # one span per tool call, continuing an HTTP caller's traceparent (kg.observe)
        with observe.server_span("kg.mcp.tool", _headers(context), tool=name):
            return await self._call_tool(name, arguments, context)

    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Any) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ArgumentError):  # without the SDK's "Error executing tool"
                raise ToolError(str(cause)) from cause
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            tool = next((t for t in await self.list_tools() if t.name == name), None)
            schema = tool.input_schema if tool is not None else {}
            raise ToolError(plain_sentence(name, cause, schema)) from cause


def _headers(context: Any) -> dict[str, str] | None:
    """The HTTP headers of the request a tool call came in (None over stdio)."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):
        return None
    headers = getattr(request, "headers", None)
    return dict(headers) if headers is not None else None


def build_server(graph: AsyncKnowledgeGraph) -> MCPServer[Any]:
    """The MCP server over an opened graph (the caller owns its lifetime)."""
    server: MCPServer[Any] = KgServer(
        name="kg", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING"
    )

    @server.tool(annotations=_READ_ONLY)
    async def search(
        query: Question,
        mode: SearchModeArg = "auto",
        depth: Depth = 2,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Most items per list.")] = 10,
        as_of: AsOf = None,
        namespaces: Namespaces = None,
    ) -> dict[str, Any]:
        """Search the knowledge graph. The result says which mode ran and why (`mode`,
        `reason`); a local mode's ranked entities, relations (with validity dates) and
        supporting document chunks are under `local`, global search's answer under
        `global_search`: POST /search's body. Use it first, to find entity ids and context."""
        request = _valid(
            "search",
            RoutedRequest,
            {"query": query, "mode": mode, "depth": depth, "limit": limit, "as_of": as_of,
             "namespaces": namespaces},
        )  # fmt: skip
        return _dump(await _call(graph.routed_search(request)))

    @server.tool(annotations=_READ_ONLY)
    async def answer(
        question: Question,
        mode: AnswerModeArg = "auto",
        depth: Depth = 2,
        limit: Annotated[int, Field(ge=1, le=50, description="Context chunks/relations.")] = 10,
        as_of: AsOf = None,
        namespaces: Namespaces = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Answer a question from the graph's retrieved context only, with citations (chunk
        and relation ids from the returned context). When the context does not answer it,
        `insufficient_context` is true: do not guess beyond it. Costs LLM calls (see usage).
        With a progress token, the answer's text is reported as progress while it is written."""
        request = _valid(
            "answer",
            AnswerRequest,
            {"question": question, "mode": mode, "depth": depth, "limit": limit, "as_of": as_of,
             "namespaces": namespaces},
        )  # fmt: skip
        if ctx is None or not _wants_progress(ctx):
            return _dump(await _call(graph.answer_request(request)))
        return _dump(await _call(_streamed(graph, request, ctx)))

    @server.tool(annotations=_READ_ONLY)
    async def get_entity(entity_id: EntityId, namespaces: Namespaces = None) -> dict[str, Any]:
        """One entity by id: name, type, description, aliases, degree and number of mentions."""
        return _dump(await _call(graph.entity(entity_id, namespaces=namespaces)))

    @server.tool(annotations=_READ_ONLY)
    async def neighborhood(
        entity_id: EntityId,
        depth: Depth = 1,
        as_of: AsOf = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most relations read.")] = 100,
        namespaces: Namespaces = None,
    ) -> dict[str, Any]:
        """An entity's neighbours and relations within `depth` hops, ranked; with `as_of`,
        only relations valid at that date (e.g. who owned it then)."""
        when = _as_of("neighborhood", as_of)
        call = graph.neighborhood(entity_id, depth, as_of=when, limit=limit, namespaces=namespaces)
        return _dump(await _call(call))

    @server.tool(annotations=_READ_ONLY)
    async def list_templates() -> dict[str, Any]:
        """The named, read-only query templates `run_template` accepts, each with its
        description and JSON schema of parameters (ids, depth, as_of, limits)."""
        return _dump(graph.templates())

    @server.tool(annotations=_READ_ONLY)
    async def run_template(
        name: Annotated[
            str, Field(min_length=1, max_length=64, description="From list_templates.")
        ],
        parameters: Annotated[
            dict[str, Any] | None,
            Field(description="The template's parameters, matching its schema (entity ids)."),
        ] = None,
    ) -> dict[str, Any]:
        """Run one named read-only template with parameters; rows come back as JSON. Example:
        relations_valid_at with {"entity_id": "...", "as_of": "2023-06-30"}."""
        params = parameters or {}
        # No template has a parameter named like run_template's own ("name", "params"): refuse
        # such a name here, in the words REST uses, before any I/O.
        clash = sorted(params.keys() & _RUN_TEMPLATE_OWN)
        if clash:
            raise ToolError(
                f"QueryRejected: invalid parameters for template {name}: {', '.join(clash)} "
                "(not a parameter of this template; see list_templates)"
            )
        return _dump(await _call(graph.run_template(name, params)))

    @server.tool(annotations=_READ_ONLY)
    async def list_namespaces() -> dict[str, Any]:
        """The namespaces (document sources) this connection may read, with their document,
        chunk, fact and entity counts: pass names to other tools' `namespaces` to keep to them."""
        return _dump(await _call(graph.namespaces()))

    return server


def _wants_progress(ctx: Context) -> bool:
    """True when the caller sent a progress token (else nothing would see the stream, and
    the answer keeps its re-asks)."""
    try:
        meta = ctx.request_context.meta
    except ValueError:  # no request: a direct call
        return False
    if not meta:
        return False
    return (meta.get("progress_token") or meta.get("progressToken")) is not None


async def _streamed(
    graph: AsyncKnowledgeGraph, request: AnswerRequest, ctx: Context
) -> AnswerResponse:
    """The answer streamed: each piece of its text is a progress notification (``progress``:
    the characters written so far, ``message``: the piece), then the validated answer, as
    ``POST /answer`` with ``stream`` gives it (never re-asked: an invalid one is an error)."""
    written = 0
    final: AnswerResponse | None = None
    async for event in graph.answer_stream_request(request):
        if isinstance(event, AnswerDelta):
            written += len(event.text)
            await ctx.report_progress(written, None, event.text)
        else:
            final = event
    assert final is not None  # the stream ends with the answer, or raises
    return final


def _valid(tool: str, model: type[M], raw: dict[str, Any]) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        # pydantic's "Value error, " prefix says nothing to an agent
        errors = "; ".join(
            f"{e['field']} {e['reason'].removeprefix('Value error, ')}"
            for e in validation_errors(exc)
        )
        raise ArgumentError(f"invalid arguments for {tool}: {errors}.") from exc


def _as_of(tool: str, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return TypeAdapter(AsOfType).validate_python(value)
    except ValidationError as exc:
        raise ArgumentError(
            f"invalid arguments for {tool}: as_of is not an ISO 8601 date or date-time."
        ) from exc


def _version() -> str:
    import kg

    return str(kg.__version__)
