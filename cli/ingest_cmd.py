"""``kg ingest PATH``: build or update the graph from a folder (or a triplets file)."""

from __future__ import annotations

from json import dumps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from cyclopts import Parameter
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.output import inert, labelled
from kg.errors import ConfigError

if TYPE_CHECKING:  # the rest loads when the command runs: `kg ingest --help` stays fast
    from kg import IngestSummary, Settings


def ingest(
    path: Annotated[
        Path,
        Parameter(
            help="The folder to ingest (Markdown, text, reStructuredText, HTML, PDF and source "
            "files under it), or one file; with --triplets, the folder the import's documents "
            "belong to."
        ),
    ],
    *,
    triplets: Annotated[
        Path | None, Parameter(help="Import triplets (JSONL) instead of calling an LLM.")
    ] = None,
    namespace: Annotated[
        str | None,
        Parameter(
            help="Name of this source (default: the folder's absolute path). Documents are "
            "identified by source and path; give two checkouts the same namespace to update "
            "the same documents."
        ),
    ] = None,
    include: Annotated[
        list[str] | None, Parameter(help="Glob of files to load (repeatable).")
    ] = None,
    exclude: Annotated[
        list[str] | None, Parameter(help="Glob of files to leave out (repeatable).")
    ] = None,
    prune: Annotated[
        bool,
        Parameter(
            help="Confirm a removal of more than half of the source's documents (which a run "
            "otherwise refuses: a moved folder looks like that). With --triplets: also remove "
            "the source's documents the file no longer lists.",
        ),
    ] = False,
    keep_missing: Annotated[
        bool,
        Parameter(
            help="Keep documents whose files are gone from the folder. By default they are "
            "removed, with the facts only they supported and entities left with no mention "
            "and no fact. Files left out by --include/--exclude or skipped are never removed.",
            negative=(),
        ),
    ] = False,
    reextract: Annotated[
        bool,
        Parameter(
            help="Extract every document again, unchanged ones too, past the extraction cache "
            "(unchanged documents are re-extracted anyway when the method, model or prompt "
            "version differs from their record).",
            negative=(),
        ),
    ] = False,
    follow_symlinks: Annotated[
        bool,
        Parameter(
            help="Also read files that symlinks lead to outside the folder (by default they "
            "are skipped and reported).",
            negative=(),
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        Parameter(
            help="Estimate LLM calls and tokens and list the documents that would be removed; "
            "write nothing."
        ),
    ] = False,
    graph_mode: Annotated[
        Literal["llm", "metadata"],
        Parameter(
            name="--graph",
            help="llm: extract facts with the LLM (plus the document graph); metadata: only the "
            "document graph (titles, headings, links, declared entities and their mentions), "
            "no LLM call.",
        ),
    ] = "llm",
    workers: Annotated[
        int,
        Parameter(
            help="Ingest with N processes on this machine, each a shard of the documents (split "
            "by a hash of their paths); they stage their facts in the graph, then one pass "
            "resolves everything: the same graph as one worker."
        ),
    ] = 1,
    shard: Annotated[
        str | None,
        Parameter(
            help="Be worker I of N (0-based, e.g. 2/4), on any machine, all writing one graph. "
            "The last shard to finish staging resolves and writes what all staged; rerun a "
            "shard that failed (or use --finish) to complete the graph."
        ),
    ] = None,
    finish: Annotated[
        bool,
        Parameter(
            help="Only resolve and write what --shard workers staged for this source (PATH and "
            "--namespace name it): completes a graph whose last shard never finished.",
            negative=(),
        ),
    ] = False,
    max_calls: Annotated[int | None, Parameter(help="Stop after this many LLM calls.")] = None,
    max_tokens: Annotated[int | None, Parameter(help="Stop after this many LLM tokens.")] = None,
    json: Annotated[bool, Parameter(help="Print the summary as one JSON object.")] = False,
    bulk: Annotated[
        bool,
        Parameter(
            help="With --triplets: a first load through Neo4j's importer (neo4j-admin "
            "database import full) into the local server's empty database. The server stops "
            "for the import and starts again; the schema and indexes are built after. Refused "
            "when the database holds a graph or kg is not connected to the local server.",
            negative=(),
        ),
    ] = False,
    bulk_files: Annotated[
        Path | None,
        Parameter(
            help="With --bulk: keep the import files (CSV, and import.args for neo4j-admin) "
            "in this folder, e.g. to import them on another server (docs/import-format.md); "
            "by default they go in a temporary folder, removed after the load.",
        ),
    ] = None,
) -> int:
    """Load, chunk, extract (or import), resolve and write PATH into Neo4j.

    Exit codes: 0 done; 1 error; 2 done, but some chunks failed or the budget stopped the run
    (what was done is kept; rerun to retry the rest).
    """
    from cli.progress import stage_progress
    from kg import IngestOptions, KnowledgeGraph, Settings

    settings = Settings()
    if max_calls is not None:
        settings.extract.max_calls = max_calls
    if max_tokens is not None:
        settings.extract.max_tokens = max_tokens
    console = Console(stderr=json)
    if not path.exists():
        console.print(labelled("error:", "bold red", f"{path} does not exist"))
        return 1
    if bulk_files is not None and not bulk:
        console.print(labelled("error:", "bold red", "--bulk-files goes with --bulk"))
        return 1
    if bulk:
        return _bulk(settings, console, path, triplets, namespace, bulk_files, json=json)
    options = IngestOptions(
        triplets=triplets,
        namespace=namespace,
        include=include or (),
        exclude=exclude or (),
        prune=prune,
        keep_missing=keep_missing,
        reextract=reextract,
        dry_run=dry_run,
        follow_symlinks=follow_symlinks,
        graph=graph_mode,
        workers=workers,
        shard=shard,
        finish=finish,
    )
    try:
        options.check()  # before connecting: a wrong --workers/--shard/--finish
    except ConfigError as exc:
        console.print(labelled("error:", "bold red", str(exc)))
        return 1
    with (
        KnowledgeGraph(settings) as graph,
        stage_progress(console, quiet=json) as progress,
    ):
        summary = graph.ingest(path, options=options, progress=progress)
    if json:
        print(summary.to_json())  # noqa: T201 - the command's output
    else:
        Console().print(summary_table(summary))
    return 0 if summary.ok else 2


def _bulk(
    settings: Settings,
    console: Console,
    path: Path,
    triplets: Path | None,
    namespace: str | None,
    files: Path | None,
    *,
    json: bool,
) -> int:
    """``--bulk``: the pipeline, then neo4j-admin's import (kg.bulk)."""
    from cli.progress import stage_progress
    from kg import bulk_ingest

    if triplets is None:
        console.print(labelled("error:", "bold red", "--bulk loads a --triplets file"))
        return 1
    with stage_progress(console, quiet=json) as progress:
        result = bulk_ingest(
            settings, path, triplets=triplets, namespace=namespace, progress=progress,
            files_dir=files,
        )  # fmt: skip
    if json:
        print(dumps(result.to_dict(), ensure_ascii=False, sort_keys=True, default=str))  # noqa: T201
        return 0 if result.ingest.ok else 2
    table = summary_table(result.ingest)
    table.add_row("bulk load seconds (end to end)", f"{result.seconds:.1f}")
    table.add_row(
        "bulk seconds per step", " · ".join(f"{k} {v:.1f}" for k, v in result.timings.items())
    )
    table.add_row("imported rows", " · ".join(f"{k} {v}" for k, v in result.files.items()))
    Console().print(table)
    return 0 if result.ingest.ok else 2


MAX_DROPPED_SHOWN = 20


def summary_table(s: IngestSummary) -> Table:
    """The summary as a table; every text from data in it is inert (cli/output.py)."""
    title = Text.assemble("kg ingest ", inert(s.root), " (dry run)" if s.dry_run else "")
    table = Table(title=title, show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count", justify="right")
    for name, value in _counts(s):
        table.add_row(name, str(value))
    gone = "would be removed (file gone)" if s.dry_run else "removed (file gone)"
    for path in s.removed[:MAX_DROPPED_SHOWN]:
        table.add_row(labelled(gone, "yellow", path), "")
    if len(s.removed) > MAX_DROPPED_SHOWN:
        table.add_row(labelled(gone, "yellow", "..."), f"{len(s.removed)} in all (see --json)")
    for worker in s.workers:
        table.add_row(
            labelled("worker", "cyan", worker["shard"]),
            f"{worker['documents_new'] + worker['documents_changed']} documents written, "
            f"{worker['chunks']} chunks, {worker['seconds']:.1f} s",
        )
    if not s.finished:
        table.add_row(
            labelled("staged", "yellow"),
            f"{s.shards_staged} of the shards have staged: the last one resolves and writes "
            "(or run `kg ingest PATH --finish`)",
        )
    if s.communities_stale:
        table.add_row(
            labelled("communities", "yellow"),
            "built before this change: global search reads the old reports until "
            "`kg communities build` runs again",
        )
    if s.removal_needs_prune:
        table.add_row(
            labelled("confirm", "red"),
            "over half of the source would go: the real run needs --prune (or --keep-missing)",
        )
    for skip in s.skipped:
        table.add_row(labelled("skipped", "yellow", skip["path"]), inert(skip["reason"]))
    for err in s.import_errors:
        table.add_row(labelled(f"import line {err['line']}", "yellow"), inert(err["reason"]))
    for item in s.dropped[:MAX_DROPPED_SHOWN]:
        where = f"line {item['line']}" if "line" in item else item.get("chunk_id", "")
        table.add_row(
            labelled("dropped", "yellow", f"{where} {item['item']}"), inert(item["reason"])
        )
    if len(s.dropped) > MAX_DROPPED_SHOWN:
        table.add_row(labelled("dropped", "yellow", "..."), f"{len(s.dropped)} in all (see --json)")
    for reason, chunks in _failures_by_reason(s.failures):
        where = chunks[0] if len(chunks) == 1 else f"{len(chunks)} chunks, first {chunks[0]}"
        table.add_row(labelled("failed", "red", where), inert(reason))
    if s.stopped_by_budget:
        table.add_row(labelled("stopped", "red"), inert(s.budget_reason or "budget reached"))
    return table


def _failures_by_reason(failures: list[dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Each distinct reason once, with the chunks it stopped: a closed LLM port fails every
    chunk the same way, and one line says so (--json lists every chunk)."""
    grouped: dict[str, list[str]] = {}
    for fail in failures:
        grouped.setdefault(str(fail["reason"]), []).append(str(fail["chunk_id"]))
    return list(grouped.items())


def _counts(s: IngestSummary) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = [
        (
            "documents new / changed / unchanged",
            f"{s.documents_new} / {s.documents_changed} / {s.documents_unchanged}",
        ),
        ("documents skipped", len(s.skipped)),
        ("documents re-extracted (method or model changed)", s.documents_reextracted),
        ("documents removed (file gone)", s.documents_pruned),
        ("chunks", s.chunks),
    ]
    if s.dry_run:
        return [
            *rows,
            ("estimated LLM calls", s.estimated_calls),
            ("estimated tokens", s.estimated_tokens),
        ]
    return [
        *rows,
        ("entities created / matched existing", f"{s.entities_created} / {s.entities_matched}"),
        ("surface forms merged", s.mentions_merged),
        ("document graph entities / mentions", f"{s.docgraph_entities} / {s.docgraph_mentions}"),
        (
            "relations created / updated / closed",
            f"{s.relations_created} / {s.relations_updated} / {s.relations_closed}",
        ),
        ("facts embedded (new)", s.facts_created),
        ("LLM calls (retries) / cache hits", f"{s.llm_calls} ({s.llm_retries}) / {s.cache_hits}"),
        ("tokens prompt / completion", f"{s.prompt_tokens} / {s.completion_tokens}"),
        ("failed chunks", len(s.failures)),
        (
            "documents pending extraction (searchable; the next run extracts them)",
            s.documents_incomplete,
        ),
        ("items dropped (invalid)", len(s.dropped)),
        ("seconds", s.seconds),
        ("seconds per stage", " · ".join(f"{k} {v:.1f}" for k, v in s.timings.items())),
    ]
