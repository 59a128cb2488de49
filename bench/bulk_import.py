"""A first load through neo4j-admin (``kg ingest --triplets --bulk``) beside the MERGE path.

Generates deterministic open-vocabulary triplets (bench/open_vocab_bench.py's generator), then
each load on a new throwaway local Neo4j (its start not timed):

- ``bulk``: :func:`kg.bulk.bulk_ingest`, end to end: load, chunk, resolve, embed, the document
  graph, the import files (facts embedded while written), server stop, ``neo4j-admin database
  import full``, server start, schema, empty-array fixups, indexes ONLINE;
- ``merge``: the schema, then :func:`kg.ingest.ingest` (``kg ingest --triplets``), then the
  indexes ONLINE (the same polling as the bulk load's).

Prints each run's seconds and stages, and bulk/merge speed-up per size measured both ways.
Usage::

    .venv/bin/python bench/bulk_import.py --sizes 20000,1000000 --merge-sizes 20000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.open_vocab_bench import generate
from kg.bulk import bulk_ingest
from kg.bulk.load import await_indexes
from kg.graph.driver import open_driver
from kg.graph.schema import apply_schema
from kg.ingest import ingest
from kg.localserver import throwaway_server
from kg.settings import Settings

PER_DOC = (15, 25)  # triplets per document: 20 on average


def write_corpus(path: Path, triplets: int, seed: int = 7) -> int:
    """About ``triplets`` triplets (20 a document, 1 entity per 10 triplets); how many."""
    docs = max(1, triplets // 20)
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for line in generate(docs, PER_DOC, 5000, max(1000, triplets // 10), seed):
            n += len(line["triplets"])
            out.write(json.dumps(line) + "\n")
    return n


def run_merge(settings: Settings, folder: Path, corpus: Path) -> tuple[float, dict[str, float]]:
    started = time.perf_counter()
    with open_driver(settings.neo4j) as driver:
        apply_schema(driver, database="neo4j", dimension=settings.resolve.embedding_dim,
                     chunk_dimension=settings.chunks.embedding_dim)  # fmt: skip
        summary = ingest(settings, driver, folder, triplets=corpus, namespace="bench")
        await_indexes(driver, "neo4j", 3600)
    return time.perf_counter() - started, summary.timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="20000", help="triplets per bulk run, comma-separated")
    parser.add_argument("--merge-sizes", default="20000", help="sizes also run the MERGE way")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    merge_sizes = {int(x) for x in args.merge_sizes.split(",") if x}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "root"
        folder.mkdir()
        for size in sizes:
            corpus = Path(tmp) / f"corpus-{size}.jsonl"
            n = write_corpus(corpus, size)
            with fresh_server() as settings:
                result = bulk_ingest(settings, folder, triplets=corpus, namespace="bench")
            bulk = result.seconds
            print(
                f"bulk  triplets={n}: {bulk:.1f}s end to end; pipeline {result.ingest.timings}; "
                f"steps {result.timings}; rows {result.files}",
                flush=True,
            )
            if size in merge_sizes:
                with fresh_server() as settings:
                    merge, timings = run_merge(settings, folder, corpus)
                print(f"merge triplets={n}: {merge:.1f}s end to end; stages {timings}", flush=True)
                print(f"      bulk speed-up at {n} triplets: {merge / bulk:.1f}x", flush=True)


@contextmanager
def fresh_server() -> Iterator[Settings]:
    """A new local server for each load: an empty database, its start not timed."""
    with throwaway_server(password="bench-password", heap="2g", pagecache="2g") as server:
        settings = server.model_copy(deep=True)
        settings.resolve.embedding_dim = 256
        yield settings


if __name__ == "__main__":
    main()
