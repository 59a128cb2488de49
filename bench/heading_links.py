"""Where the graph signal links a heading as if it were a name (issue 40, item 1).

On a docs corpus ingested with ``graph="metadata"`` (no LLM), the graph signal's entities are
titles and headings. A question's ordinary word that is also a one-word heading ("Application",
"URL", "Body") links to that heading, and ``hybrid`` ranks the heading's file first. This
prints each question where ``hybrid`` loses to ``text`` at rank 1, or where ``graph`` misses
the labelled file in its first 3, with the entities ``graph`` linked and the first files of
each mode: the failure to reproduce before changing linking, and to read again after.

The dev sets are the vendored ones of bench/retrieval_quality.py: ``docs`` (Starlette's
Markdown docs, bench/data/starlette-docs) and ``vue-ru`` (Vue's Russian guide,
bench/data/vue-docs-ru). Usage::

    .venv/bin/python bench/heading_links.py                  # both sets, a throwaway Neo4j
    .venv/bin/python bench/heading_links.py --sets docs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg import KnowledgeGraph
from kg.localserver import throwaway_server

DATA = Path(__file__).resolve().parent / "data"
SETS = {"docs": DATA / "starlette-docs", "vue-ru": DATA / "vue-docs-ru"}
MODES = ("text", "graph", "hybrid")


def first_files(graph: KnowledgeGraph, question: str, mode: str) -> tuple[list[str], list[str]]:
    """The first three distinct files of a search's chunks, and the entities it returned."""
    response = graph.search(question, mode=mode, limit=10)
    files: list[str] = []
    for chunk in response.chunks:
        if chunk.document_path not in files:
            files.append(chunk.document_path)
    return files[:3], [e.name for e in response.entities[:5]]


def hit(files: list[str], k: int, gold: str) -> bool:
    """Whether the labelled file is among the first ``k``."""
    return any(f.endswith(gold) for f in files[:k])


def run_set(name: str, root: Path) -> tuple[int, int, int]:
    """Print the set's misleading links; (questions, hybrid below text at rank 1, graph misses
    at 3)."""
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    below = missed = 0
    with throwaway_server(heap="1g", pagecache="256m") as settings, KnowledgeGraph(settings) as g:
        g.ingest(root / "docs", graph="metadata")
        print(f"\n{name} ({len(questions)} questions)")
        for q in questions:
            gold = q["file"]
            ranked: dict[str, list[str]] = {}
            linked: list[str] = []
            for mode in MODES:
                ranked[mode], entities = first_files(g, q["question"], mode)
                if mode == "graph":
                    linked = entities

            loses = hit(ranked["text"], 1, gold) and not hit(ranked["hybrid"], 1, gold)
            misses = not hit(ranked["graph"], 3, gold)
            below += loses
            missed += misses
            if loses or misses:
                tag = "hybrid < text at 1" if loses else "graph misses at 3"
                print(f"- {q['question']}  [{tag}; label {gold}]")
                print(f"    graph linked: {linked}")
                for mode in MODES:
                    print(f"    {mode:<6} {ranked[mode]}")
    return len(questions), below, missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="docs,vue-ru", help="a subset of docs,vue-ru")
    args = parser.parse_args()
    totals = {name: run_set(name, SETS[name]) for name in args.sets.split(",")}
    print()
    for name, (n, below, missed) in totals.items():
        print(f"{name}: {n} questions; hybrid below text at rank 1: {below}; graph misses the "
              f"labelled file in its first 3: {missed}")  # fmt: skip


if __name__ == "__main__":
    main()
