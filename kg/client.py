"""The library surface: ``KnowledgeGraph`` and ``AsyncKnowledgeGraph``, twins in the httpx manner.

::

    from kg import KnowledgeGraph

    with KnowledgeGraph() as graph:              # Settings() from KG_* variables and .env
        graph.ingest("docs/", triplets="facts.jsonl")
        print(graph.search("Who owns AuthService?").entities[0].name)

This is the one composition root: it builds the driver(s), the embedder, the writer, the
resolver's adjudicator and the search service from :class:`~kg.settings.Settings`; the CLI,
the API and the MCP server call only this (or the use cases behind it). Constructors do no
I/O; drivers open on ``__enter__``/``open()`` and close on ``__exit__``/``close()``.

Errors are kg's own tree (:mod:`kg.errors`): Neo4j and driver failures are translated here, in
one place, for reads and writes alike.

The twins share one configuration (:class:`_GraphConfig`). ``AsyncKnowledgeGraph`` runs reads
on an async driver and writes (ingest, schema, migrate) on a sync driver in a worker thread.
``KnowledgeGraph`` runs writes directly and reads through a private event loop on a
background thread, so it works inside a running event loop too (a notebook).

Read-your-writes: the write driver's ``execute_query_bookmark_manager`` is the graph's one
causal chain. Every write records its bookmark there (``execute_query`` by default, the
writer's sessions by passing it) and every guarded read starts from its bookmarks, so on a
cluster a search after an ingest waits until the server it reads from has applied the ingest.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import Future
from contextlib import aclosing
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from neo4j import AsyncDriver, Driver
from neo4j.exceptions import DriverError, Neo4jError
from pydantic import ValidationError

from kg import observe, scope
from kg.errors import ConfigError, ExtractionError, KGError, rejected, translate
from kg.graph.driver import open_async_driver, open_driver, verify, verify_async
from kg.graph.meta import MODEL_VERSION, ensure_current, read_embedders, read_model
from kg.settings import Settings
from kg.shards import MAX_WORKERS, parse_shard

# The use cases load when a call needs them, so a command imports only its own: `kg namespaces`
# never loads ingest, answers or communities (docs/architecture.md, "A CLI at the speed of its
# work"). Their types are for annotations only.
if TYPE_CHECKING:
    from neo4j.api import BookmarkManager

    from kg.answer.cited import AnswerDelta, AnswerRequest, AnswerResponse
    from kg.answer.nlquery import QueryRequest, QueryResponse
    from kg.communities.build import CommunityBuildSummary
    from kg.evaluate import EvalMode, EvalQuestion, EvalReport, SkippedLine
    from kg.graph.migrate import MigrationReport
    from kg.graph.namespaces import ForgetReport
    from kg.graph.schema import SchemaReport
    from kg.ingest import IngestSummary, Progress
    from kg.resolve.vectors import Embedder
    from kg.search.global_models import (
        GlobalSearchRequest,
        GlobalSearchResponse,
        RoutedRequest,
        RoutedResponse,
    )
    from kg.search.models import (
        EntityDetail,
        NamespaceInfo,
        Neighborhood,
        SearchBackend,
        SearchRequest,
        SearchResponse,
        TemplateInfo,
        TemplateResult,
    )
    from kg.search.service import SearchService

__all__ = [
    "MODEL_VERSION",
    "AsyncKnowledgeGraph",
    "IngestOptions",
    "KnowledgeGraph",
    "ServiceFactory",
    "schema_statements",
    "search_service",
]

T = TypeVar("T")

#: Builds the search use case on the surface's read driver; the default is :func:`search_service`.
ServiceFactory = Callable[[AsyncDriver, Settings], "SearchBackend"]


def _settings(settings: Settings | None, overrides: dict[str, Any]) -> Settings:
    """``Settings()`` (environment, .env), or the given one, with section overrides applied."""
    base = settings if settings is not None else Settings()
    if not overrides:
        return base
    merged = base.model_dump()
    for section, values in overrides.items():
        if isinstance(values, dict) and isinstance(merged.get(section), dict):
            merged[section] = {**merged[section], **values}
        else:
            merged[section] = values
    # Secrets dump as SecretStr objects, which validate back unchanged.
    return Settings.model_validate(merged)


@dataclass(frozen=True)
class IngestOptions:
    """What ``ingest`` takes besides the folder; the CLI builds one from its flags."""

    triplets: Path | None = None
    namespace: str | None = None
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    prune: bool = False  # confirm removing over half a source; imports: remove what is unlisted
    keep_missing: bool = False  # keep documents whose files are gone (removed by default)
    reextract: bool = False  # extract every document again, past the extraction cache
    dry_run: bool = False
    follow_symlinks: bool = False
    graph: Literal["llm", "metadata"] = "llm"  # metadata: the document graph alone, no LLM
    # Parallel ingest (docs/architecture.md, "Parallel ingest"): N processes here, or one
    # shard "I/N" of N workers anywhere, or only the finish of what shards staged.
    workers: int = 1
    shard: str | None = None
    finish: bool = False

    def check(self) -> None:
        """Raise :class:`ConfigError` for a wrong combination of the parallel options."""
        if sum((self.workers != 1, self.shard is not None, self.finish)) > 1:
            raise ConfigError("give one of --workers, --shard and --finish")
        if not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"--workers must be 1..{MAX_WORKERS}, not {self.workers}")
        if self.shard is not None:
            parse_shard(self.shard)


class _GraphConfig:
    """What both twins hold: settings and the injectable parts (no I/O)."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        **overrides: Any,
    ) -> None:
        self.settings = _settings(settings, overrides)
        self._embedder = embedder
        self._chunk_embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        """The embedder for chunks, entities and questions (built once, on first use)."""
        from kg.resolve import make_embedder

        if self._embedder is None:
            self._embedder = make_embedder(self.settings.resolve)
        return self._embedder

    @property
    def chunk_embedder(self) -> Embedder:
        """The embedder for chunk texts and the questions searched against them."""
        from kg.resolve.embed import make_chunk_embedder

        if self._chunk_embedder is None:
            self._chunk_embedder = make_chunk_embedder(self.settings.chunks)
        return self._chunk_embedder

    @property
    def database(self) -> str:
        return self.settings.neo4j.database

    # -- writes on a sync driver (shared by both twins) ----------------------------------------

    def _ingest(
        self, driver: Driver, path: Path | str, options: IngestOptions, progress: Progress | None
    ) -> IngestSummary:
        with observe.span("kg.ingest", graph=options.graph, dry_run=options.dry_run) as run:
            summary = self._run_ingest(driver, path, options, progress)
            run.set(
                documents=summary.documents_new + summary.documents_changed,
                chunks=summary.chunks,
                entities=summary.entities_created,
                relations=summary.relations_created,
                facts=summary.facts_created,
                failures=len(summary.failures),
                llm_calls=summary.llm_calls,
            )
            return summary

    def _run_ingest(
        self, driver: Driver, path: Path | str, options: IngestOptions, progress: Progress | None
    ) -> IngestSummary:
        options.check()
        from kg.ingest import ingest as run_ingest

        self._schema(driver)
        try:
            if options.finish or (options.workers > 1 and not options.dry_run):
                return self._ingest_parallel(driver, Path(path), options, progress)
            return run_ingest(
                self.settings,
                driver,
                Path(path),
                triplets=Path(options.triplets) if options.triplets is not None else None,
                namespace=options.namespace,
                include=options.include,
                exclude=options.exclude,
                prune=options.prune,
                keep_missing=options.keep_missing,
                reextract=options.reextract,
                dry_run=options.dry_run,
                follow_symlinks=options.follow_symlinks,
                progress=progress,
                embedder=self.embedder,
                chunk_embedder=self.chunk_embedder,
                graph=options.graph,
                shard=parse_shard(options.shard) if options.shard else None,
            )
        except (Neo4jError, DriverError, OSError) as exc:
            error = translate(exc, "ingest")
            raise type(error)(
                f"{error}; what was written is consistent: run the same ingest again to finish"
            ) from exc

    def _ingest_parallel(
        self, driver: Driver, path: Path, options: IngestOptions, progress: Progress | None
    ) -> IngestSummary:
        """``--finish`` (only the finish pass) or ``--workers N`` (kg/ingest_workers.py)."""
        from kg.ingest import finish_ingest
        from kg.ingest_workers import ingest_parallel

        embedder, chunk_embedder = self.embedder, self.chunk_embedder
        if options.finish:
            return finish_ingest(
                self.settings,
                driver,
                path,
                namespace=options.namespace,
                progress=progress,
                embedder=embedder,
                chunk_embedder=chunk_embedder,
            )
        kwargs = {
            "triplets": Path(options.triplets) if options.triplets is not None else None,
            "namespace": options.namespace,
            "include": tuple(options.include),
            "exclude": tuple(options.exclude),
            "prune": options.prune,
            "keep_missing": options.keep_missing,
            "reextract": options.reextract,
            "dry_run": options.dry_run,
            "follow_symlinks": options.follow_symlinks,
            "graph": options.graph,
        }
        return ingest_parallel(
            self.settings,
            driver,
            path,
            workers=options.workers,
            options=kwargs,
            progress=progress,
            embedder=embedder,
            chunk_embedder=chunk_embedder,
        )

    def _schema(self, driver: Driver) -> SchemaReport:
        from kg.graph.schema import apply_schema as run_apply_schema

        try:
            return run_apply_schema(
                driver,
                database=self.database,
                dimension=self.settings.resolve.embedding_dim,
                chunk_dimension=self.settings.chunks.embedding_dim,
                folder=self.settings.schema_dir,
            )
        except (Neo4jError, DriverError, OSError) as exc:
            raise translate(exc, "applying the schema") from exc

    def _migrate(self, driver: Driver, *, check: bool) -> MigrationReport:
        from kg.graph.migrate import MigrationReport, already_current
        from kg.graph.migrate import migrate as run_migrate
        from kg.graph.schema import drop_resized_vector_indexes
        from kg.ingest import make_writer
        from kg.resolve.embed import embedder_identity

        try:
            if check:
                return MigrationReport(from_version=read_model(driver, self.database).effective)
            identities = {
                "entity": embedder_identity(self.embedder),
                "chunk": embedder_identity(self.chunk_embedder),
            }
            current = already_current(driver, self.database, identities)
            if current is not None:
                return current
            # Another embedder of another width: its vectors are all rewritten below, so the
            # indexes sized for the old ones are made again at the new width first.
            stored = read_embedders(driver, self.database)
            widths = {"entity": self.embedder.dim, "chunk": self.chunk_embedder.dim}
            resized = drop_resized_vector_indexes(
                driver,
                database=self.database,
                kinds={
                    kind: width
                    for kind, width in widths.items()
                    if stored.get(kind) not in (None, identities[kind])
                },
            )
            self._schema(driver)
            report = run_migrate(
                driver,
                self.database,
                make_writer(self.settings, driver, self.chunk_embedder),
                entity_embedder=self.embedder,
                chunk_embedder=self.chunk_embedder,
            )
            report.notes += [f"vector index {name} made again at its new width" for name in resized]
            return report
        except (Neo4jError, DriverError, OSError) as exc:
            raise translate(exc, "migrate") from exc

    def _forget(self, driver: Driver, namespace: str) -> ForgetReport:
        from kg.graph.namespaces import forget as run_forget
        from kg.ingest import make_writer

        try:
            ensure_current(driver, self.database, write=False)
            return run_forget(
                driver,
                self.database,
                make_writer(self.settings, driver, self.chunk_embedder),
                namespace,
            )
        except (Neo4jError, DriverError, OSError) as exc:
            raise translate(exc, "forget") from exc

    def _communities(self, driver: Driver, *, dry_run: bool) -> CommunityBuildSummary:
        from kg.communities.build import build_communities

        self._schema(driver)
        try:
            return build_communities(self.settings, driver, dry_run=dry_run)
        except (Neo4jError, DriverError, OSError) as exc:
            raise translate(exc, "communities build") from exc

    def _open_sync(self) -> Driver:
        driver = open_driver(self.settings.neo4j)
        try:
            self._verify_sync(driver)
        except BaseException:
            driver.close()
            raise
        return driver

    def _verify_sync(self, driver: Driver) -> None:
        verify(driver, self.settings.neo4j, local_bolt_port=self.settings.server.bolt_port)


