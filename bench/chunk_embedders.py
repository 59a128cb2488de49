"""Chunk embedders side by side: dense retrieval quality and cost on every dev set, offline.

    .venv/bin/python bench/chunk_embedders.py                   # WordLlama (the default)
    .venv/bin/python bench/chunk_embedders.py --e5              # and e5 (kg[e5]; minutes)
    .venv/bin/python bench/chunk_embedders.py --static /tmp/kg_static/static_ru_en.npz
                                                # and the research table (bench/research/static_table.py)

For each embedder (kg's WordLlamaEmbedder and E5Embedder, the research StaticEmbedder) and each
dev set, the passages are embedded as kg embeds chunks, the questions as kg embeds questions
(``embed_queries``), and passages are ranked by exact cosine in numpy: the dense signal alone,
no Neo4j, no fusion. Sets and metrics:

- ``xquad ru→en`` / ``xquad ru→ru+en``: XQuAD dev articles 0-23 (bench/data/xquad), Russian
  questions over the English paragraphs / over both languages; R@5 of the paragraph;
- ``hotpotqa``: the 100-question sample (bench/data/hotpotqa), ``# title`` + text per passage;
  R@5 (HippoRAG's: |first 5 distinct ∩ gold| / |gold|);
- ``musique``: ../shared/data/musique-dev (50 questions, 1,890 passages); R@5 likewise;
- ``docs`` (Starlette, English) and ``vue-ru`` (Vue's Russian guide; 10 of its 32 questions are
  English): chunks made by kg's chunker (``kg.documents.chunk_document``, the default 400-token
  chunks, 50 overlapping), files ranked by their best chunk; hit@1 / hit@3 of the labelled file.

Cost: passages embedded per second (tokens: words and punctuation as ``\\w+|[^\\w\\s]``), and
the median ms to embed one question. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kg.documents import chunk_document, document_id
from kg.models import Document
from kg.resolve.vectors import Embedder, embed_queries

BENCH = Path(__file__).resolve().parent / "data"
MUSIQUE = Path(__file__).resolve().parents[2] / "shared" / "data" / "musique-dev"
TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class Corpus:
    name: str
    passages: list[str]
    keys: list[str]  # the passage's gold key (a paragraph, a title, a file)
    questions: list[tuple[str, frozenset[str]]]
    metric: str  # "R@5" or "hit"


def xquad() -> list[Corpus]:
    data = {
        lang: json.loads((BENCH / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))
        for lang in ("en", "ru")
    }
    texts: dict[str, list[tuple[str, str]]] = {"en": [], "ru": []}
    questions: list[tuple[str, frozenset[str]]] = []
    for lang in ("en", "ru"):
        for a, article in enumerate(data[lang]["data"][:24]):
            for p, paragraph in enumerate(article["paragraphs"]):
                texts[lang].append((f"{a}/{p}", f"{article['title']}\n\n{paragraph['context']}"))
                if lang == "ru":
                    questions += [
                        (q["question"], frozenset({f"{a}/{p}"})) for q in paragraph["qas"]
                    ]
    en, both = texts["en"], texts["ru"] + texts["en"]
    return [
        Corpus("xquad ru→en", [t for _, t in en], [k for k, _ in en], questions, "R@5"),
        Corpus("xquad ru→ru+en", [t for _, t in both], [k for k, _ in both], questions, "R@5"),
    ]


def hotpotqa() -> Corpus:
    corpus = json.loads((BENCH / "hotpotqa" / "hotpotqa_train_corpus.json").read_text())
    questions = json.loads((BENCH / "hotpotqa" / "hotpotqa_train.json").read_text())
    titles = list(corpus)
    return Corpus(
        "hotpotqa",
        [f"# {t}\n\n{''.join(corpus[t]).strip()}" for t in titles],
        titles,
        [(q["question"], frozenset(t for t, _ in q["supporting_facts"])) for q in questions],
        "R@5",
    )


def musique() -> Corpus:
    rows = [json.loads(line) for line in (MUSIQUE / "corpus.jsonl").read_text().splitlines()]
    questions = [
        json.loads(line) for line in (MUSIQUE / "questions.jsonl").read_text().splitlines()
    ]
    return Corpus(
        "musique",
        [f"{r['title']}\n\n{r['text']}" for r in rows],
        [r["id"] for r in rows],
        [(q["question"], frozenset(q["supporting_doc_ids"])) for q in questions],
        "R@5",
    )


def docs(name: str, folder: str) -> Corpus:
    root = BENCH / folder / "docs"
    passages: list[str] = []
    keys: list[str] = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        doc = Document(document_id(rel, "bench"), rel, rel, text, "x")
        for chunk in chunk_document(doc, chunk_tokens=400, overlap=50):
            passages.append(chunk.text)
            keys.append(rel)
    lines = (BENCH / folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [(q["question"], frozenset({q["file"]})) for q in map(json.loads, lines)]
    return Corpus(name, passages, keys, questions, "hit")


def embedders(e5: bool, static: Path | None) -> dict[str, Callable[[], Embedder]]:
    from kg.resolve.wordllama import WordLlamaEmbedder

    found: dict[str, Callable[[], Embedder]] = {"wordllama (l2_supercat 256-d)": WordLlamaEmbedder}
    if static is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent / "research"))
        from static_table import StaticEmbedder

        found["static ru-en (research table, 256-d)"] = lambda: StaticEmbedder(static)
    if e5:
        from kg.resolve.e5 import E5Embedder

        found["e5 (multilingual-e5-small q4, 384-d)"] = E5Embedder
    return found


def scores(corpus: Corpus, embedder: Embedder) -> tuple[dict[str, float], float, float]:
    started = time.perf_counter()
    passages = embedder.embed(corpus.passages)
    seconds = time.perf_counter() - started
    tokens = sum(len(TOKEN.findall(p)) for p in corpus.passages)
    times = []
    vectors = []
    for question, _ in corpus.questions:
        t = time.perf_counter()
        vectors.append(embed_queries(embedder, [question])[0])
        times.append((time.perf_counter() - t) * 1000)
    order = np.argsort(-(np.asarray(vectors) @ passages.T), axis=1)
    out: dict[str, list[float]] = {}
    for (_, gold), ranked in zip(corpus.questions, order, strict=True):
        distinct = list(dict.fromkeys(corpus.keys[i] for i in ranked[:200]))
        if corpus.metric == "R@5":
            out.setdefault("R@5", []).append(len(set(distinct[:5]) & gold) / len(gold))
        else:
            out.setdefault("hit@1", []).append(float(distinct[0] in gold))
            out.setdefault("hit@3", []).append(float(bool(set(distinct[:3]) & gold)))
    means = {k: 100 * statistics.fmean(v) for k, v in out.items()}
    return means, tokens / seconds, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--e5", action="store_true", help="also e5 (needs kg[e5]; slow)")
    parser.add_argument("--static", type=Path, help="also the research table at this path")
    args = parser.parse_args()
    corpora: Sequence[Corpus] = [
        *xquad(),
        hotpotqa(),
        musique(),
        docs("docs", "starlette-docs"),
        docs("vue-ru", "vue-docs-ru"),
    ]
    print("| embedder | set | quality | passages tokens/s | question ms (median) |")
    print("|---|---|---|---|---|")
    for label, make in embedders(args.e5, args.static).items():
        embedder = make()
        embedder.embed(["warm up"])
        for corpus in corpora:
            quality, rate, ms = scores(corpus, embedder)
            shown = " / ".join(f"{k} {v:.1f}" for k, v in quality.items())
            print(f"| {label} | {corpus.name} | {shown} | {rate:,.0f} | {ms:.2f} |", flush=True)


if __name__ == "__main__":
    main()
