"""Template texts are pinned: changing one is a reviewed decision, never a side effect."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from kg.cypher import REGISTRY, escape_lucene
from kg.cypher.params import (
    MAX_FETCH,
    SCOPE_OVERFETCH,
    VECTOR_OVERSAMPLING,
    ChunksByTextParams,
    ChunksByVectorParams,
    EntityLinksParams,
    EntitySeedsParams,
    NeighborhoodParams,
    as_of_params,
)
from kg.cypher.render import expansion, paths_between
from kg.errors import NotFoundError
from kg.search.fusion import rrf

# sha256 (first 16 hex digits) of every rendered text. Update deliberately, with a review of
# the text, an EXPLAIN (tests/integration/test_guard.py) and docs/templates.md.
PINNED = {
    ("entity_neighborhood", "depth1"): "aa7404a955f9033c",
    ("entity_neighborhood", "depth2"): "417ebee844313b4e",
    ("entity_neighborhood", "depth3"): "29d13bfc0c28e194",
    ("seed_expansion", "depth1"): "aa7404a955f9033c",
    ("seed_expansion", "depth2"): "417ebee844313b4e",
    ("seed_expansion", "depth3"): "29d13bfc0c28e194",
    ("paths_between", "depth1"): "2c6cfd4c4914a920",
    ("paths_between", "depth2"): "a7d377c9e63db1da",
    ("paths_between", "depth3"): "5b7924b4e8997a1d",
    ("entity_sources", "default"): "a3630d061b41d9ba",
    ("relations_valid_at", "default"): "29aa85ff8f77bb88",
    ("entity_by_id", "default"): "93d67aacc1a71ed6",
    ("entity_details", "default"): "1a4de69cd791648b",
    ("entity_seeds", "default"): "b42a5ff3a868cdb3",
    ("chunks_by_vector", "default"): "4826d9f42809c576",
    ("facts_by_vector", "default"): "5a3148540486f786",
    ("fact_page", "default"): "63002ae055d21b31",
    ("entity_page", "default"): "644fb600fe4db8d7",
    ("chunk_page", "default"): "6b6474bd92eae1c2",
    ("graph_evidence", "default"): "875f99169568db43",
    ("evidence_chunks", "default"): "35820511e2f908fd",
    ("chunks_by_text", "default"): "1c0c744d1dde3f30",
    ("chunks_by_text", "ranked"): "5e60ef6709ae4153",
    ("chunks_dated_after", "default"): "1a822139113362da",
    ("corpus_languages", "default"): "cf58f680559bb800",
    ("entity_links", "default"): "a999c89a7232f4a1",
    ("counted_links", "default"): "d3e6253e0ea56e55",
    ("graph_counts", "default"): "94ecfe4d9c726986",
    ("name_page", "default"): "b8847830588bc468",
    ("mention_page", "default"): "b1e4dc1142739b8d",
    ("relation_page", "default"): "eecfcd56755b62f4",
    ("passage_hop", "default"): "b19af6518d7b215f",
    ("relation_types", "default"): "4fa963817c7f1910",
    ("community_reports", "default"): "cc2fb5a79bbe4ea2",
    ("namespaces", "default"): "a6928f0317717269",
    ("name_links", "default"): "a73e6d7efed5773e",
}


def _all_texts() -> dict[tuple[str, str], str]:
    return {(t.name, v): text for t in REGISTRY for v, text in t.texts.items()}


def test_every_text_is_pinned() -> None:
    digests = {
        key: hashlib.sha256(text.encode()).hexdigest()[:16] for key, text in _all_texts().items()
    }
    assert digests == PINNED


def test_entity_by_id_text_verbatim() -> None:
    assert REGISTRY.get("entity_by_id").texts["default"] == (
        "MATCH (e:Entity {id: $entity_id}) WHERE ($namespaces IS NULL OR any(x IN"
        " coalesce(e.namespaces, []) WHERE x IN $namespaces))\n"
        "RETURN e {.id, .name, .type, description: CASE WHEN $namespaces IS NULL OR"
        " e.description_source IN $namespaces THEN e.description ELSE null END,\n"
        "       aliases: CASE WHEN $namespaces IS NULL THEN e.aliases ELSE [i IN"
        " range(0, size(coalesce(e.aliases, [])) - 1) WHERE e.alias_sources[i] IN"
        " $namespaces | e.aliases[i]] END} AS entity,\n"
        "       CASE WHEN $namespaces IS NULL THEN COUNT { (e)--() }\n"
        "            ELSE COUNT { (e)-[r]-(:Entity) WHERE ($namespaces IS NULL OR"
        " any(x IN coalesce(r.namespaces, []) WHERE x IN $namespaces)) }\n"
        "                 + COUNT { (e)<-[:MENTIONS]-(k:Chunk) WHERE k.namespace IN"
        " $namespaces }\n"
        "       END AS degree,\n"
        "       CASE WHEN $namespaces IS NULL THEN COUNT { (e)<-[:MENTIONS]-() } ELSE"
        " COUNT { (e)<-[:MENTIONS]-(k:Chunk) WHERE k.namespace IN $namespaces } END AS"
        " mentions\n"
        "LIMIT 1"
    )


def test_retrieval_templates_verbatim() -> None:
    assert REGISTRY.get("chunks_by_text").texts["default"] == (
        "UNWIND $queries AS q\n"
        "CALL (q) {\n"
        "  CALL db.index.fulltext.queryNodes(q.index, q.text, {limit: $fetch}) YIELD"
        " node AS c, score\n"
        "  WITH c, score WHERE ($namespaces IS NULL OR c.namespace IN $namespaces)\n"
        "  RETURN c, score\n"
        "  ORDER BY score DESC, c.id\n"
        "  LIMIT $k\n"
        "}\n"
        "WITH q, c, score ORDER BY score DESC, c.id LIMIT $limit\n"
        "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document)\n"
        "RETURN collect({language: q.language, id: c.id, text: c.text, chunk_index: c.index,\n"
        "       document_id: d.id, document_path: d.path, score: score})[..$read_rows] AS rows"
    )
    ranked = REGISTRY.get("chunks_by_text").texts["ranked"]
    assert ranked.startswith(REGISTRY.get("chunks_by_text").texts["default"].split("OPTIONAL")[0])
    assert ranked.endswith(
        "WITH q, collect({c: c, score: score}) AS found\n"
        "UNWIND range(0, size(found) - 1) AS i\n"
        "WITH q, found[i].c AS c, found[i].score AS score, i < $texted AS texted\n"
        "OPTIONAL MATCH (c)-[:PART_OF]->(d:Document) WHERE texted\n"
        "RETURN collect({language: q.language, id: c.id, score: score,\n"
        "       text: CASE WHEN texted THEN c.text END,\n"
        "       chunk_index: CASE WHEN texted THEN c.index END,\n"
        "       document_id: d.id, document_path: d.path})[..$read_rows] AS rows"
    )
    assert "text: c.text" not in ranked
    assert REGISTRY.get("passage_hop").texts["default"] == (
        "UNWIND $entity_ids AS eid\n"
        "MATCH (e:Entity {id: eid}) WHERE ($namespaces IS NULL OR any(x IN"
        " coalesce(e.namespaces, []) WHERE x IN $namespaces))\n"
        "CALL (e) {\n"
        "  MATCH (c:Chunk)-[:MENTIONS]->(e) WHERE ($namespaces IS NULL OR c.namespace"
        " IN $namespaces)\n"
        "  RETURN c\n"
        "  LIMIT $per_entity\n"
        "}\n"
        "WITH e, c\n"
        "LIMIT $limit\n"
        "WITH c, collect({id: e.id, name: e.name}) AS reached\n"
        "CALL (c) {\n"
        "  MATCH (c)-[:MENTIONS]->(m:Entity)\n"
        "  WITH m LIMIT $per_chunk\n"
        "  RETURN collect({id: m.id, name: m.name, mentions: CASE WHEN $namespaces IS"
        " NULL THEN COUNT { (m)<-[:MENTIONS]-() } ELSE COUNT {"
        " (m)<-[:MENTIONS]-(k:Chunk) WHERE k.namespace IN $namespaces } END}) AS mentioned\n"
        "}\n"
        "RETURN collect({chunk: c.id, title: c.title, reached: reached, mentioned:"
        " mentioned})[..$read_rows] AS rows"
    )
    assert REGISTRY.get("graph_counts").texts["default"] == (
        "CALL () { MATCH (e:Entity) RETURN count(e) AS entities }\n"
        "CALL () { MATCH ()-[r:MENTIONS]->() RETURN count(r) AS mentions }\n"
        "CALL () { MATCH ()-[r]->() RETURN count(r) AS relationships }\n"
        "RETURN entities, mentions, relationships\n"
        "LIMIT 1"
    )
    assert REGISTRY.get("name_page").texts["default"] == (
        "MATCH (e:Entity) WHERE e.id > $after\n"
        "WITH e ORDER BY e.id\n"
        "LIMIT $limit\n"
        "RETURN collect({id: e.id, name: e.name, type: e.type, aliases: e.aliases[..64],\n"
        "       alias_sources: e.alias_sources[..64], namespaces: e.namespaces,\n"
        "       mentions: COUNT { (e)<-[:MENTIONS]-() }})[..$read_rows] AS rows"
    )
    assert REGISTRY.get("facts_by_vector").texts["default"] == (
        "CALL db.index.vector.queryNodes('fact_embedding', $candidates, $embedding)"
        " YIELD node AS f, score\n"
        "WITH f, score WHERE ($namespaces IS NULL OR any(x IN coalesce(f.namespaces,"
        " []) WHERE x IN $namespaces))\n"
        "RETURN f.id AS id, f.text AS text, f.subject_id AS subject_id, f.object_id AS"
        " object_id,\n"
        "       CASE WHEN $namespaces IS NULL THEN f.chunk_ids[..20] ELSE [cid IN"
        " coalesce(f.chunk_ids, []) WHERE EXISTS { MATCH (k:Chunk {id: cid}) WHERE"
        " k.namespace IN $namespaces }][..20] END AS chunk_ids, score\n"
        "ORDER BY score DESC\n"
        "LIMIT $k"
    )
    assert REGISTRY.get("fact_page").texts["default"] == (
        "MATCH (f:Fact) WHERE f.id > $after\n"
        "WITH f ORDER BY f.id\n"
        "LIMIT $limit\n"
        "RETURN collect({id: f.id, subject_id: f.subject_id, object_id: f.object_id,\n"
        "       embedding: f.embedding, namespaces: f.namespaces})[..$read_rows] AS rows"
    )
    assert REGISTRY.get("entity_page").texts["default"] == (
        "MATCH (e:Entity) WHERE e.id > $after\n"
        "WITH e ORDER BY e.id\n"
        "LIMIT $limit\n"
        "RETURN collect({id: e.id, name: e.name, type: e.type, embedding: e.embedding,\n"
        "       namespaces: e.namespaces})[..$read_rows] AS rows"
    )
    assert REGISTRY.get("mention_page").texts["default"] == (
        "MATCH (c:Chunk) WHERE c.id > $after\n"
        "WITH c ORDER BY c.id\n"
        "LIMIT $limit\n"
        "RETURN collect({id: c.id, title: c.title, namespace: c.namespace,\n"
        "       mentioned: [(c)-[:MENTIONS]->(m:Entity) | {id: m.id, name: m.name}][..$per_chunk]})"
        "[..$read_rows] AS rows"
    )


def test_linking_phrases_are_quoted_words_only() -> None:
    params = EntityLinksParams(phrases=[["kiss", "and", "tell"], ["лилу"]]).cypher_params()
    assert params["phrases"] == ['"kiss and tell"', '"лилу"']
    for bad in (['a"b'], ["x OR y"], ["name:x"], ["a\\"], [""]):
        with pytest.raises(ValidationError):
            EntityLinksParams(phrases=[bad])
    with pytest.raises(ValidationError):
        EntityLinksParams(phrases=[["w"]] * 129)


def test_vector_search_asks_the_index_for_more_neighbours_than_it_keeps() -> None:
    params = ChunksByVectorParams(embedding=[0.1] * 8, k=5).cypher_params()
    assert (params["k"], params["candidates"]) == (5, 5 * VECTOR_OVERSAMPLING)


def test_a_scoped_read_asks_the_indexes_for_more_candidates() -> None:
    """Neo4j 5.26's index queries cannot filter first: a scoped read over-fetches, bounded."""
    plain = ChunksByVectorParams(embedding=[0.1] * 8, k=5)
    scoped = ChunksByVectorParams(embedding=[0.1] * 8, k=5, namespaces=["a"])
    assert scoped.cypher_params()["candidates"] == (
        plain.cypher_params()["candidates"] * SCOPE_OVERFETCH
    )
    assert ChunksByTextParams(text="x", k=1000, namespaces=["a"]).cypher_params()["fetch"] == (
        MAX_FETCH
    )
    # A fulltext index is asked for as many scoped or not (Lucene orders equal scores by how
    # many it was asked for): a search scoped to every namespace ranks and links alike.
    for scope in (None, ["a"]):
        text = ChunksByTextParams(text="x", k=7, namespaces=scope).cypher_params()
        assert (text["k"], text["fetch"]) == (7, 7 * SCOPE_OVERFETCH)
        links = EntityLinksParams(phrases=[["a"]], namespaces=scope).cypher_params()
        assert links["fetch"] == 5 * SCOPE_OVERFETCH
        seeds = EntitySeedsParams(text="x", k=7, namespaces=scope).cypher_params()
        assert (seeds["k"], seeds["text_fetch"]) == (7, 7 * SCOPE_OVERFETCH)
    for bad in ([], [""], ["a\x00b"], ["x" * 1025], ["n"] * 51):
        with pytest.raises(ValidationError):
            ChunksByTextParams(text="x", namespaces=bad)


