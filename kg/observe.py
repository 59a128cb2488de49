"""The one seam for traces, metrics and JSON logs: the library calls it, it costs ~nothing off.

Every instrumented point is one line at its call site::

    with observe.span("kg.search.signal", signal="text"):
        ...

A span's keyword attributes become ``kg.<name>`` attributes (values: str, int, float, bool).
Two consumers may be on, each independently:

- **Traces** (OpenTelemetry SDK): on only when ``OTEL_TRACES_EXPORTER`` is set (``console``,
  ``otlp``; ``none`` or unset: off — a deliberate departure from the SDK's own default of
  ``otlp``) and ``OTEL_SDK_DISABLED`` is not ``true``. The environment is read once, on the
  first span; while tracing is off, opentelemetry is never imported. The SDK reads its own
  variables (``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``, ``OTEL_EXPORTER_OTLP_ENDPOINT``
  ...). Tests call :func:`configure` with their own tracer provider.
- **Metrics** (prometheus-client): on only in the API process (:func:`enable_metrics`, called
  by the app factory); each span whose name :mod:`kg.metrics` knows updates its series when
  it ends. Off, nothing of prometheus_client is imported.

With both off, :func:`span` returns one shared object whose enter and exit do nothing.
Attributes are names, counts, durations and outcomes: never a query's parameters, a prompt,
an answer, a key or a URL's userinfo (``llm_call`` takes the endpoint's host only).

:class:`JsonFormatter` writes one JSON object per log record (``KG_LOG_FORMAT=json``), with the
current trace and span ids when tracing is on.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from kg.metrics import Metrics

__all__ = [
    "JsonFormatter",
    "asgi",
    "configure",
    "count",
    "enable_metrics",
    "llm_call",
    "metrics_enabled",
    "metrics_exposition",
    "note_request",
    "server_span",
    "share_metrics",
    "span",
    "trace_ids",
    "tracing_enabled",
    "worker_exiting",
]

#: The exporters ``OTEL_TRACES_EXPORTER`` may name (comma-separated).
EXPORTERS = ("console", "otlp", "none")
#: The service name when ``OTEL_SERVICE_NAME`` (or the resource attributes) name none.
DEFAULT_SERVICE = "kg"

_UNREAD: Any = object()
_tracer: Any = _UNREAD  # an OpenTelemetry Tracer; None: tracing off
_metrics: Metrics | None = None
# the request being served (its span object): a search deeper down names its mode on it
_REQUEST: ContextVar[_Span | None] = ContextVar("kg_observe_request", default=None)


class _Noop:
    """What :func:`span` returns when nothing observes: enter, set and exit do nothing."""

    __slots__ = ()

    def __enter__(self) -> _Noop:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, **attrs: object) -> None:
        pass


_NOOP = _Noop()


def _tracer_now() -> Any:
    global _tracer
    if _tracer is _UNREAD:
        _tracer = _from_env(os.environ)
    return _tracer


def tracing_enabled() -> bool:
    """Whether spans are exported (reads the environment on the first call)."""
    return _tracer_now() is not None


def metrics_enabled() -> bool:
    return _metrics is not None


def span(name: str, **attrs: Any) -> _Span | _Noop:
    """A context manager timing one step; see the module docstring."""
    tracer = _tracer if _tracer is not _UNREAD else _tracer_now()
    if tracer is None and _metrics is None:
        return _NOOP
    return _Span(name, attrs, tracer)


def llm_call(use: str, base_url: str | None, model: str, meter: Any = None) -> _Span | _Noop:
    """The span of one LLM or embeddings call: the endpoint's host and the model, then (on
    exit) the tokens and retries ``meter`` counted (a :class:`kg.llm.protocol.CallMeter`, or
    anything with ``prompt_tokens``, ``completion_tokens`` and ``exchanges``)."""
    observed = span("kg.llm.call", use=use, host=_host(base_url), model=model)
    if isinstance(observed, _Span):
        observed.meter = meter
    return observed


def server_span(name: str, headers: Mapping[str, str] | None, **attrs: Any) -> _Span | _Noop:
    """A span serving a call that arrived with ``headers`` (an MCP tool call over HTTP): it
    continues the caller's ``traceparent`` when there is one."""
    observed = span(name, **attrs)
    if isinstance(observed, _Span) and observed.tracer is not None and headers:
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind

        carrier = {str(k).lower(): str(v) for k, v in headers.items()}
        observed.tracer = _Kind(observed.tracer, extract(carrier), SpanKind.SERVER)
    return observed


def note_request(**attrs: Any) -> None:
    """Name something about the request being served (a search's ``mode``): its span and
    its request-duration series carry it. The first note of a name wins: ``auto`` stays the
    mode of a routed search whose router then runs a local search."""
    request = _REQUEST.get()
    if request is not None:
        request.set(**{k: v for k, v in attrs.items() if k not in request.attrs})


