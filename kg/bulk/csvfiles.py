"""Import files for ``neo4j-admin database import full``: one header line with typed columns,
then data, per node label and relationship kind.

Every value is data, never syntax: strings are always quoted (RFC 4180, a quote doubled), so
commas, quotes, newlines and any script pass through; a missing property is an empty unquoted
field (the importer then sets nothing); an empty string is ``""``. Array elements cannot be
escaped in this format, so the array delimiter is chosen per load as a character no array
element holds (:func:`array_delimiter`), and a value that would be ambiguous (an empty string
as an array's only element) is refused rather than imported as something else.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, TextIO

from kg.errors import StoreError

# Private-use characters first: text from documents hardly ever holds them.
_DELIMITER_CANDIDATES = ("\ue000", "\ue001", "\ue002", "\x1f", "\x1e", "\x1d", "\ufdd0")

#: The typed columns of each node label, in file order; the first is the node's id.
NODE_COLUMNS: dict[str, tuple[str, ...]] = {
    "Document": ("id:ID(Document)", "path", "title", "root", "source", "sha256",
                 "ingested_at:datetime", "extraction", "extraction_model", "extraction_prompt",
                 "date:date"),
    "Chunk": ("id:ID(Chunk)", "index:long", "text", "sha256", "document_id",
              "embedding:double[]", "title", "language", "namespace"),
    "Entity": ("id:ID(Entity)", "name", "type", "first_seen:datetime", "description",
               "embedding:double[]", "description_source", "aliases:string[]",
               "alias_sources:string[]", "namespaces:string[]"),
    "Predicate": ("name:ID(Predicate)", "stored_as", "promoted:boolean", "first_seen:datetime"),
    "Fact": ("id:ID(Fact)", "text", "embedding:double[]", "predicate", "subject_id", "object_id",
             "chunk_ids:string[]", "validFrom:date", "validTo:date", "namespaces:string[]"),
    "KgMeta": ("id:ID(KgMeta)", "model_version:long", "updated_at:datetime", "entity_embedder",
               "chunk_embedder", "type_labels:string[]"),
}  # fmt: skip

#: Entity-to-Entity relations (the facts' edges), after their start, end and type columns.
RELATION_COLUMNS = ("key", "predicate", "description", "weight:double", "validFrom:date",
                    "validTo:date", "chunk_ids:string[]", "description_source",
                    "first_seen:datetime", "last_seen:datetime", "namespaces:string[]",
                    "closed_by")  # fmt: skip

#: Relationships without properties: type -> (start id space, end id space).
LINKS = {
    "PART_OF": ("Chunk", "Document"),
    "NEXT": ("Chunk", "Chunk"),
    "MENTIONS": ("Chunk", "Entity"),
    "ABOUT": ("Fact", "Entity"),
}


def array_delimiter(arrays: Iterable[Iterable[str]]) -> str:
    """A delimiter no element of ``arrays`` contains."""
    seen: set[str] = set()
    candidates = set(_DELIMITER_CANDIDATES)
    for array in arrays:
        for element in array:
            for c in candidates:
                if c in element:
                    seen.add(c)
            if seen >= candidates:
                raise StoreError("every array delimiter kg can use occurs in the data")
    return next(c for c in _DELIMITER_CANDIDATES if c not in seen)


def _name(column: str) -> str:
    return column.split(":", 1)[0]


@dataclass
class CsvFile:
    """One import file: its header is written on open, rows are appended."""

    path: Path
    columns: tuple[str, ...]
    delimiter: str
    rows: int = 0
    _out: TextIO = field(init=False)

    # The importer cannot store an empty array (it reads "" as no value): the ids of the rows
    # with one, per property, for kg.bulk.fixups to set after the import.
    empty_arrays: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._out = self.path.open("w", encoding="utf-8", newline="")
        self._out.write(",".join(self.columns) + "\n")
        self._names = [_name(c) for c in self.columns]
        self._arrays = {_name(c) for c in self.columns if c.endswith("[]")}

    def write(self, values: Sequence[Any]) -> None:
        buf = io.StringIO()
        for i, value in enumerate(values):
            if i:
                buf.write(",")
            buf.write(field_text(value, self.delimiter))
        buf.write("\n")
        self._out.write(buf.getvalue())
        self.rows += 1

    def write_props(
        self, props: Mapping[str, Any], prefix: Sequence[Any] = (), row_id: str | None = None
    ) -> None:
        """A row of ``prefix`` then the columns' properties; an unknown property is refused
        (it would be lost silently). ``row_id`` names the row (default: its first field)."""
        names = self._names[len(prefix) :]
        extra = set(props) - set(names) - {self._names[0]}
        if extra:
            raise StoreError(f"{self.path.name}: no column for {sorted(extra)}")
        self.write([*prefix, *(props.get(n) for n in names)])
        for name in self._arrays:
            if props.get(name) == []:
                self.empty_arrays.setdefault(name, []).append(str(row_id or prefix[0]))

    def close(self) -> None:
        self._out.close()


def field_text(value: Any, delimiter: str) -> str:
    """One CSV field (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(float(value))  # numpy's float64 would print its type name
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        if len(value) == 1 and value[0] == "":
            raise StoreError("an array holding one empty string cannot be imported as itself")
        if value and all(type(x) is float for x in value):  # vectors: the hot path
            # a list's repr is the floats' shortest round-trip forms, joined in C
            return '"' + repr(list(value))[1:-1].replace(", ", delimiter) + '"'
        return _quote(delimiter.join(_element(x) for x in value))
    if isinstance(value, str):
        return _quote(value)
    raise StoreError(f"cannot write a {type(value).__name__} to an import file")


def _element(value: Any) -> str:
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str):
        return value
    raise StoreError(f"cannot write an array of {type(value).__name__} to an import file")


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