def _request(
    query: str,
    mode: str,
    depth: int,
    limit: int,
    as_of: date | datetime | None,
    relation_types: list[str] | None,
    namespaces: Sequence[str] | None = None,
) -> SearchRequest:
    from kg.search.models import SearchRequest

    try:
        return SearchRequest.model_validate(
            {"query": query, "mode": mode, "depth": depth, "limit": limit, "as_of": as_of,
             "relation_types": relation_types, "namespaces": _listed(namespaces)}
        )  # fmt: skip
    except ValidationError as exc:
        raise rejected(exc, "search") from exc


def _listed(namespaces: Sequence[str] | None) -> list[str] | None:
    """A caller's namespaces as the request models take them (a lone string is one name)."""
    if namespaces is None:
        return None
    return [namespaces] if isinstance(namespaces, str) else list(namespaces)


def _answer_request(
    question: str,
    mode: str,
    depth: int,
    as_of: date | datetime | None,
    limit: int,
    namespaces: Sequence[str] | None = None,
) -> AnswerRequest:
    from kg.answer.cited import AnswerRequest

    raw = {"question": question, "mode": mode, "depth": depth, "as_of": as_of, "limit": limit,
           "namespaces": _listed(namespaces)}  # fmt: skip
    try:
        return AnswerRequest.model_validate(raw)
    except ValidationError as exc:
        raise rejected(exc, "answer") from exc


