"""A read that keeps the server busy until its time bound, and the way to stop it early.

Admission and proxy tests need a query slot held: a read that counts to two billion holds it
until the query timeout. Once a test has seen what it came to see, it terminates the reads
still counting (``TERMINATE TRANSACTIONS``), so the server's cores go back to the rest of the
suite instead of burning to the timeout.
"""

from __future__ import annotations

import time

from kg.cypher.params import NoParams
from kg.cypher.templates import Template
from kg.graph.driver import open_driver
from kg.settings import Settings

_MARKER = "x % 7919 = 7920"  # never true: the read counts to the end or to its timeout
BURN = f"UNWIND range(1, 2000000000) AS x WITH x WHERE {_MARKER} RETURN count(x) AS n"
# The marker is a parameter, so this query's own text does not match it.
_RUNNING = (
    "SHOW TRANSACTIONS YIELD transactionId AS id, currentQuery AS q "
    "WHERE q CONTAINS $marker RETURN collect(id) AS ids"
)


def burn_template(name: str) -> Template:
    return Template(name=name, description="test only: busy until the timeout",
                    params=NoParams, texts={"default": BURN}, row_cap=1)  # fmt: skip


def stop_burns(settings: Settings, *, within_s: float = 30.0) -> None:
    """Terminate every burning read on the test server and wait until none runs. A read
    that ends on its own meanwhile is simply gone."""
    db = settings.neo4j.database
    deadline = time.monotonic() + within_s
    with open_driver(settings.neo4j) as driver:
        while ids := driver.execute_query(_RUNNING, marker=_MARKER, database_=db).records[0]["ids"]:
            assert time.monotonic() < deadline, f"burning reads still running: {ids}"
            driver.execute_query("TERMINATE TRANSACTIONS $ids", ids=ids, database_=db)
            time.sleep(0.1)
