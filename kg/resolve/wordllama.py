"""WordLlama: offline semantic embeddings whose weights ship inside the PyPI wheel.

WordLlama (l2_supercat, 256-d) is a static token-embedding table distilled from a large
language model, average-pooled over the text: no network, no GPU, ~1,000 passages a second
here. Its own loader looks for the tokenizer in the wrong folder and then downloads it, so kg
loads it with ``cache_dir`` set to the installed package's folder (where the wheel put both
the weights and the tokenizer) and ``disable_download=True``: a missing file is an error,
never a download (tests/unit/test_wordllama.py proves no socket is opened).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg.errors import ConfigError
from kg.resolve.vectors import Vectors, normalize_rows

CONFIG = "l2_supercat"
_BATCH = 256


def package_folder() -> Path:
    """Where the wheel installed WordLlama (its weights/ and tokenizers/ are in there)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    finally:
        # wordllama calls logging.basicConfig() at import; a library must not configure logging.
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return Path(wordllama.__file__).parent


def load_model(dim: int) -> Any:
    """The model from the installed package only; ConfigError when its files are not there."""
    folder = package_folder()
    weights = folder / "weights" / f"{CONFIG}_{dim}.safetensors"
    if not weights.is_file():
        shipped = sorted(p.name for p in (folder / "weights").glob("*.safetensors"))
        raise ConfigError(
            f"WordLlama has no {dim}-d weights in {folder} (shipped: {', '.join(shipped)}); "
            "set KG_CHUNKS__EMBEDDING_DIM to 256"
        )
    from wordllama import WordLlama

    try:
        return WordLlama.load(CONFIG, cache_dir=folder, dim=dim, disable_download=True)
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(f"cannot load WordLlama from {folder}: {exc}") from exc


@dataclass
class WordLlamaEmbedder:
    """Average-pooled WordLlama token embeddings, L2-normalized; loaded on first use."""

    dimension: int = 256
    _model: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    name = f"wordllama-{CONFIG}"

    @property
    def dim(self) -> int:
        return self.dimension

    @property
    def inline(self) -> bool:
        """Search may embed a question on its event loop: once loaded, a question takes a
        fraction of a millisecond (loading takes longer, so not before)."""
        return self._model is not None

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = load_model(self.dimension)
        # An empty text pools no token at all (0/0 in WordLlama): embed a space instead.
        batch = [t if t.strip() else " " for t in texts]
        vectors = np.asarray(
            self._model.embed(batch, norm=False, batch_size=_BATCH), dtype=np.float32
        )
        vectors = np.nan_to_num(vectors, nan=0.0, posinf=0.0, neginf=0.0)
        return normalize_rows(np.ascontiguousarray(vectors))