def count(name: str, amount: float = 1, **labels: str) -> None:
    """Add to one counter or gauge of :mod:`kg.metrics` (nothing when metrics are off)."""
    if _metrics is not None:
        _metrics.add(name, amount, labels)


def _host(url: str | None) -> str:
    if not url:
        return "api.openai.com"
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


class _Span:
    """One observed step: an OpenTelemetry span when tracing is on, a metric when known."""

    __slots__ = ("_cm", "_otel", "_started", "_token", "attrs", "meter", "name", "tracer")

    def __init__(self, name: str, attrs: dict[str, Any], tracer: Any) -> None:
        self.name = name
        self.attrs = attrs
        self.tracer = tracer
        self.meter: Any = None
        self._cm: Any = None
        self._otel: Any = None
        self._token: Any = None
        self._started = 0.0

    def __enter__(self) -> _Span:
        if self.tracer is not None:
            self._cm = self.tracer.start_as_current_span(
                self.name,
                attributes=_attributes(self.attrs),
                record_exception=False,
                set_status_on_exception=False,
            )
            self._otel = self._cm.__enter__()
        self._started = time.perf_counter()
        return self

    def set(self, **attrs: Any) -> None:
        self.attrs.update(attrs)
        if self._otel is not None:
            self._otel.set_attributes(_attributes(attrs))

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        seconds = time.perf_counter() - self._started
        outcome = "ok" if exc is None else outcome_of(exc)
        if self.meter is not None:
            self.attrs.update(_metered(self.meter))
        self.attrs.setdefault("outcome", outcome)
        if self._otel is not None:
            self._otel.set_attributes(_attributes(self.attrs))
            if exc is not None:
                from opentelemetry.trace import Status, StatusCode

                # the exception's kind only: its message may quote data
                self._otel.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            self._cm.__exit__(exc_type, exc, tb)
        if _metrics is not None:
            _metrics.observe(self.name, self.attrs, seconds)


