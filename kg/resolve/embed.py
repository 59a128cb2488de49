"""Embedders: the offline character n-gram hasher (default for entity names), WordLlama (the
offline semantic default for chunks) and any OpenAI-compatible endpoint.

Why a hashing embedder by default: no machine here may download weights, and for entity names
the useful signal is spelling (``PostgreSQL`` ~ ``Postgres``), which character n-grams carry.
It is deterministic across processes: a fixed polynomial hash with a splitmix64 finalizer,
never Python's salted ``hash()``. Semantic embeddings (OpenAI, Ollama, vLLM, TEI) plug in
through the same :class:`Embedder` protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kg.errors import ResolutionError
from kg.redact import public_url
from kg.resolve.vectors import Embedder, Vectors, normalize_rows
from kg.resolve.wordllama import WordLlamaEmbedder

__all__ = [
    "Embedder",
    "EmbeddingUsage",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "embedder_identity",
    "make_chunk_embedder",
    "make_embedder",
    "normalize_rows",
]

# The LLM seam, the e5 model and the name normalizer load when an embedder first needs them:
# a search's embedders are built for every command, and most embed no entity name (issue 38).
if TYPE_CHECKING:
    from kg.llm import EmbeddingsClient
    from kg.resolve.normalize import Normalizer
    from kg.settings import ChunkSettings, ResolveSettings

_BATCH = 16_384
_NGRAMS = (2, 3, 4)
_PRIME = np.uint64(1_099_511_628_211)  # FNV-64 prime: spreads code points over 64 bits


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64 finalizer: every input bit affects bucket and sign."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@dataclass(frozen=True)
class HashingEmbedder:
    """Signed feature hashing of character 2-4 grams; vectorized over whole batches.

    Text is first put through the resolver's normalizer (``auth-svc`` -> ``#authentication#
    service#``, ``Кафка`` -> ``#kafka#``), so spelling conventions and abbreviations do not
    move a name in the space; the abbreviations file is read on first use.
    """

    dimension: int = 256
    abbreviations_file: Path | None = None

    name = "hashing-ngram"

    @property
    def dim(self) -> int:
        return self.dimension

    @cached_property
    def _normalizer(self) -> Normalizer:
        from kg.resolve.abbreviations import load_table
        from kg.resolve.normalize import Normalizer

        return Normalizer(load_table(self.abbreviations_file))

    @cached_property
    def _phonetic(self) -> Callable[[str], str]:
        from kg.resolve.normalize import phonetic

        return phonetic

    def prepare(self, text: str) -> str:
        """``AuthService`` -> ``#authentication#service#|#autentikation#servise#``.

        The normalized words, word-boundary marked, then their spelling key (so that
        ``Майкрософт`` and ``Microsoft`` share n-grams); ``|`` keeps n-grams from spanning both.
        """
        words = self._normalizer.words(text)
        key = self._phonetic
        return "#" + "#".join(words) + "#|#" + "#".join(key(w) for w in words) + "#"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            batch = [self.prepare(t) for t in texts[start : start + _BATCH]]
            out[start : start + len(batch)] = self._embed_prepared(batch)
        return out

    def _embed_prepared(self, batch: list[str]) -> Vectors:
        n, dim = len(batch), self.dimension
        joined = "\x00".join(batch) + "\x00"
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        is_sep = codes == 0
        row = np.cumsum(is_sep) - is_sep  # row index of every position
        sums = np.zeros(n * dim, dtype=np.float64)
        for size in _NGRAMS:
            m = len(codes) - size + 1
            h = np.zeros(m, dtype=np.uint64)
            for j in range(size):
                h = h * _PRIME + codes[j : j + m]
            valid = row[:m] == row[size - 1 : size - 1 + m]
            valid &= ~is_sep[size - 1 : size - 1 + m]
            h = _mix(h[valid] + np.uint64(size))
            bucket = (h % np.uint64(dim)).astype(np.int64)
            sign = np.where((h >> np.uint64(63)) == 1, 1.0, -1.0)
            sums += np.bincount(row[:m][valid] * dim + bucket, weights=sign, minlength=n * dim)
        return normalize_rows(sums.reshape(n, dim).astype(np.float32))


@dataclass
class EmbeddingUsage:
    """Calls and tokens spent on an embeddings endpoint (reported like extraction calls)."""

    calls: int = 0
    tokens: int = 0


@dataclass
class OpenAIEmbedder:
    """Any OpenAI-compatible ``/embeddings`` endpoint, in batches; the client (from the LLM
    seam, :func:`kg.llm.embeddings_client`) is made lazily."""

    base_url: str | None
    api_key: str
    model: str
    dimension: int
    batch_size: int = 256
    send_dimensions: bool = True
    timeout_s: float = 60.0
    usage: EmbeddingUsage = field(default_factory=EmbeddingUsage)
    _client: EmbeddingsClient | None = None
    settings_prefix: str = "KG_CHUNKS__"  # where the user sets this endpoint (error messages)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dim(self) -> int:
        return self.dimension

    def _failed(self, what: str) -> str:
        """One line naming the endpoint tried (no userinfo, no key) and the settings to change."""
        url = public_url(self.base_url or "https://api.openai.com/v1")
        prefix = self.settings_prefix
        return (
            f"the embeddings endpoint {url} (model {self.model}) failed: {what}; start that "
            f"server, or point {prefix}EMBED_BASE_URL at one that answers (and "
            f"{prefix}EMBED_MODEL, {prefix}EMBED_API_KEY)"
        )

    def embed(self, texts: Sequence[str]) -> Vectors:
        from kg.llm import LLMCallError, embeddings_client

        if self._client is None:
            self._client = embeddings_client(self.base_url, self.api_key, self.timeout_s)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        dimensions = self.dimension if self.send_dimensions else None
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else "?" for t in texts[start : start + self.batch_size]]
            try:
                reply = self._client.create(self.model, batch, dimensions=dimensions)
            except LLMCallError as exc:
                raise ResolutionError(self._failed(exc.plain)) from exc
            self.usage.calls += 1
            if reply.tokens is not None:
                self.usage.tokens += reply.tokens
            for index, embedding in reply.vectors:
                vec = np.asarray(embedding, dtype=np.float32)
                if vec.shape != (self.dimension,):
                    raise ResolutionError(
                        f"model {self.model!r} returned {vec.shape[0]}-d vectors; "
                        f"set resolve.embedding_dim to {vec.shape[0]}"
                    )
                out[start + index] = vec
        return normalize_rows(out)


def embedder_identity(embedder: Embedder) -> str:
    """``name/dim``: what the graph records per vector index (two 256-d embedders differ)."""
    name = getattr(embedder, "name", None) or type(embedder).__name__
    return f"{name}/{embedder.dim}"


def make_chunk_embedder(settings: ChunkSettings) -> Embedder:
    """The embedder for chunk texts (and questions against them): ``settings.embedder``."""
    if settings.embedder == "openai":
        return OpenAIEmbedder(
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key.get_secret_value(),
            model=settings.embed_model,
            dimension=settings.embedding_dim,
        )
    if settings.embedder == "hashing":
        return HashingEmbedder(settings.embedding_dim)
    if settings.embedder == "e5":
        from kg.resolve.e5 import E5Embedder

        return E5Embedder()
    return WordLlamaEmbedder(settings.embedding_dim)


def make_embedder(settings: ResolveSettings) -> Embedder:
    """The embedder ``settings.embedder`` names; ``hashing`` needs nothing outside the process."""
    if settings.embedder == "openai":
        return OpenAIEmbedder(
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key.get_secret_value(),
            model=settings.embed_model,
            dimension=settings.embedding_dim,
            settings_prefix="KG_RESOLVE__",
        )
    return HashingEmbedder(settings.embedding_dim, settings.abbreviations_file)
