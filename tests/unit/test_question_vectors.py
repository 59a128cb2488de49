"""One search embeds its question once (kg.search.signals.base.QuestionVectors): in hybrid the
vector signal and the graph's fact anchors ask for the same embedding at the same moment, and
with a transformer embedder a second forward pass would be the largest part of the search."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import numpy as np

from kg.resolve.embed import HashingEmbedder
from kg.resolve.vectors import Vectors
from kg.search.signals.base import QuestionVectors


class CountingEmbedder(HashingEmbedder):
    """The real hashing embedder, slowed a little and counting its calls."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.calls.append(list(texts))
        time.sleep(0.05)  # long enough that the askers overlap
        return super().embed(texts)


def test_signals_asking_at_once_share_one_embedding() -> None:
    embedder = CountingEmbedder()

    async def search() -> list[list[float] | None]:
        vectors = QuestionVectors()
        return await asyncio.gather(
            *(vectors.get(embedder, "who owns the ledger", 64) for _ in range(3))
        )

    found = asyncio.run(search())
    assert embedder.calls == [["who owns the ledger"]]
    assert found[0] is not None
    assert found[0] == found[1] == found[2]
    assert np.isclose(np.linalg.norm(found[0]), 1.0)


def test_other_texts_and_embedders_are_embedded_apart() -> None:
    first, second = CountingEmbedder(), CountingEmbedder()

    async def search() -> None:
        vectors = QuestionVectors()
        await asyncio.gather(
            vectors.get(first, "question", 64),
            vectors.get(first, "the question in English", 64),
            vectors.get(second, "question", 64),
        )

    asyncio.run(search())
    assert sorted(first.calls) == [["question"], ["the question in English"]]
    assert second.calls == [["question"]]


def test_each_search_pays_for_its_own_question() -> None:
    """No cache across searches: a benchmark that repeats its questions measures the
    embedding every time, as a user's new question would."""
    embedder = CountingEmbedder()

    async def one_search() -> None:
        await QuestionVectors().get(embedder, "same question", 64)

    asyncio.run(one_search())
    asyncio.run(one_search())
    assert embedder.calls == [["same question"], ["same question"]]


def test_a_cancelled_asker_does_not_cancel_the_others() -> None:
    embedder = CountingEmbedder()

    async def search() -> list[float] | None:
        vectors = QuestionVectors()
        first = asyncio.ensure_future(vectors.get(embedder, "q", 64))
        second = asyncio.ensure_future(vectors.get(embedder, "q", 64))
        await asyncio.sleep(0.01)
        first.cancel()
        return await second

    assert asyncio.run(search()) is not None
    assert embedder.calls == [["q"]]
