"""``kg ingest --triplets`` end to end beside a bare ``UNWIND ... MERGE`` writer of the same graph.

Issue 29 item 5. Generates a deterministic open-vocabulary corpus (bench/open_vocab_bench.py's
generator; by default 2,000 documents and about 200,000 triplets), then on one throwaway local
Neo4j, each run on an emptied database with the schema applied:

- ``kg``: :func:`kg.ingest.ingest` start to finish by wall clock, with its stages (load, chunk,
  extract, resolve, write) and the write's steps (each writer call, timed by a subclass);
- ``ceiling``: the same elements kg wrote (documents, chunks with PART_OF and their language
  label and NEXT between a document's chunks, entities with their type label, mentions, relations, and facts with ABOUT: taken from
  kg.bulk's staging writer, which builds exactly kg's graph in memory), written by bare batched
  ``UNWIND ... MERGE ... SET += row.props`` statements (one static relationship type), rows
  precomputed and untimed. The labels matter: they put chunks in the fulltext indexes.

Each timed run starts on an emptied database with no cached query plan (each side plans its
own statements, as on a server that never saw them), after one untimed write of the ceiling
that warms the server's JVM (``--no-warmup`` skips it; then the first rep's kg, which runs
first, also pays the JIT's warm-up).

Prints every time and the ratio ceiling/kg (goal >= 0.5), with and without the facts (the
issue's list of elements leaves them out). Usage::

    .venv/bin/python bench/import_ceiling.py                       # 2,000 docs, ~200k triplets
    .venv/bin/python bench/import_ceiling.py --docs 2000 --per-doc 8-12   # ~20k triplets
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, LiteralString

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neo4j import Driver

from bench.open_vocab_bench import generate
from kg.bulk.staging import FactSink, Props, StagingWriter
from kg.graph import writer as _writer
from kg.graph.driver import open_driver
from kg.graph.schema import apply_schema
from kg.graph.writer import _MATCH_ENDS, GraphWriter
from kg.ingest import ingest, make_writer
from kg.localserver import throwaway_server
from kg.settings import Settings

_DOCS: LiteralString = "UNWIND $rows AS row MERGE (d:Document {id: row.id}) SET d += row.props"
_CHUNKS: LiteralString = (
    "UNWIND $rows AS row MATCH (d:Document {id: row.doc}) MERGE (c:Chunk {id: row.id}) "
    "SET c += row.props SET c:$(row.label) MERGE (c)-[:PART_OF]->(d)"
)
_NEXT: LiteralString = (
    "UNWIND $rows AS row MATCH (a:Chunk {id: row.previous}) MATCH (b:Chunk {id: row.next}) "
    "MERGE (a)-[:NEXT]->(b)"
)
_ENTITIES: LiteralString = (
    "UNWIND $rows AS row MERGE (e:Entity {id: row.id}) SET e += row.props SET e:$(row.label)"
)
_MENTIONS: LiteralString = (
    "UNWIND $rows AS row MATCH (c:Chunk {id: row.chunk}) MATCH (e:Entity {id: row.entity}) "
    "MERGE (c)-[:MENTIONS]->(e)"
)
_RELATIONS: LiteralString = (
    "UNWIND $rows AS row MATCH (a:Entity {id: row.source}) MATCH (b:Entity {id: row.target}) "
    "MERGE (a)-[r:RELATED {key: row.key}]->(b) SET r += row.props"
)
_FACTS: LiteralString = (
    "UNWIND $rows AS row MERGE (f:Fact {id: row.id}) SET f += row.props WITH f, row "
    "MATCH (a:Entity {id: row.subject}) MATCH (b:Entity {id: row.object}) "
    "MERGE (f)-[:ABOUT]->(a) MERGE (f)-[:ABOUT]->(b)"
)


@dataclass
class TimedWriter(GraphWriter):
    """The writer kg uses, with the seconds of each public call added up (the write's steps)."""

    steps: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.steps[name] = self.steps.get(name, 0.0) + time.perf_counter() - began

    def upsert_documents(self, docs: Any) -> Any:
        with self._timed("documents"):
            return super().upsert_documents(docs)

    def upsert_chunks(self, chunks: Any) -> Any:
        with self._timed("chunks"):
            return super().upsert_chunks(chunks)

    def upsert_entities(self, entities: Any) -> Any:
        with self._timed("entities"):
            return super().upsert_entities(entities)

    def upsert_mentions(self, pairs: Any) -> Any:
        with self._timed("mentions"):
            return super().upsert_mentions(pairs)

    def upsert_relations(self, relations: Any) -> Any:
        with self._timed("relations (incl. facts)"):
            return super().upsert_relations(relations)

    def upsert_facts(self, relations: Any) -> Any:
        with self._timed("facts (embed + write)"):
            return super().upsert_facts(relations)

    def predicate_storage(self, counts: Any) -> Any:
        with self._timed("  predicate types"):
            return super().predicate_storage(counts)

    def _close_superseded(self, pairs: Any) -> Any:
        with self._timed("  close superseded"):
            return super()._close_superseded(pairs)

    def _write_summary(self, query: Any, rows: Any, returned: Any = None) -> Any:
        kind = "  dynamic-type relations" if "$(row.type)" in query else None
        if kind is None and query == getattr(_writer, "_RESTATE_RELATIONS", None):
            kind = "  restated relations"
        if kind is None and query.startswith(_MATCH_ENDS):
            kind = "  static-type relations"
        if kind is None:
            return super()._write_summary(query, rows, returned)
        with self._timed(kind):
            return super()._write_summary(query, rows, returned)

    def complete_documents(self, docs: Any) -> Any:
        with self._timed("complete"):
            return super().complete_documents(docs)


class _Facts(FactSink):
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def fact(self, props: Props) -> None:
        self.rows.append(
            {"id": props["id"], "subject": props["subject_id"], "object": props["object_id"],
             "props": {k: v for k, v in props.items() if v is not None}}
        )  # fmt: skip

    def about(self, fact_id: str, entity_id: str) -> None:
        pass


def ceiling_rows(settings: Settings, driver: Driver, folder: Path, corpus: Path) -> dict[str, Any]:
    """kg's graph for ``corpus``, as rows for the bare statements (kg.bulk's staging writer
    on an empty database: nothing is written)."""
    staging = StagingWriter.like(make_writer(settings, driver))
    ingest(settings, driver, folder, triplets=corpus, namespace="bench", writer=staging)
    facts = _Facts()
    staging.finish(facts)
    g = staging.graph

    def plain(props: Props) -> Props:
        return {k: v for k, v in props.items() if v is not None}

    return {
        "documents": [{"id": i, "props": plain(p)} for i, p in g.documents.items()],
        "chunks": [
            {"id": c, "doc": d, "label": g.chunk_labels[c], "props": plain(g.chunks[c])}
            for c, d in sorted(g.part_of)
        ],
        "next": [{"previous": a, "next": b} for a, b in sorted(g.next)],
        "entities": [
            {"id": i, "label": g.entity_labels.get(i, "Entity"), "props": plain(p)}
            for i, p in g.entities.items()
        ],
        "mentions": [{"chunk": c, "entity": e} for c, e in sorted(g.mentions)],
        "relations": [
            {"source": r.source, "target": r.target, "key": k, "props": plain(r.props)}
            for k, r in g.relations.items()
        ],
        "facts": facts.rows,
    }


def write_ceiling(driver: Driver, rows: dict[str, Any], batch: int) -> dict[str, float]:
    steps: dict[str, float] = {}
    for name, query in (("documents", _DOCS), ("chunks", _CHUNKS), ("next", _NEXT),
                        ("entities", _ENTITIES), ("mentions", _MENTIONS),
                        ("relations", _RELATIONS), ("facts", _FACTS)):  # fmt: skip
        began = time.perf_counter()
        data: Sequence[Any] = rows[name]
        for start in range(0, len(data), batch):
            try:
                driver.execute_query(query, rows=data[start : start + batch], database_="neo4j")
            except Exception as exc:
                raise RuntimeError(f"ceiling step {name}: {data[start]}") from exc
        steps[name] = time.perf_counter() - began
    return steps


def wipe(driver: Driver) -> None:
    """An emptied database, and no plan cached: each timed run plans its own statements."""
    with driver.session(database="neo4j") as session:
        session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 1000 ROWS")
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 1000 ROWS")
    driver.execute_query("CALL db.clearQueryCaches()", database_="neo4j")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = fn()
    return time.perf_counter() - began, result


def _fields(writer: GraphWriter) -> dict[str, Any]:
    return {f.name: getattr(writer, f.name) for f in fields(GraphWriter)}


def _fmt(steps: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in steps.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--per-doc", default="90-110", help="triplets per document, MIN-MAX")
    parser.add_argument("--entities", type=int, default=20000)
    parser.add_argument("--predicates", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=1000, help="the ceiling's rows per batch")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--warmup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write the ceiling once, untimed, before the first rep (warms the server's JVM)",
    )
    args = parser.parse_args()
    low, high = (int(x) for x in args.per_doc.split("-"))
    with (
        throwaway_server(password="bench-password", heap="2g", pagecache="1g") as server,
        open_driver(server.neo4j) as driver,
        tempfile.TemporaryDirectory() as tmp,
    ):
        settings = server.model_copy(deep=True)
        settings.resolve.embedding_dim = 256
        apply_schema(driver, database="neo4j", dimension=256)
        corpus = Path(tmp) / "corpus.jsonl"
        lines = list(generate(args.docs, (low, high), args.predicates, args.entities))
        corpus.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        n = sum(len(line["triplets"]) for line in lines)
        folder = Path(tmp) / "root"
        folder.mkdir()
        rows = ceiling_rows(settings, driver, folder, corpus)
        sizes = {k: len(v) for k, v in rows.items()}
        print(f"corpus: {args.docs} documents, {n} triplets; graph rows {sizes}", flush=True)
        if args.warmup:
            # Untimed: a fresh JVM runs everything slower until its JIT has compiled the hot
            # paths, and kg ran first, so it alone paid for that. Plans are cleared by wipe().
            wipe(driver)
            warm, _ = timed(lambda: write_ceiling(driver, rows, args.batch))
            print(f"warm-up (untimed in the ratio): ceiling {warm:.1f}s", flush=True)
        for rep in range(args.repeats):
            wipe(driver)
            writer = TimedWriter(**_fields(make_writer(settings, driver)))
            ours, summary = timed(
                lambda w=writer: ingest(
                    settings, driver, folder, triplets=corpus, namespace="bench", writer=w
                )
            )
            # Printed now: at 200k relations the wipe below once failed on a
            # transaction timeout, and kg's figures went with it.
            print(
                f"rep {rep}: kg {ours:.1f}s (stages {_fmt(summary.timings)}; write steps "
                f"{_fmt(writer.steps)})",
                flush=True,
            )
            wipe(driver)
            ceiling, steps = timed(lambda: write_ceiling(driver, rows, args.batch))
            no_facts = ceiling - steps["facts"]
            print(
                f"       ceiling {ceiling:.1f}s ({_fmt(steps)})\n"
                f"       ceiling/kg = {ceiling / ours:.2f} (without facts: {no_facts / ours:.2f}"
                f" against kg's time less its facts step: "
                f"{no_facts / (ours - writer.steps.get('facts (embed + write)', 0.0)):.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
