"""The Neo4j settings reach the driver: its connect, acquire and retry bounds."""

from __future__ import annotations

from kg.graph.driver import _options
from kg.settings import Neo4jSettings


def test_the_retry_and_connect_bounds_come_from_the_settings() -> None:
    options = _options(Neo4jSettings(password="x", connection_timeout_s=2.0, retry_s=3.5))
    assert options["max_transaction_retry_time"] == 3.5
    assert options["connection_timeout"] == 2.0
    assert options["connection_acquisition_timeout"] == 4.0


def test_the_default_retry_is_ten_seconds() -> None:
    assert _options(Neo4jSettings(password="x"))["max_transaction_retry_time"] == 10.0
