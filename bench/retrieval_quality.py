"""Retrieval quality on five dev sets: kg's search modes beside BM25, dense and BM25 + PageRank.

    .venv/bin/pip install -e '.[bench]'            # bm25s and PyStemmer, for the baselines
    .venv/bin/python bench/retrieval_quality.py --json retrieval.json     # all five sets
    .venv/bin/python bench/retrieval_quality.py --sets musique,docs --questions 10   # a look

The five dev sets (``--sets``, default all; each is ingested into a wiped database):

- ``hotpotqa``: the HotpotQA sample in bench/data/hotpotqa (100 questions, 994 Wikipedia
  passages, CC BY-SA 4.0). One Markdown file per passage (``# Title`` + text), ingested with
  ``graph="metadata"`` (the zero-LLM document graph). Passage = title.
- ``musique``: ../shared/data/musique-dev (50 multi-hop questions over 1,890 passages with
  their GPT-3.5 OpenIE triplets; see its README), imported with the triplets import (``kg
  ingest EMPTY_DIR --triplets corpus.jsonl``). Passage = the corpus ``id``. ``--musique``
  names another copy of that folder.
- ``xquad``: XQuAD articles 0-23 only (bench/data/xquad; articles 24-47 are held out for
  evaluation and this script cannot load them), two scenarios with their own tables:
  ``xquad ru→ru+en`` (Russian questions over the Russian and English paragraphs together) and
  ``xquad ru→en`` (Russian questions over the English paragraphs). Paragraphs go in as a
  triplets file with no triplets, ``graph="metadata"``, as bench/multilingual.py does.
  Passage = the paragraph (article/paragraph), in either language.
- ``docs``: Starlette's Markdown docs, vendored in bench/data/starlette-docs (BSD-3) with 27
  how-to questions labelled by hand with their file and section; ingested with
  ``graph="metadata"``.
- ``vue-ru``: the Russian translation of Vue's guide, vendored in bench/data/vue-docs-ru
  (52 Markdown files in subfolders, CC BY 4.0) with 32 how-to questions labelled by hand with
  their file (``components/props.md``, the path kg stores for a file ingested from the folder)
  and their language: ``ru`` (16), ``en`` (10) or ``mixed`` (6: Russian with English terms);
  ingested with ``graph="metadata"``.

Metrics. Passage sets: R@2 and R@5 as HippoRAG defines them, |first k distinct passages ∩
gold| / |gold|, averaged over questions. Docs: ``sec@3``, the share of questions whose
labelled section (or file, when the label's heading is not in the file) is among the first 3
chunks, ``R@5 (file)``, the share whose file is among the first 5 distinct files, and
``hit@1`` and ``hit@3``, the shares whose file is the first, or among the first 3, distinct
files. Vue-ru: ``hit@1`` and ``hit@3`` the same way, overall and per question language. Time:
median and p95 ms per question, wall clock, in this process.

Systems. kg ``text``, ``vector``, ``graph`` and ``hybrid`` through ``SearchService.local_search``
(the code behind ``POST /search/local``; depth 2, limit 20) and ``auto`` through
``kg.search.routed.routed_search`` (what ``kg search`` and ``POST /search`` do by default: the router
picks). Baselines over the same chunks, read out of Neo4j after ingest: BM25 (bm25s over title +
text; words of 2+ characters, English and Russian stop words removed, Snowball stemming per
word: Russian for Cyrillic words, English otherwise), dense (the stored chunk vectors of kg's
chunk embedder against the question embedded by the same embedder, exact cosine in numpy),
and BM25 + PageRank: personalized PageRank (damping 0.85) over the graph kg built, entities
and chunks as nodes, ``MENTIONS`` and every entity-to-entity relation as undirected edges,
seeded equally from the entities whose name or alias occurs in the question as a run of words
(names under 3 characters and stop words skipped), chunks ranked by their PageRank and fused
with BM25 by reciprocal rank fusion (k 60). The graph is read out of Neo4j once per set.

The last table is the mean over the five sets per system (XQuAD counts once: the mean of its
two scenarios; for docs, sec@3 and R@5 (file) stand in the R@2 and R@5 columns; for vue-ru,
hit@1 and hit@3). After each file-labelled set, the questions that no system finds among its
first 3 files are listed.

Neo4j: a throwaway local server on free ports unless ``--uri`` names one (that database is
wiped). Not part of the test suite. Inputs (commit, data checksums, search settings, machine)
are printed first and kept in ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg.client import KnowledgeGraph, search_service
from kg.graph.driver import open_async_driver, open_driver
from kg.resolve.embed import make_chunk_embedder
from kg.scope import scoped
from kg.search.global_models import RoutedRequest
from kg.search.models import SearchRequest
from kg.search.routed import routed_search
from kg.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
MUSIQUE = ROOT.parent / "shared" / "data" / "musique-dev"
SET_NAMES = ("hotpotqa", "musique", "xquad", "docs", "vue-ru")
KG_MODES = ("text", "vector", "graph", "hybrid", "auto")
BASELINES = ("BM25", "dense", "BM25 + PageRank")
XQUAD_DEV = range(24)  # articles 24-47 are held out for evaluation: never loaded here
LIMIT = 20
CYRILLIC = re.compile(r"[\u0400-\u04ff]")
WORD = re.compile(r"\w\w+")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk: its document path and text (docs score sections from the text)."""

    path: str
    text: str


