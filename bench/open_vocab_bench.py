"""Import throughput against vocabulary size, beside a bare batched UNWIND MERGE ceiling.

Generates deterministic open-vocabulary corpora (Zipf-distributed predicates and entities, a
few long names, one over-long name that must drop alone) with 6, 500 and 5,000 distinct
predicates and the same number of triplets, then, on one local Neo4j and in one run:

- ``kg``: ``kg.ingest.ingest(..., triplets=FILE)``, the whole import (load, chunk, resolve,
  write, bookkeeping) into an empty graph;
- ``ceiling``: the same documents, chunks (with the same embeddings), entities (by exact name,
  no resolution), mentions and relations written by bare batched ``UNWIND ... MERGE``
  statements with one static relationship type.

Prints relations/s per run, the per-stage timings of kg's import, the ratio kg/ceiling per
vocabulary size and the ratio of the 5,000-predicate run to the 6-predicate run (medians over
``--repeats``). Usage::

    .venv/bin/python bench/open_vocab_bench.py                       # the recorded run
    .venv/bin/python bench/open_vocab_bench.py --docs 2000 --per-doc 5-12 --predicates 5000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neo4j import Driver

from kg.documents import chunk_document, document_id
from kg.graph.driver import open_driver
from kg.graph.schema import apply_schema
from kg.ingest import ingest
from kg.localserver import LocalNeo4j, throwaway_server
from kg.models import Document
from kg.resolve import make_embedder
from kg.settings import Settings

DIM = 256

# -- the corpus ---------------------------------------------------------------------------------

_VERBS = ["born in", "member of", "located in", "directed", "published", "wrote", "founded",
          "played for", "married to", "won", "studied at", "owned by", "part of", "released",
          "composed", "created by", "succeeded", "based on", "named after", "served as"]  # fmt: skip
_PREPS = ["", "in", "by", "for", "with", "from", "at", "of", "as", "on", "during", "after"]


def _zipf_weights(n: int, s: float = 1.05) -> list[float]:
    return [1.0 / (rank**s) for rank in range(1, n + 1)]


def _word(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))


def _predicates(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        base = rng.choice(_VERBS)
        extra = f" {_word(rng)}" if len(seen) >= len(_VERBS) * len(_PREPS) else ""
        name = f"{base} {rng.choice(_PREPS)}{extra}".strip()
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def _entities(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        words = [_word(rng).capitalize() for _ in range(rng.choice([1, 2, 2, 3]))]
        if rng.random() < 0.005:  # a few long names, as OpenIE produces
            words += [_word(rng) for _ in range(rng.randint(12, 25))]
        name = " ".join(words)
        if name.casefold() not in seen:
            seen.add(name.casefold())
            names.append(name)
    return names


def generate(
    docs: int, per_doc: tuple[int, int], n_predicates: int, n_entities: int, seed: int = 7
) -> Iterator[dict[str, Any]]:
    """One JSON line per document; the same seed and sizes always give the same corpus."""
    rng = random.Random(seed)
    predicates = _predicates(rng, n_predicates)
    entities = _entities(rng, n_entities)
    p_weights = _zipf_weights(len(predicates))
    e_weights = _zipf_weights(len(entities), 0.9)
    too_long = "Overlong " + " ".join(_word(rng) for _ in range(80))  # > 300 characters
    for i in range(docs):
        k = rng.randint(*per_doc)
        subjects = rng.choices(entities, e_weights, k=k)
        objects = rng.choices(entities, e_weights, k=k)
        preds = rng.choices(predicates, p_weights, k=k)
        triplets = [
            {"subject": s, "predicate": p, "object": o}
            for s, p, o in zip(subjects, preds, objects, strict=True)
            if s != o
        ]
        if i == docs // 2:
            triplets.append({"subject": too_long, "predicate": "described as", "object": "X"})
        sentences = [f"{t['subject']} {t['predicate']} {t['object']}." for t in triplets]
        filler = " ".join(_word(rng) for _ in range(rng.randint(20, 60)))
        yield {
            "id": f"passages/{i:05d}",
            "title": subjects[0],
            "text": " ".join(sentences) + " " + filler,
            "triplets": triplets,
        }


# -- the ceiling ----------------------------------------------------------------------------------

_C_DOCS: LiteralString = "UNWIND $rows AS row MERGE (d:Document {id: row.id}) SET d.title = row.title, d.path = row.path, d.sha256 = row.sha256"
_C_CHUNKS: LiteralString = (
    "UNWIND $rows AS row MATCH (d:Document {id: row.doc}) MERGE (c:Chunk {id: row.id}) "
    "SET c.text = row.text, c.index = row.index, c.document_id = row.doc, c.embedding = row.embedding "
    "MERGE (c)-[:PART_OF]->(d)"
)
_C_ENTITIES: LiteralString = "UNWIND $rows AS row MERGE (e:Entity {id: row.id}) SET e.name = row.name, e.type = 'Entity', e.embedding = row.embedding"
_C_MENTIONS: LiteralString = (
    "UNWIND $rows AS row MATCH (c:Chunk {id: row.chunk}) MATCH (e:Entity {id: row.entity}) "
    "MERGE (c)-[:MENTIONS]->(e)"
)
_C_RELATIONS: LiteralString = (
    "UNWIND $rows AS row MATCH (a:Entity {id: row.source}) MATCH (b:Entity {id: row.target}) "
    "MERGE (a)-[r:RELATED {key: row.key}]->(b) SET r.predicate = row.predicate, r.chunk_ids = [row.chunk]"
)


def _ceiling_rows(
    lines: list[dict[str, Any]], settings: Settings
) -> dict[str, list[dict[str, Any]]]:
    """Everything the import writes, precomputed (untimed): the ceiling times only the writes."""
    embedder = make_embedder(settings.resolve)
    docs, chunks, mentions, relations = [], [], [], []
    entity_ids: dict[str, str] = {}
    for line in lines:
        doc_id = document_id(line["id"], "ceiling")
        doc = Document(doc_id, line["id"], line["title"], line["text"], "x")
        docs.append({"id": doc_id, "title": line["title"], "path": line["id"], "sha256": "x"})
        pieces = chunk_document(doc, chunk_tokens=settings.extract.chunk_tokens, overlap=0)
        first = pieces[0].id
        for piece in pieces:
            chunks.append({"id": piece.id, "doc": doc_id, "text": piece.text, "index": piece.index})
        for t in line["triplets"]:
            if len(t["subject"]) > 300:
                continue
            ids = [
                entity_ids.setdefault(n.casefold(), f"e{len(entity_ids)}")
                for n in (t["subject"], t["object"])
            ]
            mentions += [{"chunk": first, "entity": e} for e in ids]
            relations.append(
                {
                    "source": ids[0],
                    "target": ids[1],
                    "predicate": t["predicate"],
                    "key": f"{ids[0]}|{t['predicate']}|{ids[1]}",
                    "chunk": first,
                }
            )
    vectors = embedder.embed([c["text"] for c in chunks])
    for c, v in zip(chunks, vectors, strict=True):
        c["embedding"] = [float(x) for x in v]
    names = {v: k for k, v in entity_ids.items()}
    name_vectors = embedder.embed(list(names.values()))
    entities = [
        {"id": i, "name": n, "embedding": [float(x) for x in v]}
        for (i, n), v in zip(names.items(), name_vectors, strict=True)
    ]
    return {
        "docs": docs,
        "chunks": chunks,
        "entities": entities,
        "mentions": mentions,
        "relations": relations,
    }


def _ceiling(driver: Driver, rows: dict[str, list[dict[str, Any]]], batch: int) -> float:
    started = time.perf_counter()
    for query, key in ((_C_DOCS, "docs"), (_C_CHUNKS, "chunks"), (_C_ENTITIES, "entities"),
                       (_C_MENTIONS, "mentions"), (_C_RELATIONS, "relations")):  # fmt: skip
        data = rows[key]
        for start in range(0, len(data), batch):
            driver.execute_query(query, rows=data[start : start + batch], database_="neo4j")
    return time.perf_counter() - started


def _wipe(driver: Driver) -> None:
    with driver.session(database="neo4j") as session:
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of this process and of the Neo4j server so far."""
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    own = os.times()
    total = own.user + own.system
    if pid is not None:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


