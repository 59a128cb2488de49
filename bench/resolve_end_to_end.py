"""Entity resolution through the real import: the gold mentions as a triplets file, ``kg ingest``.

    .venv/bin/python bench/resolve_multilingual.py --end-to-end [--errors] [--uri URI]

Used by bench/resolve_multilingual.py (``--end-to-end``). Each mention becomes one document
(id ``m0000``..., text: its context sentence) with one triplet: the mention (gold type)
``mentioned in`` a per-document ``Note`` (``note-0000``...: names whose digits differ never
merge). The file goes through ``kg ingest --triplets`` (a child process, default settings, no
LLM) into a throwaway local Neo4j, or into ``uri``'s database after wiping it (password:
KG_NEO4J__PASSWORD or NEO4J_PASSWORD). Each document's subject is then read back: the start of
the relation to a Note that the document's chunk states (its id in the relation's chunk_ids).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from kg.graph.driver import open_driver
from kg.settings import Settings

KG = Path(sys.executable).with_name("kg")

_SUBJECTS = """
UNWIND $docs AS doc
MATCH (:Document {path: doc})<-[:PART_OF]-(c:Chunk)
MATCH (s:Entity)-[r]->(n:Entity {type: 'Note'}) WHERE c.id IN r.chunk_ids
RETURN doc, collect(DISTINCT s.id) AS ids
"""


class Mention(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def context(self) -> str: ...


@contextmanager
def neo4j(uri: str | None) -> Iterator[Settings]:
    if uri is not None:
        settings = Settings(neo4j={"uri": uri})
        neo = settings.neo4j
        with open_driver(neo) as driver, driver.session(database=neo.database) as session:
            session.run(
                "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
            ).consume()
        yield settings
        return
    from kg.localserver import throwaway_server

    with throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m") as s:
        yield s


def resolve_through_ingest(rows: Sequence[Mention], uri: str | None) -> list[str]:
    """The entity id each row's subject became in the graph, in row order."""
    docs = [f"m{i:06d}" for i in range(len(rows))]
    with neo4j(uri) as settings, tempfile.TemporaryDirectory() as tmp:
        triplets = Path(tmp) / "mentions.jsonl"
        with triplets.open("w", encoding="utf-8") as out:
            for i, (doc, row) in enumerate(zip(docs, rows, strict=True)):
                fact = {"subject": row.name, "subject_type": row.type, "predicate": "mentioned in",
                        "object": f"note-{i:06d}", "object_type": "Note"}  # fmt: skip
                line = {"id": doc, "title": f"Mention {i}", "text": row.context, "triplets": [fact]}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        (folder := Path(tmp) / "corpus").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "NEO4J_"))}
        env.update(
            KG_ENV_FILE="",  # no .env: default settings
            KG_NEO4J__URI=settings.neo4j.uri,
            KG_NEO4J__USERNAME=settings.neo4j.username,
            KG_NEO4J__PASSWORD=settings.neo4j.password.get_secret_value(),
            KG_NEO4J__DATABASE=settings.neo4j.database,
            KG_LOG_LEVEL="WARNING",
        )
        cmd = [str(KG), "ingest", str(folder), "--triplets", str(triplets), "--json"]
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"kg ingest failed ({done.returncode}):\n{done.stderr[-3000:]}")
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        if summary.get("import_errors") or summary.get("dropped"):
            raise RuntimeError(f"kg ingest lost input: {summary}")
        with open_driver(settings.neo4j) as driver:
            records, _, _ = driver.execute_query(
                _SUBJECTS, docs=docs, database_=settings.neo4j.database
            )
    found = {r["doc"]: r["ids"] for r in records}
    bad = {d: found.get(d, []) for d in docs if len(found.get(d, [])) != 1}
    if bad:
        raise RuntimeError(f"{len(bad)} documents without exactly one subject: {bad}")
    return [found[d][0] for d in docs]
