"""What the folder graph gives search: categories and references on and off, hit@1/hit@3.

The dev folder bench/data/company-folder (made up by us: 22 Russian and English files in
category folders that name each other by title and by number, 18 questions labelled with the
files that answer them) is ingested with ``graph="metadata"`` (no LLM) once per variant of
the document graph (kg/docgraph.py ``build``'s switches; the ingest is the same otherwise):

- ``before``: neither category folders nor references (the document graph of the commit
  before: titles, headings, links, declared entities, the mention scan);
- ``folders``: category folders only; ``references``: references only;
- ``both``: both, the default (a category is mentioned by its documents' first chunks);
- ``both-all``: both, every chunk of a document mentioning its category;
- ``both+loose``: both, and laws and standards no file is (152-ФЗ) as ``Reference`` entities;
- ``both+category-facts``: both, with a ``Fact`` for each ``IN_CATEGORY`` edge (the default
  writes none for the document graph's structure: ``kg.docgraph.FACTLESS``).

Each variant: a wiped database, the ingest, then every question through
``KnowledgeGraph.search`` in ``text``, ``vector``, ``graph`` and ``hybrid`` (depth 2, limit
10). hit@k: the share of questions with a labelled file among the first k distinct files of
the chunks returned; also per question kind (direct, hop, category). Usage::

    .venv/bin/python bench/folder_graph.py                 # a throwaway local Neo4j
    .venv/bin/python bench/folder_graph.py --uri bolt://localhost:7687 --password ...  # wiped!
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg import KnowledgeGraph, docgraph
from kg.graph.driver import open_driver
from kg.settings import Settings

DATA = Path(__file__).resolve().parent / "data" / "company-folder"
MODES = ("text", "vector", "graph", "hybrid")
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {"folders": False, "references": False},
    "folders": {"folders": True, "references": False},
    "references": {"folders": False, "references": True},
    "both": {"folders": True, "references": True},
    "both-all": {"folders": True, "references": True, "category_mentions": "all"},
    "both+loose": {"folders": True, "references": True, "loose": True},
    "both+category-facts": {"folders": True, "references": True, "category_facts": True},
}


@contextmanager
def server(args: argparse.Namespace) -> Iterator[Settings]:
    if args.uri:
        yield Settings(neo4j={"uri": args.uri, "password": args.password})
        return
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        yield s


def wipe(settings: Settings) -> None:
    with open_driver(settings.neo4j) as driver, driver.session() as session:
        session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS")
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")


def files(chunks: list[Any]) -> list[str]:
    return list(dict.fromkeys(c.document_path for c in chunks))


def run_variant(settings: Settings, options: dict[str, Any], questions: list[dict[str, Any]]
                ) -> dict[str, Any]:  # fmt: skip
    wipe(settings)
    options = dict(options)
    original, factless = docgraph.build, docgraph.FACTLESS
    if options.pop("category_facts", False):
        docgraph.FACTLESS = (docgraph.REFERENCES,)
    docgraph.build = functools.partial(original, **options)  # type: ignore[assignment]
    try:
        with KnowledgeGraph(settings) as graph:
            started = time.perf_counter()
            summary = graph.ingest(DATA / "docs", graph="metadata")
            took = time.perf_counter() - started
            found: dict[str, list[list[str]]] = {m: [] for m in MODES}
            for q in questions:
                for mode in MODES:
                    response = graph.search(q["q"], mode=mode, depth=2, limit=10)
                    found[mode].append(files(response.chunks))
    finally:
        docgraph.build, docgraph.FACTLESS = original, factless
    with open_driver(settings.neo4j) as driver:
        records, _, _ = driver.execute_query(
            "MATCH ()-[r]->() WHERE r.predicate IN ['IN_CATEGORY', 'REFERENCES'] "
            "RETURN r.predicate AS p, count(*) AS n"
        )
    scores: dict[str, dict[str, float]] = {}
    for mode, ranked in found.items():
        row: dict[str, float] = {}
        for k in (1, 3):
            hits = [
                bool(set(q["files"]) & set(r[:k])) for q, r in zip(questions, ranked, strict=True)
            ]
            row[f"hit@{k}"] = round(100 * sum(hits) / len(hits), 1)
            for kind in ("direct", "hop", "category"):
                sel = [h for h, q in zip(hits, questions, strict=True) if q["kind"] == kind]
                row[f"{kind} hit@{k}"] = round(100 * sum(sel) / len(sel), 1) if sel else 0.0
        scores[mode] = row
    return {
        "ingest_s": round(took, 1),
        "chunks": summary.chunks,
        "docgraph_entities": summary.docgraph_entities,
        "edges": {r["p"]: r["n"] for r in records},
        "scores": scores,
        "misses": {
            mode: [q["q"] for q, r in zip(questions, ranked, strict=True)
                   if not set(q["files"]) & set(r[:3])]
            for mode, ranked in found.items()
        },
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", help="an existing Neo4j (its database is wiped)")
    parser.add_argument("--password", default="")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    questions = json.loads((DATA / "questions.json").read_text(encoding="utf-8"))
    results: dict[str, Any] = {}
    with server(args) as settings:
        for name in args.variants.split(","):
            results[name] = run_variant(settings, VARIANTS[name], questions)
            r = results[name]
            print(f"\n## {name}: {r['chunks']} chunks, {r['docgraph_entities']} document-graph "
                  f"entities, edges {r['edges']}, ingest {r['ingest_s']} s")  # fmt: skip
            print("| mode | hit@1 | hit@3 | direct hit@3 | hop hit@3 | category hit@3 |")
            print("|---|---|---|---|---|---|")
            for mode, s in r["scores"].items():
                print(f"| {mode} | {s['hit@1']} | {s['hit@3']} | {s['direct hit@3']} | "
                      f"{s['hop hit@3']} | {s['category hit@3']} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
