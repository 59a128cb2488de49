"""The LLM seam: every LLM use in kg goes through this package.

- :mod:`kg.llm.endpoint`: which endpoint, model and bounds a use runs with (settings resolved:
  the use's own section, then the shared ``llm`` section);
- :mod:`kg.llm.protocol`: :class:`StructuredLLM` (one validated chat call),
  :class:`EmbeddingsClient`, and the errors a call raises;
- :mod:`kg.llm.factory`: the one place a client is built (:func:`open_llm`);
- :mod:`kg.llm.ask`: one budgeted request, for answers, questions and translation (or
  streamed: :func:`ask_stream`);
- :mod:`kg.llm.instructor_llm`: the openai + instructor implementation, the only module that
  imports them, and only once a client is built;
- :mod:`kg.llm.bounded`: what it accepts from an endpoint (answers of at most
  ``llm.max_response_bytes``, tokens counted from the texts), imported with it.
"""

from kg.llm.ask import LLMEndpoint, LLMUsage, ReaskFailed, ask, ask_stream
from kg.llm.endpoint import USES, Endpoint, extract_endpoint, resolve_endpoint
from kg.llm.factory import embeddings_client, llm_client, open_llm, sync_llm_client
from kg.llm.protocol import (
    EmbeddingsClient,
    EmbeddingsReply,
    LLMCallError,
    LLMEndpointError,
    LLMInvalidOutput,
    LLMUnusableOutput,
    Reask,
    Reply,
    Streamed,
    StructuredLLM,
    SyncStructuredLLM,
    TokenUsage,
)

__all__ = [
    "USES",
    "EmbeddingsClient",
    "EmbeddingsReply",
    "Endpoint",
    "LLMCallError",
    "LLMEndpoint",
    "LLMEndpointError",
    "LLMInvalidOutput",
    "LLMUnusableOutput",
    "LLMUsage",
    "Reask",
    "ReaskFailed",
    "Reply",
    "Streamed",
    "StructuredLLM",
    "SyncStructuredLLM",
    "TokenUsage",
    "ask",
    "ask_stream",
    "embeddings_client",
    "extract_endpoint",
    "llm_client",
    "open_llm",
    "resolve_endpoint",
    "sync_llm_client",
]
