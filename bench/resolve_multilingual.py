"""Entity resolution across Russian and English: the aliases-ru-dev gold set, scored pairwise.

    .venv/bin/python bench/resolve_multilingual.py                 # in process (the Resolver)
    .venv/bin/python bench/resolve_multilingual.py --errors        # and what is split / merged
    .venv/bin/python bench/resolve_multilingual.py --end-to-end    # through `kg ingest --triplets`
    .venv/bin/python bench/resolve_multilingual.py --steps         # each rule added in turn
    .venv/bin/python bench/resolve_multilingual.py --adjudication  # the LLM's uncertain band

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
import re
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


def steps(rows: list[Row]) -> str:
    """P / R / F1 with the Russian-English rules switched on one after another (in process).

    Each rule is switched off by replacing the function that computes it for this process
    only, so the figures are those of the shipped code with less of it, not of another one.
    """
    from kg.resolve import persons, russian
    from kg.resolve import score as score_module
    from kg.resolve.concept import ConceptKeys

    gold = [r.cluster for r in rows]
    nominative, readings, concept = (
        russian.Morphology.nominative,
        persons.readings,
        ConceptKeys.key,
    )

    def switch(morphology: bool, people: bool, concepts: bool) -> None:
        russian.Morphology.nominative = nominative if morphology else staticmethod(str)  # type: ignore[method-assign,assignment]
        persons.readings = readings if people else (lambda text: ())  # type: ignore[assignment]
        score_module.readings = persons.readings  # type: ignore[attr-defined]
        ConceptKeys.key = concept if concepts else (lambda self, name: ())  # type: ignore[method-assign]

    lines = ["| step | P | R | F1 | cross-language R |", "|---|---|---|---|---|"]
    for label, flags in (
        ("round 3's rules (with this round's abbreviation and homoglyph rules)", (0, 0, 0)),
        ("+ Russian morphology (the nominative)", (1, 0, 0)),
        ("+ person names (surname and initials)", (1, 1, 0)),
        ("+ concept key (lexicon, known short names): the default", (1, 1, 1)),
    ):
        switch(*map(bool, flags))
        predicted = in_process(rows)
        q = quality(predicted, gold)
        lines.append(
            f"| {label} | {q.precision:.3f} | {q.recall:.3f} | {q.f1:.3f} | "
            f"{cross_language_recall(rows, predicted):.3f} |"
        )
    return "\n".join(lines)


def adjudication(rows: list[Row]) -> str:
    """With ``resolve.llm_adjudication`` on, how many pairs the LLM is asked, and what a
    perfect and a refusing LLM would make of them.

    No LLM is reachable here: the answers come from the scripted OpenAI-compatible server on
    loopback (tests/fakellm.py), through the real instructor client. "gold" answers *same*
    exactly when the two names are of one gold cluster (an upper bound on what an LLM adds);
    "no" always refuses (the rules' own figure, with the calls it costs).
    """
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from kg.resolve import LLMAdjudicator
    from tests.fakellm import Reply, ScriptedLLM

    cluster_of = {(r.name, r.type): r.cluster for r in rows}
    name_line = re.compile(r"^name: (.*)$", re.MULTILINE)
    type_line = re.compile(r"^type: (.*)$", re.MULTILINE)

    def gold(request: dict[str, object]) -> Reply:
        messages = request["messages"]
        assert isinstance(messages, list)
        prompt = str(messages[-1]["content"])
        names, types = name_line.findall(prompt), type_line.findall(prompt)
        same = len({cluster_of.get((n, t)) for n, t in zip(names, types, strict=False)}) == 1
        return Reply(payload={"same": same, "reason": "gold"})

    lines = ["| LLM answers | calls | calls per 20 mentions | P | R | F1 | cross-language R |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for label, responder in (
        ("gold (upper bound)", gold),
        ("no (the rules alone)", lambda _r: Reply(payload={"same": False, "reason": "no"})),
    ):
        with ScriptedLLM() as llm:
            llm.responder = responder
            settings = ResolveSettings(llm_adjudication=True)
            judge = LLMAdjudicator(base_url=llm.base_url, api_key="x", model="scripted")
            resolver = Resolver(settings, make_embedder(settings), judge)
            mentions = [Mention(r.name, r.type, description=r.context) for r in rows]
            predicted = resolver.resolve(mentions).entity_ids
            calls = llm.calls
        q = quality(predicted, [r.cluster for r in rows])
        lines.append(
            f"| {label} | {calls} | {20 * calls / len(rows):.2f} | {q.precision:.3f} | "
            f"{q.recall:.3f} | {q.f1:.3f} | {cross_language_recall(rows, predicted):.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--errors", action="store_true")
    parser.add_argument("--end-to-end", action="store_true")
    parser.add_argument("--uri", help="an existing Neo4j (its database is wiped)")
    parser.add_argument("--steps", action="store_true", help="each rule added in turn")
    parser.add_argument("--adjudication", action="store_true", help="the LLM's uncertain band")
    args = parser.parse_args()
    rows = load(args.data)
    if args.steps:
        print(steps(rows))
        return
    if args.adjudication:
        print(adjudication(rows))
        return
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
