"""The offline hashing embedder: deterministic across processes, normalized, fast enough."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from kg.resolve import HashingEmbedder, OpenAIEmbedder, make_embedder
from kg.resolve.embed import Embedder
from kg.settings import ResolveSettings

NAMES = ["AuthService", "auth-svc", "Кафка", "Kafka", "Java", "JavaScript", "", "K8s"]


def test_shape_dtype_and_unit_rows() -> None:
    vectors = HashingEmbedder(64).embed(NAMES)
    assert vectors.shape == (len(NAMES), 64)
    assert vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)


def test_variants_embed_alike_and_different_things_do_not() -> None:
    v = HashingEmbedder(256).embed(
        ["AuthService", "auth-svc", "Кафка", "Kafka", "Java", "JavaScript"]
    )
    assert v[0] @ v[1] > 0.99  # same normalized words
    assert v[2] @ v[3] > 0.99  # transliteration
    assert v[4] @ v[5] < 0.8


def test_same_vectors_in_another_process() -> None:
    here = HashingEmbedder(32).embed(NAMES)
    code = (
        "import sys, json; from kg.resolve import HashingEmbedder;"
        f"print(json.dumps(HashingEmbedder(32).embed({NAMES!r}).tolist()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    import json

    there = np.asarray(json.loads(out.stdout), dtype=np.float32)
    assert np.array_equal(here, there)


def test_empty_input() -> None:
    assert HashingEmbedder(16).embed([]).shape == (0, 16)


def test_hundred_thousand_names_in_seconds() -> None:
    """CPU seconds, not wall time: a loaded machine delays the process but does not make it
    do more work (a quadratic or per-name model call would still fail here)."""
    names = [f"service-{i}-{i * 7919 % 1000}" for i in range(100_000)]
    start = time.process_time()
    HashingEmbedder(256).embed(names)
    assert time.process_time() - start < 10


def test_make_embedder_follows_settings() -> None:
    hashing = make_embedder(ResolveSettings(embedding_dim=128))
    assert isinstance(hashing, HashingEmbedder)
    assert hashing.dim == 128
    assert isinstance(hashing, Embedder)
    remote = make_embedder(
        ResolveSettings(embedder="openai", embed_base_url="http://127.0.0.1:9/v1", embedding_dim=8)
    )
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.dim == 8
