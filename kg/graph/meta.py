"""The graph's model stamp: one ``(:KgMeta {id: 'kg'})`` node with the model version and the
identity (``name/dimension``) of the embedder behind each vector index.

kg refuses to write into, or search, a graph written by another model rather than mixing two
models silently. A graph with data but no stamp was written before stamps existed (model 1).
Later changes to the model or its indexes bump :data:`MODEL_VERSION` and add a step to
:mod:`kg.graph.migrate`.

The embedder identities matter because a dimension check cannot tell two 256-d embedders apart:
vectors of one searched with the other's question vectors return nonsense without any error.
So kg records ``entity_embedder`` and ``chunk_embedder`` when it first writes vectors, and
refuses to write or search with different ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import LiteralString

from neo4j import AsyncDriver, AsyncGraphDatabase, Driver, RoutingControl
from neo4j.api import BookmarkManager

from kg.errors import GraphModelError

# 1: one relationship type per predicate, document ids from the relative path alone.
# 2: bounded relationship types with the predicate on every relation (RELATED for the long
#    tail), a (:Predicate) catalogue, document ids scoped by their source.
# 3: chunks carry their document's title (fulltext index chunk_text over text and title) and
#    are embedded by the chunk embedder (WordLlama by default), entities by the entity
#    embedder; KgMeta records both embedders' identities.
# 4: each chunk is stored in one language (Chunk.language, label ChunkEn or ChunkRu) and searched
#    in that language's fulltext index (chunk_text_en, chunk_text_ru), which replace chunk_text;
#    entities carry their type's label (:Entity:Service) for Browser's colours, within a bound.
# 5: every Entity-to-Entity relation also has a (:Fact) node, its "subject predicate object"
#    text embedded by the chunk embedder (vector index fact_embedding), ABOUT both its ends.
# 6: each document records how it was extracted (Document.extraction: llm, metadata or
#    triplets; extraction_model, extraction_prompt), so another method or model re-extracts it.
# 7: namespaces: every chunk carries its document's source (Chunk.namespace); entities,
#    relations and facts carry the namespaces of the chunks behind them (``namespaces``), so
#    search can be scoped to some namespaces and one namespace can be forgotten.
MODEL_VERSION = 7

#: The vector index each recorded embedder fills, and the setting that chooses it.
EMBEDDER_INDEXES = {
    "entity": ("entity_embedding", "KG_RESOLVE__EMBEDDER / KG_RESOLVE__EMBEDDING_DIM"),
    # Facts are embedded by the chunk embedder: one record covers both indexes.
    "chunk": ("chunk_embedding", "KG_CHUNKS__EMBEDDER / KG_CHUNKS__EMBEDDING_DIM"),
}

_READ: LiteralString = """
OPTIONAL MATCH (m:KgMeta {id: 'kg'})
RETURN m.model_version AS version,
       EXISTS { MATCH (:Document) } OR EXISTS { MATCH (:Entity) } AS has_data
"""

_READ_STATE: LiteralString = """
OPTIONAL MATCH (m:KgMeta {id: 'kg'})
RETURN m.model_version AS version, m.entity_embedder AS entity, m.chunk_embedder AS chunk,
       EXISTS { MATCH (:Document) } OR EXISTS { MATCH (:Entity) } AS has_data
"""

_STAMP: LiteralString = """
MERGE (m:KgMeta {id: 'kg'})
SET m.model_version = $version, m.updated_at = datetime()
"""

_READ_EMBEDDERS: LiteralString = """
OPTIONAL MATCH (m:KgMeta {id: 'kg'})
RETURN m.entity_embedder AS entity, m.chunk_embedder AS chunk
"""

_STAMP_EMBEDDERS: LiteralString = """
MERGE (m:KgMeta {id: 'kg'})
SET m.entity_embedder = coalesce($entity, m.entity_embedder),
    m.chunk_embedder = coalesce($chunk, m.chunk_embedder), m.updated_at = datetime()
