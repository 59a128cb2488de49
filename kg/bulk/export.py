"""Write a staged graph (:mod:`kg.bulk.staging`) as ``neo4j-admin database import`` files.

Every node file has the node's labels in a ``:LABEL`` column (chunks their language's,
entities their type's); relationships go in one file per pair of id spaces. Facts are
embedded while their file is written (:meth:`StagingWriter.finish`), so a million fact
vectors never sit in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.bulk.csvfiles import LINKS, NODE_COLUMNS, RELATION_COLUMNS, CsvFile, array_delimiter
from kg.bulk.staging import FactSink, Props, StagedGraph, StagingWriter
from kg.localserver.password import argfile_quote


@dataclass(frozen=True)
class ImportFiles:
    """The files of one load and the importer options they need."""

    folder: Path
    nodes: tuple[Path, ...]
    relationships: tuple[Path, ...]
    array_delimiter: str
    counts: dict[str, int]
    # (file stem, property) -> ids of rows whose array is empty (kg.bulk.fixups sets them)
    empty_arrays: dict[tuple[str, str], list[str]]

    def arguments(self, *, relative: bool = False) -> list[str]:
        """``neo4j-admin database import full`` options for these files (not the database);
        ``relative``: file names only, for a copy of the folder on another machine."""
        delimiter = f"U+{ord(self.array_delimiter):04X}"

        def name(path: Path) -> str:
            return path.name if relative else str(path)

        return [
            *(f"--nodes={name(p)}" for p in self.nodes),
            *(f"--relationships={name(p)}" for p in self.relationships),
            f"--array-delimiter={delimiter}",
            "--multiline-fields=true",  # chunk text, and any name, may hold line breaks
            "--normalize-types=true",
            "--ignore-empty-strings=false",
            "--trim-strings=false",
            "--legacy-style-quoting=false",
            "--strict=true",  # a relationship to a missing node fails the import
            "--bad-tolerance=0",
        ]


def write_import_files(writer: StagingWriter, folder: Path, meta: Props) -> ImportFiles:
    """Write ``writer``'s graph (and the ``KgMeta`` node ``meta``) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    g = writer.graph
    meta = {**meta, "type_labels": list(g.type_labels) or None}
    files = _Files(folder, array_delimiter(_arrays(g, meta)))
    with_labels: list[tuple[str, dict[str, Props], dict[str, str]]] = [
        ("Document", g.documents, {}),
        ("Chunk", g.chunks, g.chunk_labels),
        ("Entity", g.entities, g.entity_labels),
        ("Predicate", g.predicates, {}),
        ("KgMeta", {"kg": {"id": "kg", **meta}}, {}),
    ]
    for label, nodes, extra in with_labels:
        out = files.nodes(label)
        for node_id, props in nodes.items():
            labels = [label, extra[node_id]] if node_id in extra else [label]
            out.write_props(props, (node_id, labels))
    relations = files.relations()
    for key, rel in g.relations.items():
        relations.write_props(rel.props, (rel.source, rel.target, rel.type), row_id=key)
    for rel_type, pairs in (("PART_OF", g.part_of), ("NEXT", g.next), ("MENTIONS", g.mentions)):
        out = files.links(rel_type)
        for start, end in pairs:
            out.write((start, end, rel_type))
    writer.finish(_FactFiles(files.nodes("Fact"), files.links("ABOUT")))
    result = files.close()
    # For a server elsewhere: `neo4j-admin database import full @import.args neo4j`, run in
    # a copy of this folder (docs/import-format.md, "Bulk load").
    args = "\n".join(argfile_quote(a) for a in result.arguments(relative=True))
    (folder / "import.args").write_text(args + "\n", encoding="utf-8")
    return result


class _Files:
    """The files of one load, opened with their typed headers."""

    def __init__(self, folder: Path, delimiter: str) -> None:
        self.folder, self.delimiter = folder, delimiter
        self.opened: list[CsvFile] = []

    def _open(self, name: str, columns: tuple[str, ...]) -> CsvFile:
        out = CsvFile(self.folder / f"{name}.csv", columns, self.delimiter)
        self.opened.append(out)
        return out

    def nodes(self, label: str) -> CsvFile:
        columns = NODE_COLUMNS[label]
        return self._open(label.lower(), (columns[0], ":LABEL", *columns[1:]))

    def relations(self) -> CsvFile:
        ends = (":START_ID(Entity)", ":END_ID(Entity)", ":TYPE")
        return self._open("relations", (*ends, *RELATION_COLUMNS))

    def links(self, rel_type: str) -> CsvFile:
        start, end = LINKS[rel_type]
        return self._open(rel_type.lower(), (f":START_ID({start})", f":END_ID({end})", ":TYPE"))

    def close(self) -> ImportFiles:
        for f in self.opened:
            f.close()
        node_files = tuple(f.path for f in self.opened if f.columns[1] == ":LABEL")
        return ImportFiles(
            folder=self.folder,
            nodes=node_files,
            relationships=tuple(f.path for f in self.opened if f.path not in node_files),
            array_delimiter=self.delimiter,
            counts={f.path.stem: f.rows for f in self.opened},
            empty_arrays={
                (f.path.stem, name): ids
                for f in self.opened
                for name, ids in f.empty_arrays.items()
            },
        )


class _FactFiles(FactSink):
    def __init__(self, facts: CsvFile, about: CsvFile) -> None:
        self.facts_file, self.about_file = facts, about

    def fact(self, props: Props) -> None:
        self.facts_file.write_props(props, (props["id"], ["Fact"]))

    def about(self, fact_id: str, entity_id: str) -> None:
        self.about_file.write((fact_id, entity_id, "ABOUT"))


def _arrays(g: StagedGraph, meta: Props) -> Iterator[list[Any]]:
    """Every string array the files will hold (the array delimiter must avoid them all)."""
    for e in g.entities.values():
        for key in ("aliases", "alias_sources", "namespaces"):
            yield e.get(key) or []
    for rel in g.relations.values():
        yield rel.props.get("chunk_ids") or []
        yield rel.props.get("namespaces") or []
    yield meta.get("type_labels") or []
    yield list(g.entity_labels.values())
    yield list(g.chunk_labels.values())
