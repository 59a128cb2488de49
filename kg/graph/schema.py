"""Apply schema/*.cypher idempotently and report what was created."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import LiteralString, cast

from neo4j import Driver

from kg.errors import StoreError
from kg.paths import schema_dir

_SHOW_INDEXES = "SHOW ALL INDEXES YIELD name RETURN name"
_SHOW_CONSTRAINTS = "SHOW CONSTRAINTS YIELD name RETURN name"
#: The name a ``CREATE ... INDEX|CONSTRAINT name IF NOT EXISTS`` statement creates.
_CREATED_NAME = re.compile(
    r"^\s*CREATE\s+(?:[A-Z]+\s+)*?(?:INDEX|CONSTRAINT)\s+`?([^`\s]+)`?\s+IF\s+NOT\s+EXISTS\b",
    re.IGNORECASE,
)
_VECTOR_DIMS = (
    "SHOW VECTOR INDEXES YIELD name, options "
    "RETURN name, options.indexConfig['vector.dimensions'] AS dims"
)


@dataclass(frozen=True)
class SchemaReport:
    created: list[str]
    existing: list[str]
    statements: int


def read_statements(folder: Path | None = None) -> list[str]:
    """Statements from every ``*.cypher`` file, in file-name order, comments removed."""
    folder = folder or schema_dir()
    statements: list[str] = []
    for path in sorted(folder.glob("*.cypher")):
        text = "\n".join(
            line for line in path.read_text().splitlines() if not line.strip().startswith("//")
        )
        statements.extend(s.strip() for s in re.split(r";\s*(?:\n|$)", text) if s.strip())
    return statements


def created_name(statement: str) -> str | None:
    """The index or constraint a schema statement creates, when it names one."""
    found = _CREATED_NAME.match(statement)
    return found.group(1) if found else None


def _names(driver: Driver, database: str) -> set[str]:
    names: set[str] = set()
    for query in (_SHOW_INDEXES, _SHOW_CONSTRAINTS):
        records, _, _ = driver.execute_query(query, database_=database)
        names.update(r["name"] for r in records)
    return names


#: The setting that decides each vector index's dimension.
_DIMENSION_SETTINGS = {
    "entity_embedding": "KG_RESOLVE__EMBEDDING_DIM",
    "chunk_embedding": "KG_CHUNKS__EMBEDDING_DIM",
    "fact_embedding": "KG_CHUNKS__EMBEDDING_DIM",
}


def apply_schema(
    driver: Driver,
    *,
    database: str,
    dimension: int,
    folder: Path | None = None,
    chunk_dimension: int | None = None,
) -> SchemaReport:
    """Create what is missing; leave the rest. Safe to run any number of times.

    ``dimension`` is the entity vector index's, ``chunk_dimension`` the chunk and fact
    indexes' (default: the same).
    """
    before = _names(driver, database)
    statements = read_statements(folder)
    chunk_dims = dimension if chunk_dimension is None else chunk_dimension
    dims = {
        "entity_embedding": dimension,
        "chunk_embedding": chunk_dims,
        "fact_embedding": chunk_dims,  # facts are embedded by the chunk embedder
    }
    # Only what is missing is sent: every `kg` command applies the schema, and ~25 no-op
    # CREATE ... IF NOT EXISTS round trips cost the server ~80 ms of CPU each time.
    missing = [s for s in statements if created_name(s) not in before]
    for statement in missing:
        # Schema files are trusted project files, never user data.
        driver.execute_query(
            cast(LiteralString, statement),
            {"dimension": dims["entity_embedding"], "chunk_dimension": dims["chunk_embedding"]},
            database_=database,
        )
    records, _, _ = driver.execute_query(_VECTOR_DIMS, database_=database)
    for record in records:
        wanted = dims.get(record["name"])
        if record["dims"] is not None and wanted is not None and int(record["dims"]) != wanted:
            raise StoreError(
                f"vector index {record['name']} has dimension {record['dims']} but settings say "
                f"{wanted}; drop it (DROP INDEX {record['name']}) or set "
                f"{_DIMENSION_SETTINGS[record['name']]} to match"
            )
    after = _names(driver, database) if missing else before
    return SchemaReport(
        created=sorted(after - before), existing=sorted(before & after), statements=len(statements)
    )


#: The vector indexes each embedder kind fills (facts are embedded by the chunk embedder).
EMBEDDER_VECTOR_INDEXES = {
    "entity": ("entity_embedding",),
    "chunk": ("chunk_embedding", "fact_embedding"),
}

# Index names are this module's constants, never user data (checked against the map above).
_DROP_VECTOR_INDEX: dict[str, LiteralString] = {
    "entity_embedding": "DROP INDEX entity_embedding IF EXISTS",
    "chunk_embedding": "DROP INDEX chunk_embedding IF EXISTS",
    "fact_embedding": "DROP INDEX fact_embedding IF EXISTS",
}


def drop_resized_vector_indexes(
    driver: Driver, *, database: str, kinds: dict[str, int]
) -> list[str]:
    """Drop the vector indexes of these embedder kinds (``{"chunk": 384}``) whose width is not
    the given one, so that :func:`apply_schema` makes them again at that width. Only for a
    re-embedding (kg migrate to another embedder): the vectors they held are rewritten."""
    records, _, _ = driver.execute_query(_VECTOR_DIMS, database_=database)
    widths = {str(r["name"]): r["dims"] for r in records}
    dropped = []
    for kind, width in kinds.items():
        for name in EMBEDDER_VECTOR_INDEXES[kind]:
            if widths.get(name) is not None and int(widths[name]) != width:
                driver.execute_query(_DROP_VECTOR_INDEX[name], database_=database)
                dropped.append(name)
    return dropped