@dataclass
class _Run:
    wall: float
    cpu: float


def _timed(pid: int | None, fn: Any) -> tuple[_Run, Any]:
    cpu0, wall0 = _cpu_seconds(pid), time.perf_counter()
    result = fn()
    return _Run(time.perf_counter() - wall0, _cpu_seconds(pid) - cpu0), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--per-doc", default="10-20", help="triplets per document, MIN-MAX")
    parser.add_argument("--predicates", default="6,500,5000")
    parser.add_argument("--entities", type=int, default=16000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    low, high = (int(x) for x in args.per_doc.split("-"))
    sizes = [int(x) for x in args.predicates.split(",")]

    with (
        throwaway_server(password="bench-password", heap="2g", pagecache="1g") as server,
        open_driver(server.neo4j) as driver,
        tempfile.TemporaryDirectory() as tmp,
    ):
        pid = LocalNeo4j(server).status().pid
        settings = server.model_copy(deep=True)
        settings.resolve.embedding_dim = DIM
        settings.write.batch_size = args.batch
        apply_schema(driver, database="neo4j", dimension=DIM)
        corpora: dict[int, tuple[Path, int, dict[str, list[dict[str, Any]]]]] = {}
        for size in sizes:
            lines = list(generate(args.docs, (low, high), size, args.entities))
            path = Path(tmp) / f"corpus-{size}.jsonl"
            path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
            n = sum(len(line["triplets"]) for line in lines)
            corpora[size] = (path, n, _ceiling_rows(lines, settings))
        folder = Path(tmp) / "root"
        folder.mkdir()
        runs: dict[int, dict[str, list[_Run]]] = {s: {"kg": [], "ceiling": []} for s in sizes}
        # Interleaved: each repeat runs every size, each kg run right beside its ceiling, so a
        # pair shares the machine's load at that moment (these machines are noisy).
        for rep in range(args.repeats):
            for size in sizes:
                path, n, rows = corpora[size]
                _wipe(driver)
                ours, summary = _timed(
                    pid, lambda p=path: ingest(settings, driver, folder, triplets=p)
                )
                types = driver.execute_query(
                    "CALL db.relationshipTypes() YIELD relationshipType RETURN count(*) AS n"
                ).records[0]["n"]
                _wipe(driver)
                ceiling, _ = _timed(pid, lambda r=rows: _ceiling(driver, r, args.batch))
                runs[size]["kg"].append(ours)
                runs[size]["ceiling"].append(ceiling)
                print(
                    f"rep={rep} predicates={size:5d} triplets={n}: kg {ours.wall:.1f}s wall "
                    f"{ours.cpu:.1f}s cpu, ceiling {ceiling.wall:.1f}s wall {ceiling.cpu:.1f}s cpu; "
                    f"types={types} dropped={len(summary.dropped)} stages={summary.timings}",
                    flush=True,
                )
        print("\nmedians over repeats (relations/s = triplets / seconds; ratios are per pair)")
        print(
            "| distinct predicates | kg rel/s (wall) | ceiling rel/s (wall) | kg / ceiling (wall) | kg / ceiling (cpu) |"
        )
        print("|---|---|---|---|---|")
        for size in sizes:
            n = corpora[size][1]
            ours, ceil = runs[size]["kg"], runs[size]["ceiling"]
            wall = statistics.median(c.wall / o.wall for o, c in zip(ours, ceil, strict=True))
            cpu = statistics.median(c.cpu / o.cpu for o, c in zip(ours, ceil, strict=True))
            print(
                f"| {size:,} | {n / statistics.median(o.wall for o in ours):,.0f} | "
                f"{n / statistics.median(c.wall for c in ceil):,.0f} | {wall:.2f} | {cpu:.2f} |"
            )
        if len(sizes) > 1:
            first, last = runs[sizes[0]]["kg"], runs[sizes[-1]]["kg"]
            wall = statistics.median(b.wall / a.wall for a, b in zip(first, last, strict=True))
            cpu = statistics.median(b.cpu / a.cpu for a, b in zip(first, last, strict=True))
            print(
                f"\n{sizes[-1]:,}-predicate import / {sizes[0]}-predicate import: {wall:.2f}x wall, "
                f"{cpu:.2f}x cpu (goal <= 1.5)"
            )


if __name__ == "__main__":
    main()
