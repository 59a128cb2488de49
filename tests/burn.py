"""A read that keeps the server busy until its time bound, and the way to stop it early.

Admission and proxy tests need a query slot held: a read that counts to two billion holds it
until the query timeout. Once a test has seen what it came to see, it terminates the reads
still counting (``TERMINATE TRANSACTIONS``), so the server's cores go back to the rest of the
suite instead of burning to the timeout.
"""

from __future__ import annotations

import time

from neo4j import GraphDatabase

from kg.cypher.params import NoParams
from kg.cypher.templates import Template
from kg.settings import Settings

BURN = "UNWIND range(1, 2000000000) AS x WITH x WHERE x % 7919 = 7920 RETURN count(x) AS n"
_RUNNING = (
    "SHOW TRANSACTIONS YIELD transactionId AS id, currentQuery AS q "
    "WHERE q CONTAINS $marker AND NOT q STARTS WITH 'SHOW' RETURN collect(id) AS ids"
)


def burn_template(name: str) -> Template:
    return Template(name=name, description="test only: busy until the timeout",
                    params=NoParams, texts={"default": BURN}, row_cap=1)  # fmt: skip


def stop_burns(settings: Settings, *, within_s: float = 30.0) -> int:
    """Terminate every burning read on the test server and wait until none runs; how many
    were running. A read that ends on its own meanwhile is simply gone."""
    auth = (settings.neo4j.username, settings.neo4j.password.get_secret_value())
    db = settings.neo4j.database
    stopped = 0
    deadline = time.monotonic() + within_s
    with GraphDatabase.driver(settings.neo4j.uri, auth=auth) as driver:
        while True:
            ids = driver.execute_query(_RUNNING, marker="% 7919", database_=db).records[0]["ids"]
            if not ids:
                return stopped
            assert time.monotonic() < deadline, f"burning reads still running: {ids}"
            driver.execute_query("TERMINATE TRANSACTIONS $ids", ids=ids, database_=db)
            stopped = max(stopped, len(ids))
            time.sleep(0.1)