def test_every_scoped_template_names_the_scope_and_only_caches_read_everything() -> None:
    """Every template either keeps to $namespaces or is one of the whole-graph reads search
    keeps per process or asks for itself (refused to a scoped caller by name). counted_links
    keeps its links to the scope and reads the whole graph's counts beside them."""
    whole = {t.name for t in REGISTRY if t.whole_graph}
    assert whole == {
        "corpus_languages", "graph_counts", "counted_links", "name_page", "mention_page",
        "relation_page", "fact_page", "chunk_page", "entity_page",
    }  # fmt: skip
    assert {t.name for t in REGISTRY if not t.scoped} == whole - {"counted_links"}
    for template in REGISTRY:
        if template.scoped:
            for text in template.texts.values():
                assert "$namespaces" in text, template.name


def test_required_templates_exist() -> None:
    for name in (
        "entity_neighborhood",
        "paths_between",
        "entity_sources",
        "relations_valid_at",
        "seed_expansion",
    ):
        assert name in REGISTRY
    with pytest.raises(NotFoundError):
        REGISTRY.get("DETACH DELETE")


def test_no_format_placeholders_and_only_parameters_carry_data() -> None:
    for key, text in _all_texts().items():
        # Python format fields ({name}) or leftovers of %-formatting would mean string building.
        assert not re.search(r"\{[A-Za-z_]\w*\}", text), key
        assert "%s" not in text, key
        # Every identifier prefixed with $ is a declared parameter name, not a spliced value.
        for param in re.findall(r"\$(\w+)", text):
            assert re.fullmatch(r"[a-z_]+", param), (key, param)


