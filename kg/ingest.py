"""The ingest use case: load -> chunk -> extract (or import) -> resolve -> write.

Crash safety and idempotency come from three rules:
1. a document whose stored ``sha256`` equals its current hash is skipped (unchanged);
2. any other document has its hash cleared first, then what only it supported removed, before
   it is written again;
3. a document's ``sha256`` is written last, and only when every one of its chunks was
   extracted; a run killed or failing anywhere therefore leaves documents the next run redoes.
Resolution is deterministic, so the rerun ends in the same graph as one uninterrupted run.

Every run, one worker or many, is "stage, then finish": documents and chunks are written and
each document's facts staged in the graph (kg/graph/staging.py); the finish resolves all that
is staged, in one canonical order, under the graph's resolve lock, and writes entities,
mentions, relations and hashes. ``shard`` (``--shard I/N``) limits a run to its documents;
kg/ingest_workers.py runs N shards in processes (docs/architecture.md, "Parallel ingest").

Documents are identified by their source (the resolved root folder, or an explicit
``namespace``) and their path, so two sources never overwrite each other's documents.

Keeping the graph in step with the folder: a document of this source whose file is gone from
disk under the folder is removed (with what only it supported), unless ``keep_missing``. Gone
means absent on disk, never "not loaded by this run": files left out by include/exclude,
skipped or unreadable files, and other workers' files are all still there. A run that would
remove more than half of a source's documents stops unless ``prune`` confirms it. A
``--triplets`` import removes nothing unless ``prune`` (then: the source's documents the file
no longer lists).

Each document records how it was extracted (:class:`kg.graph.writer.Extraction`); an
unchanged document is extracted again when this run's method, model or prompt version differ
(or with ``reextract``), except that a metadata-only run never replaces richer facts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from neo4j import Driver

from kg import docgraph, observe
from kg.documents import chunk_document, document_id, load_folder
from kg.errors import ConfigError
from kg.extract import (
    ChunkOutcome,
    ExtractedEntity,
    ExtractedRelation,
    ExtractionCache,
    ExtractionResult,
    estimate,
    make_extractor,
    read_triplets,
    run_sync,
)
from kg.extract.ontology import ontology_from_settings
from kg.extract.prompts import PROMPT_VERSION
from kg.graph.lock import GraphLock
from kg.graph.meta import ensure_current
from kg.graph.shard_runs import StagingShard, live_shards, staging_shard, wait_for_shards
from kg.graph.staging import LocalStaging, Staged, Staging, StagingStore
from kg.graph.writer import (
    Bounds,
    ChunkRow,
    DocumentRow,
    EntityRow,
    Extraction,
    GraphWriter,
    RelationRow,
    StoredDocument,
    TypePolicy,
    WriteCounts,
)
from kg.languages import detect
from kg.limits import check_namespace, cut_key, printable_path
from kg.llm.endpoint import resolve_endpoint
from kg.models import Chunk, Document, KnownEntity, Mention, ResolvedEntity
from kg.resolve import Embedder, Resolver, make_embedder
from kg.resolve.adjudicate import Adjudicator, make_adjudicator
from kg.resolve.embed import embedder_identity, make_chunk_embedder
from kg.resolve.resolver import Resolution
from kg.resolve.russian import Morphology
from kg.resolve.stated import stated_abbreviations
from kg.settings import Settings
from kg.shards import Shard

log = logging.getLogger(__name__)

STAGES = ("load", "chunk", "extract", "resolve", "write")


class Progress(Protocol):
    """What the pipeline reports while it works; the CLI draws it (cli/progress.py)."""

    def stage(self, name: str, total: int | None) -> None: ...

    def advance(self, amount: int = 1) -> None: ...


@runtime_checkable
class CountingProgress(Progress, Protocol):
    """A :class:`Progress` that also shows each stage's counts; the pipeline calls ``note``
    only on one that has it, so a plain ``Progress`` keeps working.

    ``counts`` are the current stage's totals so far (a name left out keeps its last value):
    ``files`` and ``skipped`` (load), ``chunks`` (chunk, write), ``calls``, ``cached`` and
    ``failed`` (extract: LLM calls made, chunks answered from the cache, chunks failed),
    ``entities``, ``relations`` and ``facts`` (the finish's write). A note comes before the
    ``advance`` it goes with.
    """

    def note(self, counts: Mapping[str, int]) -> None: ...


class _Silent:
    def stage(self, name: str, total: int | None) -> None:
        pass

    def advance(self, amount: int = 1) -> None:
        pass

    def note(self, counts: Mapping[str, int]) -> None:
        pass


def _note(progress: Progress, **counts: int) -> None:
    """Tell ``progress`` the stage's counts, if it shows counts (:class:`CountingProgress`)."""
    if isinstance(progress, CountingProgress):
        progress.note(counts)


@dataclass
class IngestSummary:
    """What one run did; printed as a table or, with --json, as one JSON object."""

    root: str
    source: str = ""
    dry_run: bool = False
    documents_new: int = 0
    documents_changed: int = 0
    documents_unchanged: int = 0
    documents_pruned: int = 0  # removed: their files are gone (a dry run: would be)
    documents_reextracted: int = 0  # unchanged, extracted again (another method or model)
    documents_incomplete: int = 0
    removed: list[str] = field(default_factory=list)  # paths of the documents pruned
    removal_needs_prune: bool = False  # a dry run whose removals need --prune to confirm
    # Communities were built before this run changed documents: their reports (global search)
    # still read as before until `kg communities build` runs again.
    communities_stale: bool = False
    skipped: list[dict[str, str]] = field(default_factory=list)
    import_errors: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    chunks: int = 0
    entities_created: int = 0
    entities_matched: int = 0
    mentions_merged: int = 0
    entities_removed: int = 0
    relations_created: int = 0
    relations_updated: int = 0
    relations_closed: int = 0
    facts_created: int = 0  # fact nodes (the relations' embedded texts) new in this run
    docgraph_entities: int = 0  # new entities from titles, headings, links, declarations
    docgraph_mentions: int = 0  # chunk-entity mentions found by the document graph
    llm_calls: int = 0
    llm_retries: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0
    estimated_tokens: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    stopped_by_budget: bool = False
    budget_reason: str | None = None
    seconds: float = 0.0
    # Seconds per stage (load, chunk, extract, resolve, write): where the time went.
    timings: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    shard: str = ""  # "I/N" for one worker of N (--shard)
    # Whether this run resolved and wrote what was staged (False: a shard whose round is not
    # complete yet, or a --workers child); shards_staged: how many of its round have staged.
    finished: bool = True
    shards_staged: int = 0
    workers: list[dict[str, Any]] = field(default_factory=list)  # --workers: each one's summary

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        """The summary as one JSON line (``kg ingest --json``), keys sorted."""
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @property
    def ok(self) -> bool:
        return not self.failures and not self.stopped_by_budget


@dataclass(frozen=True)
class ChunkFacts:
    """A chunk's validated extraction, wherever it came from (LLM or import)."""

    chunk_id: str
    result: ExtractionResult


@dataclass
class _Plan:
    """What a run will do: which documents to (re)write and which are gone from the source."""

    todo: list[Document]
    gone: list[str]
    imported: dict[str, ExtractionResult]
    in_source: int = 0  # documents the graph holds for this source
    scoped: list[Document] = field(default_factory=list)  # everything loaded, source-scoped
    stored_docs: dict[str, StoredDocument] = field(default_factory=dict)  # the graph's
    chunks: dict[str, list[Chunk]] = field(default_factory=dict)
    stored: set[str] = field(default_factory=set)  # ids in todo the graph already holds

    @property
    def all_chunks(self) -> list[Chunk]:
        return [c for doc in self.todo for c in self.chunks[doc.id]]


class _Clock:
    """Adds each stage's wall time to the summary."""

    def __init__(self, summary: IngestSummary, progress: Progress) -> None:
        self._summary = summary
        self._progress = progress

    @contextmanager
    def stage(self, name: str, total: int | None = None) -> Iterator[None]:
        self._progress.stage(name, total)
        started = time.monotonic()
        try:
            with observe.span("kg.ingest.stage", stage=name, total=total):
                yield
        finally:
            spent = time.monotonic() - started
            self._summary.timings[name] = round(self._summary.timings.get(name, 0.0) + spent, 3)


def make_writer(
    settings: Settings, driver: Driver, fact_embedder: Embedder | None = None
) -> GraphWriter:
    """The writer with the type policy and bounds from settings (and the ontology's predicates).

    Facts are embedded by ``fact_embedder``, by default the configured chunk embedder (built
    here, loaded on first use).
    """
    ontology = ontology_from_settings(settings.extract)
    # The document graph's own predicates (IN_CATEGORY, REFERENCES) are always typed edges.
    always = {*settings.write.typed_predicates, *(ontology.predicates or ()), *docgraph.PREDICATES}
    return GraphWriter(
        driver=driver,
        database=settings.neo4j.database,
        batch_size=settings.write.batch_size,
        single_valued=frozenset(settings.write.single_valued_predicates),
        types=TypePolicy(
            always=frozenset(always),
            max_promoted=settings.write.max_relation_types,
            min_count=settings.write.promote_min_count,
        ),
        bounds=Bounds(
            max_aliases=settings.write.max_aliases,
            max_chunk_ids=settings.write.max_chunk_ids,
            timeout_s=settings.write.timeout_s,
            max_type_labels=settings.write.max_type_labels,
        ),
        fact_embedder=fact_embedder or make_chunk_embedder(settings.chunks),
        factless_predicates=frozenset(docgraph.FACTLESS),
    )


# Long on purpose: every option of a run, then the steps in order, one call each.
def ingest(
    settings: Settings,
    driver: Driver,
    path: Path,
    *,
    triplets: Path | None = None,
    namespace: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    prune: bool = False,
    keep_missing: bool = False,
    reextract: bool = False,
    dry_run: bool = False,
    follow_symlinks: bool = False,
    progress: Progress | None = None,
    embedder: Embedder | None = None,
    adjudicator: Adjudicator | None = None,
    graph: Literal["llm", "metadata"] = "llm",
    chunk_embedder: Embedder | None = None,
    shard: Shard | None = None,
    finish: bool | None = None,
    writer: GraphWriter | None = None,
) -> IngestSummary:
    """Run the whole pipeline over ``path``; see the module docstring for the guarantees.

    ``graph="metadata"``: no LLM call, only the document graph (which every run adds).
    ``keep_missing``: remove nothing whose file is gone; ``prune``: confirm removing more than
    half of the source (and, for ``triplets``, remove what the file no longer lists).
    ``reextract``: extract every document again, past the extraction cache.
    ``shard``: only the documents of this shard (kg/shards.py); ``finish``: resolve and write
    what is staged now (True), never (False: a ``--workers`` child), or (None) unless this is
    a shard and other shards have not staged yet (docs/architecture.md, "Parallel ingest").
    ``writer``: where the graph goes (default :func:`make_writer`'s); a bulk load
    (kg.bulk) passes one that writes files for ``neo4j-admin database import``.
    """
    if prune and keep_missing:
        raise ConfigError("--prune confirms removals and --keep-missing refuses them: give one")
    started = time.monotonic()
    progress = progress or _Silent()
    root = path.resolve()
    source = _source(root, namespace)
    summary = IngestSummary(root=printable_path(str(root)), source=source, dry_run=dry_run)
    clock = _Clock(summary, progress)
    embedder, chunk_embedder = _embedders(settings, driver, embedder, chunk_embedder, dry_run)
    writer = writer or make_writer(settings, driver, chunk_embedder)

    method = _method(settings, triplets, graph)
    # A shard is marked staging until it has: a finish waits for it (kg/graph/shard_runs.py).
    with _marked(settings, driver, source, shard, dry_run):
        with clock.stage("load"):
            loaded = _load(settings, root, triplets, include, exclude, follow_symlinks, summary)
            _note(progress, files=len(loaded.documents), skipped=len(summary.skipped))
            plan = _plan(writer, source, loaded, summary, method=method, reextract=reextract)
            if shard is not None:
                _own_shard(plan, shard, summary)
            _removals(plan, root, triplets, summary, prune=prune, keep_missing=keep_missing)
            if shard is not None:
                _own_removals(plan, shard, summary)
        with clock.stage("chunk", len(plan.todo)):
            _chunk(settings, plan, summary, progress)
        if dry_run:
            _estimate(settings, plan, method=method, summary=summary)
            summary.seconds = round(time.monotonic() - started, 3)
            return summary

        # Extraction (or import): only validated results go on; failures are recorded.
        incomplete: set[str] = set()
        chunks = None if triplets is not None else len(plan.all_chunks)
        with clock.stage("extract", chunks):
            facts = _facts(
                settings, plan, triplets, graph, summary, incomplete, progress, reextract
            )
        summary.documents_incomplete = len(incomplete)

        # Documents and chunks are written here; their facts are staged (in the graph for a
        # worker of many, in this process for one), and resolution runs once over everything
        # staged (one worker or many: the same graph).
        shared = StagingStore(driver, settings.neo4j.database, settings.write.batch_size)
        staging: Staging = shared if shard is not None or finish is False else LocalStaging(shared)
        with clock.stage("write", 3):
            _stage(
                writer, staging, plan, facts, chunk_embedder, incomplete, summary, method, progress
            )
            if triplets is None:
                _adopt_roots(writer, plan, summary.root)
        due = _finish_due(staging, source, shard, finish, summary)
    if due:
        parts = _Parts(settings, embedder, adjudicator or make_adjudicator(settings), progress)
        finish_staged(writer, staging, parts, summary, clock)
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def finish_ingest(
    settings: Settings,
    driver: Driver,
    path: Path,
    *,
    namespace: str | None = None,
    progress: Progress | None = None,
    embedder: Embedder | None = None,
    adjudicator: Adjudicator | None = None,
    chunk_embedder: Embedder | None = None,
) -> IngestSummary:
    """Resolve and write what workers staged for this source (``kg ingest PATH --finish``):
    completes a graph whose last shard never ran the finish, at any time, on any machine."""
    started = time.monotonic()
    progress = progress or _Silent()
    root = path.resolve()
    summary = IngestSummary(root=printable_path(str(root)), source=_source(root, namespace))
    clock = _Clock(summary, progress)
    embedder, chunk_embedder = _embedders(settings, driver, embedder, chunk_embedder, False)
    writer = make_writer(settings, driver, chunk_embedder)
    staging = StagingStore(driver, settings.neo4j.database, settings.write.batch_size)
    parts = _Parts(settings, embedder, adjudicator or make_adjudicator(settings), progress)
    finish_staged(writer, staging, parts, summary, clock)
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


# -- steps -------------------------------------------------------------------------------------


def _source(root: Path, namespace: str | None) -> str:
    """The source documents are identified by: the namespace, else the folder's path.

    Both reach an indexed property: a namespace over the bound (kg/limits.py) is refused, a
    folder path is cut (with a hash, so it stays distinct) and written in a storable form.
    """
    if namespace and namespace.strip():
        problem = check_namespace(namespace.strip())
        if problem:
            raise ConfigError(f"--namespace: {problem}")
        return namespace.strip()
    return cut_key(printable_path(str(root)))


def _embedders(
    settings: Settings,
    driver: Driver,
    embedder: Embedder | None,
    chunk_embedder: Embedder | None,
    dry_run: bool,
) -> tuple[Embedder, Embedder]:
    """The entity and chunk embedders; refuses a graph of another model or other embedders,
    and stamps a new one (unless ``dry_run``)."""
    embedder = embedder or make_embedder(settings.resolve)
    chunk_embedder = chunk_embedder or make_chunk_embedder(settings.chunks)
    identities = {"entity": embedder_identity(embedder), "chunk": embedder_identity(chunk_embedder)}
    ensure_current(driver, settings.neo4j.database, write=not dry_run, embedders=identities)
    return embedder, chunk_embedder


def _document_graph(
    plan: _Plan,
    known: Sequence[KnownEntity | ResolvedEntity],
    embedder: Embedder,
    summary: IngestSummary,
    rows: Sequence[DocumentRow],
) -> docgraph.DocGraph:
    """Zero-LLM entities from titles, headings, links, folders; mentions of every known name.
    Documents imported from a triplets file have ids for paths, not folders: no categories."""
    imported = {row.id for row in rows if row.extraction.method == "triplets"}
    extra = docgraph.build(plan.todo, plan.chunks, known, embedder, imported=imported)
    summary.docgraph_entities = len(extra.entities)
    summary.docgraph_mentions = len(extra.mentions)
    return extra


def _estimate(
    settings: Settings, plan: _Plan, *, method: Extraction, summary: IngestSummary
) -> None:
    """A dry run: what the LLM would cost (the chunks of every document to extract, new,
    changed or re-extracted); what would be removed is already in the summary."""
    if method.method == "llm":
        est = estimate(plan.all_chunks, settings.extract)
        summary.estimated_calls = est.calls
        summary.estimated_tokens = est.prompt_tokens + est.completion_tokens


def _method(settings: Settings, triplets: Path | None, graph: str) -> Extraction:
    """How this run extracts: the record each document it writes gets."""
    if triplets is not None:
        return Extraction("triplets")
    if graph == "metadata":
        return Extraction("metadata")
    return Extraction("llm", resolve_endpoint(settings, "extract").model, PROMPT_VERSION)


def _outdated(stored: Extraction | None, run: Extraction) -> bool:
    """Whether an unchanged document needs extracting again under this run's method.

    A metadata-only run never replaces an LLM's or an import's facts (the document graph is
    part of every run); an unrecorded model or prompt (a migrated graph) matches any.
    """
    if run.method == "metadata" or stored is None:
        return False
    if stored.method != run.method:
        return True
    return any(
        old and old != new for old, new in ((stored.model, run.model), (stored.prompt, run.prompt))
    )


def _gone(
    plan: _Plan,
    root: Path,
    source: str,
    triplets: Path | None,
    *,
    prune: bool,
    keep_missing: bool,
) -> list[str]:
    """Documents of this source to remove: loaded from this folder, their file is now absent
    on disk under it.

    Never "not loaded by this run": include/exclude, skipped and unreadable files are still
    on disk, so other workers' and other filters' documents stay, and a document loaded from
    another folder (a shard in its own folder under the same namespace) is that folder's run
    to judge. An import removes only with ``prune``: the source's documents the triplets file
    no longer lists.
    """
    present = {d.id for d in plan.scoped}
    here = printable_path(str(root))
    # A document is judged only by the folder it was last loaded from (None: a graph from
    # before roots were kept): shards in separate folders under one namespace never judge
    # each other's files.
    candidates = [
        (doc_id, stored)
        for doc_id, stored in plan.stored_docs.items()
        if stored.source == source and doc_id not in present
    ]
    if triplets is not None:
        return sorted(doc_id for doc_id, _ in candidates) if prune else []
    if keep_missing:
        return []
    candidates = [(i, stored) for i, stored in candidates if stored.root in (None, "", here)]
    base = root if root.is_dir() else root.parent
    return sorted(doc_id for doc_id, stored in candidates if _absent(base, stored))


def _adopt_roots(writer: GraphWriter, plan: _Plan, root: str) -> None:
    """Unchanged documents loaded from another folder than the one recorded (the folder was
    moved) are this folder's now, so its next run judges whether their files are gone."""
    todo = {d.id for d in plan.todo}
    moved = [
        d.id
        for d in plan.scoped
        if (stored := plan.stored_docs.get(d.id)) is not None
        and d.id not in todo
        and stored.root != root
    ]
    if moved:
        writer.set_document_roots(moved, root)


def _absent(base: Path, stored: StoredDocument) -> bool:
    """True only when the file is certainly not there: anything else (a permission error,
    a path too long to check) keeps the document."""
    if not stored.path:
        return False
    try:
        os.lstat(base / stored.path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False
    return False


def _removals(
    plan: _Plan,
    root: Path,
    triplets: Path | None,
    summary: IngestSummary,
    *,
    prune: bool,
    keep_missing: bool,
) -> None:
    """Decide what the run removes; refuse (before any write) to remove more than half of the
    source without ``prune``: a moved or unmounted folder looks like that. A dry run only
    says so."""
    source = summary.source
    plan.gone = _gone(plan, root, source, triplets, prune=prune, keep_missing=keep_missing)
    summary.removed = sorted(plan.stored_docs[i].path or i for i in plan.gone)
    summary.documents_pruned = len(plan.gone)
    if not plan.gone or prune or 2 * len(plan.gone) <= plan.in_source:
        return
    if summary.dry_run:
        summary.removal_needs_prune = True
        return
    raise ConfigError(
        f"this run would remove {len(plan.gone)} of the {plan.in_source} documents of source "
        f"{source!r}, because their files are gone from {printable_path(str(root))}. If that "
        "is intended, run it again with --prune to confirm; to keep them, add --keep-missing "
        "(--dry-run lists them)."
    )


def _resolve(
    settings: Settings,
    known: list[KnownEntity],
    facts: list[ChunkFacts],
    embedder: Embedder,
    adjudicator: Adjudicator | None,
    summary: IngestSummary,
    texts: Sequence[str] = (),
) -> tuple[Resolution, list[tuple[str, int]]]:
    """Canonical entities for every mention, against what the graph already holds.

    ``texts``: the documents' texts, for the abbreviations they state (kg/resolve/stated.py).
    """
    resolver = Resolver(settings.resolve, embedder, adjudicator)
    resolver.add_known(known)
    mentions, keys = _mentions(facts, stated_abbreviations(texts))
    resolution = resolver.resolve(mentions)
    summary.entities_created = len(resolution.new_ids)
    summary.entities_matched = len(set(resolution.entity_ids) - resolution.new_ids)
    summary.mentions_merged = len(resolution.merges)
    return resolution, keys


@dataclass(frozen=True)
class _Loaded:
    documents: list[Document]
    imported: dict[str, ExtractionResult]


def _load(
    settings: Settings,
    root: Path,
    triplets: Path | None,
    include: Sequence[str],
    exclude: Sequence[str],
    follow_symlinks: bool,
    summary: IngestSummary,
) -> _Loaded:
    """The documents of the folder (or the triplets file), with imported facts by id."""
    if triplets is not None:
        documents, imported = _imported_documents(triplets, summary)
        return _Loaded(documents, imported)
    loaded = load_folder(
        root,
        include=include,
        exclude=exclude,
        max_file_bytes=settings.extract.max_file_bytes,
        follow_symlinks=follow_symlinks,
    )
    summary.skipped = [{"path": s.path, "reason": s.reason} for s in loaded.skipped]
    return _Loaded(list(loaded.documents), {})


def _plan(
    writer: GraphWriter,
    source: str,
    loaded: _Loaded,
    summary: IngestSummary,
    *,
    method: Extraction,
    reextract: bool,
) -> _Plan:
    """Compare the loaded documents with what the graph holds for this source."""
    # Identity is (source, path): re-id what the loader made from the path alone.
    scoped: list[Document] = []
    scoped_facts: dict[str, ExtractionResult] = {}
    for doc in loaded.documents:
        new_id = document_id(doc.path, source)
        scoped.append(dataclasses.replace(doc, id=new_id))
        if doc.id in loaded.imported:
            scoped_facts[new_id] = loaded.imported[doc.id]

    existing = writer.existing_documents()
    todo: list[Document] = []
    for doc in scoped:
        stored = existing.get(doc.id)
        if stored is None:
            summary.documents_new += 1
            todo.append(doc)
        elif stored.sha256 != doc.sha256:
            summary.documents_changed += 1
            todo.append(doc)
        elif reextract or _outdated(stored.extraction, method):
            summary.documents_reextracted += 1
            todo.append(doc)
        else:
            summary.documents_unchanged += 1
    return _Plan(
        todo,
        [],
        scoped_facts,
        stored={d.id for d in todo if d.id in existing},
        in_source=sum(1 for d in existing.values() if d.source == source),
        scoped=scoped,
        stored_docs=existing,
    )


def _chunk(settings: Settings, plan: _Plan, summary: IngestSummary, progress: Progress) -> None:
    for doc in plan.todo:
        plan.chunks[doc.id] = chunk_document(
            doc, chunk_tokens=settings.extract.chunk_tokens, overlap=settings.extract.chunk_overlap
        )
        summary.chunks += len(plan.chunks[doc.id])
        _note(progress, chunks=summary.chunks)
        progress.advance()
    summary.chunks = len(plan.all_chunks)


def _facts(
    settings: Settings,
    plan: _Plan,
    triplets: Path | None,
    graph: str,
    summary: IngestSummary,
    incomplete: set[str],
    progress: Progress,
    reextract: bool = False,
) -> list[ChunkFacts]:
    """Imported triplets, or the LLM's extraction, or none (``graph="metadata"``)."""
    if triplets is not None:
        return _import_facts(plan)
    if graph == "metadata":
        return []  # the document graph is the whole graph: no LLM call
    return _extract(settings, plan.all_chunks, summary, incomplete, progress, refresh=reextract)


def _import_facts(plan: _Plan) -> list[ChunkFacts]:
    return [
        f
        for doc in plan.todo
        for f in _facts_from_import(plan.imported[doc.id], plan.chunks[doc.id])
    ]


def _stage(
    writer: GraphWriter,
    staging: Staging,
    plan: _Plan,
    facts: list[ChunkFacts],
    chunk_embedder: Embedder,
    incomplete: set[str],
    summary: IngestSummary,
    method: Extraction,
    progress: Progress,
) -> None:
    """A worker's writes, in the order that keeps a failure harmless (module docstring):
    documents (hash cleared), their old contents removed, chunks, then their facts staged."""
    doc_rows = [
        DocumentRow(d.id, d.path, d.title, d.sha256, summary.root, summary.source, method, d.date)
        for d in plan.todo
    ]
    staging.unstage([d.id for d in plan.todo])
    # Hashes are cleared before anything of a changed document is touched.
    writer.upsert_documents(doc_rows)
    # Only documents the graph already held have old contents to remove. The entities they
    # mentioned are settled by the finish: the new contents may mention them again.
    if plan.stored:
        touched: list[str] = []
        writer.remove_document_contents(sorted(plan.stored), touched=touched)
        staging.record_touched(summary.source, touched)
    progress.advance()
    # Every chunk is written, with or without facts, and those whose extraction failed too:
    # text and vector search find them at once (pipeline rule 4). Their document stays
    # incomplete (no hash), so the next run redoes it, and the extraction cache makes that
    # run ask the LLM for the failed chunks only.
    written_chunks = plan.all_chunks
    writer.upsert_chunks(_chunk_rows(plan, written_chunks, chunk_embedder))
    _note(progress, chunks=len(written_chunks))
    progress.advance()
    by_doc: dict[str, list[ChunkFacts]] = defaultdict(list)
    document_of = {c.id: c.document_id for c in plan.all_chunks}
    for fact in facts:
        by_doc[document_of[fact.chunk_id]].append(fact)
    staging.stage(
        [(row.id, _payload(row, doc, by_doc[doc.id], doc.id in incomplete))
         for row, doc in zip(doc_rows, plan.todo, strict=True)],
        written_chunks,
    )  # fmt: skip
    if plan.gone:
        staging.stage_gone(plan.gone)
    progress.advance()


def _payload(
    row: DocumentRow, doc: Document, facts: list[ChunkFacts], incomplete: bool
) -> dict[str, Any]:
    """What the finish needs of a staged document: its row, text (the document graph reads
    front matter and links) and validated facts per chunk."""
    return {
        "path": row.path,
        "title": row.title,
        "sha256": row.sha256,
        "root": row.root,
        "text": doc.text,
        "date": row.date,
        "method": [row.extraction.method, row.extraction.model, row.extraction.prompt],
        "incomplete": incomplete,
        "facts": [[f.chunk_id, f.result.model_dump(mode="json")] for f in facts],
    }


def _marked(
    settings: Settings, driver: Driver, source: str, shard: Shard | None, dry_run: bool
) -> AbstractContextManager[None]:
    """A shard's staging mark for the block (none for one worker, or a dry run)."""
    if shard is None or dry_run:
        return nullcontext()
    lease = settings.write.resolve_lease_s
    return staging_shard(driver, settings.neo4j.database, source, shard.index, shard.count, lease)


def _finish_due(
    staging: Staging,
    source: str,
    shard: Shard | None,
    finish: bool | None,
    summary: IngestSummary,
) -> bool:
    """Whether this run resolves what is staged: always for one worker; for a ``--shard``,
    once every shard of its round has staged (counted in the graph)."""
    if finish is False:
        summary.finished = False
        return False
    if shard is not None:
        summary.shards_staged = staging.mark_shard(source, shard.index, shard.count)
        summary.finished = finish is True or summary.shards_staged >= shard.count
        return summary.finished
    return True


@dataclass(frozen=True)
class _Parts:
    """What the finish pass resolves with."""

    settings: Settings
    embedder: Embedder
    adjudicator: Adjudicator | None
    progress: Progress


def finish_staged(
    writer: GraphWriter,
    staging: Staging,
    parts: _Parts,
    summary: IngestSummary,
    clock: _Clock,
) -> None:
    """Resolve everything staged for the summary's source in one canonical order, under the
    graph's ``resolve`` lock, then write entities, mentions, relations and completions.

    The order (documents by path, chunks by index) and the inputs (staged facts, the graph's
    entities) are the same whichever worker staged what, so the graph is too.
    """
    settings = parts.settings
    lock = GraphLock(
        writer.driver, writer.database, "resolve", lease_s=settings.write.resolve_lease_s
    )
    with lock.held(wait_s=settings.write.resolve_wait_s):
        staged = _whole_round(writer, staging, summary.source, settings.write.resolve_wait_s)
        summary.finished = True
        if not staged:
            return
        plan, facts, rows, incomplete = _unstaged(staged, staging, summary.source)
        with clock.stage("resolve"):
            known = writer.known_entities()
            resolution, keys = _resolve(
                settings,
                known,
                facts,
                parts.embedder,
                parts.adjudicator,
                summary,
                [d.text for d in plan.todo],
            )
            found: list[KnownEntity | ResolvedEntity] = [*known, *resolution.entities.values()]
            extra = _document_graph(plan, found, parts.embedder, summary, rows)
        lock.check()
        with clock.stage("write", 4):
            args = (plan, facts, keys, resolution, extra, rows, incomplete, summary)
            _write_resolved(writer, *args, staged.touched, parts.progress)
            if staged.gone:
                # The same path as a changed document's old contents: chunks, the facts only
                # they supported, and entities left with no mention and no fact.
                pruned: WriteCounts = writer.delete_documents(staged.gone)
                summary.entities_removed += pruned.entities_deleted
            summary.communities_stale = writer.has_communities()
            lock.check()
            staging.clear(staged, summary.source)
            parts.progress.advance()


def _whole_round(writer: GraphWriter, staging: Staging, source: str, wait_s: float) -> Staged:
    """What is staged for ``source`` once no shard is staging: read, then checked again, so a
    shard that began while it was read is waited for and the read repeated."""

    def waiting(live: list[StagingShard]) -> None:
        listed = ", ".join(str(s) for s in live)
        log.warning("the finish waits for shards still staging: %s", listed)

    while True:
        wait_for_shards(writer.driver, writer.database, source, wait_s, waiting=waiting)
        staged = staging.staged(source)
        if not live_shards(writer.driver, writer.database, source):
            return staged


def _unstaged(
    staged: Staged, staging: Staging, source: str
) -> tuple[_Plan, list[ChunkFacts], list[DocumentRow], set[str]]:
    """The staged documents as the pipeline's own values, facts in canonical order."""
    docs: list[Document] = []
    rows: list[DocumentRow] = []
    incomplete: set[str] = set()
    by_doc: dict[str, list[ChunkFacts]] = {}
    for item in staged.documents:
        data = item.data
        date = data.get("date")  # staged by an older kg: none
        docs.append(
            Document(item.id, data["path"], data["title"], data["text"], data["sha256"], date)
        )
        method = Extraction(*data["method"])
        rows.append(
            DocumentRow(item.id, data["path"], data["title"], data["sha256"], data["root"],
                        source, method, date)
        )  # fmt: skip
        if data["incomplete"]:
            incomplete.add(item.id)
        by_doc[item.id] = [
            ChunkFacts(chunk_id, ExtractionResult.model_validate(result))
            for chunk_id, result in data["facts"]
        ]
    chunks = staging.chunks([d.id for d in docs])
    facts: list[ChunkFacts] = []
    for doc in docs:
        index = {c.id: c.index for c in chunks[doc.id]}
        facts += sorted(by_doc[doc.id], key=lambda f: (index.get(f.chunk_id, -1), f.chunk_id))
    plan = _Plan(docs, list(staged.gone), {}, chunks=chunks)
    return plan, facts, rows, incomplete


def _write_resolved(
    writer: GraphWriter,
    plan: _Plan,
    facts: list[ChunkFacts],
    keys: list[tuple[str, int]],
    resolution: Resolution,
    extra: docgraph.DocGraph,
    doc_rows: list[DocumentRow],
    incomplete: set[str],
    summary: IngestSummary,
    touched: list[str],
    progress: Progress,
) -> None:
    """The finish's writes: entities, mentions, relations, settling, then hashes (last)."""
    entity_of = dict(zip(keys, resolution.entity_ids, strict=True))
    written = {c.id for c in plan.all_chunks}
    mentions = {(c, e) for c, e in extra.mentions if c in written}
    links = [r for r in extra.relations if set(r.chunk_ids) & written]
    found = {e for _, e in mentions} | {e for r in links for e in (r.source, r.target)}
    namespace = summary.source
    entities = _entity_rows(resolution, namespace=namespace, own=_own_words(facts, entity_of))
    entities += _entity_rows(extra.entities, keep=found, namespace=namespace)  # document graph
    writer.upsert_entities(entities)
    _note(progress, entities=len(entities))
    progress.advance()
    mentions.update((chunk_id, entity_of[(chunk_id, i)]) for chunk_id, i in keys)
    writer.upsert_mentions(mentions)
    progress.advance()
    structure = [
        RelationRow(r.source, r.target, r.predicate, weight=r.weight, valid_from=r.valid_from,
                    chunk_ids=tuple(c for c in r.chunk_ids if c in written), namespace=namespace)
        for r in links
    ]  # fmt: skip
    counts = writer.upsert_relations(_relations(facts, keys, entity_of, namespace) + structure)
    summary.relations_created = counts.relationships_created
    summary.relations_updated = counts.relations_written - counts.relationships_created
    summary.relations_closed = counts.relations_closed
    summary.facts_created = counts.facts_written
    _note(progress, relations=counts.relations_written, facts=counts.facts_written)
    if touched:
        summary.entities_removed += writer.settle_entities(touched)
    progress.advance()
    writer.complete_documents([row for row in doc_rows if row.id not in incomplete])


def _own_shard(plan: _Plan, shard: Shard, summary: IngestSummary) -> None:
    """Keep only this shard's documents to write; the counts say what this shard does."""
    mine = [d for d in plan.todo if shard.owns(d.path)]
    others = {d.id for d in plan.todo} - {d.id for d in mine}
    plan.todo = mine
    plan.stored -= others
    summary.shard = str(shard)
    summary.documents_new = sum(1 for d in mine if d.id not in plan.stored_docs)
    summary.documents_changed = sum(
        1 for d in mine if (s := plan.stored_docs.get(d.id)) is not None and s.sha256 != d.sha256
    )
    summary.documents_reextracted = len(mine) - summary.documents_new - summary.documents_changed
    summary.documents_unchanged = sum(1 for d in plan.scoped if shard.owns(d.path)) - len(mine)


def _own_removals(plan: _Plan, shard: Shard, summary: IngestSummary) -> None:
    """A shard removes only its own documents whose files are gone: never another's."""
    plan.gone = [i for i in plan.gone if shard.owns(plan.stored_docs[i].path or i)]
    summary.removed = sorted(plan.stored_docs[i].path or i for i in plan.gone)
    summary.documents_pruned = len(plan.gone)


# -- stages ------------------------------------------------------------------------------------


def _chunk_rows(plan: _Plan, chunks: list[Chunk], chunk_embedder: Embedder) -> list[ChunkRow]:
    """Chunks with their embeddings (chunk embedder), their document's title and language."""
    vectors = chunk_embedder.embed([c.text for c in chunks])
    titles = {d.id: d.title for d in plan.todo}
    rows = []
    for c, vec in zip(chunks, vectors, strict=True):
        embedding = [float(x) for x in vec]
        title = titles.get(c.document_id, "")
        rows.append(
            ChunkRow(
                c.id, c.document_id, c.index, c.text, c.sha256, embedding, title, detect(c.text)
            )
        )
    return rows


@dataclass(frozen=True)
class _OwnWords:
    """What this run's own text said of one entity: its surface forms (casefolded) and
    descriptions."""

    forms: set[str] = field(default_factory=set)
    descriptions: list[str] = field(default_factory=list)


def _own_words(
    facts: list[ChunkFacts], entity_of: dict[tuple[str, int], str]
) -> dict[str, _OwnWords]:
    """Per resolved entity, the forms and descriptions this run's chunks gave it. Resolution
    also carries a known entity's stored aliases and description, which may come from another
    namespace's text: those are the graph's already, and must not be written again as this
    namespace's (graph model 7)."""
    own: dict[str, _OwnWords] = {}
    for fact in facts:
        for i, entity in enumerate(fact.result.entities):
            words = own.setdefault(entity_of[(fact.chunk_id, i)], _OwnWords())
            words.forms.update(x.casefold() for x in (entity.name, *entity.aliases))
            if entity.description:
                words.descriptions.append(entity.description)
    return own


def _entity_rows(
    resolution: Resolution | list[ResolvedEntity],
    keep: set[str] | None = None,
    *,
    namespace: str = "",
    own: dict[str, _OwnWords] | None = None,
) -> list[EntityRow]:
    """Rows of the resolution's entities that mentions use (or of ``keep`` in a list); with
    ``own``, only the aliases and description this run's text gave each."""
    if isinstance(resolution, Resolution):
        used, entities = set(resolution.entity_ids), list(resolution.entities.values())
    else:
        used, entities = keep or set(), resolution
    rows = []
    for e in entities:
        if e.id not in used:
            continue
        aliases, description = tuple(e.aliases), e.description
        if own is not None:
            words = own.get(e.id, _OwnWords())
            aliases = tuple(a for a in aliases if a.casefold() in words.forms)
            if description not in words.descriptions:
                description = max(words.descriptions, key=len, default="")
        embedding = list(e.embedding) if e.embedding is not None else None
        rows.append(EntityRow(e.id, e.name, e.type, description, aliases, embedding, namespace))
    return rows


def _extract(
    settings: Settings,
    chunks: list[Chunk],
    summary: IngestSummary,
    incomplete: set[str],
    progress: Progress,
    *,
    refresh: bool = False,
) -> list[ChunkFacts]:
    if not chunks:
        return []
    cache_path = settings.extract.cache_path
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    failed = 0

    def done(outcome: ChunkOutcome) -> None:
        # The summary's own counters, kept as chunks finish (the run's totals replace them).
        nonlocal failed
        summary.llm_calls += outcome.usage.calls
        summary.cache_hits += outcome.usage.cache_hits
        failed += not outcome.ok and not outcome.not_run
        _note(progress, calls=summary.llm_calls, cached=summary.cache_hits, failed=failed)
        progress.advance()

    with ExtractionCache(cache_path, refresh=refresh) as cache:
        extractor = make_extractor(settings, cache)
        run = run_sync(extractor, chunks, on_done=done)
    summary.llm_calls = run.usage.calls
    summary.llm_retries = run.usage.retries
    summary.cache_hits = run.usage.cache_hits
    summary.prompt_tokens = run.usage.prompt_tokens
    summary.completion_tokens = run.usage.completion_tokens
    summary.stopped_by_budget = run.stopped_by_budget
    summary.budget_reason = run.budget_reason
    facts: list[ChunkFacts] = []
    for outcome in run.outcomes:
        for item in outcome.dropped:
            summary.dropped.append(
                {"document_id": outcome.document_id, "chunk_id": outcome.chunk_id,
                 "item": item.where(), "reason": item.reason}
            )  # fmt: skip
        if outcome.result is not None:
            facts.append(ChunkFacts(outcome.chunk_id, outcome.result))
            continue
        incomplete.add(outcome.document_id)
        if not outcome.not_run:
            summary.failures.append(
                {"chunk_id": outcome.chunk_id, "document_id": outcome.document_id,
                 "reason": outcome.error or "unknown"}
            )  # fmt: skip
    return facts


def _imported_documents(
    triplets: Path, summary: IngestSummary
) -> tuple[list[Document], dict[str, ExtractionResult]]:
    """Documents from a triplets file, keyed by their path-derived id (re-scoped by _plan)."""
    if not triplets.is_file():
        raise ConfigError(f"triplets file not found: {triplets}")
    result = read_triplets(triplets)
    summary.import_errors = [{"line": n, "reason": r} for n, r in result.errors]
    documents: list[Document] = []
    facts: dict[str, ExtractionResult] = {}
    for item in result.documents:
        rel = item.id or item.title
        doc_id = document_id(rel)
        if doc_id in facts:
            summary.import_errors.append(
                {"line": item.line, "reason": f"duplicate document id {rel!r}"}
            )
            continue
        for dropped in item.dropped:
            summary.dropped.append(
                {"line": item.line, "document": rel, "item": dropped.where(),
                 "reason": dropped.reason}
            )  # fmt: skip
        payload = item.text + "\x00" + item.result.model_dump_json()
        documents.append(
            Document(
                id=doc_id,
                path=rel,
                title=item.title,
                text=item.text,
                sha256=hashlib.sha256(payload.encode()).hexdigest(),
            )
        )
        facts[doc_id] = item.result
    return documents, facts


def _facts_from_import(result: ExtractionResult, chunks: list[Chunk]) -> list[ChunkFacts]:
    """Attach a document's imported facts to the chunks whose text states them."""
    if not chunks:
        return []
    # Any surface form (name or declared alias) leads to its entity.
    by_form: dict[str, ExtractedEntity] = {}
    for e in result.entities:
        for form in (e.name, *e.aliases):
            by_form.setdefault(form.casefold(), e)
    texts = [c.text.casefold() for c in chunks]

    def forms(name: str) -> list[str]:
        entity = by_form.get(name.casefold())
        if entity is None:
            return [name.casefold()]
        return [entity.name.casefold(), *(a.casefold() for a in entity.aliases)]

    def where(*names: str) -> list[int]:
        """Chunks whose text names all of ``names`` (else any of them, else the first)."""
        wanted = [forms(n) for n in names]
        hits = [i for i, t in enumerate(texts) if all(any(f in t for f in fs) for fs in wanted)]
        if hits or len(names) == 1:
            return hits or [0]
        return where(names[0]) if where(names[0]) != [0] else where(names[1])

    rels: dict[int, list[ExtractedRelation]] = defaultdict(list)
    ents: dict[int, dict[str, ExtractedEntity]] = defaultdict(dict)
    related: set[str] = set()
    for rel in result.relations:
        ends = [by_form.get(n.casefold()) for n in (rel.source, rel.target)]
        related.update(e.name.casefold() for e in ends if e is not None)
        for i in where(rel.source, rel.target):
            rels[i].append(rel)
            for entity in ends:
                if entity is not None:
                    ents[i][entity.name.casefold()] = entity
    for entity in result.entities:
        if entity.name.casefold() not in related:
            for i in where(entity.name):
                ents[i][entity.name.casefold()] = entity
    return [
        ChunkFacts(
            chunk.id,
            ExtractionResult(entities=list(ents[i].values()), relations=rels.get(i, [])),
        )
        for i, chunk in enumerate(chunks)
    ]


def _mentions(
    facts: list[ChunkFacts], stated: Mapping[str, str] | None = None
) -> tuple[list[Mention], list[tuple[str, int]]]:
    """One mention per extracted entity per chunk; keys are (chunk id, entity position).

    A name the documents state an abbreviation for (or the long form of one) gets the other
    as an alias: «ТК РФ» and «Трудовой кодекс Российской Федерации» then join.
    """
    mentions: list[Mention] = []
    keys: list[tuple[str, int]] = []
    for fact in facts:
        for i, entity in enumerate(fact.result.entities):
            aliases = tuple(entity.aliases)
            if stated:
                other = stated.get(entity.name.casefold()) or stated.get(
                    Morphology.nominative(entity.name).casefold()
                )
                if other is not None and other not in aliases:
                    aliases = (*aliases, other)
            mentions.append(
                Mention(
                    name=entity.name,
                    type=entity.type,
                    description=entity.description,
                    aliases=aliases,
                    chunk_id=fact.chunk_id,
                )
            )
            keys.append((fact.chunk_id, i))
    return mentions, keys


def _relations(
    facts: list[ChunkFacts],
    keys: list[tuple[str, int]],
    entity_of: dict[tuple[str, int], str],
    namespace: str = "",
) -> list[RelationRow]:
    rows: list[RelationRow] = []
    for fact in facts:
        position: dict[str, int] = {}
        for i, entity in enumerate(fact.result.entities):
            for form in (entity.name, *entity.aliases):
                position.setdefault(form.casefold(), i)
        for rel in fact.result.relations:
            src = position.get(rel.source.casefold())
            dst = position.get(rel.target.casefold())
            if src is None or dst is None:
                continue  # the contract forbids it; never write a dangling end
            source, target = entity_of[(fact.chunk_id, src)], entity_of[(fact.chunk_id, dst)]
            if source == target:
                continue  # resolution folded both ends into one entity: no self-loop
            rows.append(
                RelationRow(
                    source=source,
                    target=target,
                    predicate=rel.predicate,
                    description=rel.description,
                    weight=rel.weight,
                    valid_from=rel.valid_from,
                    valid_to=rel.valid_to,
                    chunk_ids=(fact.chunk_id,),
                    namespace=namespace,
                )
            )
    return rows


@contextmanager
def opened(settings: Settings) -> Iterator[Driver]:
    """A verified driver for the CLI; closed on exit."""
    from kg.graph.driver import open_driver, verify

    driver = open_driver(settings.neo4j)
    try:
        verify(driver, settings.neo4j)
        yield driver
    finally:
        driver.close()
