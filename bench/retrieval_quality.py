"""Retrieval quality on public multi-hop QA: kg's search modes beside BM25, fulltext and dense.

    .venv/bin/pip install -e '.[bench]'          # bm25s, for the BM25 baseline
    .venv/bin/python bench/retrieval_quality.py                  # every mode and depth, one run
    .venv/bin/python bench/retrieval_quality.py --analyzers      # also the fulltext analyzers

Data: the HotpotQA sample vendored in bench/data/hotpotqa (100 questions, 994 Wikipedia
passages; CC BY-SA 4.0, see its README). Each passage becomes one Markdown document
(``# Title`` + text) and the folder is ingested with ``--graph metadata``: the zero-LLM
document graph, no LLM call. Then every question is asked in every mode (and, for graph and
hybrid, at every depth) through ``SearchService.local_search``, the code behind
``POST /search/local``.

Reported per system: R@2 and R@5 (the share of a question's supporting passages among the first
2 or 5 distinct passages returned, averaged over questions) and ms per query (median). The
baselines use the same passages: BM25 (bm25s, title + text, English stop words), Lucene
fulltext over the chunk text alone (a bench-only index, english analyzer) and dense retrieval
with WordLlama by exact cosine. Also reported: how much of the exact cosine top-k the Neo4j
vector index returns (its recall at these sizes).

Neo4j: a throwaway local server on free ports unless ``--uri`` names one (that database is
wiped). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg.client import KnowledgeGraph, search_service
from kg.graph.driver import open_async_driver, open_driver
from kg.resolve.embed import make_chunk_embedder
from kg.search.models import SEARCH_MODES, SearchRequest
from kg.settings import Settings

DATA = Path(__file__).resolve().parent / "data" / "hotpotqa"
DEPTHS = (1, 2, 3)
ANALYZERS = ("english", "standard-no-stop-words", "standard")


@contextmanager
def server(args: argparse.Namespace) -> Iterator[Settings]:
    if args.uri:
        yield Settings(neo4j={"uri": args.uri, "password": args.password})
        return
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        yield s


def load(limit: int | None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    questions = json.loads((DATA / "hotpotqa_train.json").read_text(encoding="utf-8"))
    corpus = json.loads((DATA / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    passages = {title: "".join(sentences).strip() for title, sentences in corpus.items()}
    return questions[:limit] if limit else questions, passages


def write_folder(folder: Path, passages: dict[str, str]) -> dict[str, str]:
    """One Markdown file per passage; returns path -> title."""
    paths: dict[str, str] = {}
    for i, (title, text) in enumerate(passages.items()):
        path = f"p{i:04d}.md"
        (folder / path).write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
        paths[path] = title
    return paths


def recall(ranked: Sequence[Sequence[str]], gold: Sequence[set[str]], k: int) -> float:
    return 100 * statistics.fmean(
        len(set(r[:k]) & g) / len(g) for r, g in zip(ranked, gold, strict=True)
    )


def distinct(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def wipe(settings: Settings) -> None:
    with open_driver(settings.neo4j) as driver, driver.session() as session:
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()


def with_overrides(settings: Settings, pairs: Sequence[str]) -> Settings:
    search = settings.search.model_dump()
    for pair in pairs:
        key, _, value = pair.partition("=")
        search[key] = json.loads(value)
    return settings.model_copy(update={"search": settings.search.model_validate(search)})


async def run_kg(
    settings: Settings,
    questions: list[dict[str, Any]],
    titles: dict[str, str],
    systems: list[tuple[str, str, int]],
) -> dict[str, tuple[list[list[str]], float]]:
    driver = open_async_driver(settings.neo4j)
    out: dict[str, tuple[list[list[str]], float]] = {}
    try:
        service = search_service(driver, settings)
        await service.startup()
        for label, mode, depth in systems:
            ranked, times = [], []
            for q in questions:
                req = SearchRequest(query=q["question"], mode=mode, depth=depth, limit=20)
                started = time.perf_counter()
                response = await service.local_search(req)
                times.append((time.perf_counter() - started) * 1000)
                ranked.append(distinct([titles[c.document_path] for c in response.chunks]))
            out[label] = (ranked, statistics.median(times))
    finally:
        await driver.close()
    return out


def fulltext_alone(settings: Settings, questions: list[dict[str, Any]], titles: dict[str, str]):
    from kg.cypher.lucene import escape_lucene

    ranked, times = [], []
    with open_driver(settings.neo4j) as driver:
        driver.execute_query(
            "CREATE FULLTEXT INDEX bench_text_only IF NOT EXISTS FOR (c:Chunk) ON EACH [c.text] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}"
        )
        driver.execute_query("CALL db.awaitIndexes(300)")
        for q in questions:
            started = time.perf_counter()
            records, _, _ = driver.execute_query(
                "CALL db.index.fulltext.queryNodes('bench_text_only', $q, {limit: 20}) "
                "YIELD node, score MATCH (node)-[:PART_OF]->(d:Document) RETURN d.path AS path",
                q=escape_lucene(q["question"]),
            )
            times.append((time.perf_counter() - started) * 1000)
            ranked.append(distinct([titles[r["path"]] for r in records]))
        driver.execute_query("DROP INDEX bench_text_only")
    return ranked, statistics.median(times)


def bm25(questions: list[dict[str, Any]], passages: dict[str, str]):
    import bm25s

    names = list(passages)
    docs = [f"{t}\n{passages[t]}" for t in names]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    ranked, times = [], []
    for q in questions:
        started = time.perf_counter()
        ids, _ = retriever.retrieve(
            bm25s.tokenize([q["question"]], stopwords="en", show_progress=False),
            k=20,
            show_progress=False,
        )
        times.append((time.perf_counter() - started) * 1000)
        ranked.append([names[i] for i in ids[0]])
    return ranked, statistics.median(times)


def dense_exact(questions: list[dict[str, Any]], passages: dict[str, str], settings: Settings):
    embedder = make_chunk_embedder(settings.chunks)
    names = list(passages)
    matrix = embedder.embed([f"# {t}\n\n{passages[t]}" for t in names])
    ranked, times = [], []
    for q in questions:
        started = time.perf_counter()
        scores = matrix @ embedder.embed([q["question"]])[0]
        top = np.argsort(-scores, kind="stable")[:20]
        times.append((time.perf_counter() - started) * 1000)
        ranked.append([names[i] for i in top])
    return ranked, statistics.median(times)


def index_recall(
    settings: Settings, questions: list[dict[str, Any]], k: int, ask: int | None = None
) -> float:
    """Share of the exact cosine top-k (over the stored chunk vectors) that the vector index
    returns when asked for ``ask`` (default k) neighbours and cut to k."""
    embedder = make_chunk_embedder(settings.chunks)
    with open_driver(settings.neo4j) as driver:
        records, _, _ = driver.execute_query("MATCH (c:Chunk) RETURN c.id AS id, c.embedding AS v")
        ids = [r["id"] for r in records]
        matrix = np.array([r["v"] for r in records], dtype=np.float32)
        found = []
        for q in questions:
            vector = embedder.embed([q["question"]])[0]
            exact = {ids[i] for i in np.argsort(-(matrix @ vector))[:k]}
            rows, _, _ = driver.execute_query(
                "CALL db.index.vector.queryNodes('chunk_embedding', $ask, $v) YIELD node, score "
                "RETURN node.id AS id ORDER BY score DESC LIMIT $k",
                k=k,
                ask=ask or k,
                v=[float(x) for x in vector],
            )
            found.append(len(exact & {r["id"] for r in rows}) / k)
    return 100 * statistics.fmean(found)


def set_analyzer(settings: Settings, analyzer: str) -> None:
    with open_driver(settings.neo4j) as driver:
        driver.execute_query("DROP INDEX chunk_text IF EXISTS")
        driver.execute_query(
            "CREATE FULLTEXT INDEX chunk_text FOR (c:Chunk) ON EACH [c.text, c.title] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: $analyzer}}",
            analyzer=analyzer,
        )
        driver.execute_query("CALL db.awaitIndexes(300)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", help="an existing Neo4j (its database is wiped)")
    parser.add_argument("--password")
    parser.add_argument("--questions", type=int, help="only the first N questions")
    parser.add_argument("--analyzers", action="store_true", help="text mode per analyzer too")
    parser.add_argument("--search", action="append", default=[], metavar="KEY=JSON",
                        help="override a search setting, e.g. fusion_k=10 (repeatable)")  # fmt: skip
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--reuse", action="store_true", help="with --uri: keep its graph")
    parser.add_argument("--modes", default=",".join(SEARCH_MODES), help="kg modes to run")
    parser.add_argument("--depths", default="1,2,3", help="depths for graph and hybrid")
    parser.add_argument("--no-baselines", action="store_true")
    args = parser.parse_args()
    questions, passages = load(args.questions)
    gold = [{t for t, _ in q["supporting_facts"]} for q in questions]
    rows: list[tuple[str, float, float, float]] = []

    def add(label: str, result: tuple[list[list[str]], float]) -> None:
        ranked, ms = result
        rows.append((label, recall(ranked, gold, 2), recall(ranked, gold, 5), ms))
        print(
            f"{label:34s} R@2 {rows[-1][1]:5.1f}  R@5 {rows[-1][2]:5.1f}  {ms:7.1f} ms", flush=True
        )

    with server(args) as base:
        settings = with_overrides(base, args.search)
        with tempfile.TemporaryDirectory() as tmp:
            titles = write_folder(Path(tmp), passages)
            if not (args.uri and args.reuse):
                if args.uri:
                    wipe(base)
                started = time.perf_counter()
                with KnowledgeGraph(settings) as graph:
                    summary = graph.ingest(tmp, graph="metadata")
                print(f"ingest --graph metadata: {summary.chunks} chunks, "
                      f"{summary.docgraph_entities} entities, {summary.docgraph_mentions} "
                      f"mentions, {summary.llm_calls} LLM calls, "
                      f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        if not args.no_baselines:
            add("BM25 (bm25s, title + text)", bm25(questions, passages))
            add("fulltext alone (Lucene, text)", fulltext_alone(settings, questions, titles))
            add("dense alone (WordLlama, exact)", dense_exact(questions, passages, settings))
        modes, depths = args.modes.split(","), [int(d) for d in args.depths.split(",")]
        systems = [(f"kg {m}" + (f" depth {d}" if m in ("graph", "hybrid") else ""), m, d)
                   for m in SEARCH_MODES if m in modes
                   for d in (depths if m in ("graph", "hybrid") else [2])]  # fmt: skip
        for label, result in asyncio.run(run_kg(settings, questions, titles, systems)).items():
            add(label, result)
        for k in (5, 50):
            raw, kept = (
                index_recall(settings, questions, k),
                index_recall(settings, questions, k, 4 * k),
            )
            print(f"vector index recall of the exact top {k}: {raw:.1f}% asked for {k}, "
                  f"{kept:.1f}% asked for {4 * k} (what kg does)")  # fmt: skip
        if args.analyzers:
            for analyzer in ANALYZERS:
                set_analyzer(settings, analyzer)
                text = [(f"kg text, analyzer {analyzer}", "text", 2)]
                for label, result in asyncio.run(run_kg(settings, questions, titles, text)).items():
                    add(label, result)
            set_analyzer(settings, "english")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [dict(zip(("system", "r2", "r5", "ms"), r, strict=True)) for r in rows], indent=1
            )
        )


if __name__ == "__main__":
    main()
