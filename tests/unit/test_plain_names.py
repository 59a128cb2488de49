"""Names arrive without their Markdown: `` `"timeout"` `` is ``timeout`` wherever it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from kg.docgraph import SECTION, TOPIC, candidates
from kg.documents import chunk_document, document_id
from kg.extract.importer import read_triplets
from kg.extract.schema import ExtractionResult
from kg.models import Document
from kg.names import plain_name

MARKED = '`"timeout"`'


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        (MARKED, "timeout"),
        ("**Ledger**", "Ledger"),
        ("«Платежи»", "Платежи"),
        ("“Smart quotes”", "Smart quotes"),
        ("`max_retries` setting", "max_retries setting"),
        ("*Risk* Engine", "Risk Engine"),
        # punctuation that is part of the name stays
        ("Don't Panic", "Don't Panic"),
        ("C++", "C++"),
        ("__init__", "__init__"),
        ("snake_case", "snake_case"),
        ('"quoted" and more', '"quoted" and more'),
        ("users'", "users'"),
        ("``", ""),
    ],
)
def test_plain_name(text: str, plain: str) -> None:
    assert plain_name(text) == plain


def test_extracted_names_lose_their_markdown_and_relations_still_join() -> None:
    result = ExtractionResult.model_validate(
        {
            "entities": [
                {"name": MARKED, "type": "`Setting`", "aliases": ["**request timeout**"]},
                {"name": "AuthService", "type": "Service"},
            ],
            "relations": [{"source": "`AuthService`", "predicate": "uses", "target": MARKED}],
        }
    )
    timeout = result.entities[0]
    assert (timeout.name, timeout.type, timeout.aliases) == (
        "timeout",
        "Setting",
        ["request timeout"],
    )
    (relation,) = result.relations
    assert (relation.source, relation.target) == ("AuthService", "timeout")


def test_a_name_of_only_marks_is_refused() -> None:
    with pytest.raises(ValidationError, match="must not be empty"):
        ExtractionResult.model_validate({"entities": [{"name": '`""`', "type": "Setting"}]})


def test_imported_triplets_lose_their_markdown(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    line = {
        "title": "Settings",
        "text": "AuthService uses `timeout`.",
        "triplets": [{"subject": "`AuthService`", "predicate": "uses", "object": MARKED}],
    }
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (doc,) = read_triplets(path).documents
    assert {e.name for e in doc.result.entities} == {"AuthService", "timeout"}


def test_headings_and_titles_lose_their_markdown() -> None:
    text = f"# `Auth` **Service**\n\n## {MARKED}\n\nSee [[«Risk Engine»]].\n"
    doc = Document(document_id("auth.md", "src"), "auth.md", "`Auth` **Service**", text, "x")
    chunks = chunk_document(doc, chunk_tokens=400, overlap=0)
    found = {(c.name, c.type) for c in candidates(doc, chunks, {})}
    assert found == {("Auth Service", TOPIC), ("timeout", SECTION), ("Risk Engine", TOPIC)}