@dataclass
class Question:
    text: str
    gold: frozenset[str]  # passage keys; for docs and vue-ru, the labelled file
    section: str | None = None  # docs only: the labelled heading, or "(top)"
    lang: str | None = None  # vue-ru only: the question's language (ru, en, mixed)


@dataclass
class DevSet:
    """One table: questions, how to load the corpus, how a document path maps to a passage."""

    name: str
    questions: list[Question]
    ingest: Callable[[Settings], str]  # loads the corpus into an empty database; says what
    passage: Callable[[str], str] = lambda path: path
    docs_root: Path | None = None  # docs only: the vendored files, for section spans
    inputs: list[Path] = field(default_factory=list)
    ks: tuple[int, int] = (2, 5)  # the cut-offs of the two main columns (passage sets)
    columns: tuple[str, str] = ("R@2", "R@5")
    extra: Callable[[list[list[str]], list[Question]], dict[str, float]] | None = None


@dataclass
class Result:
    set: str
    system: str
    r2: float
    r5: float
    median_ms: float
    p95_ms: float
    extra: dict[str, float] = field(default_factory=dict)  # more columns, e.g. hit@1 per lang


# -- data --------------------------------------------------------------------------------------


#: ``--scoped-with``: the namespace the next ingests go to (None: each set's own).
INGEST_NAMESPACE: list[str] = []


def ingest_into(namespace: str, dev: DevSet, settings: Settings) -> str:
    """``dev``'s corpus ingested into ``namespace``."""
    INGEST_NAMESPACE[:] = [namespace]
    try:
        return dev.ingest(settings)
    finally:
        INGEST_NAMESPACE.clear()


def ingest_folder(settings: Settings, folder: Path | str, **options: Any) -> str:
    started = time.perf_counter()
    if INGEST_NAMESPACE:
        options["namespace"] = INGEST_NAMESPACE[0]
    with KnowledgeGraph(settings) as graph:
        s = graph.ingest(folder, **options)
    assert not s.import_errors, s.import_errors
    return (f"{s.chunks} chunks, {s.docgraph_entities} document-graph entities, "
            f"{s.llm_calls} LLM calls, {time.perf_counter() - started:.1f} s")  # fmt: skip


def ingest_triplets(settings: Settings, rows: Iterator[dict[str, Any]], **options: Any) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.jsonl"
        with path.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        return ingest_folder(settings, tmp, triplets=path, **options)


