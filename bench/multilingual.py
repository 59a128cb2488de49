"""Russian and mixed-language retrieval on XQuAD: kg's search modes beside BM25 and dense.

    .venv/bin/pip install -e '.[bench]'          # bm25s and PyStemmer, for the baselines
    .venv/bin/python bench/multilingual.py                        # articles 0-23, every scenario
    .venv/bin/python bench/multilingual.py --limit 50 --scenarios A,B   # a quick look

Data: XQuAD (google-deepmind/xquad, CC BY-SA 4.0), vendored in bench/data/xquad: 48 SQuAD v1.1
articles, 240 paragraphs and 1,190 questions, professionally translated and parallel across
languages; here Russian and English. Articles 0-23 are for development (the default);
articles 24-47 are held out for evaluation (``--articles 24-47``, run by evaluators only; see
the data README). Each paragraph is one document of a triplets file (``"triplets": []``; ids
``en/<article>/<paragraph>`` and ``ru/...``, title the article's title as the JSON gives it),
ingested with ``graph="metadata"``: the zero-LLM document graph, no LLM call.

Scenarios (one run; the database is wiped between corpora):

- A: Russian questions over the Russian paragraphs.
- B: Russian questions over the English paragraphs, offline (no LLM).
- B+: the same with ``search.translate`` on and a scripted translator standing in for the LLM:
  tests/fakellm.py answers each Russian question with its parallel English XQuAD question (an
  upper bound on translation quality, not a model's figure). Each mode gets a fresh search
  service, so its timing includes its own translator calls (loopback HTTP, instructor). A kg
  without ``search.translate`` prints "translator not available" for kg's B+ rows. Also shown:
  BM25 on that English question.
- C: Russian and English questions over both sets of paragraphs together; a hit is the gold
  paragraph in either language among the first k distinct documents.
- D: English questions over the Russian paragraphs, offline (the other way round from B).

Reported per system: R@1 and R@5 of the question's paragraph (among the first 1 or 5 distinct
documents returned) and, for kg, the median ms per query (``SearchService.local_search``,
``limit`` 20, depth 2). Baselines on the same paragraphs (title + text): BM25 (bm25s; Snowball
stemming per word, Russian for Cyrillic words and English for the rest, or none; English and
Russian stop words), for B also BM25 on the transliterated question
(``kg.resolve.normalize.transliterate``), and dense retrieval with WordLlama by exact cosine.

Also: ``--titles spaced`` (``Super Bowl 50`` for the JSON's ``Super_Bowl_50``), ``--search
KEY=JSON`` (a search setting, e.g. ``fusion_weights={"text":1,"vector":1,"graph":0}``),
``--modes``, ``--no-baselines``, ``--json FILE``.

Neo4j: a throwaway local server on free ports unless ``--uri`` names one (that database is
wiped). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
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
from kg.resolve.normalize import transliterate
from kg.search.models import SEARCH_MODES, SearchRequest
from kg.settings import SearchSettings, Settings

DATA = Path(__file__).resolve().parent / "data" / "xquad"
SCENARIOS = ("A", "B", "B+", "C", "D")
HELD_OUT = range(24, 48)  # evaluation articles: never used while developing (data README)
TRANSLATOR = "scripted translator: the parallel English question"
GOALS = {"A": 97.0, "B": 40.0, "C": 97.0}
CYRILLIC = re.compile(r"[\u0400-\u04ff]")
WORD = re.compile(r"\w\w+")


@dataclass
class Question:
    text: str
    lang: str
    gold: frozenset[str]  # document ids that count as a hit


@dataclass
class Corpus:
    docs: dict[str, tuple[str, str]]  # id -> (title, text)


@dataclass
class Row:
    scenario: str
    system: str
    n: int
    r1: float
    r5: float
    ms: float | None
    by_lang: dict[str, float] = field(default_factory=dict)  # R@5 per question language


# -- data ------------------------------------------------------------------------------------


def parse_articles(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    if not out or min(out) < 0 or max(out) > 47:
        raise SystemExit(f"--articles {spec}: XQuAD has articles 0-47")
    return sorted(set(out))


def load_xquad() -> dict[str, list[dict[str, Any]]]:
    """Both files, after checking they are parallel (titles, paragraphs, question ids)."""
    data = {
        lang: json.loads((DATA / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
        for lang in ("en", "ru")
    }
    en, ru = data["en"], data["ru"]
    assert len(en) == len(ru) == 48, "XQuAD has 48 articles in each language"
    for a, (ea, ra) in enumerate(zip(en, ru, strict=True)):
        assert ea["title"] == ra["title"], f"article {a}: titles differ"
        assert len(ea["paragraphs"]) == len(ra["paragraphs"]), f"article {a}: paragraphs differ"
        for p, (ep, rp) in enumerate(zip(ea["paragraphs"], ra["paragraphs"], strict=True)):
            ids = [q["id"] for q in ep["qas"]], [q["id"] for q in rp["qas"]]
            assert ids[0] == ids[1], f"article {a} paragraph {p}: questions not parallel"
    return data


def corpus(
    data: dict[str, list[dict[str, Any]]], langs: Sequence[str], articles: list[int], spaced: bool
) -> Corpus:
    """Paragraphs as documents; ``spaced``: ``Super Bowl 50`` for the JSON's ``Super_Bowl_50``."""

    def title(given: str) -> str:
        return given.replace("_", " ") if spaced else given

    docs: dict[str, tuple[str, str]] = {}
    for lang in langs:
        for a in articles:
            article = data[lang][a]
            for p, paragraph in enumerate(article["paragraphs"]):
                docs[f"{lang}/{a}/{p}"] = (title(article["title"]), paragraph["context"])
    return Corpus(docs)


