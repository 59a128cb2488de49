"""A company's folder, first try (issue 42): every format kg reads, in category folders.

The folder is built by the formats' own writing libraries (tests/formatfiles.py; MSG from the
committed fixture), Russian and English. `kg ingest --graph metadata` (no LLM) and then a
plain `kg ingest` against a closed LLM port must each leave every file's marker phrase found by
`kg search --mode text` in that very file. Neo4j is real; no LLM is involved at all.
"""

from __future__ import annotations

import json
from pathlib import Path

from neo4j import Driver

from kg.settings import Settings
from tests.apiserver import free_port
from tests.clienv import run_kg
from tests.formatfiles import MARKERS, all_files

CATEGORY = {
    ".docx": "01_hr", ".xlsx": "05_tlog", ".pptx": "02_sales", ".odt": "03_legal",
    ".ods": "05_tlog", ".odp": "02_sales", ".rtf": "03_legal", ".eml": "04_mail",
    ".msg": "04_mail", ".epub": "06_library",
}  # fmt: skip


def _folder(root: Path) -> dict[str, str]:
    """Write the folder; the marker phrase of each file by its relative path."""
    markers = {}
    for suffix, data in all_files().items():
        rel = f"{CATEGORY[suffix]}/document{suffix}"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        markers[rel] = MARKERS[suffix]
    (root / "00_readme.md").write_text("# Папка компании\n\nОбщий указатель.\n", encoding="utf-8")
    return markers


def _each_marker_is_found_in_its_file(settings: Settings, markers: dict[str, str]) -> None:
    for rel, marker in markers.items():
        found = run_kg(settings, "search", marker, "--mode", "text", "--json")
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)["local"]["chunks"]
        assert hits, marker
        assert hits[0]["document_path"] == rel, (marker, [h["document_path"] for h in hits])


def test_every_format_is_searchable_without_an_llm_and_with_a_closed_one(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "company"
    markers = _folder(folder)

    done = run_kg(settings, "ingest", str(folder), "--graph", "metadata", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["skipped"] == [], summary["skipped"]
    assert summary["documents_new"] == len(markers) + 1
    _each_marker_is_found_in_its_file(settings, markers)

    clean_graph.execute_query("MATCH (n) DETACH DELETE n")
    closed = {
        "KG_LLM__BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
        "KG_LLM__MAX_RETRIES": "0",
        "KG_EXTRACT__CACHE_PATH": str(tmp_path / "cache.sqlite"),
    }
    plain = run_kg(settings, "ingest", str(folder), "--json", **closed)
    summary = json.loads(plain.stdout)
    assert summary["documents_new"] == len(markers) + 1
    assert summary["documents_incomplete"] == len(markers) + 1  # every extraction failed...
    _each_marker_is_found_in_its_file(settings, markers)  # ...and every file is searchable