def _metered(meter: Any) -> dict[str, int]:
    exchanges = int(getattr(meter, "exchanges", 0) or 0)
    found = {
        "prompt_tokens": int(getattr(meter, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(meter, "completion_tokens", 0) or 0),
        "retries": max(0, exchanges - 1),
    }
    return found


def _attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if value is None:
            continue
        name = _SEMANTIC.get(key, f"kg.{key}")
        out[name] = value if isinstance(value, str | bool | int | float) else str(value)
    return out


#: Attributes with an OpenTelemetry semantic-convention name.
_SEMANTIC = {
    "host": "server.address",
    "model": "gen_ai.request.model",
    "prompt_tokens": "gen_ai.usage.input_tokens",
    "completion_tokens": "gen_ai.usage.output_tokens",
    "method": "http.request.method",
    "route": "http.route",
    "status": "http.response.status_code",
}


def outcome_of(exc: BaseException) -> str:
    """One word for how a step failed (a label value: a bounded set)."""
    import asyncio

    from kg import errors

    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    if isinstance(exc, errors.QueryTimeout | TimeoutError):
        return "timeout"
    if isinstance(exc, errors.ClientBusy):
        return "client_busy"
    if isinstance(exc, errors.Overloaded):
        return "overloaded"
    if isinstance(exc, errors.QueryRejected | errors.ScopeDenied):
        return "rejected"
    if isinstance(exc, errors.StoreUnavailable):
        return "unavailable"
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return f"http_{status}"
    if getattr(exc, "brief", None) == "timeout":
        return "timeout"
    if getattr(exc, "connection", False):
        return "connection"
    if type(exc).__name__ == "LLMInvalidOutput":
        return "invalid_output"
    return "error"


# -- configuration ------------------------------------------------------------------------


def _from_env(env: Mapping[str, str]) -> Any:
    """The tracer the ``OTEL_*`` variables ask for, or None (tracing off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
    names = [n for n in names if n and n != "none"]
    if not names:
        return None
    from kg.errors import ConfigError

    unknown = sorted(set(names) - set(EXPORTERS))
    if unknown:
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={env['OTEL_TRACES_EXPORTER']!r}: kg exports traces to "
            f"{', '.join(EXPORTERS)} (not {', '.join(unknown)})"
        )
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
    provider = TracerProvider(resource=resource)  # OTEL_TRACES_SAMPLER(_ARG)
    if "console" in names:
        import sys

        # stderr: `kg search --json` keeps its stdout one JSON document
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    if "otlp" in names:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigError(
                "OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter: install kg with its "
                "`otlp` extra (pip install 'kg[otlp]'), or set OTEL_TRACES_EXPORTER=console"
            ) from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider.get_tracer("kg")


def configure(*, tracer_provider: Any = None, environ: Mapping[str, str] | None = None) -> None:
    """Set tracing up again: from ``tracer_provider`` (a test's, with an in-memory exporter),
    else from ``environ`` (default: read ``os.environ`` again on the next span).
    ``configure()`` with neither turns tracing off until the environment is read again."""
    global _tracer
    if tracer_provider is not None:
        _tracer = tracer_provider.get_tracer("kg")
    elif environ is not None:
        _tracer = _from_env(environ)
    else:
        _tracer = _UNREAD


def enable_metrics() -> Metrics:
    """Turn the Prometheus series on in this process (the API's); idempotent."""
    global _metrics
    if _metrics is None:
        from kg.metrics import metrics

        _metrics = metrics()
    return _metrics


def disable_metrics() -> None:
    """Metrics off (tests); the series stay registered for the next :func:`enable_metrics`."""
    global _metrics
    _metrics = None


def metrics_exposition() -> tuple[bytes, str]:
    """What ``GET /metrics`` answers: the exposition text and its content type."""
    from kg.metrics import exposition

    enable_metrics()
    return exposition()


def share_metrics(directory: str) -> None:
    """Before spawning API workers: they write their series to ``directory`` (emptied now),
    so any worker's scrape reports all of them (``PROMETHEUS_MULTIPROC_DIR``)."""
    from kg.metrics import prepare_multiprocess

    prepare_multiprocess(directory)


def worker_exiting() -> None:
    """An API process stops serving: with shared metrics, its gauges leave the sum."""
    if _metrics is not None:
        from kg.metrics import worker_exiting as exiting

        exiting()


def trace_ids() -> tuple[str, str] | None:
    """The current trace and span ids (hex), when tracing is on and a span is open."""
    if _tracer is _UNREAD or _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


# -- requests -----------------------------------------------------------------------------

_Scope = MutableMapping[str, Any]
_ASGI = Callable[[_Scope, Any, Any], Awaitable[None]]


def asgi(app: _ASGI, server: str) -> _ASGI:
    """``app`` with one ``kg.request`` span per HTTP request (continuing an incoming
    ``traceparent``) and its duration in the request histogram, labelled by route template,
    method, status and, for a search, its mode. A pass-through while nothing observes."""

    async def observed(scope: _Scope, receive: Any, send: Any) -> None:
        tracer = _tracer if _tracer is not _UNREAD else _tracer_now()
        if scope.get("type") != "http" or (tracer is None and _metrics is None):
            await app(scope, receive, send)
            return
        request = _Span("kg.request", {"server": server, "method": scope.get("method", "")}, None)
        context = None
        if tracer is not None:
            from opentelemetry.propagate import extract
            from opentelemetry.trace import SpanKind

            carrier = {
                bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1")
                for k, v in scope.get("headers") or ()
            }
            context = extract(carrier)
            request.tracer = _Kind(tracer, context, SpanKind.SERVER)

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                request.attrs["status"] = int(message.get("status", 0))
            await send(message)

        token = _REQUEST.set(request)
        try:
            with request:
                try:
                    await app(scope, receive, sending)
                finally:
                    route = scope.get("path_template")
                    request.set(route=route if isinstance(route, str) else _route_of(scope))
        finally:
            _REQUEST.reset(token)

    return observed


def _route_of(scope: _Scope) -> str:
    """A bounded route label when the router named none: MCP's one path, else unmatched."""
    path = str(scope.get("path", ""))
    return path if path in ("/mcp", "/mcp/") else "unmatched"


class _Kind:
    """A tracer whose next span starts as a server span in an extracted context."""

    def __init__(self, tracer: Any, context: Any, kind: Any) -> None:
        self._tracer, self._context, self._kind = tracer, context, kind

    def start_as_current_span(self, name: str, **kwargs: Any) -> Any:
        return self._tracer.start_as_current_span(
            name, context=self._context, kind=self._kind, **kwargs
        )


# -- logs ---------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
    ``message``, ``pid``; ``exception`` when there is one; ``trace_id`` and ``span_id``
    when tracing is on. The handler's redaction filter runs first,
    so the message and the traceback are scrubbed already."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = record.stack_info
        ids = trace_ids()
        if ids is not None:
            out["trace_id"], out["span_id"] = ids
        # no ``extra=`` fields: the redaction filter scrubs the message and traceback only
        return json.dumps(out, ensure_ascii=False)


def formatter(fmt: str) -> logging.Formatter:
    """The formatter of ``KG_LOG_FORMAT``: ``json``, else kg's one-line text."""
    if fmt == "json":
        return JsonFormatter()
    return logging.Formatter("%(levelname)s %(name)s: %(message)s")