"""


@dataclass(frozen=True)
class GraphModel:
    version: int | None  # None: an empty graph that no kg has stamped yet
    has_data: bool

    @property
    def effective(self) -> int | None:
        if self.version is not None:
            return self.version
        return 1 if self.has_data else None


def read_model(driver: Driver, database: str) -> GraphModel:
    records, _, _ = driver.execute_query(_READ, database_=database)
    version = records[0]["version"]
    return GraphModel(int(version) if version is not None else None, bool(records[0]["has_data"]))


def read_state(driver: Driver, database: str) -> tuple[GraphModel, dict[str, str | None]]:
    """The model stamp and the recorded embedders, in one query (``kg migrate``'s first look)."""
    records, _, _ = driver.execute_query(_READ_STATE, database_=database)
    row = records[0]
    version = row["version"]
    model = GraphModel(int(version) if version is not None else None, bool(row["has_data"]))
    return model, {"entity": row["entity"], "chunk": row["chunk"]}


def stamp(driver: Driver, database: str, version: int = MODEL_VERSION) -> None:
    driver.execute_query(_STAMP, version=version, database_=database)


def read_embedders(driver: Driver, database: str) -> dict[str, str | None]:
    records, _, _ = driver.execute_query(_READ_EMBEDDERS, database_=database)
    return {"entity": records[0]["entity"], "chunk": records[0]["chunk"]}


def stamp_embedders(driver: Driver, database: str, embedders: Mapping[str, str]) -> None:
    driver.execute_query(
        _STAMP_EMBEDDERS,
        entity=embedders.get("entity"),
        chunk=embedders.get("chunk"),
        database_=database,
    )


async def check_current_async(
    driver: AsyncDriver,
    database: str,
    embedders: Mapping[str, str] | None = None,
    *,
    bookmarks: BookmarkManager | None = None,
) -> None:
    """For readers (search): refuse a graph of another model or embedder, saying what to do.

    READ routing; after the writes of the graph's write chain ``bookmarks`` (kg/client.py),
    adding nothing to it (a manager of its own, seeded with the chain's bookmarks)."""
    seed = bookmarks.get_bookmarks() if bookmarks is not None else ()
    chain = AsyncGraphDatabase.bookmark_manager(initial_bookmarks=seed)
    records, _, _ = await driver.execute_query(
        _READ, database_=database, routing_=RoutingControl.READ, bookmark_manager_=chain
    )
    version = records[0]["version"]
    model = GraphModel(int(version) if version is not None else None, bool(records[0]["has_data"]))
    _refuse_other(model.effective)
    if embedders:
        stored, _, _ = await driver.execute_query(
            _READ_EMBEDDERS, database_=database, routing_=RoutingControl.READ,
            bookmark_manager_=chain,
        )  # fmt: skip
        refuse_other_embedders(
            {"entity": stored[0]["entity"], "chunk": stored[0]["chunk"]}, embedders
        )


def ensure_current(
    driver: Driver,
    database: str,
    *,
    write: bool = True,
    embedders: Mapping[str, str] | None = None,
) -> None:
    """Stamp an empty graph (when ``write``); refuse a graph of another model, saying what to do.

    With ``embedders`` (``{"entity": identity, "chunk": identity}``): refuse a graph whose
    vectors another embedder made; record them where none is recorded yet (when ``write``).
    """
    model = read_model(driver, database)
    found = model.effective
    if found is None:
        if write:
            stamp(driver, database)
    else:
        _refuse_other(found)
    if embedders:
        refuse_other_embedders(read_embedders(driver, database), embedders)
        if write:
            stamp_embedders(driver, database, embedders)


def refuse_other_embedders(stored: Mapping[str, str | None], configured: Mapping[str, str]) -> None:
    """GraphModelError naming the index, both embedders and the fix, for any mismatch."""
    for kind, identity in configured.items():
        recorded = stored.get(kind)
        if recorded is None or recorded == identity:
            continue
        index, setting = EMBEDDER_INDEXES[kind]
        raise GraphModelError(
            f"the {index} vector index holds vectors made by {recorded}, but kg is configured "
            f"to use {identity} ({setting}); two embedders' vectors cannot be compared. Set "
            f"the embedder back to {recorded}, or run `kg migrate` to re-embed with {identity}."
        )


def _refuse_other(found: int | None) -> None:
    if found is None:
        return
    if found < MODEL_VERSION:
        raise GraphModelError(
            f"this graph was written by an older kg (graph model {found}; this kg writes model "
            f"{MODEL_VERSION}). Run `kg migrate` to convert it in place, or rebuild it: "
            "delete the graph (MATCH (n) DETACH DELETE n) and run `kg ingest` again."
        )
    if found > MODEL_VERSION:
        raise GraphModelError(
            f"this graph was written by a newer kg (graph model {found}; this kg knows up to "
            f"{MODEL_VERSION}). Upgrade kg to use it."
        )
