"""A folder of hostile files: the ingest finishes, reports each skip with its reason, and
writes nothing partial. The LLM is the scripted loopback server (tests/fakellm.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from neo4j import Driver
from reportlab.pdfgen import canvas

from kg.ingest import ingest
from kg.settings import Settings
from tests.fakellm import Reply, ScriptedLLM


def _pdf_without_text(path: Path) -> None:
    pdf = canvas.Canvas(str(path))
    pdf.rect(100, 100, 200, 200, fill=1)  # drawing only: no text layer
    pdf.showPage()
    pdf.save()


def build_hostile_folder(root: Path) -> dict[str, str]:
    """Files and the word their skip reason must contain."""
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nAuthService keeps its sessions in PostgreSQL.\n")
    (root / "binary.txt").write_bytes(bytes(range(256)) * 64)
    (root / "latin1.txt").write_bytes("Ça coûte 10 €".encode("cp1252") + b"\xff\xfe\x81")
    (root / "empty.md").write_bytes(b"")
    (root / "blank.md").write_text("   \n\n\t\n")
    with open(root / "huge.txt", "wb") as fh:  # 200 MB, sparse: nothing is read
        fh.truncate(200 * 1024 * 1024)
    depth = 20_000
    (root / "nested.html").write_text(
        "<html><body>"
        + "<div>" * depth
        + "deep AuthService text"
        + "</div>" * depth
        + "</body></html>"
    )
    _pdf_without_text(root / "scan.pdf")
    (root / "loop").mkdir()
    os.symlink("..", root / "loop" / "again")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    return {
        "binary.txt": "binary",
        "latin1.txt": "encoding",
        "empty.md": "empty",
        "blank.md": "empty",
        "huge.txt": "too large",
        "scan.pdf": "no text layer",
        "loop/again/": "loop",
        "image.png": "unsupported",
    }


def test_hostile_folder_is_reported_file_by_file_and_nothing_partial_is_written(
    clean_graph: Driver, settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "hostile"
    expected = build_hostile_folder(folder)

    def responder(request: dict[str, Any]) -> Reply:
        text = " ".join(str(m.get("content") or "") for m in request["messages"])
        names = [n for n in ("AuthService", "PostgreSQL") if n in text]
        entities = [{"name": n, "type": "Thing"} for n in names]
        relations = (
            [{"source": "AuthService", "target": "PostgreSQL", "predicate": "STORES_DATA_IN"}]
            if len(names) == 2
            else []
        )
        return Reply(payload={"entities": entities, "relations": relations})

    with ScriptedLLM(responder=responder) as llm:
        s = settings.model_copy(deep=True)
        s.llm.base_url = llm.base_url
        s.extract.cache_path = tmp_path / "cache.sqlite"
        s.extract.max_file_bytes = 50 * 1024 * 1024
        summary = ingest(s, clean_graph, folder)

    reasons = {skip["path"]: skip["reason"] for skip in summary.skipped}
    for path, word in expected.items():
        assert path in reasons, f"{path} was not reported: {reasons}"
        assert word in reasons[path].lower(), (path, reasons[path])
    assert summary.failures == []
    assert summary.documents_new == 2  # good.md and the deeply nested HTML
    paths = {
        r["p"] for r in clean_graph.execute_query("MATCH (d:Document) RETURN d.path AS p").records
    }
    assert paths == {"good.md", "nested.html"}
    incomplete = clean_graph.execute_query(
        "MATCH (d:Document) WHERE d.sha256 IS NULL RETURN count(d) AS n"
    ).records[0]["n"]
    assert incomplete == 0
    orphans = clean_graph.execute_query(
        "MATCH (c:Chunk) WHERE NOT (c)-[:PART_OF]->(:Document) RETURN count(c) AS n"
    ).records[0]["n"]
    assert orphans == 0
