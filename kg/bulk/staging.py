"""A graph writer that builds the graph in memory instead of on the server (a bulk load).

Why a subclass of :class:`kg.graph.writer.GraphWriter`: the MERGE writer decides everything a
node or relationship gets (bounded names and aliases, which type stores a predicate, which
relations get a fact, which edges a newer fact closes). The staging writer keeps all of that
and replaces only the server: each of the writer's constant statements is applied to an
in-memory graph with the semantics it has on a server that holds nothing yet (a bulk load
goes into an empty database). ``tests/integration/test_bulk_import.py`` compares the graph
this makes with the MERGE path's; a statement changed in the writer but not mirrored here
fails that test, and a statement this writer does not know is refused, never skipped.

Facts are embedded last (:meth:`StagingWriter.finish`), page by page into the import file,
from the relations' final state: an edge closed after its fact was planned is closed in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, LiteralString

from neo4j.time import Date, DateTime

from kg.errors import StoreError
from kg.graph import writer as w
from kg.graph.facts import UPSERT_FACTS
from kg.graph.type_labels import choose as choose_type_labels
from kg.limits import MAX_FACT_KEY_CHARS

Props = dict[str, Any]
_STATIC_TYPE = re.compile(r"MERGE \(a\)-\[r:`([A-Za-z_][A-Za-z0-9_]*)` \{key: row\.props\.key\}\]")


@dataclass(frozen=True)
class Counters:
    """What the writer's batches count (the server's summary counters, for the ingest summary)."""

    nodes_created: int = 0
    relationships_created: int = 0
    properties_set: int = 0


@dataclass
class StagedRelation:
    type: str
    source: str
    target: str
    props: Props


@dataclass
class StagedGraph:
    """The whole graph a bulk load imports: nodes as property maps, relationships as pairs."""

    documents: dict[str, Props] = field(default_factory=dict)
    chunks: dict[str, Props] = field(default_factory=dict)
    chunk_labels: dict[str, str] = field(default_factory=dict)
    part_of: set[tuple[str, str]] = field(default_factory=set)  # (chunk, document)
    next: set[tuple[str, str]] = field(default_factory=set)  # (chunk, chunk)
    entities: dict[str, Props] = field(default_factory=dict)
    entity_labels: dict[str, str] = field(default_factory=dict)  # entity -> its type's label
    mentions: set[tuple[str, str]] = field(default_factory=set)  # (chunk, entity)
    relations: dict[str, StagedRelation] = field(default_factory=dict)  # by key
    predicates: dict[str, Props] = field(default_factory=dict)
    type_labels: list[str] = field(default_factory=list)  # KgMeta.type_labels
    open_by_subject: dict[tuple[str, str], list[str]] = field(default_factory=dict)


class FactSink:
    """Where :meth:`StagingWriter.finish` streams fact nodes and their ABOUT links."""

    def fact(self, props: Props) -> None: ...

    def about(self, fact_id: str, entity_id: str) -> None: ...


@dataclass
class StagingWriter(w.GraphWriter):
    """``GraphWriter`` whose statements build :attr:`graph` (see the module docstring)."""

    graph: StagedGraph = field(default_factory=StagedGraph)
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    _facts_todo: list[Mapping[str, Any]] = field(default_factory=list)
    _fact_sink: FactSink | None = None

    @classmethod
    def like(cls, writer: w.GraphWriter) -> StagingWriter:
        """A staging writer with ``writer``'s policy, bounds and fact embedder: every field
        of the MERGE writer, so one added there is carried here too."""
        return cls(**{f.name: getattr(writer, f.name) for f in fields(w.GraphWriter) if f.init})

    # -- what the pipeline calls, beyond the statements ----------------------------------------

    def upsert_facts(self, relations: Sequence[Mapping[str, Any]]) -> int:
        """Planned now, embedded and written by :meth:`finish` (after edges are closed)."""
        if self.fact_embedder is None:
            return 0
        kept = [
            r for r in relations if r["key"] is not None and len(r["key"]) <= MAX_FACT_KEY_CHARS
        ]
        self._facts_todo.extend(kept)
        return len(kept)

    def finish(self, sink: FactSink) -> int:
        """Embed the planned facts page by page into ``sink``; how many were written."""
        self._fact_sink = sink
        todo, self._facts_todo = self._facts_todo, []
        try:
            return super().upsert_facts(todo)
        finally:
            self._fact_sink = None

    # -- the server, replaced -------------------------------------------------------------------

    def _type_labels(self, types: set[str]) -> dict[str, str]:
        new, labels = choose_type_labels(self.graph.type_labels, types, self.bounds.max_type_labels)
        self.graph.type_labels.extend(new)
        return labels

    def _read(self, query: LiteralString, **params: Any) -> list[Any]:
        g = self.graph
        if query == w._PREDICATES:
            return [
                {"name": n, "stored_as": g.predicates[n]["stored_as"]}
                for n in params["names"]
                if n in g.predicates
            ]
        if query == w._PROMOTED_COUNT:
            return [{"promoted": sum(1 for p in g.predicates.values() if p["promoted"])}]
        if query == w._OPEN_EDGES:
            return list(self._open_edges(params["rows"]))
        if query == w._CHUNK_NAMESPACES:
            return [
                {"id": i, "namespace": g.chunks[i].get("namespace")}
                for i in params["ids"]
                if i in g.chunks
            ]
        raise StoreError("a bulk load cannot answer this read: it writes into an empty graph")

    def _write_summary(
        self, query: LiteralString, rows: list[Any], returned: list[Any] | None = None
    ) -> Any:
        records, counters = self._apply(query, rows)
        if returned is not None:
            returned.extend(records)
        return counters

    def _write(
        self, query: LiteralString, rows: list[Any], *, key: str = "rows", **extra: Any
    ) -> list[Any]:
        return self._apply(query, rows)[0]

    def _apply(self, query: str, rows: list[Any]) -> tuple[list[Any], Counters]:
        if query == w._RESTATE_RELATIONS:
            return self._restated(rows), Counters()
        if query.startswith(w._MATCH_ENDS):
            return self._relations(query, rows)
        handlers = {
            w._UPSERT_DOCUMENTS: self._documents,
            w._COMPLETE_DOCUMENTS: self._complete,
            w._UPSERT_CHUNKS: self._chunks,
            w._LINK_CHUNKS: self._links,
            w._UPSERT_ENTITIES: self._entities,
            w._UPSERT_MENTIONS: self._mentions,
            w._UPSERT_PREDICATES: self._predicates,
            w._CLOSE_EDGES: self._close,
            UPSERT_FACTS: self._facts,
        }
        handler = handlers.get(query)
        if handler is None:
            raise StoreError(
                "a bulk load writes into an empty graph: it cannot remove or move what a graph "
                "held before (use kg ingest for that)"
            )
        return handler(rows), Counters()

    # -- one handler per statement (see the statement's text in kg/graph/writer.py) -------------

    def _documents(self, rows: list[Props]) -> list[Any]:
        for row in rows:
            doc = self.graph.documents.setdefault(row["id"], {"id": row["id"]})
            _set(doc, {k: row[k] for k in ("path", "title", "root", "source", "date")})
            doc.pop("sha256", None)
        return []

    def _complete(self, rows: list[Props]) -> list[Any]:
        for row in rows:
            doc = self.graph.documents.get(row["id"])
            if doc is not None:
                _set(
                    doc,
                    {
                        k: row[k]
                        for k in ("sha256", "extraction", "extraction_model", "extraction_prompt")
                    },
                )
                doc["ingested_at"] = self.now
        return []

    def _chunks(self, rows: list[Props]) -> list[Any]:
        g = self.graph
        for row in rows:
            doc = g.documents.get(row["document_id"])
            if doc is None:
                continue
            chunk = g.chunks.setdefault(row["id"], {"id": row["id"]})
            _set(
                chunk,
                {
                    k: row[k]
                    for k in (
                        "index",
                        "text",
                        "sha256",
                        "document_id",
                        "embedding",
                        "title",
                        "language",
                    )
                },
            )
            _set(chunk, {"namespace": doc.get("source")})
            g.chunk_labels[row["id"]] = row["label"]
            g.part_of.add((row["id"], row["document_id"]))
        return []

    def _links(self, rows: list[Props]) -> list[Any]:
        for row in rows:
            if row["previous"] in self.graph.chunks and row["next"] in self.graph.chunks:
                self.graph.next.add((row["previous"], row["next"]))
        return []

    def _entities(self, rows: list[Props]) -> list[Any]:
        g = self.graph
        limit = self.bounds.max_aliases
        for row in rows:
            description = row["description"]
            e = g.entities.get(row["id"])
            if e is None:
                e = g.entities[row["id"]] = {"id": row["id"]}
                _set(
                    e,
                    {
                        "name": row["name"],
                        "type": row["type"],
                        "first_seen": self.now,
                        "description": description,
                        "embedding": row["embedding"],
                        "description_source": row["namespace"] if description else None,
                    },
                )
            else:
                if not e.get("description") and description:
                    _set(e, {"description_source": row["namespace"]})
                if not e.get("description"):
                    _set(e, {"description": description})
                if row["embedding"] is not None:
                    e["embedding"] = row["embedding"]
            aliases = list(e.get("aliases") or [])
            sources = list(e.get("alias_sources") or [""] * len(aliases))
            for alias in row["aliases"]:
                if alias not in aliases and len(aliases) < limit:
                    aliases.append(alias)
                    sources.append(row["namespace"])
            e["aliases"], e["alias_sources"] = aliases, sources
            if row["label"] is not None and e.get("type") == row["type"]:
                g.entity_labels[row["id"]] = row["label"]
        return []

    def _mentions(self, rows: list[Props]) -> list[Any]:
        g = self.graph
        for row in rows:
            e = g.entities.get(row["entity_id"])
            if e is None:
                continue
            for chunk_id in row["chunk_ids"]:
                if chunk_id in g.chunks:
                    g.mentions.add((chunk_id, row["entity_id"]))
            e["namespaces"] = _union(e.get("namespaces") or [], row["namespaces"])
        return []

    def _relations(self, query: str, rows: list[Props]) -> tuple[list[Any], Counters]:
        g = self.graph
        static = _STATIC_TYPE.search(query)
        records: list[Any] = []
        created = 0
        for row in rows:
            a, b = g.entities.get(row["source"]), g.entities.get(row["target"])
            if a is None or b is None:
                continue
            props = row["props"]
            key = props["key"]
            rel = g.relations.get(key)
            if rel is not None:
                records.append({"rel": key, "created": False, "key": key})
                continue
            created += 1
            rel_type = static.group(1) if static else row["type"]
            rel = StagedRelation(rel_type, row["source"], row["target"], {})
            _set(rel.props, props)
            rel.props["namespaces"] = _union([], row["namespaces"])
            rel.props["first_seen"] = rel.props["last_seen"] = self.now
            g.relations[key] = rel
            g.open_by_subject.setdefault((row["source"], props["predicate"]), []).append(key)
            records.append(
                {
                    "rel": key,
                    "created": True,
                    "key": key,
                    "subject_id": a["id"],
                    "subject": a.get("name"),
                    "predicate": rel.props.get("predicate"),
                    "object_id": b["id"],
                    "object": b.get("name"),
                }
            )
        return records, Counters(relationships_created=created)

    def _restated(self, rows: list[Props]) -> list[Any]:
        """Edges stated again: their facts are planned already (a bulk load's graph starts
        empty, and every edge it creates plans its fact), so none is returned."""
        for row in rows:
            rel = self.graph.relations.get(row["rel"])
            if rel is None or (rel.source, rel.target) != (row["source"], row["target"]):
                continue
            self._restate(rel.props, row["props"])
            rel.props["namespaces"] = _union(rel.props.get("namespaces") or [], row["namespaces"])
        return []

    def _restate(self, r: Props, props: Props) -> None:
        """``_RESTATE_RELATIONS`` of a relation: a fact stated again (never within one bulk
        load's ingest, whose rows are folded by key first; kept for the same semantics)."""
        if not r.get("description"):
            _set(
                r,
                {
                    "description_source": props.get("description_source"),
                    "description": props.get("description"),
                },
            )
        if props["weight"] is not None and (
            r.get("weight") is None or props["weight"] > r["weight"]
        ):
            r["weight"] = props["weight"]
        old = list(r.get("chunk_ids") or [])
        r["chunk_ids"] = (old + [c for c in props["chunk_ids"] if c not in old])[
            : self.bounds.max_chunk_ids
        ]
        if props.get("validTo") is not None:
            r["validTo"] = props["validTo"]
        r["last_seen"] = self.now

    def _predicates(self, rows: list[Props]) -> list[Any]:
        out = []
        for row in rows:
            p = self.graph.predicates.get(row["name"])
            if p is None:
                p = self.graph.predicates[row["name"]] = {
                    "name": row["name"],
                    "stored_as": row["stored_as"],
                    "promoted": row["promoted"],
                    "first_seen": self.now,
                }
            out.append({"name": p["name"], "stored_as": p["stored_as"]})
        return out

    def _open_edges(self, rows: list[Props]) -> Iterator[Props]:
        g = self.graph
        for row in rows:
            for key in g.open_by_subject.get((row["source"], row["predicate"]), []):
                r = g.relations[key].props
                if r.get("validTo") is not None:
                    continue
                valid_from = r.get("validFrom")
                yield {
                    "source": row["source"],
                    "predicate": row["predicate"],
                    "rel": key,
                    "target": g.relations[key].target,
                    "valid_from": Date.from_native(valid_from) if valid_from else None,
                    "first_seen": DateTime.from_native(r["first_seen"]),
                    "key": key,
                    "namespaces": list(r.get("namespaces") or []),
                }

    def _close(self, rows: list[Props]) -> list[Any]:
        for row in rows:
            rel = self.graph.relations.get(row["rel"])
            if rel is not None:
                _set(rel.props, {"validTo": row["valid_to"], "closed_by": row["closed_by"]})
        return []

    def _facts(self, rows: list[Props]) -> list[Any]:
        assert self._fact_sink is not None, "facts are written by finish()"
        g = self.graph
        for row in rows:
            rel = g.relations.get(row["key"])
            if rel is None or (rel.source, rel.target) != (row["subject_id"], row["object_id"]):
                continue
            r = rel.props
            self._fact_sink.fact(
                {
                    "id": row["key"],
                    "text": row["text"],
                    "embedding": row["embedding"],
                    "predicate": r.get("predicate"),
                    "subject_id": rel.source,
                    "object_id": rel.target,
                    "chunk_ids": r.get("chunk_ids"),
                    "validFrom": r.get("validFrom"),
                    "validTo": r.get("validTo"),
                    "namespaces": r.get("namespaces"),
                }
            )
            for end in dict.fromkeys((rel.source, rel.target)):
                self._fact_sink.about(row["key"], end)
        return []


def _set(props: Props, values: Mapping[str, Any]) -> None:
    """Cypher's ``SET n.k = v``: a null removes the property."""
    for key, value in values.items():
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value


def _union(acc: list[Any], more: list[Any]) -> list[Any]:
    """``reduce(acc, x IN more | CASE WHEN x IN acc THEN acc ELSE acc + x END)``."""
    out = list(acc)
    for x in more:
        if x not in out:
            out.append(x)
    return out
