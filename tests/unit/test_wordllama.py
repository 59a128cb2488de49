"""WordLlama, the default chunk embedder: offline by construction, and semantic."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from kg.errors import ConfigError
from kg.resolve.embed import embedder_identity, make_chunk_embedder
from kg.resolve.wordllama import WordLlamaEmbedder
from kg.settings import ChunkSettings
from tests.offline import refuse_sockets


def test_it_loads_and_embeds_with_every_socket_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = refuse_sockets(monkeypatch)
    embedder = WordLlamaEmbedder()  # a fresh one: the load happens under the patch
    vectors = embedder.embed(["The ledger is owned by finance.", "", "Команда финансов"])
    assert opened == []
    assert vectors.shape == (3, 256)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_it_is_semantic_not_spelling() -> None:
    embedder = WordLlamaEmbedder()
    q, near, far = embedder.embed(
        ["Who wrote the novel?", "The book's author is a writer.", "Tennis scores were high."]
    )
    assert float(q @ near) > float(q @ far)


def test_it_is_the_default_chunk_embedder_with_its_identity() -> None:
    embedder = make_chunk_embedder(ChunkSettings())
    assert isinstance(embedder, WordLlamaEmbedder)
    assert embedder_identity(embedder) == "wordllama-l2_supercat/256"
    hashing = make_chunk_embedder(ChunkSettings(embedder="hashing"))
    assert embedder_identity(hashing) == "hashing-ngram/256"


def test_only_the_shipped_dimension_loads() -> None:
    with pytest.raises(ConfigError, match="KG_CHUNKS__EMBEDDING_DIM"):
        WordLlamaEmbedder(128).embed(["x"])


def test_importing_it_configures_no_logging() -> None:
    before = list(logging.getLogger().handlers)
    WordLlamaEmbedder().embed(["x"])
    assert logging.getLogger().handlers == before
