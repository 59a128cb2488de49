"""Fact nodes: every Entity-to-Entity relation again as a short embedded text.

A Neo4j vector index covers one label (or one relationship type), and relations are spread over
up to ``write.max_relation_types`` + 1 types, so the text of each relation ("auth service stores
data in postgresql") lives on a ``(:Fact)`` node of its own, which the ``fact_embedding`` index
covers (schema/006_facts.cypher). Matching a question against facts, not only against entity
names, is what lifted HippoRAG 2 over dense retrieval (issue 25).

The contract (graph model 5)::

    (:Fact {id, text, embedding, predicate, subject_id, object_id, chunk_ids, namespaces,
            validFrom, validTo})
    (:Fact)-[:ABOUT]->(:Entity)      for the subject and for the object

``id`` is the relation's ``key``; everything but ``text`` and ``embedding`` is copied from the
relation in the same transaction that changes it (kg/graph/writer.py), so a fact and its
relation never disagree about provenance or validity. ``embedding`` comes from the chunk
embedder, so the fact index shares the chunk index's dimension and recorded embedder identity.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, LiteralString

from kg.limits import MAX_FACT_CHARS, MAX_FACT_KEY_CHARS, cut_name
from kg.resolve.vectors import Embedder

__all__ = ["UPSERT_FACTS", "fact_rows", "fact_text"]

# Writes the fact of each row's relation, reading the relation itself for everything it copies
# (a concurrent writer may have changed it since the row was read). A relation gone in between
# writes nothing. Shared by the writer (new relations) and kg migrate (model 4 graphs).
UPSERT_FACTS: LiteralString = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.subject_id})
MATCH (b:Entity {id: row.object_id})
MATCH (a)-[r]->(b) WHERE r.key = row.key
MERGE (f:Fact {id: r.key})
SET f.text = row.text, f.embedding = row.embedding, f.predicate = r.predicate,
    f.subject_id = a.id, f.object_id = b.id, f.chunk_ids = r.chunk_ids,
    f.validFrom = r.validFrom, f.validTo = r.validTo, f.namespaces = r.namespaces
MERGE (f)-[:ABOUT]->(a)
MERGE (f)-[:ABOUT]->(b)
"""


def fact_text(subject: str, predicate: str, obj: str) -> str:
    """``subject predicate-in-words object``: ``WORKS_FOR`` reads ``works for``, bounded."""
    words = " ".join(predicate.replace("_", " ").split()).lower()
    text = " ".join(part for part in (subject.strip(), words, obj.strip()) if part)
    return cut_name(text, MAX_FACT_CHARS)


def fact_rows(records: Sequence[Mapping[str, Any]], embedder: Embedder) -> list[dict[str, Any]]:
    """Rows for :data:`UPSERT_FACTS` from relation records (key, subject_id, subject, predicate,
    object_id, object), their texts embedded in one call. Keys too long for the fact index's
    key limit (kg/limits.py) get no fact."""
    kept = [r for r in records if r["key"] is not None and len(r["key"]) <= MAX_FACT_KEY_CHARS]
    texts = [fact_text(r["subject"] or "", r["predicate"] or "", r["object"] or "") for r in kept]
    if not texts:
        return []
    vectors = embedder.embed(texts)
    return [
        {
            "key": r["key"],
            "subject_id": r["subject_id"],
            "object_id": r["object_id"],
            "text": text,
            "embedding": _floats(vector),
        }
        for r, text, vector in zip(kept, texts, vectors, strict=True)
    ]


def _floats(vector: Any) -> list[float]:
    """Plain floats (an ndarray converts in one call; the values are the same)."""
    if hasattr(vector, "tolist"):
        return [float(x) for x in vector.tolist()]
    return [float(x) for x in vector]


def pages(rows: Sequence[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    """``rows`` in slices of ``size``: one embedding call and one transaction each."""
    for start in range(0, len(rows), size):
        yield list(rows[start : start + size])