def test_variable_length_bounds_come_only_from_the_whitelist() -> None:
    for key, text in _all_texts().items():
        quantifiers = re.findall(r"\*\s*\d*\s*\.\.\s*\d*|\{\d+,\d*\}", text)
        depth = int(key[1][-1]) if key[1].startswith("depth") else None
        for q in quantifiers:
            assert depth is not None, key
            assert q == f"{{1,{depth}}}", key
    assert "{1,3}" in paths_between(3)
    assert "{1,4}" not in "".join(_all_texts().values())


def test_expansion_repeats_one_bounded_hop_per_depth() -> None:
    for depth in (1, 2, 3):
        text = expansion(depth)
        assert text.count("MATCH (f)-[r]-(n:Entity)") == depth
        assert text.count("LIMIT $fanout") == depth
        assert text.count("LIMIT $frontier_cap") == depth - 1
        # Early stop: every hop reads nothing once the relations found fill $limit.
        assert text.count("CASE WHEN found < $limit THEN frontier ELSE [] END") == depth
        assert text.rstrip().endswith("[..$read_rows] AS rows")
        assert "LIMIT $limit" in text
    for bad in (0, 4, -1):
        with pytest.raises(ValueError, match="depth"):
            expansion(bad)
        with pytest.raises(ValueError, match="depth"):
            paths_between(bad)


