"""One service named in English, in code and in Russian becomes one Entity node in Neo4j.

Real Neo4j, real ingest through the triplets import path (no LLM), real resolver: the three
spellings meet through the normalizer (``AuthService`` / ``auth_service``) and the translation
key (``Сервис Аутентификации``, kg/resolve/concept.py); «сервис авторизации», one letter group
away in both languages, stays a node of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from neo4j import Driver

from kg.ingest import ingest
from kg.settings import Settings

AUTH_FORMS = ("AuthService", "auth_service", "Сервис Аутентификации")
AUTHZ = "сервис авторизации"


def _offline(settings: Settings) -> Settings:
    """Hashing chunk vectors: nothing to load, as tests/integration/test_languages.py does."""
    chunks = {"embedder": "hashing", "embedding_dim": settings.resolve.embedding_dim}
    return settings.model_copy(update={"chunks": settings.chunks.model_copy(update=chunks)})


def _document(doc_id: str, text: str, subject: str, predicate: str, obj: str) -> dict[str, Any]:
    return {
        "id": doc_id,
        "title": f"Note {doc_id}",  # a title names a Topic entity: keep it apart from the names
        "text": text,
        "triplets": [
            {
                "subject": subject,
                "predicate": predicate,
                "object": obj,
                "subject_type": "Service",
                "object_type": "Database",
            }
        ],
    }


# (document id, text, subject, predicate, object): one name of the service in each
_ROWS = [
    ("auth-en", "AuthService keeps its sessions in PostgreSQL.",
     "AuthService", "stores data in", "PostgreSQL"),
    ("auth-code", "auth_service reads its signing keys from Redis.",
     "auth_service", "reads from", "Redis"),
    ("auth-ru", "Сервис Аутентификации хранит сессии в PostgreSQL.",
     "Сервис Аутентификации", "хранит данные в", "PostgreSQL"),
    ("authz-ru", "Сервис авторизации хранит политики в PostgreSQL.",
     AUTHZ, "хранит данные в", "PostgreSQL"),
]  # fmt: skip
DOCUMENTS = [_document(*row) for row in _ROWS]


def _write(path: Path, documents: list[dict[str, Any]]) -> Path:
    lines = (json.dumps(d, ensure_ascii=False) for d in documents)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _entities_named(driver: Driver, settings: Settings, names: list[str]) -> list[Any]:
    records, _, _ = driver.execute_query(
        "MATCH (e:Entity) WHERE e.name IN $names OR any(a IN coalesce(e.aliases, []) "
        "WHERE a IN $names) RETURN e.id AS id, e.name AS name, e.type AS type, "
        "coalesce(e.aliases, []) AS aliases ORDER BY e.id",
        names=names,
        database_=settings.neo4j.database,
    )
    return list(records)


def _mentioning_documents(driver: Driver, settings: Settings, entity_id: str) -> set[str]:
    records, _, _ = driver.execute_query(
        "MATCH (d:Document)<-[:PART_OF]-(c:Chunk)-[:MENTIONS]->(e:Entity {id: $id}) "
        "RETURN DISTINCT d.path AS path",
        id=entity_id,
        database_=settings.neo4j.database,
    )
    return {r["path"] for r in records}


def _assert_one_auth_node_and_authz_apart(driver: Driver, settings: Settings) -> str:
    auth = _entities_named(driver, settings, list(AUTH_FORMS))
    assert len(auth) == 1, auth
    node = auth[0]
    assert node["type"] == "Service"
    assert node["name"] in AUTH_FORMS
    assert set(AUTH_FORMS) - {node["name"]} <= set(node["aliases"])  # the other forms kept
    assert AUTHZ not in node["aliases"]

    authz = _entities_named(driver, settings, [AUTHZ])
    assert len(authz) == 1, authz
    assert authz[0]["id"] != node["id"]
    assert not set(AUTH_FORMS) & {authz[0]["name"], *authz[0]["aliases"]}
    return str(node["id"])


def test_three_spellings_in_two_languages_are_one_node_and_authz_stays_apart(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    offline = _offline(settings)
    triplets = _write(tmp_path / "triplets.jsonl", DOCUMENTS)
    summary = ingest(offline, clean_graph, tmp_path, triplets=triplets)
    assert summary.ok
    assert summary.documents_new == 4
    assert summary.import_errors == []

    auth_id = _assert_one_auth_node_and_authz_apart(clean_graph, settings)
    # the node is the one every document's chunks point at, not three nodes renamed alike
    assert _mentioning_documents(clean_graph, settings, auth_id) == {
        "auth-en",
        "auth-code",
        "auth-ru",
    }
    services, _, _ = clean_graph.execute_query(
        "MATCH (e:Entity {type: 'Service'}) RETURN count(e) AS n",
        database_=settings.neo4j.database,
    )
    assert services[0]["n"] == 2


def test_a_later_russian_document_joins_the_entity_already_in_the_graph(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    offline = _offline(settings)
    triplets = tmp_path / "triplets.jsonl"
    _write(triplets, DOCUMENTS[:2])
    assert ingest(offline, clean_graph, tmp_path, triplets=triplets).documents_new == 2
    before = _entities_named(clean_graph, settings, list(AUTH_FORMS))
    assert len(before) == 1

    _write(triplets, DOCUMENTS)
    summary = ingest(offline, clean_graph, tmp_path, triplets=triplets)
    assert (summary.documents_new, summary.documents_unchanged) == (2, 2)

    auth_id = _assert_one_auth_node_and_authz_apart(clean_graph, settings)
    assert auth_id == before[0]["id"]  # the graph's entity took the Russian form as an alias
    after = _entities_named(clean_graph, settings, list(AUTH_FORMS))
    assert after[0]["name"] == before[0]["name"]  # and kept its name
    assert "auth-ru" in _mentioning_documents(clean_graph, settings, auth_id)