def hotpotqa(limit: int | None) -> DevSet:
    folder = DATA / "hotpotqa"
    qs = json.loads((folder / "hotpotqa_train.json").read_text(encoding="utf-8"))
    corpus = json.loads((folder / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    passages = {title: "".join(sentences).strip() for title, sentences in corpus.items()}
    titles = {f"p{i:04d}.md": title for i, title in enumerate(passages)}

    def ingest(settings: Settings) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            for path, title in titles.items():
                text = f"# {title}\n\n{passages[title]}\n"
                (Path(tmp) / path).write_text(text, encoding="utf-8")
            return ingest_folder(settings, tmp, graph="metadata")

    questions = [Question(q["question"], frozenset(t for t, _ in q["supporting_facts"]))
                 for q in qs]  # fmt: skip
    return DevSet("hotpotqa", questions[:limit] if limit else questions, ingest,
                  passage=lambda path: titles[path],
                  inputs=[folder / "hotpotqa_train.json", folder / "hotpotqa_train_corpus.json"])  # fmt: skip


def musique(folder: Path, limit: int | None) -> DevSet:
    corpus, questions_file = folder / "corpus.jsonl", folder / "questions.jsonl"
    lines = questions_file.read_text(encoding="utf-8").splitlines()
    questions = [
        Question(q["question"], frozenset(q["supporting_doc_ids"])) for q in map(json.loads, lines)
    ]

    def ingest(settings: Settings) -> str:
        with tempfile.TemporaryDirectory() as empty:
            return ingest_folder(settings, empty, triplets=corpus)

    return DevSet("musique", questions[:limit] if limit else questions, ingest,
                  inputs=[corpus, questions_file])  # fmt: skip


def xquad(limit: int | None) -> list[DevSet]:
    """Two scenarios over articles 0-23; only those articles are read out of the files."""
    files = [DATA / "xquad" / f"xquad.{lang}.json" for lang in ("en", "ru")]
    data = {lang: json.loads(f.read_text(encoding="utf-8"))["data"][: len(XQUAD_DEV)]
            for lang, f in zip(("en", "ru"), files, strict=True)}  # fmt: skip
    assert [a["title"] for a in data["en"]] == [a["title"] for a in data["ru"]]
    questions = [
        Question(q["question"].strip(), frozenset({f"{a}/{p}"}))
        for a in XQUAD_DEV
        for p, paragraph in enumerate(data["ru"][a]["paragraphs"])
        for q in paragraph["qas"]
    ]
    if limit:  # evenly spaced, so a quick run still covers the articles
        questions = [questions[i * len(questions) // limit] for i in range(limit)]

    def ingest(langs: Sequence[str]) -> Callable[[Settings], str]:
        def run(settings: Settings) -> str:
            rows = (
                {"id": f"{lang}/{a}/{p}", "title": data[lang][a]["title"],
                 "text": paragraph["context"], "triplets": []}
                for lang in langs
                for a in XQUAD_DEV
                for p, paragraph in enumerate(data[lang][a]["paragraphs"])
            )  # fmt: skip
            return ingest_triplets(settings, rows, graph="metadata", namespace="xquad")

        return run

    def paragraph(path: str) -> str:
        return path.split("/", 1)[1]  # "ru/3/2" and "en/3/2" are one passage, "3/2"

    return [
        DevSet("xquad ru→ru+en", questions, ingest(["ru", "en"]), paragraph, inputs=files),
        DevSet("xquad ru→en", questions, ingest(["en"]), paragraph, inputs=files),
    ]


def docs(limit: int | None) -> DevSet:
    root = DATA / "starlette-docs"
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [
        Question(q["question"], frozenset({q["file"]}), q["section"])
        for q in map(json.loads, lines)
    ]

    sections = Sections(root / "docs")
    for q in questions:
        if sections.span(next(iter(q.gold)), q.section or "(top)") is None:
            print(f"[docs] label not matched, the file counts: {q.section!r} in {set(q.gold)}")

    def ingest(settings: Settings) -> str:
        return ingest_folder(settings, root / "docs", graph="metadata")

    return DevSet("docs", questions[:limit] if limit else questions, ingest,
                  docs_root=root / "docs", inputs=[root / "questions.jsonl", root / "docs"],
                  columns=("sec@3", "R@5 (file)"), extra=hits_by_file)  # fmt: skip


def vue_ru(limit: int | None) -> DevSet:
    """Vue's Russian guide; a label is a path under docs/, as kg stores it (``a/b.md``)."""
    root = DATA / "vue-docs-ru"
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [
        Question(q["question"], frozenset({q["file"]}), lang=q["lang"])
        for q in map(json.loads, lines)
    ]
    for q in questions:
        if not all((root / "docs" / f).is_file() for f in q.gold):
            print(f"[vue-ru] labelled file not in docs/: {set(q.gold)}")

    def ingest(settings: Settings) -> str:
        return ingest_folder(settings, root / "docs", graph="metadata")

    return DevSet("vue-ru", questions[:limit] if limit else questions, ingest,
                  inputs=[root / "questions.jsonl", root / "docs"], ks=(1, 3),
                  columns=("hit@1", "hit@3"), extra=hits_by_lang)  # fmt: skip


# -- scoring -----------------------------------------------------------------------------------


def distinct(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def recall(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold)


def hits_by_file(ranked: list[list[str]], questions: list[Question]) -> dict[str, float]:
    """hit@1 and hit@3: the shares whose labelled file is the first, or among the first 3,
    distinct files (``ranked``: each question's distinct files)."""
    pairs = list(zip(ranked, questions, strict=True))
    return {f"hit@{k}": 100 * statistics.fmean(recall(r, q.gold, k) for r, q in pairs)
            for k in (1, 3)}  # fmt: skip


def hits_by_lang(ranked: list[list[str]], questions: list[Question]) -> dict[str, float]:
    """hits_by_file per question language, in the order the languages first occur."""
    out: dict[str, float] = {}
    for lang in distinct([q.lang or "?" for q in questions]):
        picked = [(r, q) for r, q in zip(ranked, questions, strict=True) if (q.lang or "?") == lang]
        scores = hits_by_file([r for r, _ in picked], [q for _, q in picked])
        out |= {f"{name} {lang}": value for name, value in scores.items()}
    return out


class Sections:
    """Character spans of the vendored docs' sections, and where a chunk's text lies."""

    def __init__(self, root: Path) -> None:
        self.files = {p.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.md"))}

    def span(self, file: str, heading: str) -> tuple[int, int] | None:
        text = self.files[file]
        heads: list[tuple[int, int, str]] = []  # (offset, level, title)
        offset, fenced = 0, False
        for line in text.splitlines(keepends=True):
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced and (m := HEADING.match(line)):
                heads.append((offset, len(m.group(1)), m.group(2).strip()))
            offset += len(line)
        if heading == "(top)":
            return (0, heads[0][0] if heads else len(text))
        for i, (start, level, title) in enumerate(heads):
            if title == heading:
                end = next((s for s, lv, _ in heads[i + 1 :] if lv <= level), len(text))
                return (start, end)
        return None

    def chunk_span(self, file: str, chunk: str) -> tuple[int, int] | None:
        """From the first to the last of the chunk's lines that occur once in the file."""
        text = self.files.get(file, "")
        found = [
            (at, at + len(line))
            for line in (s.strip() for s in chunk.splitlines())
            if len(line) >= 12 and text.count(line) == 1 and (at := text.find(line)) >= 0
        ]
        return (min(a for a, _ in found), max(b for _, b in found)) if found else None

    def right(self, hit: Hit, q: Question) -> bool:
        file = next(iter(q.gold))
        if hit.path != file:
            return False
        wanted = self.span(file, q.section or "(top)")
        got = self.chunk_span(file, hit.text)
        if wanted is None or got is None:  # label not matched (or chunk not found): the file
            return True
        return got[0] < wanted[1] and wanted[0] < got[1]


def score(dev: DevSet, system: str, hits: list[list[Hit]], times: list[float]) -> Result:
    ranked = [distinct([dev.passage(h.path) for h in hs]) for hs in hits]
    if dev.docs_root is not None:
        sections = Sections(dev.docs_root)
        pairs = list(zip(hits, dev.questions, strict=True))
        r2 = [float(any(sections.right(h, q) for h in hs[:3])) for hs, q in pairs]
        lost = sum(sections.chunk_span(h.path, h.text) is None for hs, _ in pairs for h in hs[:3])
        if lost:
            print(f"[docs] {system}: {lost} top-3 chunks not located in their file (file counts)")
        r5 = [recall(r, q.gold, 5) for r, q in zip(ranked, dev.questions, strict=True)]
    else:
        k2, k5 = dev.ks
        r2 = [recall(r, q.gold, k2) for r, q in zip(ranked, dev.questions, strict=True)]
        r5 = [recall(r, q.gold, k5) for r, q in zip(ranked, dev.questions, strict=True)]
    extra = dev.extra(ranked, dev.questions) if dev.extra else {}
    result = Result(dev.name, system, 100 * statistics.fmean(r2), 100 * statistics.fmean(r5),
                    statistics.median(times), float(np.percentile(times, 95)), extra)  # fmt: skip
    more = "".join(f" {k} {v:.1f}" for k, v in extra.items())
    print(f"[{dev.name}] {system:18s} {result.r2:5.1f} {result.r5:5.1f} "
          f"{result.median_ms:8.1f} ms {result.p95_ms:8.1f} ms p95{more}", flush=True)  # fmt: skip
    return result


def label(system: str) -> str:
    return f"kg `{system}`" if system in KG_MODES else system


def missed(dev: DevSet, runs: dict[str, tuple[list[list[Hit]], list[float]]]) -> list[str]:
    """File-labelled sets: the questions no system has among its first 3 files, each with
    the first 3 files of the first system."""
    if dev.extra is None:
        return []
    ranked = {label(s): [distinct([h.path for h in hs]) for hs in hits]
              for s, (hits, _) in runs.items()}  # fmt: skip
    first = next(iter(ranked.values()), [])
    return [f"{q.text!r} (label {', '.join(sorted(q.gold))}; {next(iter(ranked))}: {first[i][:3]})"
            for i, q in enumerate(dev.questions)
            if not any(q.gold & set(r[i][:3]) for r in ranked.values())]  # fmt: skip


# -- kg ----------------------------------------------------------------------------------------


@contextmanager
def server(args: argparse.Namespace) -> Iterator[Settings]:
    if args.uri:
        yield Settings(neo4j={"uri": args.uri, "password": args.password})
        return
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        yield s


def with_overrides(settings: Settings, pairs: Sequence[str]) -> Settings:
    search = settings.search.model_dump()
    for pair in pairs:
        key, _, value = pair.partition("=")
        search[key] = json.loads(value)
    return settings.model_copy(update={"search": settings.search.model_validate(search)})


def wipe(settings: Settings) -> None:
    with open_driver(settings.neo4j) as driver, driver.session() as session:
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()


async def run_kg(
    settings: Settings,
    questions: list[Question],
    modes: Sequence[str],
    depth: int,
    namespaces: list[str] | None = None,
) -> dict[str, tuple[list[list[Hit]], list[float]]]:
    driver = open_async_driver(settings.neo4j)
    out: dict[str, tuple[list[list[Hit]], list[float]]] = {}
    try:
        service = search_service(driver, settings)
        await service.startup()
        for mode in modes:
            hits, times, routes = [], [], dict[str, int]()
            for q in questions:
                started = time.perf_counter()
                if mode == "auto":
                    routed_req = RoutedRequest(
                        query=q.text, mode="auto", depth=depth, limit=LIMIT, namespaces=namespaces
                    )
                    with scoped(namespaces):
                        routed = await routed_search(service, settings, routed_req)
                    chunks = routed.local.chunks if routed.local is not None else []
                    routes[routed.mode] = routes.get(routed.mode, 0) + 1
                else:
                    req = SearchRequest(
                        query=q.text, mode=mode, depth=depth, limit=LIMIT, namespaces=namespaces
                    )
                    with scoped(namespaces):
                        chunks = (await service.local_search(req)).chunks
                times.append((time.perf_counter() - started) * 1000)
                hits.append([Hit(c.document_path, c.text) for c in chunks])
            out[mode] = (hits, times)
            if routes:
                print(f"  auto routed to: {dict(sorted(routes.items()))}", flush=True)
    finally:
        await driver.close()
    return out


# -- baselines ---------------------------------------------------------------------------------


class Tokenizer:
    """Lower-cased words of 2+ characters, English and Russian stop words removed, Snowball
    stemming per word (Russian for Cyrillic words, English for the rest)."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_RUSSIAN

        self.stop = set(STOPWORDS_EN) | set(STOPWORDS_RUSSIAN)
        self.ru, self.en = Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")

    def __call__(self, text: str) -> list[str]:
        words = [w for w in WORD.findall(text.casefold()) if w not in self.stop]
        return [(self.ru if CYRILLIC.search(w) else self.en).stemWord(w) for w in words]


@dataclass
class Graph:
    """What the baselines read out of Neo4j once per set."""

    chunk_ids: list[str]
    hits: list[Hit]
    titles: list[str]
    vectors: np.ndarray  # unit rows, the stored chunk embeddings
    names: dict[str, list[int]]  # casefolded entity name or alias -> node indices
    matrix: Any  # column-stochastic transition matrix over entities + chunks (scipy CSR)


def read_graph(settings: Settings) -> Graph:
    import scipy.sparse as sp

    with open_driver(settings.neo4j) as driver:
        chunks, _, _ = driver.execute_query(
            "MATCH (c:Chunk)-[:PART_OF]->(d:Document) RETURN c.id AS id, c.text AS text, "
            "coalesce(c.title, d.title, '') AS title, d.path AS path, c.embedding AS v "
            "ORDER BY c.id"
        )
        entities, _, _ = driver.execute_query(
            "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, coalesce(e.aliases, []) AS aliases"
        )
        mentions, _, _ = driver.execute_query(
            "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN c.id AS a, e.id AS b"
        )
        relations, _, _ = driver.execute_query(
            "MATCH (a:Entity)-[]->(b:Entity) RETURN a.id AS a, b.id AS b"
        )
    index = {r["id"]: i for i, r in enumerate(chunks)}
    for r in entities:
        index.setdefault(r["id"], len(index))
    names: dict[str, list[int]] = {}
    for r in entities:
        for name in {r["name"], *r["aliases"]}:
            names.setdefault(str(name).casefold(), []).append(index[r["id"]])
    edges = [(index[r["a"]], index[r["b"]]) for r in [*mentions, *relations]
             if r["a"] in index and r["b"] in index]  # fmt: skip
    rows = [a for a, b in edges] + [b for a, b in edges]
    cols = [b for a, b in edges] + [a for a, b in edges]
    n = len(index)
    adjacency = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    degree = np.asarray(adjacency.sum(axis=0)).ravel()
    matrix = adjacency @ sp.diags(np.divide(1.0, degree, out=np.zeros(n), where=degree > 0))
    vectors = np.array([r["v"] for r in chunks], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    return Graph([r["id"] for r in chunks], [Hit(r["path"], r["text"]) for r in chunks],
                 [r["title"] for r in chunks], vectors, names, matrix.tocsr())  # fmt: skip


def link(graph: Graph, question: str, stop: set[str]) -> list[int]:
    """Entity nodes whose name or alias occurs in the question as a whole run of words."""
    words = re.findall(r"\w+", question.casefold())
    seeds: set[int] = set()
    for size in range(1, 7):
        for i in range(len(words) - size + 1):
            gram = " ".join(words[i : i + size])
            if len(gram) >= 3 and gram not in stop:
                seeds.update(graph.names.get(gram, []))
    return sorted(seeds)


def pagerank(graph: Graph, seeds: list[int], damping: float = 0.85) -> np.ndarray:
    n = graph.matrix.shape[0]
    reset = np.zeros(n)
    reset[seeds] = 1.0 / len(seeds)
    rank = reset.copy()
    for _ in range(50):
        new: np.ndarray = (1 - damping) * reset + damping * np.asarray(graph.matrix @ rank)
        if np.abs(new - rank).sum() < 1e-6:
            return new
        rank = new
    return rank


def baselines(
    settings: Settings, questions: list[Question]
) -> dict[str, tuple[list[list[Hit]], list[float]]]:
    import bm25s

    graph = read_graph(settings)
    tokenize = Tokenizer()
    retriever = bm25s.BM25()
    corpus = [tokenize(f"{t}\n{h.text}") for t, h in zip(graph.titles, graph.hits, strict=True)]
    retriever.index(corpus, show_progress=False)
    embedder = make_chunk_embedder(settings.chunks)
    embedder.embed(["warm-up"])  # loads the model outside the timed questions
    n_chunks = len(graph.hits)
    out: dict[str, tuple[list[list[Hit]], list[float]]] = {b: ([], []) for b in BASELINES}

    def timed(name: str, fn: Callable[[str], list[int]], question: str) -> list[int]:
        started = time.perf_counter()
        ranked = fn(question)
        out[name][1].append((time.perf_counter() - started) * 1000)
        out[name][0].append([graph.hits[i] for i in ranked[:LIMIT]])
        return ranked

    def bm25_rank(q: str) -> list[int]:
        tokens = tokenize(q)
        if not tokens:
            return []
        ids, scores = retriever.retrieve([tokens], k=min(100, n_chunks), show_progress=False)
        return [int(i) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    def dense_rank(q: str) -> list[int]:
        v = embedder.embed([q])[0]
        v = v / (np.linalg.norm(v) + 1e-12)
        return [int(i) for i in np.argsort(-(graph.vectors @ v), kind="stable")[:LIMIT]]

    def fused(q: str) -> list[int]:
        text = bm25_rank(q)
        seeds = link(graph, q, tokenize.stop)
        scores: dict[int, float] = {}
        for r, i in enumerate(text):
            scores[i] = scores.get(i, 0.0) + 1 / (60 + r + 1)
        if seeds:
            rank = pagerank(graph, seeds)[:n_chunks]
            for r, i in enumerate(j for j in np.argsort(-rank, kind="stable")[:100] if rank[j] > 0):
                scores[int(i)] = scores.get(int(i), 0.0) + 1 / (60 + r + 1)
        return sorted(scores, key=lambda i: -scores[i])

    for q in questions:
        timed("BM25", bm25_rank, q.text)
        timed("dense", dense_rank, q.text)
        timed("BM25 + PageRank", fused, q.text)
    return out


# -- report ------------------------------------------------------------------------------------


def table(results: list[Result], columns: tuple[str, str]) -> str:
    names = [*columns, *(results[0].extra if results else {})]
    lines = [f"| system | {' | '.join(names)} | median ms | p95 ms |",
             "|---|" + "---|" * (len(names) + 2)]  # fmt: skip
    for r in results:
        cells = [r.r2, r.r5, *r.extra.values(), r.median_ms, r.p95_ms]
        lines.append(f"| {r.system} | " + " | ".join(f"{x:.1f}" for x in cells) + " |")
    return "\n".join(lines)


def heading(dev: DevSet) -> str:
    """``vue-ru (32 questions: ru 16, en 10, mixed 6)``; the languages only when labelled."""
    langs = [q.lang for q in dev.questions if q.lang]
    counts = ", ".join(f"{lang} {langs.count(lang)}" for lang in distinct(langs))
    return f"{dev.name} ({len(dev.questions)} questions{': ' + counts if counts else ''})"


def mean_table(results: list[Result]) -> str:
    """Per system, the mean over sets; the XQuAD scenarios count once (their mean)."""
    systems = distinct([r.system for r in results])
    lines = ["| system | sets | mean R@2 | mean R@5 |", "|---|---|---|---|"]
    for system in systems:
        per_set: dict[str, list[Result]] = {}
        for r in results:
            if r.system == system:
                per_set.setdefault(r.set.split(" ")[0], []).append(r)
        r2 = statistics.fmean(statistics.fmean(x.r2 for x in rs) for rs in per_set.values())
        r5 = statistics.fmean(statistics.fmean(x.r5 for x in rs) for rs in per_set.values())
        lines.append(f"| {system} | {len(per_set)} | {r2:.1f} | {r5:.1f} |")
    return "\n".join(lines)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if f.is_file():
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def inputs(sets: list[DevSet], settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "kg", "bench"],
                           capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "commit": commit + (" (with uncommitted changes in kg/ or bench/)" if dirty else ""),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
        f"Python {platform.python_version()}",
        "sets": {
            d.name: {
                "questions": len(d.questions),
                "data": {str(p.relative_to(p.anchor)): sha256(p) for p in d.inputs},
            }
            for d in sets
        },
        "search_settings": settings.search.model_dump(mode="json"),
        "chunk_embedder": settings.chunks.model_dump(mode="json"),
        "questions_limit": args.questions,
        "depth": args.depth,
        "search_overrides": args.search,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets", default=",".join(SET_NAMES), help="a subset of " + ",".join(SET_NAMES)
    )
    parser.add_argument("--questions", type=int, help="only N questions per set (quick looks)")
    parser.add_argument("--modes", default=",".join(KG_MODES), help="kg modes to run")
    parser.add_argument("--depth", type=int, default=2, help="graph and hybrid depth (2)")
    parser.add_argument("--search", action="append", default=[], metavar="KEY=JSON",
                        help="override a search setting, e.g. fusion_k=10 (repeatable)")  # fmt: skip
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--musique", type=Path, default=MUSIQUE, help="the musique-dev folder")
    parser.add_argument("--uri", help="an existing Neo4j (its database is wiped)")
    parser.add_argument("--password")
    parser.add_argument("--json", help="also write inputs and figures to this file")
    parser.add_argument(
        "--scoped-with",
        metavar="SET",
        help="scopes (docs/search.md): ingest each set into namespace 'dev', then SET into "
        "namespace 'other', and search with namespaces=['dev'] (baselines see both)",
    )
    parser.add_argument(
        "--scope-overfetch",
        type=int,
        help="with --scoped-with: candidates asked of an index per one kept (default "
        "kg.cypher.params.SCOPE_OVERFETCH)",
    )
    args = parser.parse_args()
    if args.scope_overfetch:
        import kg.cypher.params

        kg.cypher.params.SCOPE_OVERFETCH = args.scope_overfetch
    chosen = [s.strip() for s in args.sets.split(",") if s.strip()]
    if unknown := set(chosen) - set(SET_NAMES):
        parser.error(f"--sets: unknown {sorted(unknown)}; choose from {SET_NAMES}")
    if not args.no_baselines:
        try:
            import bm25s  # noqa: F401  (only the baselines need it: fail before the ingests)
        except ImportError:
            parser.error("the baselines need the bench extras: pip install -e '.[bench]' "
                         "(or pass --no-baselines)")  # fmt: skip
    modes = [m for m in KG_MODES if m in args.modes.split(",")]
    makers: dict[str, Callable[[], list[DevSet]]] = {
        "hotpotqa": lambda: [hotpotqa(args.questions)],
        "musique": lambda: [musique(args.musique, args.questions)],
        "xquad": lambda: xquad(args.questions),
        "docs": lambda: [docs(args.questions)],
        "vue-ru": lambda: [vue_ru(args.questions)],
    }
    sets = [d for name in SET_NAMES if name in chosen for d in makers[name]()]
    started = time.perf_counter()
    results: list[Result] = []
    misses: dict[str, list[str]] = {}
    with server(args) as base:
        settings = with_overrides(base, args.search)
        recorded = inputs(sets, settings, args)
        print(json.dumps(recorded, indent=1, ensure_ascii=False), flush=True)
        scope: list[str] | None = None
        for dev in sets:
            wipe(settings)
            if args.scoped_with:
                print(f"[{dev.name}] ingest: {ingest_into('dev', dev, settings)}", flush=True)
                other = makers[args.scoped_with]()[0]
                print(f"[{dev.name}] + {other.name} as 'other': "
                      f"{ingest_into('other', other, settings)}", flush=True)  # fmt: skip
                scope = ["dev"]
            else:
                print(f"[{dev.name}] ingest: {dev.ingest(settings)}", flush=True)
            runs = asyncio.run(run_kg(settings, dev.questions, modes, args.depth, scope))
            if not args.no_baselines:
                runs |= baselines(settings, dev.questions)
            for system, (hits, times) in runs.items():
                results.append(score(dev, label(system), hits, times))
            misses[dev.name] = missed(dev, runs)
    took = time.perf_counter() - started
    for dev in sets:
        print(f"\n{heading(dev)}\n\n"
              + table([r for r in results if r.set == dev.name], dev.columns))  # fmt: skip
        if misses.get(dev.name):
            print(f"\nnot among the first 3 files of any system ({len(misses[dev.name])}):\n"
                  + "\n".join(f"- {m}" for m in misses[dev.name]))  # fmt: skip
    print("\nmean over sets\n\n" + mean_table(results))
    print(f"\n(run: {took:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"inputs": recorded, "seconds": round(took), "results": [r.__dict__ for r in results]},
            indent=1, ensure_ascii=False), encoding="utf-8")  # fmt: skip


if __name__ == "__main__":
    main()
