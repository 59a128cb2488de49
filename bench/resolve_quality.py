"""Entity-resolution quality on the labelled alias dataset: ours vs two baselines.

Run: ``.venv/bin/python bench/resolve_quality.py [--errors] [--wordllama]``

Prints pairwise precision/recall/F1 and B-cubed F1 for
- ours: ``kg.resolve.Resolver`` with default settings (offline hashing embedder, no LLM);
- exact name (Microsoft GraphRAG / LightRAG: identical upper-cased name is one node);
- fuzzy all-pairs (neo4j-graphrag FuzzyMatchResolver: WRatio >= 0.8 within a label).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from kg.models import Mention
from kg.resolve import Embedder, Resolver, make_embedder
from kg.resolve.evaluate import Quality, exact_name_clusters, fuzzy_clusters, quality
from kg.settings import ResolveSettings

DATASET = Path(__file__).resolve().parent.parent / "tests" / "data" / "aliases" / "aliases.jsonl"


@dataclass(frozen=True)
class Row:
    mention: str
    type: str
    gold: str
    aliases: tuple[str, ...]


def load(path: Path = DATASET) -> list[Row]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            rows.append(Row(d["mention"], d["type"], d["gold_entity"], tuple(d.get("aliases", ()))))
    return rows


def ours(
    rows: list[Row], settings: ResolveSettings | None = None, embedder: Embedder | None = None
) -> list[str]:
    settings = settings or ResolveSettings()
    resolver = Resolver(settings, embedder or make_embedder(settings))
    mentions = [Mention(r.mention, r.type, aliases=r.aliases) for r in rows]
    return resolver.resolve(mentions).entity_ids


def evaluate(rows: list[Row]) -> dict[str, Quality]:
    gold = [r.gold for r in rows]
    return {
        "ours": quality(ours(rows), gold),
        "exact name (GraphRAG/LightRAG)": quality(
            exact_name_clusters([r.mention for r in rows]), gold
        ),
        "fuzzy WRatio>=0.8 (neo4j-graphrag)": quality(
            fuzzy_clusters([r.mention for r in rows], [r.type for r in rows]), gold
        ),
    }


def table(results: dict[str, Quality]) -> str:
    lines = [
        "| method | pairwise P | pairwise R | pairwise F1 | B³ P | B³ R | B³ F1 | clusters |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, q in results.items():
        lines.append(
            f"| {name} | {q.precision:.3f} | {q.recall:.3f} | {q.f1:.3f} | "
            f"{q.bcubed_precision:.3f} | {q.bcubed_recall:.3f} | {q.bcubed_f1:.3f} | {q.clusters} |"
        )
    return "\n".join(lines)


def errors(rows: list[Row]) -> str:
    """Wrongly merged and wrongly split gold entities, for reading, not for tuning."""
    pred = ours(rows)
    by_gold: dict[str, set[str]] = defaultdict(set)
    by_pred: dict[str, set[str]] = defaultdict(set)
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r, p in zip(rows, pred, strict=True):
        by_gold[r.gold].add(p)
        by_pred[p].add(r.gold)
        names[(r.gold, p)].add(r.mention)
    out = ["split (one gold entity, several clusters):"]
    for g, ps in sorted(by_gold.items()):
        if len(ps) > 1:
            out.append(f"  {g}: " + " | ".join(sorted("/".join(sorted(names[(g, p)])) for p in ps)))
    out.append("merged (one cluster, several gold entities):")
    for p, gs in sorted(by_pred.items()):
        if len(gs) > 1:
            out.append(f"  {p}: " + " | ".join(f"{g}: {sorted(names[(g, p)])}" for g in sorted(gs)))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--errors", action="store_true", help="list split and merged entities")
    parser.add_argument(
        "--wordllama",
        action="store_true",
        help="also resolve with WordLlama (the chunk embedder) as the entity embedder",
    )
    args = parser.parse_args()
    rows = load()
    print(f"{len(rows)} mentions, {len({r.gold for r in rows})} gold entities")
    results = evaluate(rows)
    if args.wordllama:
        from kg.resolve.wordllama import WordLlamaEmbedder

        gold = [r.gold for r in rows]
        results["ours, WordLlama names"] = quality(ours(rows, embedder=WordLlamaEmbedder()), gold)
    print(table(results))
    if args.errors:
        print(errors(rows))


if __name__ == "__main__":
    main()
