"""kg.observe: JSON log lines (ids, scrubbed secrets), and nothing of OpenTelemetry when off."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kg import observe
from kg.redact import RedactFilter

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-very-secret-key-123"


@pytest.fixture
def json_log() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactFilter([SECRET]))
    handler.setFormatter(observe.JsonFormatter())
    logger = logging.getLogger("kg.test.observe")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, stream
    finally:
        logger.removeHandler(handler)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_one_json_object_a_line_with_secrets_scrubbed(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = json_log
    logger.info("calling %s with key %s", "bolt://neo4j:hunter22@db:7687", SECRET)
    try:
        raise ValueError(f"refused {SECRET}\nsecond line")
    except ValueError:
        logger.exception("failed")
    first, second = _lines(stream)
    assert first["level"] == "INFO"
    assert first["logger"] == "kg.test.observe"
    assert first["message"] == "calling bolt://***@db:7687 with key ***"
    assert first["pid"] == os.getpid()
    assert str(first["time"]).endswith("+00:00")
    assert "trace_id" not in first
    assert second["message"] == "failed"
    assert "ValueError: refused ***" in str(second["exception"])
    assert SECRET not in stream.getvalue()
    assert "hunter22" not in stream.getvalue()


def test_a_line_carries_the_trace_and_span_ids_when_tracing_is_on(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observe.configure(tracer_provider=provider)
    logger, stream = json_log
    try:
        with observe.span("kg.test", what="log"):
            logger.warning("inside")
        logger.warning("outside")
    finally:
        observe.configure(environ={})
    inside, outside = _lines(stream)
    (span,) = exporter.get_finished_spans()
    assert inside["trace_id"] == f"{span.context.trace_id:032x}"
    assert inside["span_id"] == f"{span.context.span_id:016x}"
    assert "trace_id" not in outside
    assert span.attributes is not None
    assert span.attributes["kg.what"] == "log"
    assert span.attributes["kg.outcome"] == "ok"


def test_the_cli_handler_writes_json_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.output import setup_logging

    handler = setup_logging("INFO", "json")
    try:
        logging.getLogger("kg.test.cli").info("hello %d", 3)
        (line,) = [ln for ln in capsys.readouterr().err.splitlines() if "hello" in ln]
        assert json.loads(line)["message"] == "hello 3"
    finally:
        setup_logging("WARNING")
    assert not isinstance(handler.formatter, observe.JsonFormatter)


def test_the_api_log_install_switches_handlers_to_json() -> None:
    from api import logs

    handler = logging.StreamHandler(io.StringIO())
    logs.install([SECRET], [handler], fmt="json")
    assert isinstance(handler.formatter, observe.JsonFormatter)


def test_off_a_span_is_one_shared_no_op() -> None:
    metrics_were_on = observe.metrics_enabled()  # an API app in this process turned them on
    observe.disable_metrics()
    observe.configure(environ={})
    try:
        assert observe.span("kg.x", a=1) is observe.span("kg.y")
        assert observe.trace_ids() is None
    finally:
        observe.configure()
        if metrics_were_on:
            observe.enable_metrics()


def test_an_unknown_exporter_is_a_config_error() -> None:
    from kg.errors import ConfigError

    with pytest.raises(ConfigError, match="OTEL_TRACES_EXPORTER='zipkin'"):
        observe.configure(environ={"OTEL_TRACES_EXPORTER": "zipkin"})
    observe.configure()


def test_otlp_without_its_extra_says_how_to_install_it() -> None:
    from kg.errors import ConfigError

    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the otlp extra is installed here")
    with pytest.raises(ConfigError, match=r"kg\[otlp\]"):
        observe.configure(environ={"OTEL_TRACES_EXPORTER": "otlp"})
    observe.configure()


_PROBE = """
import sys
import kg
from kg import observe
from kg.cypher import guard
from kg.search import service
from kg.llm import instructor_llm
from api.app import create_app
for environ in (None, {"OTEL_TRACES_EXPORTER": "none"},
                {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}):
    if environ is not None:
        observe.configure(environ=environ)
    with observe.span("kg.search", mode="hybrid"):
        with observe.llm_call("answer", "http://127.0.0.1:1/v1", "m"):
            pass
    assert not observe.tracing_enabled()
print(sorted(m for m in sys.modules if m.startswith(("opentelemetry", "prometheus_client"))))
"""


def test_with_tracing_unset_opentelemetry_is_never_imported() -> None:
    """Unset, ``none``, or disabled by ``OTEL_SDK_DISABLED``: spans are the shared no-op."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=clean,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "[]", out.stderr


_WORKER = """
from kg import observe
observe.enable_metrics()
observe.count("slots", 2)
"""


def test_a_dead_workers_live_gauge_leaves_the_sum(tmp_path: Path) -> None:
    """A worker killed without its shutdown leaves its live gauge's file; the next scrape
    marks it dead (kg.metrics.mark_dead_workers), so the gauge sums live workers only."""
    from kg import metrics

    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env = {**clean, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", _WORKER], env=env, cwd=REPO, check=True, timeout=60)
    (left,) = tmp_path.glob("gauge_livesum_*.db")
    pid = int(left.stem.rsplit("_", 1)[1])
    (tmp_path / f"gauge_livesum_{os.getpid()}.db").write_bytes(b"")  # a live one stays
    assert metrics.mark_dead_workers(str(tmp_path)) == [pid]
    assert sorted(p.name for p in tmp_path.glob("gauge_live*")) == [
        f"gauge_livesum_{os.getpid()}.db"
    ]


def test_the_parent_empties_the_shared_directory(tmp_path: Path) -> None:
    from kg import metrics

    (tmp_path / "counter_1.db").write_bytes(b"old")
    before = os.environ.get(metrics.MULTIPROC_ENV)
    try:
        observe.share_metrics(str(tmp_path))
        assert os.environ[metrics.MULTIPROC_ENV] == str(tmp_path)
    finally:
        if before is None:
            os.environ.pop(metrics.MULTIPROC_ENV, None)
        else:
            os.environ[metrics.MULTIPROC_ENV] = before
    assert list(tmp_path.iterdir()) == []
