"""A first load through Neo4j's own importer: ``kg ingest PATH --triplets FILE --bulk``.

The pipeline is ``kg ingest --triplets``'s up to the write (load, chunk, resolve, embed, the
document graph), through a writer that stages the graph in memory (:mod:`kg.bulk.staging`);
then the graph is written as import files, the local server stops, ``neo4j-admin database
import full`` replaces its (empty) database, the server starts again, the schema is applied
and its indexes are built, and the model stamp (``KgMeta``) is checked. Every step is timed,
the restart and the index build included: that is what a user waits for.

Refused (ConfigError, before anything changes) when the database holds anything but a model
stamp, or when kg is not connected to the local server this machine runs: the importer needs
the server's files. For a remote server, docs/import-format.md says how to copy the files
and run the importer there.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import LiteralString

from neo4j import Driver

from kg.bulk.export import ImportFiles, write_import_files
from kg.bulk.fixups import set_empty_arrays
from kg.bulk.staging import StagingWriter
from kg.errors import ConfigError, StoreError
from kg.graph.meta import MODEL_VERSION, ensure_current
from kg.graph.schema import apply_schema
from kg.ingest import IngestSummary, Progress, ingest, make_writer, opened
from kg.localserver.admin_import import run_import
from kg.localserver.server import LocalNeo4j
from kg.resolve import make_embedder
from kg.resolve.embed import embedder_identity, make_chunk_embedder
from kg.settings import Settings

_ANY_DATA: LiteralString = (
    "MATCH (n) WHERE NOT n:KgMeta AND NOT n:KgLock RETURN count(n) > 0 AS found LIMIT 1"
)
_INDEX_STATES: LiteralString = (
    "SHOW INDEXES YIELD name, state, populationPercent RETURN name, state, populationPercent"
)

#: The steps after the pipeline, in order; each one's seconds are in ``BulkSummary.timings``.
BULK_STAGES = ("export", "stop", "import", "start", "schema", "fixups", "indexes")


@dataclass
class BulkSummary:
    """The ingest summary of the pipeline's part, and what the load itself did."""

    ingest: IngestSummary
    files: dict[str, int] = field(default_factory=dict)  # rows per import file
    timings: dict[str, float] = field(default_factory=dict)  # BULK_STAGES, seconds
    seconds: float = 0.0  # everything, from start to indexes online

    def to_dict(self) -> dict[str, object]:
        return {
            "ingest": self.ingest.to_dict(),
            "files": self.files,
            "timings": self.timings,
            "seconds": self.seconds,
        }


def check_target(settings: Settings) -> LocalNeo4j:
    """The local server to load into, or ConfigError saying why not and what to do."""
    if not settings.uses_local_server:
        raise ConfigError(
            f"--bulk loads into the local server only (kg neo4j start), and kg is configured "
            f"for {settings.neo4j.uri}: the importer must write the server's files. For a "
            "remote server, write the import files with --bulk against a local server and run "
            "neo4j-admin there (docs/import-format.md, 'Bulk load')."
        )
    server = LocalNeo4j(settings)
    if not server.status().running:
        raise ConfigError("the local Neo4j is not running: start it with `kg neo4j start`")
    return server


def bulk_ingest(
    settings: Settings,
    path: Path,
    *,
    triplets: Path,
    namespace: str | None = None,
    progress: Progress | None = None,
    files_dir: Path | None = None,
    index_timeout_s: float = 3600.0,
) -> BulkSummary:
    """Load ``triplets`` into the local server's empty database (see the module docstring).

    ``files_dir`` keeps the import files there (default: a temporary folder, removed).
    """
    started = time.monotonic()
    server = check_target(settings)
    database = settings.neo4j.database
    with opened(settings) as driver:
        _refuse_data(driver, database)
        embedder, chunk_embedder = (
            make_embedder(settings.resolve),
            make_chunk_embedder(settings.chunks),
        )
        staging = StagingWriter.like(make_writer(settings, driver, chunk_embedder))
        summary = ingest(
            settings,
            driver,
            path,
            triplets=triplets,
            namespace=namespace,
            progress=progress,
            embedder=embedder,
            chunk_embedder=chunk_embedder,
            writer=staging,
        )
    identities = {"entity": embedder_identity(embedder), "chunk": embedder_identity(chunk_embedder)}
    result = BulkSummary(summary)
    clock = _Stopwatch(result.timings)
    with _folder(files_dir) as folder:
        with clock("export"):
            meta = {
                "model_version": MODEL_VERSION,
                "updated_at": datetime.now(UTC),
                "entity_embedder": identities["entity"],
                "chunk_embedder": identities["chunk"],
            }
            files = write_import_files(staging, folder, meta)
        result.files = files.counts
        _replace_database(server, database, files, clock)
    with opened(settings) as driver:
        with clock("schema"):
            apply_schema(
                driver,
                database=database,
                dimension=settings.resolve.embedding_dim,
                chunk_dimension=settings.chunks.embedding_dim,
                folder=settings.schema_dir,
            )
            ensure_current(driver, database, embedders=identities)
        with clock("fixups"):
            set_empty_arrays(driver, database, files.empty_arrays)
        with clock("indexes"):
            await_indexes(driver, database, index_timeout_s)
    result.seconds = round(time.monotonic() - started, 3)
    return result


def await_indexes(driver: Driver, database: str, timeout_s: float) -> None:
    """Until every index is ONLINE, polled (``db.awaitIndexes`` would run inside one
    transaction, which the server's transaction timeout ends long before a big index is
    built). A FAILED index, or the timeout, is a StoreError naming them."""
    deadline = time.monotonic() + timeout_s
    while True:
        records, _, _ = driver.execute_query(_INDEX_STATES, database_=database)
        pending = {r["name"]: r["state"] for r in records if r["state"] != "ONLINE"}
        failed = sorted(name for name, state in pending.items() if state == "FAILED")
        if failed:
            raise StoreError(f"indexes failed to build after the import: {failed}")
        if not pending:
            return
        if time.monotonic() > deadline:
            raise StoreError(f"indexes not online after {timeout_s:.0f}s: {sorted(pending)}")
        time.sleep(1.0)


def _refuse_data(driver: Driver, database: str) -> None:
    records, _, _ = driver.execute_query(_ANY_DATA, database_=database)
    if records and records[0]["found"]:
        raise ConfigError(
            f"--bulk imports into an empty database only, and database {database!r} holds a "
            "graph: the import would replace it. Use `kg ingest --triplets` (without --bulk) to "
            "add to it, or empty it first (MATCH (n) DETACH DELETE n, or a new server home)."
        )


def _replace_database(
    server: LocalNeo4j, database: str, files: ImportFiles, clock: _Stopwatch
) -> None:
    """Stop, import, start; the server is started again even when the import fails."""
    with clock("stop"):
        server.stop()
    try:
        with clock("import"):
            run_import(server, database, files.arguments(), files.folder / "import.report")
    finally:
        with clock("start"):
            server.start()


class _Stopwatch:
    def __init__(self, timings: dict[str, float]) -> None:
        self._timings = timings

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self._timings[name] = round(time.monotonic() - began, 3)


@contextmanager
def _folder(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    folder = Path(tempfile.mkdtemp(prefix="kg-bulk-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