def test_every_template_has_a_limit_or_a_single_row() -> None:
    for key, text in _all_texts().items():
        assert "LIMIT" in text or "[..$k]" in text, key
        assert REGISTRY.get(key[0]).row_cap >= 1


def test_parameter_models_bound_their_inputs() -> None:
    with pytest.raises(ValidationError):
        NeighborhoodParams(entity_id="a", depth=4)
    with pytest.raises(ValidationError):
        NeighborhoodParams(entity_id="x" * 257)
    with pytest.raises(ValidationError):
        NeighborhoodParams.model_validate({"entity_id": "a", "relation_types": ["A B"]})
    ok = NeighborhoodParams.model_validate(
        {"entity_id": "a", "relation_types": ["ЯВЛЯЕТСЯ_ЧАСТЬЮ"], "depth": 3}
    )
    assert ok.variant() == "depth3"
    assert ok.cypher_params()["entity_ids"] == ["a"]


def test_as_of_is_given_in_every_temporal_shape() -> None:
    params = as_of_params(date(2024, 3, 1))
    assert params["as_of_date"] == date(2024, 3, 1)
    assert params["as_of_dt"] == datetime(2024, 3, 1, tzinfo=UTC)
    assert params["as_of_local"] == datetime(2024, 3, 1)
    assert params["as_of_text"].startswith("2024-03-01T00:00:00")
    assert set(as_of_params(None).values()) == {None}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Payment Service", "Payment Service"),
        ('name:(a OR "b', 'name\\:\\(a or \\"b'),
        ("a && b || !c", "a b \\!c"),
        ("x~2^3 [a TO b] {c}", "x\\~2\\^3 \\[a to b\\] \\{c\\}"),
        ("path/to\\file*?", "path\\/to\\\\file\\*\\?"),
        ("??? --- ///", ""),
        ("NOT", "not"),
    ],
)
def test_lucene_escaping(text: str, expected: str) -> None:
    assert escape_lucene(text) == expected


