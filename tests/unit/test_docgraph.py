"""The zero-LLM document graph: declared entities and exact mentions."""

from __future__ import annotations

from kg.docgraph import SECTION, TOPIC, build, candidates, front_matter, title_aliases
from kg.documents import chunk_document, document_id
from kg.models import Chunk, Document, KnownEntity
from kg.names import heading_text
from kg.resolve import HashingEmbedder


def _doc(path: str, title: str, text: str) -> tuple[Document, list[Chunk]]:
    doc = Document(document_id(path, "src"), path, title, text, "x")
    return doc, chunk_document(doc, chunk_tokens=400, overlap=0)


def test_title_aliases_drop_a_trailing_parenthetical() -> None:
    assert title_aliases("Kiss and Tell (1945 film)") == ["Kiss and Tell"]
    assert title_aliases("Shirley Temple") == []


def test_front_matter_is_read_safely() -> None:
    assert front_matter("---\nentities: [Acme Corp]\naliases: Pay\n---\n# x") == {
        "entities": ["Acme Corp"],
        "aliases": "Pay",
    }
    assert front_matter("---\n: : bad\n---\n") == {}
    assert front_matter("no front matter") == {}


def test_candidates_come_from_title_headings_links_and_declarations() -> None:
    text = (
        "---\nentities: [Acme Corp]\naliases: [Payments Platform]\n---\n"
        "# Payments\n\nSee [the ledger](../db/ledger.md) and [[Risk Engine|risk]].\n\n"
        "## Card Processing\n\nCards go through [a site](https://example.com/x).\n"
    )
    doc, chunks = _doc("svc/payments.md", "Payments", text)
    found = {(c.name, c.type) for c in candidates(doc, chunks, {"db/ledger.md": "Ledger DB"})}
    assert found == {
        ("Payments", TOPIC),
        ("Acme Corp", TOPIC),
        ("Ledger DB", TOPIC),
        ("Risk Engine", TOPIC),
        ("Card Processing", SECTION),
    }
    title = next(c for c in candidates(doc, chunks, {}) if c.name == "Payments")
    assert title.aliases == ["Payments Platform"]
    assert title.chunk_ids == {c.id for c in chunks}


def test_build_reuses_known_entities_and_finds_every_mention() -> None:
    a, a_chunks = _doc("a.md", "Kiss and Tell (1945 film)", "Kiss and Tell stars Shirley Temple.")
    b, b_chunks = _doc("b.md", "Shirley Temple", "Shirley Temple was an actress and diplomat.")
    c, c_chunks = _doc("c.md", "Notes", "Nothing about kiss or tell here; shirley temples.")
    known = [KnownEntity("ent-st", "Shirley Temple", "Person", aliases=("S. Temple",))]
    chunks = {a.id: a_chunks, b.id: b_chunks, c.id: c_chunks}
    graph = build([a, b, c], chunks, known, HashingEmbedder(64))
    names = {e.name: e for e in graph.entities}
    # The title "Shirley Temple" is the known Person, not a new Topic.
    assert set(names) == {"Kiss and Tell (1945 film)", "Notes"}
    film = names["Kiss and Tell (1945 film)"]
    assert film.aliases == ["Kiss and Tell"]
    assert film.embedding is not None
    assert len(film.embedding) == 64
    mentions = graph.mentions
    assert (a_chunks[0].id, "ent-st") in mentions  # found in the text (an LLM may miss it)
    assert (b_chunks[0].id, "ent-st") in mentions  # its own title
    assert (a_chunks[0].id, film.id) in mentions
    assert not any(chunk == c_chunks[0].id and e in {film.id, "ent-st"} for chunk, e in mentions)


def test_build_is_deterministic() -> None:
    a, a_chunks = _doc("a.md", "Alpha Service", "Alpha Service calls Beta Store.")
    b, b_chunks = _doc("b.md", "Beta Store", "# Beta Store\n\nIt keeps data.")
    runs = [
        build([a, b], {a.id: a_chunks, b.id: b_chunks}, [], HashingEmbedder(32)) for _ in range(2)
    ]
    assert [e.id for e in runs[0].entities] == [e.id for e in runs[1].entities]
    assert runs[0].mentions == runs[1].mentions
    beta = next(e.id for e in runs[0].entities if e.name == "Beta Store")
    assert (a_chunks[0].id, beta) in runs[0].mentions


def test_a_one_word_heading_is_mentioned_only_where_it_stands() -> None:
    a, a_chunks = _doc("a.md", "Alpha Service", "# Alpha Service\n\n## Usage\n\nRun it.")
    b, b_chunks = _doc("b.md", "Beta Store", "Usage of the Beta Store grows; see Alpha Service.")
    graph = build([a, b], {a.id: a_chunks, b.id: b_chunks}, [], HashingEmbedder(32))
    usage = next(e.id for e in graph.entities if e.name == "Usage")
    alpha = next(e.id for e in graph.entities if e.name == "Alpha Service")
    assert {c for c, e in graph.mentions if e == usage} == {a_chunks[0].id}
    assert (b_chunks[0].id, alpha) in graph.mentions


def test_a_heading_attribute_list_is_not_part_of_the_name() -> None:
    # VitePress / MkDocs / Pandoc: "## Props {#props}": the anchor is no word of the heading
    text = "# Слоты {#slots}\n\nТекст.\n\n## Fallback Content {#fallback-content .tip}\n\nЕщё.\n"
    doc, chunks = _doc("components/slots.md", "Слоты", text)
    names = {c.name for c in candidates(doc, chunks, {})}
    assert "Fallback Content" in names
    assert not any("{" in n for n in names)


def test_a_title_read_from_a_heading_drops_its_attribute_list() -> None:
    assert heading_text("Доступность {#accessibility}") == "Доступность"
    assert heading_text("C++ {templates}") == "C++ {templates}"  # braces that are no attributes
    assert heading_text("{#only}") == "{#only}"  # never an empty title