def _query_request(question: str, namespaces: Sequence[str] | None = None) -> QueryRequest:
    from kg.answer.nlquery import QueryRequest

    try:
        return QueryRequest.model_validate(
            {"question": question, "namespaces": _listed(namespaces)}
        )
    except ValidationError as exc:
        raise rejected(exc, "query") from exc


def _global_request(
    query: str, level: int | None, limit: int, namespaces: Sequence[str] | None = None
) -> GlobalSearchRequest:
    from kg.search.global_models import GlobalSearchRequest

    raw = {"query": query, "level": level, "limit": limit, "namespaces": _listed(namespaces)}
    try:
        return GlobalSearchRequest.model_validate(raw)
    except ValidationError as exc:
        raise rejected(exc, "global search") from exc


async def _llm_listens(settings: Settings) -> None:
    """Fail at once, with the LLM client's own message, when nothing listens at the answer
    endpoint: before retrieval and before the client's second of imports (kg/llm/reach.py)."""
    from kg.llm.endpoint import resolve_endpoint
    from kg.llm.reach import refused

    endpoint = resolve_endpoint(settings, "answer")
    error = await refused(endpoint.base_url)
    if error is not None:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ExtractionError(endpoint.failed(f"no connection ({reason})", connection=True))


async def _read(what: str, call: Awaitable[T]) -> T:
    """Await a read; kg errors pass, Neo4j and driver failures become kg errors."""
    try:
        return await call
    except KGError:
        raise
    except (Neo4jError, DriverError, OSError, TimeoutError) as exc:
        raise translate(exc, what) from exc


