"""An embeddings endpoint that fails names the URL tried (no secrets) and the settings to change.

A closed loopback port (nothing listens), through the real openai client of kg.llm.
"""

from __future__ import annotations

import socket

import pytest

from kg.errors import ResolutionError
from kg.resolve.embed import make_chunk_embedder, make_embedder
from kg.settings import ChunkSettings, ResolveSettings


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("section", ["chunks", "resolve"])
def test_a_dead_embeddings_endpoint_names_itself_and_the_settings(section: str) -> None:
    port = _closed_port()
    fields = {
        "embedder": "openai",
        "embed_base_url": f"http://user:pw-in-url-77@127.0.0.1:{port}/v1?key=q-secret-88",
        "embed_api_key": "sk-embed-secret-0123",
        "embed_model": "no-such-embedder",
        "embedding_dim": 8,
    }
    if section == "chunks":
        embedder = make_chunk_embedder(ChunkSettings.model_validate(fields))
        prefix = "KG_CHUNKS__"
    else:
        embedder = make_embedder(ResolveSettings.model_validate(fields))
        prefix = "KG_RESOLVE__"
    with pytest.raises(ResolutionError) as caught:
        embedder.embed(["AuthService"])
    message = str(caught.value)
    assert f"the embeddings endpoint http://127.0.0.1:{port}/v1 (model no-such-embedder)" in message
    assert f"{prefix}EMBED_BASE_URL" in message
    assert f"{prefix}EMBED_MODEL" in message
    for secret in ("pw-in-url-77", "q-secret-88", "sk-embed-secret-0123"):
        assert secret not in message
