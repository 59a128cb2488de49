"""kg's retrieval bench with WordLlama ⊕ the static Russian-English table as the chunk embedder.

Research (issue 37, item 2): bench/retrieval_quality.py end to end (ingest into a throwaway
Neo4j, every search mode), with one change: the chunk embedder is the 512-d concatenation of
WordLlama's vector and the research table's (bench/research/static_table.py), each times ½,
normalized. Nothing in kg is changed: the factory that builds chunk embedders is replaced in
this process only.

    PYTHONPATH=$PWD .venv/bin/python bench/research/concat_hybrid.py --sets xquad,vue-ru \\
        [--table /tmp/kg_static/static_ru_en_lemmas.npz] [retrieval_quality.py's options]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench" / "research")]

TABLE = Path("/tmp/kg_static/static_ru_en_lemmas.npz")


class Concatenated:
    """WordLlama's row and the static table's, each times ½, side by side, L2-normalized."""

    name = "wordllama+static-ru-en"

    def __init__(self, table: Path) -> None:
        from static_table import StaticEmbedder

        from kg.resolve.wordllama import WordLlamaEmbedder

        self.english = WordLlamaEmbedder()
        self.multilingual = StaticEmbedder(table)

    @property
    def dim(self) -> int:
        return 512

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from kg.resolve.vectors import normalize_rows

        both = np.hstack([self.english.embed(texts), self.multilingual.embed(texts)])
        return normalize_rows(np.ascontiguousarray(both * 0.5, dtype=np.float32))


def main() -> None:
    table = TABLE
    if "--table" in sys.argv:
        at = sys.argv.index("--table")
        table = Path(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    os.environ["KG_CHUNKS__EMBEDDING_DIM"] = "512"
    os.environ["KG_CHUNKS__EMBEDDER"] = "hashing"  # replaced below; only the width is read
    embedder = Concatenated(table)

    def factory(_settings: object) -> Concatenated:
        return embedder

    import bench.retrieval_quality as rq
    import kg.bulk.load
    import kg.client
    import kg.ingest
    import kg.resolve.embed
    import kg.search.service

    for module in (kg.resolve.embed, kg.client, kg.ingest, kg.search.service, kg.bulk.load, rq):
        module.make_chunk_embedder = factory  # type: ignore[attr-defined]
    rq.main()


if __name__ == "__main__":
    main()
