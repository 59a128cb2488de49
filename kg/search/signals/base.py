"""The one contract every search signal keeps, and what the local ones share.

A signal is a retriever in neo4j-graphrag's sense: built once with what it reads through (no
I/O in the constructor), then ``search`` per question. The local signals (text, vector,
graph) return a chunk ranking that the service fuses (:mod:`kg.search.fusion`); the global
signal (:mod:`kg.search.signals.communities`) returns community reports and is routed to, not
fused, so it keeps its own request and response types behind the same ``search`` method.

Guard calls take the typed parameter models of :mod:`kg.cypher.params`, built with
``model_construct``: the guard validates every call against this graph (the vector indexes'
dimensions) and names the failing field in its QueryRejected, so validating here too would
only repeat that work and change the error a caller sees.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from kg import observe
from kg.cypher.guard import Guard
from kg.errors import ConfigError
from kg.languages import LanguageCode
from kg.resolve import Embedder
from kg.resolve.vectors import embed_queries
from kg.search.chunk_vectors import ChunkVectors
from kg.search.kept import Stamp
from kg.search.models import ChunkHit, SearchRequest
from kg.search.names import NameForms
from kg.search.passages import Passages
from kg.search.ranking import Ranked, Weights
from kg.settings import Settings

Q_contra = TypeVar("Q_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class Retriever(Protocol[Q_contra, R_co]):
    """One signal: a question in, its ranked findings out."""

    async def search(self, query: Q_contra) -> R_co: ...


@dataclass(frozen=True)
class SignalContext:
    """What a local signal reads through; the service builds one and shares it."""

    guard: Guard
    settings: Settings
    embedder: Embedder  # entities (seeds)
    chunk_embedder: Embedder  # chunks
    weights: Weights
    # The graph's counts, and the name forms read for them, shared by the signals: what
    # each keeps per process is read again when they move.
    names: NameForms
    # The chunk vectors kept per process: the vector signal's nearest chunks in hybrid and the
    # graph signal's passage restarts (one copy).
    chunk_vectors: ChunkVectors
    # The passage graph kept per process: the graph signal's walk and hybrid's next hop.
    passages: Passages


class QuestionVectors:
    """The question's embeddings for one search, each made once.

    In hybrid, the vector signal and the graph's fact anchors want the same embedding at the
    same moment; with a transformer (e5: ~20 ms a question on two cores) making it twice
    would be the largest part of the search. The first asker starts the embedding on a
    thread; the others await that task. It lives as long as the search, so a later search
    pays for its own question (no cache across requests)."""

    def __init__(self) -> None:
        self._made: dict[tuple[int, str, int], asyncio.Future[list[float] | None]] = {}

    async def get(self, embedder: Embedder, text: str, dim: int) -> list[float] | None:
        key = (id(embedder), text, dim)
        made = self._made.get(key)
        if made is None:
            if getattr(embedder, "inline", False):
                # Well under a millisecond (WordLlama, loaded): on the loop, where the hop to
                # a thread and back cost more than the embedding (~5% of an API worker's CPU
                # under load, measured with py-spy).
                made = asyncio.get_running_loop().create_future()
                try:
                    made.set_result(_embedded(embedder, text, dim))
                except Exception as exc:  # the awaiting signals get it, as from a thread
                    made.set_exception(exc)
            else:
                made = asyncio.ensure_future(asyncio.to_thread(_embedded, embedder, text, dim))
            self._made[key] = made
        return await asyncio.shield(made)


def _embedded(embedder: Embedder, text: str, dim: int) -> list[float] | None:
    """The question's embedding, observed: the embedder's kind, never the text."""
    with observe.span("kg.search.embed", embedder=type(embedder).__name__, dim=dim):
        return embed(embedder, text, dim)


@dataclass(frozen=True)
class SignalQuery:
    """One local search as each signal sees it."""

    request: SearchRequest
    k: int  # chunks to return
    # The question in the corpus's other languages (translation and its names), by language.
    translations: Mapping[LanguageCode, str]
    # What the chunk embedder reads when no English translation is given, instead of the
    # question: a Russian question's English gloss (SearchService._dense_text); None: the question.
    dense_text: str | None = None
    vectors: QuestionVectors = field(default_factory=QuestionVectors)
    # Set by the service when the graph signal runs in this search too: it resolves to the
    # graph's counts as linking read them (None: not read), so the vector signal needs no
    # round trip of its own to know whether its kept vectors are current.
    linked_stamp: asyncio.Future[Stamp | None] | None = None
    # How many chunks the response shows (0: the request's limit): a signal ranking ids may
    # bring the texts of its first ones.
    shown: int = 0
    # Each language's share of the graph's chunks (empty: unknown): it moves how much each
    # language's text ranking counts (kg.search.signals.text.language_queries).
    shares: Mapping[LanguageCode, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SignalResult:
    """A signal's chunk ranking; the graph signal also ranks entities and relations."""

    chunks: list[ChunkHit]
    ranked: Ranked | None = None
    # Multiplies the signal's fusion weight for this search (None: the weight as set).
    fusion_scale: float | None = None
    # False: the hits carry ids and scores only; the service reads the texts and documents
    # of those it returns (kg/search/service.py), except those in ``texted``.
    texts: bool = True
    # Some of the chunks with their texts and documents, by id (texts=False only).
    texted: Mapping[str, ChunkHit] = field(default_factory=dict)
    # The graph signal: the entities the question names (not through one word that is a
    # title, heading or folder of the document graph), where hybrid's next hop may start.
    subjects: frozenset[str] = frozenset()


class Signal(Retriever[SignalQuery, SignalResult], Protocol):
    """A local signal: fused in hybrid mode, run alone in the mode of its name."""

    #: What the response reports as the signal's template.
    template: str


#: How the registry builds a signal (its class, usually).
SignalFactory = Callable[[SignalContext], Signal]


def by_score(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows best score first, equal scores by id: a packed template's list keeps the query's
    order in practice, but Cypher does not promise it after an OPTIONAL MATCH, and an index's
    order among equal scores depends on how the data was written (two imports of one corpus)."""
    return sorted(rows, key=lambda row: (-float(row.get("score") or 0.0), str(row.get("id"))))


def chunk_hits(rows: Sequence[Mapping[str, Any]]) -> list[ChunkHit]:
    """Chunk rows in the order the index ranked them, with its scores."""
    return [
        ChunkHit(
            id=str(row["id"]),
            text=str(row.get("text") or ""),
            document_id=str(row.get("document_id") or ""),
            document_path=str(row.get("document_path") or ""),
            score=float(row.get("score") or 0.0),
        )
        for row in rows
    ]


def id_hits(scored: Iterable[tuple[str, float]]) -> list[ChunkHit]:
    """Ranked chunk ids with their scores and no text: a signal whose result says
    ``texts=False`` returns these, and the service reads the texts of those it shows."""
    return [
        ChunkHit.model_construct(id=cid, text="", document_id="", document_path="", score=score)
        for cid, score in scored
    ]


def embed(embedder: Embedder, text: str, dim: int) -> list[float] | None:
    """The question's embedding (the query side of an asymmetric embedder), or None when it
    has no signal (a zero vector)."""
    vector = embed_queries(embedder, [text])[0]
    if vector.shape[0] != dim:
        raise ConfigError(
            f"the embedder made a {vector.shape[0]}-d vector; its index holds {dim}-d"
        )
    values = [float(v) for v in vector]
    if not all(math.isfinite(v) for v in values) or not any(values):
        return None
    return values
