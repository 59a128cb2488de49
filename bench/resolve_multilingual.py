"""Entity resolution across Russian and English: the aliases-ru-dev gold set, scored pairwise.

    .venv/bin/python bench/resolve_multilingual.py                 # in process (the Resolver)
    .venv/bin/python bench/resolve_multilingual.py --errors        # and what is split / merged
    .venv/bin/python bench/resolve_multilingual.py --end-to-end    # through `kg ingest --triplets`

Data: ``../shared/data/aliases-ru-dev/gold.jsonl`` (CC0; 47 clusters, 190 mentions; its README
says how to score it), or ``--data FILE`` for another set in the same format. Each line is one
mention, fed in file order with its context sentence as the description.

In process, the mentions go to one ``Resolver.resolve`` call with default settings. With
``--end-to-end``, each mention becomes one document of a triplets file (text: the context
sentence; one triplet naming the mention as its subject with the gold type, and a per-document
object), imported with ``kg ingest --triplets`` into a throwaway local Neo4j (or ``--uri``: that
database is wiped), and each document's subject is read back from the graph: the figure the
issue's goal is stated in. No LLM is called either way.

Prints pairwise P / R / F1, cross-language recall (gold pairs whose two ``lang`` labels differ)
and B-cubed F1, beside the exact-name and fuzzy baselines (bench/resolve_quality.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resolve_quality import table

from kg.models import Mention
from kg.resolve import Resolver, make_embedder
from kg.resolve.evaluate import Quality, exact_name_clusters, fuzzy_clusters, quality
from kg.settings import ResolveSettings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "aliases-ru-dev" / "gold.jsonl"


@dataclass(frozen=True)
class Row:
    cluster: str
    name: str
    type: str
    lang: str
    context: str


def load(path: Path) -> list[Row]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            rows.append(Row(d["cluster"], d["name"], d["type"], d["lang"], d.get("context", "")))
    return rows


def in_process(rows: list[Row], settings: ResolveSettings | None = None) -> list[str]:
    settings = settings or ResolveSettings()
    resolver = Resolver(settings, make_embedder(settings))
    mentions = [Mention(r.name, r.type, description=r.context) for r in rows]
    return resolver.resolve(mentions).entity_ids


def cross_language_recall(rows: list[Row], predicted: list[str]) -> float:
    hits = total = 0
    for (a, pa), (b, pb) in combinations(zip(rows, predicted, strict=True), 2):
        if a.cluster == b.cluster and a.lang != b.lang:
            total += 1
            hits += pa == pb
    return hits / total if total else 1.0


def errors(rows: list[Row], predicted: list[str]) -> str:
    """Split and merged gold clusters, for reading."""
    by_gold: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    by_pred: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r, p in zip(rows, predicted, strict=True):
        by_gold[r.cluster][p].append(r.name)
        by_pred[p][r.cluster].append(r.name)
    out = ["split (one gold cluster, several entities):"]
    for gold, parts in by_gold.items():
        if len(parts) > 1:
            out.append(f"  {gold}: " + " | ".join(" / ".join(names) for names in parts.values()))
    out.append("merged (one entity, several gold clusters):")
    for parts in by_pred.values():
        if len(parts) > 1:
            out.append("  " + " | ".join(f"{g}: {' / '.join(n)}" for g, n in parts.items()))
    return "\n".join(out)


def report(rows: list[Row], predicted: list[str], label: str) -> dict[str, Quality]:
    gold = [r.cluster for r in rows]
    results = {
        label: quality(predicted, gold),
        "exact name (GraphRAG/LightRAG)": quality(
            exact_name_clusters([r.name for r in rows]), gold
        ),
        "fuzzy WRatio>=0.8 (neo4j-graphrag)": quality(
            fuzzy_clusters([r.name for r in rows], [r.type for r in rows]), gold
        ),
    }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--errors", action="store_true")
    parser.add_argument("--end-to-end", action="store_true")
    parser.add_argument("--uri", help="an existing Neo4j (its database is wiped)")
    args = parser.parse_args()
    rows = load(args.data)
    if args.end_to_end:
        from resolve_end_to_end import resolve_through_ingest

        predicted = resolve_through_ingest(rows, args.uri)
        label = "ours, kg ingest --triplets"
    else:
        predicted = in_process(rows)
        label = "ours, in process"
    print(f"{len(rows)} mentions, {len({r.cluster for r in rows})} gold clusters ({args.data})")
    print(table(report(rows, predicted, label)))
    print(f"cross-language recall: {cross_language_recall(rows, predicted):.3f}")
    if args.errors:
        print(errors(rows, predicted))


if __name__ == "__main__":
    main()
