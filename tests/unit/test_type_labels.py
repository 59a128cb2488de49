"""Which entity types become labels (kg.graph.type_labels): allowlisted, never structural."""

from __future__ import annotations

import pytest

from kg.graph.type_labels import RESERVED, type_label


@pytest.mark.parametrize(
    ("entity_type", "label"),
    [
        ("Service", "Service"),
        ("programming language", "ProgrammingLanguage"),
        ("data_store", "DataStore"),
        ("K8s-Cluster", "K8sCluster"),
        # Never a label: structure, Cyrillic, punctuation, injection attempts, one letter, long.
        ("Entity", None),
        ("chunk", None),
        ("ChunkRu", None),
        ("Команда", None),
        ("Service`) DETACH DELETE n //", None),
        ("Team:Admin", None),
        ("x", None),
        ("A" * 41, None),
        ("", None),
    ],
)
def test_type_label(entity_type: str, label: str | None) -> None:
    assert type_label(entity_type) == label


def test_reserved_covers_every_structural_label() -> None:
    assert {"Entity", "Chunk", "Document", "Community", "KgMeta", "Predicate", "Fact"} <= RESERVED
    assert type_label("fact") is None  # an entity of type "fact" must not join the fact index
    assert {"ChunkEn", "ChunkRu"} <= RESERVED