def questions(
    data: dict[str, list[dict[str, Any]]], lang: str, articles: list[int], gold_langs: Sequence[str]
) -> list[Question]:
    out = []
    for a in articles:
        for p, paragraph in enumerate(data[lang][a]["paragraphs"]):
            gold = frozenset(f"{g}/{a}/{p}" for g in gold_langs)
            out.extend(Question(q["question"].strip(), lang, gold) for q in paragraph["qas"])
    return out


def spread(items: list[Question], limit: int | None) -> list[Question]:
    """``limit`` questions evenly spaced over the list (the same ones in each language)."""
    if not limit or limit >= len(items):
        return items
    return [items[i * len(items) // limit] for i in range(limit)]


def parallel_questions(
    data: dict[str, list[dict[str, Any]]], articles: list[int]
) -> dict[str, str]:
    """Russian question -> its English original (the scripted translator's answers)."""
    pairs: dict[str, str] = {}
    for a in articles:
        for rp, ep in zip(data["ru"][a]["paragraphs"], data["en"][a]["paragraphs"], strict=True):
            for rq, eq in zip(rp["qas"], ep["qas"], strict=True):
                pairs.setdefault(rq["question"].strip(), eq["question"].strip())
    return pairs


# -- kg --------------------------------------------------------------------------------------


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
        session.run(
            "MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
        session.run(
            "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()


def ingest(settings: Settings, docs: Corpus, name: str) -> None:
    wipe(settings)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        triplets = Path(tmp) / "xquad.jsonl"
        with triplets.open("w", encoding="utf-8") as out:
            for doc_id, (title, text) in docs.docs.items():
                line = {"id": doc_id, "title": title, "text": text, "triplets": []}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        with KnowledgeGraph(settings) as graph:
            summary = graph.ingest(tmp, triplets=triplets, graph="metadata", namespace="xquad")
    assert not summary.import_errors, summary.import_errors
    print(f"[{name}] ingest --graph metadata: {len(docs.docs)} paragraphs, {summary.chunks} "
          f"chunks, {summary.docgraph_entities} entities, {summary.docgraph_mentions} mentions, "
          f"{summary.llm_calls} LLM calls, {time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip


async def run_kg(
    settings: Settings, qs: list[Question], modes: Sequence[str]
) -> dict[str, tuple[list[list[str]], float]]:
    driver = open_async_driver(settings.neo4j)
    out: dict[str, tuple[list[list[str]], float]] = {}
    try:
        for mode in modes:
            # A service per mode: each starts with an empty translation cache (B+), so every
            # mode's timing includes its own translator calls.
            service = search_service(driver, settings)
            await service.startup()
            ranked, times, failed = [], [], 0
            for q in qs:
                req = SearchRequest(query=q.text, mode=mode, depth=2, limit=20)  # type: ignore[arg-type]
                started = time.perf_counter()
                response = await service.local_search(req)
                times.append((time.perf_counter() - started) * 1000)
                ranked.append(distinct([c.document_path for c in response.chunks]))
                failed += getattr(response, "translation_error", None) is not None
            out[mode] = (ranked, statistics.median(times))
            if failed:
                print(f"  kg `{mode}`: {failed} of {len(qs)} questions answered "
                      "translation_error (searched untranslated)", flush=True)  # fmt: skip
    finally:
        await driver.close()
    return out


# -- baselines -------------------------------------------------------------------------------


def distinct(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


class Tokenizer:
    """Lower-cased words of two or more characters, English and Russian stop words removed;
    with ``stem``, Snowball per word: Russian for Cyrillic words, English for the rest."""

    def __init__(self, stem: bool) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_RUSSIAN

        self.stop = set(STOPWORDS_EN) | set(STOPWORDS_RUSSIAN)
        self.stem = stem
        self.ru, self.en = Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")

    def __call__(self, text: str) -> list[str]:
        words = [w for w in WORD.findall(text.casefold()) if w not in self.stop]
        if not self.stem:
            return words
        return [(self.ru if CYRILLIC.search(w) else self.en).stemWord(w) for w in words]


def bm25(docs: Corpus, qs: Sequence[str], tokenize: Callable[[str], list[str]]) -> list[list[str]]:
    import bm25s

    names = list(docs.docs)
    retriever = bm25s.BM25()
    retriever.index([tokenize(f"{t}\n{x}") for t, x in docs.docs.values()], show_progress=False)
    ranked = []
    for q in qs:
        tokens = tokenize(q)
        if not tokens:
            ranked.append([])
            continue
        ids, scores = retriever.retrieve([tokens], k=min(20, len(names)), show_progress=False)
        ranked.append([names[i] for i, s in zip(ids[0], scores[0], strict=True) if s > 0])
    return ranked


def dense(docs: Corpus, qs: Sequence[str], settings: Settings) -> list[list[str]]:
    embedder = make_chunk_embedder(settings.chunks)
    names = list(docs.docs)
    matrix = embedder.embed([f"# {t}\n\n{x}" for t, x in docs.docs.values()])
    vectors = embedder.embed(list(qs))
    return [[names[i] for i in np.argsort(-(matrix @ v), kind="stable")[:20]] for v in vectors]


# -- the scripted translator (B+) --------------------------------------------------------------


def translator_responder(pairs: dict[str, str], misses: list[str]):
    from tests.fakellm import Reply

    def texts(request: dict[str, Any]) -> Iterator[str]:
        for message in request.get("messages") or []:
            content = message.get("content")
            if isinstance(content, str):
                yield content
            elif isinstance(content, list):
                yield from (p.get("text", "") for p in content if isinstance(p, dict))

    def respond(request: dict[str, Any]) -> Reply:
        found = None
        for text in texts(request):
            if text.strip() in pairs:
                found = text.strip()
                break
            inside = [q for q in pairs if q in text]
            if inside:
                found = max(inside, key=len)
                break
        if found is None:
            misses.append(next(iter(texts(request)), "")[:200])
            return Reply(payload={"translations": []})
        return Reply(
            payload={"translations": [{"language": "en", "text": pairs[found], "entities": []}]}
        )

    return respond


def with_overrides(settings: Settings, pairs: Sequence[str]) -> Settings:
    search = settings.search.model_dump()
    for pair in pairs:
        key, _, value = pair.partition("=")
        search[key] = json.loads(value)
    return settings.model_copy(update={"search": settings.search.model_validate(search)})


def with_translator(settings: Settings, base_url: str) -> Settings:
    search = {**settings.search.model_dump(), "translate": True}
    answer = {**settings.answer.model_dump(), "base_url": base_url, "model": "scripted",
              "api_key": "not-needed"}  # fmt: skip
    return settings.model_copy(
        update={
            "search": settings.search.model_validate(search),
            "answer": settings.answer.model_validate(answer),
        }
    )


# -- report ----------------------------------------------------------------------------------


def hits(ranked: Sequence[Sequence[str]], qs: Sequence[Question], k: int) -> list[bool]:
    return [bool(set(r[:k]) & q.gold) for r, q in zip(ranked, qs, strict=True)]


def score(
    scenario: str, system: str, qs: list[Question], ranked: list[list[str]], ms: float | None
) -> Row:
    at1, at5 = hits(ranked, qs, 1), hits(ranked, qs, 5)
    by_lang = {
        lang: 100 * statistics.fmean(h for h, q in zip(at5, qs, strict=True) if q.lang == lang)
        for lang in sorted({q.lang for q in qs})
    }
    row = Row(scenario, system, len(qs), 100 * statistics.fmean(at1),
              100 * statistics.fmean(at5), ms, by_lang)  # fmt: skip
    took = f"{ms:7.1f} ms" if ms is not None else ""
    print(f"[{scenario}] {system:48s} R@1 {row.r1:5.1f}  R@5 {row.r5:5.1f}  {took}", flush=True)
    return row


def table(rows: list[Row]) -> str:
    lines = [
        "| scenario | system | questions | R@1 | R@5 | ms/query (median) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms = f"{r.ms:.1f}" if r.ms is not None else "–"
        lines.append(f"| {r.scenario} | {r.system} | {r.n} | {r.r1:.1f} | {r.r5:.1f} | {ms} |")
    mixed = [r for r in rows if r.scenario == "C"]
    if mixed:
        lines += ["", "C by question language (R@5):", "",
                  "| system | ru questions | en questions |", "|---|---|---|"]  # fmt: skip
        lines += [
            f"| {r.system} | {r.by_lang.get('ru', 0):.1f} | {r.by_lang.get('en', 0):.1f} |"
            for r in mixed
        ]
    return "\n".join(lines)


def goals(rows: list[Row]) -> list[str]:
    out = []
    for scenario, goal in GOALS.items():
        kg_rows = [r for r in rows if r.scenario == scenario and r.system.startswith("kg ")]
        if not kg_rows:
            continue
        best = max(kg_rows, key=lambda r: r.r5)
        verdict = "met" if best.r5 >= goal else "NOT met"
        line = (
            f"{scenario}: best kg R@5 {best.r5:.1f} ({best.system}), goal ≥ {goal:.0f}: {verdict}"
        )
        plain = [r for r in rows if r.scenario == scenario and r.system.startswith(("BM25 (", "dense"))]  # fmt: skip
        if plain:
            b = max(plain, key=lambda r: r.r5)
            line += f"; best plain baseline R@5 {b.r5:.1f} ({b.system})"
        out.append(line)
    return out


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", default="0-23",
                        help="articles to use: 0-23 develop (default), 24-47 evaluate")  # fmt: skip
    parser.add_argument("--limit", type=int,
                        help="only N questions per language, evenly spaced (quick runs)")  # fmt: skip
    parser.add_argument("--titles", choices=("as-given", "spaced"), default="as-given",
                        help="article titles as the JSON gives them (Super_Bowl_50) or with "
                        "spaces for underscores (Super Bowl 50)")  # fmt: skip
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="a subset of A,B,B+,C")
    parser.add_argument("--modes", default=",".join(SEARCH_MODES), help="kg modes to run")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--search", action="append", default=[], metavar="KEY=JSON",
                        help="override a search setting, e.g. fusion_k=10 (repeatable)")  # fmt: skip
    parser.add_argument("--uri", help="an existing Neo4j (its database is wiped)")
    parser.add_argument("--password")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    articles = parse_articles(args.articles)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if unknown := set(scenarios) - set(SCENARIOS):
        parser.error(f"--scenarios: unknown {sorted(unknown)}; choose from {SCENARIOS}")
    spaced = args.titles == "spaced"
    modes = [m for m in SEARCH_MODES if m in args.modes.split(",")]
    held_out = sorted(set(articles) & set(HELD_OUT))
    print(f"XQuAD articles {args.articles}" + (" (held-out evaluation articles)" if held_out else
          " (development)") + f", titles {args.titles}", flush=True)  # fmt: skip

    run_started = time.perf_counter()
    data = load_xquad()

    def ask(lang: str, gold_langs: list[str]) -> list[Question]:
        return spread(questions(data, lang, articles, gold_langs), args.limit)

    ru_q = ask("ru", ["ru"])
    stemmed, plain = Tokenizer(stem=True), Tokenizer(stem=False)
    rows: list[Row] = []

    def baselines(name: str, docs: Corpus, qs: list[Question], translit: bool = False) -> None:
        if args.no_baselines:
            return
        texts = [q.text for q in qs]
        rows.append(
            score(name, "BM25 (bm25s, stemmed ru/en)", qs, bm25(docs, texts, stemmed), None)
        )
        rows.append(score(name, "BM25 (bm25s, no stemming)", qs, bm25(docs, texts, plain), None))
        if translit:
            latin = [transliterate(t.casefold()) for t in texts]
            rows.append(score(name, "BM25, transliterated question (stemmed)", qs,
                              bm25(docs, latin, stemmed), None))  # fmt: skip
        rows.append(score(name, "dense (WordLlama, exact cosine)", qs,
                          dense(docs, texts, settings), None))  # fmt: skip

    def kg_rows(name: str, run_settings: Settings, qs: list[Question], suffix: str = "") -> None:
        for mode, (ranked, ms) in asyncio.run(run_kg(run_settings, qs, modes)).items():
            rows.append(score(name, f"kg `{mode}`{suffix}", qs, ranked, ms))

    with server(args) as base:
        settings = with_overrides(base, args.search)
        if "A" in scenarios:
            docs = corpus(data, ["ru"], articles, spaced)
            ingest(settings, docs, "A")
            baselines("A", docs, ru_q)
            kg_rows("A", settings, ru_q)
        if "B" in scenarios or "B+" in scenarios:
            docs = corpus(data, ["en"], articles, spaced)
            gold_en = ask("ru", ["en"])
            ingest(settings, docs, "B")
            if "B" in scenarios:
                baselines("B", docs, gold_en, translit=True)
                kg_rows("B", settings, gold_en)
            if "B+" in scenarios:
                run_translated(settings, data, articles, docs, gold_en, rows, kg_rows, args)
        if "D" in scenarios:
            docs = corpus(data, ["ru"], articles, spaced)
            gold_ru = ask("en", ["ru"])
            ingest(settings, docs, "D")
            baselines("D", docs, gold_ru)
            kg_rows("D", settings, gold_ru)
        if "C" in scenarios:
            docs = corpus(data, ["en", "ru"], articles, spaced)
            both = [*ask("ru", ["en", "ru"]), *ask("en", ["en", "ru"])]
            ingest(settings, docs, "C")
            baselines("C", docs, both)
            kg_rows("C", settings, both)

    print("\n" + table(rows) + "\n")
    print(f"(run: {time.perf_counter() - run_started:.0f} s)")
    for line in goals(rows):
        print(line)
    if args.json:
        Path(args.json).write_text(
            json.dumps([r.__dict__ for r in rows], indent=1, ensure_ascii=False), encoding="utf-8"
        )


def run_translated(
    settings: Settings,
    data: dict[str, list[dict[str, Any]]],
    articles: list[int],
    docs: Corpus,
    qs: list[Question],
    rows: list[Row],
    kg_rows: Callable[[str, Settings, list[Question], str], None],
    args: argparse.Namespace,
) -> None:
    """B+: kg with ``search.translate`` and the scripted translator (tests/fakellm.py)."""
    pairs = parallel_questions(data, articles)
    if not args.no_baselines:
        english = [pairs[q.text] for q in qs]
        rows.append(score("B+", f"BM25 (stemmed) on the {TRANSLATOR}", qs,
                          bm25(docs, english, Tokenizer(stem=True)), None))  # fmt: skip
    if "translate" not in SearchSettings.model_fields:
        print(f"[B+] translator not available: this kg has no `search.translate` setting "
              f"({TRANSLATOR})", flush=True)  # fmt: skip
        return
    from tests.fakellm import ScriptedLLM

    misses: list[str] = []
    with ScriptedLLM(responder=translator_responder(pairs, misses)) as llm:
        kg_rows("B+", with_translator(settings, llm.base_url), qs, f" + {TRANSLATOR}")
        calls = llm.calls
    print(f"[B+] {TRANSLATOR}: {calls} LLM calls, {len(misses)} requests without a known "
          "Russian question", flush=True)  # fmt: skip
    if calls == 0:
        print("[B+] warning: kg never called the translator (is `search.translate` wired?)")
    for miss in misses[:3]:
        print(f"[B+]   unmatched request: {miss!r}")


if __name__ == "__main__":
    main()
