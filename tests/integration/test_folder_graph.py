"""The folder's structure as a graph, no LLM (issue 42, item 2).

One ``--graph metadata`` ingest of a small Russian/English folder with category subfolders
(``01_hr/``, ``02_it/``, ``03_legal/``) whose documents name each other by title and by number;
then the graph is read with the test's own driver, and searches ``as_of`` before and after a
document's date leave its chunks out or keep them. Neo4j is real.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from kg.ingest import ingest
from kg.search.models import SearchRequest, SearchResponse
from kg.settings import Settings
from tests.graphdata import with_service

DOCS = {
    "01_hr/policies/bonus.md": (
        "---\ndate: 2024-03-15\n---\n# Положение о премировании\n\n"
        "Квартальная премия выплачивается по итогам оценки грифонов.\n"
    ),
    "01_hr/vacation.md": (
        "# Правила отпусков\n\nПеренос отпуска согласуется согласно Положению о премировании. "
        "Персональные данные обрабатываются по Федеральному закону № 152-ФЗ.\n"
    ),
    "01_hr/hiring-report.md": "# Отчёт о найме 2023-06-01\n\nНаняты двенадцать аналитиков.\n",
    "03_legal/contract.md": (
        "---\ndate: 2024-05-20\n---\n# Договор поставки № 15/2024\n\n"
        "Поставщик передаёт оборудование. Оформление по ГОСТ Р 7.0.97-2016.\n"
    ),
    "03_legal/appendix-2.md": (
        "# Приложение № 2 к Договору № 15/2024\n\nСпецификация: сорок серверов.\n"
    ),
    "03_legal/security.md": (
        "# Security Policy (March 1, 2025)\n\nEvery laptop uses zebrafish disk encryption.\n"
    ),
    "03_legal/passwords.md": "# Policy 4.2 Password Rules\n\nPasswords rotate each quarter.\n",
    "02_it/onboarding.md": (
        "# Laptop Onboarding\n\nBefore access, read the Security Policy and Policy 4.2.\n"
    ),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: Any) -> Path:
    root: Path = tmp_path_factory.mktemp("company")
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def folder_graph(driver: Driver, settings: Settings, folder: Path) -> Iterator[Driver]:
    """The folder, ingested once for the module (wiped before and after)."""
    from tests.conftest import _wipe

    root = folder
    _wipe(driver, settings.neo4j.database)
    ingest(settings, driver, root, graph="metadata")
    yield driver
    _wipe(driver, settings.neo4j.database)


def _rows(driver: Driver, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(query, params)
    return [r.data() for r in records]


def _search(settings: Settings, **request: Any) -> SearchResponse:
    return with_service(settings, lambda s: s.local_search(SearchRequest(**request)))


def test_folders_are_categories_the_documents_belong_to(folder_graph: Driver) -> None:
    cats = _rows(
        folder_graph,
        "MATCH (c:Entity {type: 'Category'}) RETURN c.name AS name, c.aliases AS aliases",
    )
    assert {c["name"]: c["aliases"] for c in cats} == {
        "hr": ["01_hr"],
        "policies": ["01_hr/policies"],
        "it": ["02_it"],
        "legal": ["03_legal"],
    }
    member = _rows(
        folder_graph,
        "MATCH (t:Entity)-[r:IN_CATEGORY]->(c:Entity {type: 'Category'}) "
        "RETURN t.name AS title, c.name AS category, r.validFrom AS since",
    )
    pairs = {(m["title"], m["category"]) for m in member}
    assert ("Положение о премировании", "policies") in pairs
    assert ("policies", "hr") in pairs  # a folder is in its parent folder
    assert ("Правила отпусков", "hr") in pairs
    assert ("Laptop Onboarding", "it") in pairs
    # Browser users see `hr` with its documents: category <- title <- chunk -> document.
    docs = _rows(
        folder_graph,
        "MATCH (c:Entity {name: 'hr', type: 'Category'})<-[:IN_CATEGORY*1..2]-(t:Entity)"
        "<-[:MENTIONS]-(:Chunk)-[:PART_OF]->(d:Document) RETURN DISTINCT d.path AS path",
    )
    assert {d["path"] for d in docs} == {
        "01_hr/policies/bonus.md", "01_hr/vacation.md", "01_hr/hiring-report.md",
    }  # fmt: skip


def test_documents_naming_each_other_by_title_or_number_are_linked(folder_graph: Driver) -> None:
    refs = _rows(
        folder_graph,
        "MATCH (a:Entity)-[r:REFERENCES]->(b:Entity) "
        "RETURN a.name AS source, b.name AS target, size(r.chunk_ids) AS chunks",
    )
    pairs = {(r["source"], r["target"]) for r in refs}
    assert pairs == {
        ("Правила отпусков", "Положение о премировании"),  # inflected title
        ("Приложение № 2 к Договору № 15/2024", "Договор поставки № 15/2024"),  # by number
        ("Laptop Onboarding", "Security Policy (March 1, 2025)"),  # title without its date
        ("Laptop Onboarding", "Policy 4.2 Password Rules"),  # by number, English
    }
    assert all(r["chunks"] >= 1 for r in refs)
    # Structure states no fact in words: no Fact node (graph model 5) for it.
    facts = "MATCH ()-[r:REFERENCES|IN_CATEGORY]->() MATCH (f:Fact {id: r.key}) RETURN f"
    assert _rows(folder_graph, facts) == []
    # Laws and standards no document is are no entities by default (docs/architecture.md).
    assert _rows(folder_graph, "MATCH (e:Entity {type: 'Reference'}) RETURN e") == []


def test_a_documents_own_date_is_stored(folder_graph: Driver) -> None:
    dates = {
        r["path"]: r["date"]
        for r in _rows(folder_graph, "MATCH (d:Document) RETURN d.path AS path, d.date AS date")
    }
    assert dates["01_hr/policies/bonus.md"].to_native() == date(2024, 3, 15)  # front matter
    assert dates["01_hr/hiring-report.md"].to_native() == date(2023, 6, 1)  # in the title
    assert dates["03_legal/security.md"].to_native() == date(2025, 3, 1)  # "March 1, 2025"
    assert dates["02_it/onboarding.md"] is None
    # A reference a document states holds from the document's date.
    since = _rows(
        folder_graph,
        "MATCH (:Entity {name: 'Правила отпусков'})-[r:REFERENCES]->() RETURN r.validFrom AS v",
    )
    assert since == [{"v": None}]


@pytest.mark.parametrize("mode", ["text", "hybrid", "graph"])
def test_as_of_leaves_out_chunks_of_documents_dated_after_it(
    folder_graph: Driver, settings: Settings, mode: str
) -> None:
    query = "zebrafish encryption Security Policy"

    def paths(**extra: Any) -> set[str]:
        found = _search(settings, query=query, mode=mode, limit=10, **extra)
        return {c.document_path for c in found.chunks}

    assert "03_legal/security.md" in paths(as_of="2025-06-01")
    before = paths(as_of="2025-01-01")
    assert "03_legal/security.md" not in before
    if mode != "graph":
        assert "02_it/onboarding.md" in before  # undated: always kept
    assert "03_legal/security.md" in paths()  # no as_of: no document date filter


def test_a_changed_document_keeps_its_references_to_unchanged_ones(
    folder_graph: Driver, settings: Settings, folder: Path
) -> None:
    """Last in the module: it changes the folder. Only the changed file is loaded again; the
    unchanged file it names is found through its title entity in the graph."""
    query = "MATCH (a:Entity)-[r:REFERENCES|IN_CATEGORY]->(b:Entity) RETURN a.name, type(r), b.name"
    before = {tuple(r.values()) for r in _rows(folder_graph, query)}
    page = folder / "01_hr/vacation.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nОтпуск без сохранения оплаты.\n")
    summary = ingest(settings, folder_graph, folder, graph="metadata")
    assert (summary.documents_changed, summary.documents_unchanged) == (1, len(DOCS) - 1)
    assert {tuple(r.values()) for r in _rows(folder_graph, query)} == before