class AsyncKnowledgeGraph(_GraphConfig):
    """The async twin: ``async with AsyncKnowledgeGraph() as graph: await graph.search(...)``."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        service_factory: ServiceFactory | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(settings, embedder=embedder, **kw)
        self._driver: AsyncDriver | None = None
        # The write driver: opened (no I/O) with the read driver, because its bookmark
        # manager is the chain reads wait for; verified on the first write.
        self._sync: Driver | None = None
        self._sync_verified = False
        self._owns_sync = True  # False: a sync twin's driver, lent to its private reader
        self._service: SearchBackend | None = None
        self._service_factory = service_factory
        self._lock = threading.Lock()
        self._warm = False  # a read succeeded: later ones keep the strict query bound
        self._verified = False

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Open the async driver (reads) and the sync one (writes: verified on first write).

        Opening a driver makes no connection; both open here so that reads wait for the
        write driver's bookmarks (read-your-writes, see the module docstring)."""
        if self._driver is None:
            with self._lock:
                if self._sync is None:
                    self._sync = open_driver(self.settings.neo4j)
                bookmarks = self._sync.execute_query_bookmark_manager
            self._driver = open_async_driver(self.settings.neo4j)
            if self._service_factory is not None:
                self._service = self._service_factory(self._driver, self.settings)
            else:
                self._service = search_service(
                    self._driver,
                    self.settings,
                    self.embedder,
                    self.chunk_embedder,
                    bookmarks=bookmarks,
                )

    def _lend(self, driver: Driver) -> None:
        """Read after ``driver``'s writes (a sync twin's verified driver, closed by its owner)."""
        self._sync, self._sync_verified, self._owns_sync = driver, True, False

    async def aclose(self) -> None:
        if self._driver is not None:
            await self._driver.close()
            self._driver, self._service = None, None
        self._verified = False
        if self._sync is not None:
            if self._owns_sync:
                await asyncio.to_thread(self._sync.close)
            self._sync, self._sync_verified, self._owns_sync = None, False, True

    async def _first_read(self, what: str, call: Awaitable[T]) -> T:
        """A read; the first ones (until one succeeds, unless start-up warmed the server) under
        the first-query grace: a just-restarted Neo4j ran a first search past the strict bound
        (kg/cypher/guard.py, ``search.first_query_timeout_s``)."""
        if self._warm or getattr(self._service, "started", False):
            return await _read(what, call)
        from kg.cypher.guard import first_query_grace

        with first_query_grace(self.settings.search.first_query_timeout_s):
            result = await _read(what, call)
        self._warm = True
        return result

    @property
    def async_driver(self) -> AsyncDriver:
        """The read driver (front ends that probe Neo4j themselves, e.g. the API's health)."""
        if self._driver is None:
            raise RuntimeError("open the graph first: `async with AsyncKnowledgeGraph() as g`")
        return self._driver

    @property
    def service(self) -> SearchBackend:
        """The search use case behind the reads (tests reach its guard through it)."""
        if self._service is None:
            raise RuntimeError("open the graph first: `async with AsyncKnowledgeGraph() as g`")
        return self._service

    # -- reads -----------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        mode: str = "graph",
        depth: int = 2,
        limit: int = 20,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> SearchResponse:
        """Local search: entities, relations with validity, and supporting chunks, ranked;
        within ``namespaces`` when given (kg/scope.py)."""
        request = _request(query, mode, depth, limit, as_of, relation_types, namespaces)
        return await self.search_request(request)

    async def global_search(
        self,
        query: str,
        *,
        level: int | None = None,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
    ) -> GlobalSearchResponse:
        """Global search: community reports ranked for the question (map-reduced with an LLM)."""
        return await self.global_search_request(_global_request(query, level, limit, namespaces))

    async def global_search_request(self, request: GlobalSearchRequest) -> GlobalSearchResponse:
        from kg.search.signals.communities import CommunityReports

        observe.note_request(mode="global")
        with scope.scoped(request.namespaces), observe.span("kg.search", mode="global"):
            call = CommunityReports(self.service, self.settings).search(request)
            return await self._first_read("global search", call)

    async def routed_search(self, request: RoutedRequest) -> RoutedResponse:
        """Search in any mode; ``auto`` (the default) lets the router pick and say why."""
        from kg.search.routed import routed_search as run_routed_search

        observe.note_request(mode=request.mode)
        with scope.scoped(request.namespaces), observe.span("kg.search.routed", mode=request.mode):
            call = run_routed_search(self.service, self.settings, request)
            return await self._first_read("search", call)

    async def evaluate(
        self,
        questions: str | Path | Sequence[EvalQuestion],
        *,
        modes: Sequence[EvalMode] | None = None,
        depth: int = 2,
        limit: int = 10,
    ) -> EvalReport:
        """Score search on labelled questions (a JSONL file, or :class:`EvalQuestion` items):
        hit@1/3/5, recall@5, MRR and latency for every mode, and which mode to use.
        Bad lines of a file are reported in ``skipped`` and left out (docs/search.md)."""
        from kg.evaluate import EVAL_MODES, read_questions
        from kg.evaluate import evaluate as run_evaluate

        skipped: list[SkippedLine] = []
        if isinstance(questions, str | Path):
            questions, skipped = read_questions(Path(questions))
        return await run_evaluate(
            self.routed_search,
            questions,
            modes=modes or EVAL_MODES,
            depth=depth,
            limit=limit,
            skipped=skipped,
        )

    async def search_request(self, request: SearchRequest) -> SearchResponse:
        with scope.scoped(request.namespaces):
            return await self._first_read("search", self.service.local_search(request))

    async def entity(
        self, entity_id: str, *, namespaces: Sequence[str] | None = None
    ) -> EntityDetail:
        """One entity; NotFoundError when absent, or outside ``namespaces``."""
        with scope.scoped(_listed(namespaces)):
            return await self._first_read("entity", self.service.get_entity(entity_id))

    async def neighborhood(
        self,
        entity_id: str,
        depth: int = 1,
        *,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        limit: int | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> Neighborhood:
        with scope.scoped(_listed(namespaces)):
            call = self.service.neighborhood(
                entity_id, depth, as_of=as_of, relation_types=relation_types, limit=limit
            )
            return await self._first_read("neighborhood", call)

    async def run_template(
        self, name: str, params: Mapping[str, Any] | None = None, /, **kw: Any
    ) -> TemplateResult:
        """One registry template through the guard; parameters as a mapping, keywords or both."""
        merged = {**(params or {}), **kw}
        call = self.service.run_template(name, merged)
        return await self._first_read(f"template {name}", call)

    def templates(self) -> list[TemplateInfo]:
        return self.service.templates()

    async def namespaces(self, *, namespaces: Sequence[str] | None = None) -> list[NamespaceInfo]:
        """The namespaces (document sources) with their document, chunk, fact and entity
        counts; those in ``namespaces`` (or the caller's scope) only, when given."""
        from kg.search.models import NamespaceInfo

        with scope.scoped(_listed(namespaces)):
            call = self.service.run_template("namespaces", {})
            result = await self._first_read("namespaces", call)
        return [NamespaceInfo.model_validate(row) for row in result.rows]

    async def health(self) -> bool:
        """True when Neo4j answers a read."""
        try:
            return await self.service.health()
        except (KGError, Neo4jError, DriverError, OSError):
            return False

    async def verify(self) -> None:
        """Fail at once, naming the URI and the fix, when Neo4j does not answer at all: a
        command's first query would otherwise be retried for seconds, with a warning each time.
        Once per open graph; transient errors later in the work are still retried."""
        if not self._verified:
            await verify_async(
                self.async_driver,
                self.settings.neo4j,
                local_bolt_port=self.settings.server.bolt_port,
            )
            self._verified = True

    async def startup(self) -> dict[str, str]:
        """Refuse a graph of another model; EXPLAIN every template (each must be a read)."""
        await self.verify()
        return await _read("start-up", self.service.startup())

    async def check_model(self) -> None:
        """Refuse a graph of another model or embedder (after :meth:`verify`)."""
        await self.verify()
        await _read("model check", self.service.check_model())

    # -- questions through the LLM (kg/answer/cited.py, kg/answer/nlquery.py) ---------------

    async def answer(
        self,
        question: str,
        *,
        mode: str = "auto",
        depth: int = 2,
        as_of: date | datetime | None = None,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
    ) -> AnswerResponse:
        """An answer from retrieved context only, citing it; or ``insufficient_context``."""
        request = _answer_request(question, mode, depth, as_of, limit, namespaces)
        return await self.answer_request(request)

    async def answer_request(self, request: AnswerRequest) -> AnswerResponse:
        await _llm_listens(self.settings)
        from kg.answer.cited import answer as run_answer

        with scope.scoped(request.namespaces):
            call = run_answer(self.service, self.settings, request)
            return await self._first_read("answer", call)

    async def answer_stream(
        self,
        question: str,
        *,
        mode: str = "auto",
        depth: int = 2,
        as_of: date | datetime | None = None,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
    ) -> AsyncGenerator[AnswerDelta | AnswerResponse, None]:
        """:meth:`answer` as the LLM writes it: :class:`AnswerDelta` pieces of the text, then
        the :class:`AnswerResponse`, its citations validated as :meth:`answer` validates them
        (never re-asked: an invalid one raises after the text). Closing the iterator early
        closes the LLM's connection."""
        request = _answer_request(question, mode, depth, as_of, limit, namespaces)
        events = self.answer_stream_request(request)
        async with aclosing(events):
            async for event in events:
                yield event

    async def answer_stream_request(
        self, request: AnswerRequest
    ) -> AsyncGenerator[AnswerDelta | AnswerResponse, None]:
        await _llm_listens(self.settings)
        from kg.answer.cited import answer_stream, prepare

        # retrieval runs before the first event: its errors (scope, Neo4j) come first, as
        # :meth:`answer_request`'s do; no context variable stays set across a yield
        with scope.scoped(request.namespaces):
            call = prepare(self.service, self.settings, request)
            prepared = await self._first_read("answer", call)
        events = answer_stream(prepared, self.settings)
        async with aclosing(events):  # closed early: the LLM's connection closes now
            async for event in events:
                yield event

    async def query(
        self, question: str, *, namespaces: Sequence[str] | None = None
    ) -> QueryResponse:
        """The question as one registry template (chosen by the LLM), run through the guard."""
        return await self.query_request(_query_request(question, namespaces))

    async def query_request(self, request: QueryRequest) -> QueryResponse:
        await _llm_listens(self.settings)
        from kg.answer.nlquery import query as run_query

        with scope.scoped(request.namespaces):
            call = run_query(self.service, self.settings, request)
            return await self._first_read("query", call)

    # -- writes (sync driver, worker thread) -----------------------------------------------------

    async def ingest(
        self,
        path: Path | str,
        *,
        options: IngestOptions | None = None,
        progress: Progress | None = None,
        **kw: Any,
    ) -> IngestSummary:
        """Load, chunk, extract (or import), resolve and write ``path``; see kg.ingest."""
        opts = options or IngestOptions(**kw)
        return await asyncio.to_thread(self._with_sync, self._ingest, path, opts, progress)

    async def apply_schema(self) -> SchemaReport:
        return await asyncio.to_thread(self._with_sync, self._schema)

    async def migrate(self, *, check: bool = False) -> MigrationReport:
        return await asyncio.to_thread(self._with_sync, self._migrate, check=check)

    async def build_communities(self, *, dry_run: bool = False) -> CommunityBuildSummary:
        """Recompute communities and their reports (kg.communities.build)."""
        return await asyncio.to_thread(self._with_sync, self._communities, dry_run=dry_run)

    async def forget(self, namespace: str) -> ForgetReport:
        """Remove a namespace's documents, chunks, the facts only it supported and the
        entities left with nothing (kg.graph.namespaces); safe to run again."""
        return await asyncio.to_thread(self._with_sync, self._forget, namespace)

    def _with_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            if self._sync is None:
                self._sync = self._open_sync()
            elif not self._sync_verified:
                self._verify_sync(self._sync)  # opened by open(), unverified until now
            self._sync_verified = True
            sync = self._sync
        return fn(sync, *args, **kwargs)


class _Portal:
    """An event loop on a daemon thread; sync code submits coroutines and waits for them."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="kg")
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def iterate(self, items: AsyncGenerator[T, None]) -> Iterator[T]:
        """An async iterator as a blocking one: it runs in one task on the loop (its context
        variables stay its own), handing items over; closing this one early cancels it."""
        handed: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

        async def pump() -> None:
            try:
                async with aclosing(items):
                    async for item in items:
                        handed.put_nowait(("item", item))
            except BaseException as exc:
                handed.put_nowait(("error", exc))
                raise
            handed.put_nowait(("end", None))

        future = asyncio.run_coroutine_threadsafe(pump(), self._loop)
        try:
            while True:
                kind, value = handed.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            future.cancel()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


class KnowledgeGraph(_GraphConfig):
    """The sync twin: ``with KnowledgeGraph() as graph: graph.search(...)``."""

    def __init__(
        self, settings: Settings | None = None, *, embedder: Embedder | None = None, **kw: Any
    ) -> None:
        super().__init__(settings, embedder=embedder, **kw)
        self._driver: Driver | None = None
        self._portal: _Portal | None = None
        self._reader: AsyncKnowledgeGraph | None = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Open and verify the driver; ``KGError`` when Neo4j does not answer."""
        if self._driver is None:
            self._driver = self._open_sync()

    def close(self) -> None:
        if self._reader is not None and self._portal is not None:
            self._portal.call(self._reader.aclose())
            self._reader = None
        if self._portal is not None:
            self._portal.close()
            self._portal = None
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    @property
    def driver(self) -> Driver:
        if self._driver is None:
            raise RuntimeError("open the graph first: `with KnowledgeGraph() as graph`")
        return self._driver

    @property
    def service(self) -> SearchBackend:
        """The search use case behind the reads, as on the async twin (its methods are
        coroutines of this twin's private loop: call the twin's own methods instead)."""
        if self._driver is None:
            raise RuntimeError("open the graph first: `with KnowledgeGraph() as graph`")
        return self._reading().service

    def _reading(self) -> AsyncKnowledgeGraph:
        """The async twin that runs this one's reads, opened on first use."""
        if self._portal is None:
            self._portal = _Portal()
        if self._reader is None:
            reader = AsyncKnowledgeGraph(self.settings, embedder=self.embedder)
            if self._driver is not None:
                reader._lend(self._driver)  # its reads wait for this twin's writes
            self._portal.call(reader.open())
            self._reader = reader
        return self._reader

    # -- writes ----------------------------------------------------------------------------------

    def ingest(
        self,
        path: Path | str,
        *,
        options: IngestOptions | None = None,
        progress: Progress | None = None,
        **kw: Any,
    ) -> IngestSummary:
        """Load, chunk, extract (or import), resolve and write ``path``; see kg.ingest."""
        return self._ingest(self.driver, path, options or IngestOptions(**kw), progress)

    def apply_schema(self) -> SchemaReport:
        return self._schema(self.driver)

    def migrate(self, *, check: bool = False) -> MigrationReport:
        return self._migrate(self.driver, check=check)

    def build_communities(self, *, dry_run: bool = False) -> CommunityBuildSummary:
        """Recompute communities and their reports (kg.communities.build)."""
        return self._communities(self.driver, dry_run=dry_run)

    def forget(self, namespace: str) -> ForgetReport:
        """Remove a namespace's documents, chunks, the facts only it supported and the
        entities left with nothing (kg.graph.namespaces); safe to run again."""
        return self._forget(self.driver, namespace)

    # -- reads (through the async twin on a private loop) ----------------------------------------

    def _read(self, fn: Callable[[AsyncKnowledgeGraph], Coroutine[Any, Any, T]]) -> T:
        reader = self._reading()
        assert self._portal is not None  # _reading made it
        return self._portal.call(fn(reader))

    def search(
        self,
        query: str,
        *,
        mode: str = "graph",
        depth: int = 2,
        limit: int = 20,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> SearchResponse:
        """Local search: entities, relations with validity, and supporting chunks, ranked;
        within ``namespaces`` when given (kg/scope.py)."""
        request = _request(query, mode, depth, limit, as_of, relation_types, namespaces)
        return self._read(lambda g: g.search_request(request))

    def global_search(
        self,
        query: str,
        *,
        level: int | None = None,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
    ) -> GlobalSearchResponse:
        """Global search: community reports ranked for the question (map-reduced with an LLM)."""
        request = _global_request(query, level, limit, namespaces)
        return self._read(lambda g: g.global_search_request(request))

    def global_search_request(self, request: GlobalSearchRequest) -> GlobalSearchResponse:
        return self._read(lambda g: g.global_search_request(request))

    def routed_search(self, request: RoutedRequest) -> RoutedResponse:
        """Search in any mode; ``auto`` (the default) lets the router pick and say why."""
        return self._read(lambda g: g.routed_search(request))

    def evaluate(
        self,
        questions: str | Path | Sequence[EvalQuestion],
        *,
        modes: Sequence[EvalMode] | None = None,
        depth: int = 2,
        limit: int = 10,
    ) -> EvalReport:
        """Score search on labelled questions (a JSONL file, or :class:`EvalQuestion` items):
        hit@1/3/5, recall@5, MRR and latency for every mode, and which mode to use.
        Bad lines of a file are reported in ``skipped`` and left out (docs/search.md)."""
        return self._read(lambda g: g.evaluate(questions, modes=modes, depth=depth, limit=limit))

    def search_request(self, request: SearchRequest) -> SearchResponse:
        return self._read(lambda g: g.search_request(request))

    def entity(self, entity_id: str, *, namespaces: Sequence[str] | None = None) -> EntityDetail:
        """One entity; NotFoundError when absent, or outside ``namespaces``."""
        return self._read(lambda g: g.entity(entity_id, namespaces=namespaces))

    def neighborhood(
        self,
        entity_id: str,
        depth: int = 1,
        *,
        as_of: date | datetime | None = None,
        relation_types: list[str] | None = None,
        limit: int | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> Neighborhood:
        return self._read(
            lambda g: g.neighborhood(
                entity_id,
                depth,
                as_of=as_of,
                relation_types=relation_types,
                limit=limit,
                namespaces=namespaces,
            )
        )

    def run_template(
        self, name: str, params: Mapping[str, Any] | None = None, /, **kw: Any
    ) -> TemplateResult:
        """One registry template through the guard; parameters as a mapping, keywords or both."""
        return self._read(lambda g: g.run_template(name, params, **kw))

    def templates(self) -> list[TemplateInfo]:
        return self._read(_templates)

    def namespaces(self, *, namespaces: Sequence[str] | None = None) -> list[NamespaceInfo]:
        """The namespaces (document sources) with their document, chunk, fact and entity
        counts; those in ``namespaces`` only, when given."""
        return self._read(lambda g: g.namespaces(namespaces=namespaces))

    def health(self) -> bool:
        return self._read(lambda g: g.health())

    def verify(self) -> None:
        """Fail at once, naming the URI and the fix, when Neo4j does not answer at all."""
        self._read(lambda g: g.verify())

    def startup(self) -> dict[str, str]:
        """Refuse a graph of another model; EXPLAIN every template (each must be a read)."""
        return self._read(lambda g: g.startup())

    def check_model(self) -> None:
        self._read(lambda g: g.check_model())

    def answer(
        self,
        question: str,
        *,
        mode: str = "auto",
        depth: int = 2,
        as_of: date | datetime | None = None,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
    ) -> AnswerResponse:
        """An answer from retrieved context only, citing it; or ``insufficient_context``."""
        return self.answer_request(_answer_request(question, mode, depth, as_of, limit, namespaces))

    def answer_request(self, request: AnswerRequest) -> AnswerResponse:
        return self._read(lambda g: g.answer_request(request))

    def answer_stream(
        self,
        question: str,
        *,
        mode: str = "auto",
        depth: int = 2,
        as_of: date | datetime | None = None,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
    ) -> Iterator[AnswerDelta | AnswerResponse]:
        """:meth:`answer` as the LLM writes it: :class:`AnswerDelta` pieces of the text, then
        the :class:`AnswerResponse` (see the async twin)."""
        request = _answer_request(question, mode, depth, as_of, limit, namespaces)
        return self.answer_stream_request(request)

    def answer_stream_request(
        self, request: AnswerRequest
    ) -> Iterator[AnswerDelta | AnswerResponse]:
        reader = self._reading()
        assert self._portal is not None  # _reading made it
        return self._portal.iterate(reader.answer_stream_request(request))

    def query(self, question: str, *, namespaces: Sequence[str] | None = None) -> QueryResponse:
        """The question as one registry template (chosen by the LLM), run through the guard."""
        return self.query_request(_query_request(question, namespaces))

    def query_request(self, request: QueryRequest) -> QueryResponse:
        return self._read(lambda g: g.query_request(request))


async def _templates(graph: AsyncKnowledgeGraph) -> list[TemplateInfo]:
    return graph.templates()


def schema_statements(settings: Settings | None = None) -> list[str]:
    """The Cypher statements ``apply_schema`` runs (``kg schema show``)."""
    from kg.graph.schema import read_statements

    return read_statements((settings if settings is not None else Settings()).schema_dir)


def search_service(
    driver: AsyncDriver,
    settings: Settings,
    embedder: Embedder | None = None,
    chunk_embedder: Embedder | None = None,
    *,
    bookmarks: BookmarkManager | None = None,
) -> SearchService:
    """The search use case on a caller's driver (the API builds its own per app); its reads
    wait for ``bookmarks`` (a write driver's ``execute_query_bookmark_manager``) when given."""
    from kg.resolve import make_embedder
    from kg.search.service import SearchService

    return SearchService(
        driver,
        settings,
        embedder or make_embedder(settings.resolve),
        chunk_embedder=chunk_embedder,
        bookmarks=bookmarks,
    )
