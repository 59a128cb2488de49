"""The one factory of LLM clients: settings and a use in, a client of the seam's protocol out.

Nothing here imports openai or instructor until a client is built (``import kg`` stays light).
"""

from __future__ import annotations

from kg.llm.endpoint import Endpoint, resolve_endpoint
from kg.llm.protocol import EmbeddingsClient, StructuredLLM, SyncStructuredLLM
from kg.settings import LLMUse, Settings

__all__ = ["embeddings_client", "llm_client", "open_llm", "sync_llm_client"]


def llm_client(endpoint: Endpoint) -> StructuredLLM:
    """An async structured client for a resolved endpoint (opened by ``async with``)."""
    from kg.llm.instructor_llm import InstructorLLM

    return InstructorLLM(endpoint)


def open_llm(settings: Settings, use: LLMUse) -> StructuredLLM:
    """The async structured client of ``use`` (``extract``, ``answer``, ``reports`` ...)."""
    return llm_client(resolve_endpoint(settings, use))


def sync_llm_client(endpoint: Endpoint) -> SyncStructuredLLM:
    """A blocking structured client for a resolved endpoint; connects on first call."""
    from kg.llm.instructor_llm import SyncInstructorLLM

    return SyncInstructorLLM(endpoint)


def embeddings_client(base_url: str | None, api_key: str, timeout_s: float) -> EmbeddingsClient:
    """An OpenAI-compatible embeddings client (``base_url`` None: OpenAI's own).

    Embeddings are not a chat use: their endpoint is the embedder's own section
    (``resolve.embed_*``, ``chunks.embed_*``), where an unset URL has always meant OpenAI's,
    not the chat endpoint of ``llm``; only the client is built here.
    """
    from kg.llm.instructor_llm import OpenAIEmbeddings

    return OpenAIEmbeddings(base_url, api_key, timeout_s)