def test_seed_params_escape_the_question() -> None:
    params = EntitySeedsParams(text='x"}) DETACH DELETE n //').cypher_params()
    assert params["text"] == 'x\\"\\}\\) DETACH DELETE n'


def test_rrf_scales_to_one_for_first_everywhere() -> None:
    fused = rrf([["a", "b"], ["a", "c"]], k=60)
    assert fused["a"] == pytest.approx(1.0)
    assert fused["b"] == pytest.approx(fused["c"])
    assert fused["b"] < fused["a"]
    assert rrf([], k=60) == {}


def test_start_up_explains_every_text_with_each_of_its_parameters() -> None:
    """A text EXPLAINed with a parameter left unbound gets no cached plan, so every start
    planned it again (3.5 s of the server's CPU); the nulls the start-up sends name every
    parameter of every text, and only names the guard itself sends."""
    from kg.cypher.guard import Guard, _nulls
    from kg.search.startup import warm_up_calls
    from kg.settings import Settings

    for template in REGISTRY:
        for variant, text in template.texts.items():
            found = _nulls(text)
            assert all(value is None for value in found.values())
            # every `$` opens a dynamic label or names a parameter that gets its null
            named = re.findall(r"\$(\w+)", text)
            assert text.count("$") == text.count("$(") + len(named), (template.name, variant)
            assert set(named) == set(found), (template.name, variant)
    settings = Settings()
    guard = Guard(None, settings)  # type: ignore[arg-type]  # prepare() does no I/O
    calls = warm_up_calls(settings.search, settings.resolve.embedding_dim,
                          settings.chunks.embedding_dim)  # fmt: skip
    for name, params in calls:
        prepared = guard.prepare(name, params)
        assert set(_nulls(prepared.text)) <= set(prepared.cypher_params()), name
    assert _nulls("MATCH (n:$(row.label)) WHERE n.id = $id AND n.k IN $ids") == {
        "id": None,
        "ids": None,
    }


def test_every_schema_statement_names_what_it_creates() -> None:
    """apply_schema skips a statement whose index or constraint exists; one it cannot name
    would be sent again by every command."""
    from kg.graph.schema import created_name, read_statements

    names = [created_name(statement) for statement in read_statements()]
    assert None not in names
    assert len(set(names)) == len(names)
    assert created_name("CREATE INDEX `odd name` IF NOT EXISTS FOR (n:X) ON (n.y)") is None
    assert created_name("CREATE INDEX plain FOR (n:X) ON (n.y)") is None


def test_the_read_only_check_explains_a_text_without_a_sample_with_its_nulls() -> None:
    """The wiring, not only the helper: each text the check EXPLAINs gets a full parameter
    map (its sample, else its nulls), so the server can cache every plan."""
    import asyncio
    from typing import Any

    from kg.cypher.guard import Guard, _nulls
    from kg.settings import Settings

    seen: dict[str, Any] = {}

    class Recording(Guard):
        async def _explain(self, text: Any, params: Any = None) -> str:
            seen[text] = params
            return "r"

    guard = Recording(None, Settings())  # type: ignore[arg-type]  # _explain is replaced
    one = next(text for template in REGISTRY for text in template.texts.values())
    asyncio.run(guard.verify_read_only({one: {"sample": 1}}))
    assert seen[one] == {"sample": 1}
    others = {text: params for text, params in seen.items() if text != one}
    assert others
    assert all(params == _nulls(text) for text, params in others.items())
    assert all(params for text, params in others.items() if "$" in text)
