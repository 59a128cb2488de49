"""Hybrid's fusion rules compared offline on the four dev sets, over the same signal rankings.

    .venv/bin/python bench/fusion_offline.py --collect rankings.pkl   # ~10 min: four ingests
    .venv/bin/python bench/fusion_offline.py --rankings rankings.pkl  # the table, seconds
    .venv/bin/python bench/fusion_offline.py --collect r.pkl --variant w1:fact_weight=1.0
    .venv/bin/python bench/fusion_offline.py --collect m.pkl --sets musique   # one set
    .venv/bin/python bench/fusion_offline.py --rankings m.pkl r.pkl           # joined

``--variant NAME:KEY=JSON,...`` ranks with the graph signal again under other search settings
on the same ingest (``graph@NAME``), alone and fused in the chosen hybrid: a graph setting's
values compared on all four sets at the cost of one ingest each.

``--collect`` ingests each dev set of bench/retrieval_quality.py into a throwaway local Neo4j
(or ``--uri``, whose database is wiped), asks each local signal (text, vector, graph) for its
top 50 chunks per question, exactly as ``hybrid`` asks them (depth 2, no translation), and
keeps the rankings with their scores and the graph's fusion scale. The second form fuses
them with each rule below as kg.search.fusion does and scores the top 20 as
retrieval_quality.py does: R@2 / R@5 (docs: sec@3 / R@5 of the file), and the mean over the
sets with XQuAD's two scenarios counted once. Every rule sees the same rankings, so a
difference is the rule's alone. docs/search.md ("Hybrid") gives the figures behind the
defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.retrieval_quality as rq
from kg.search.fusion import confidence_weights, document_evidence, fused_order, vector_floor
from kg.search.models import ChunkHit
from kg.settings import Settings

# per set, per question: signal -> ([(chunk id, score, document path, text)], fusion scale)
Rankings = dict[str, list[dict[str, tuple[list[tuple[str, float, str, str]], float | None]]]]
Rule = Callable[[Mapping[str, list[tuple[str, float, str, str]]], Mapping[str, float | None]],
                list[str]]  # fmt: skip


def dev_sets() -> list[rq.DevSet]:
    return [rq.hotpotqa(None), *rq.xquad(None), rq.docs(None), rq.vue_ru(None),
            rq.musique(rq.MUSIQUE, None)]  # fmt: skip


async def _signals(
    settings: Settings, dev: rq.DevSet, variants: Mapping[str, list[str]]
) -> list[dict[str, Any]]:
    """Each signal's ranking per question; for each variant (search settings overridden), the
    graph signal's ranking again, as ``graph@NAME``."""
    from kg.client import search_service
    from kg.cypher.params import GraphEvidenceParams
    from kg.graph.driver import open_async_driver
    from kg.search.models import SearchRequest
    from kg.search.signals.base import SignalQuery

    driver = open_async_driver(settings.neo4j)
    try:
        service = search_service(driver, settings)
        await service.startup()
        signals = dict(service._signals)  # a benchmark's look
        for name, pairs in variants.items():
            other = search_service(driver, rq.with_overrides(settings, pairs))
            signals[f"graph@{name}"] = other._signals["graph"]
        rows = []
        for q in dev.questions:
            req = SearchRequest(query=q.text, mode="hybrid", depth=2, limit=rq.LIMIT)
            # as hybrid asks them: the vector signal beside the graph's counts (kept vectors)
            stamp = asyncio.get_running_loop().create_future()
            stamp.set_result(await service.context.names.counts())
            query = SignalQuery(
                request=req, k=settings.search.candidates, translations={}, linked_stamp=stamp
            )
            found = {name: await signal.search(query) for name, signal in signals.items()}
            # The graph signal ranks ids only (the service reads the texts it shows): read the
            # documents and texts of every ranked chunk here, to score them.
            ids = sorted({c.id for r in found.values() if not r.texts for c in r.chunks})
            params = GraphEvidenceParams.model_construct(chunk_ids=ids, entity_ids=[], limit=1000)
            read = (await service.guard.run("graph_evidence", params)).rows if ids else []
            texts = {str(r["id"]): (str(r.get("document_path") or ""), str(r.get("text") or ""))
                     for r in read}  # fmt: skip
            per = {}
            for name, r in found.items():
                hits = [(c.id, c.score, *texts.get(c.id, (c.document_path, c.text)))
                        for c in r.chunks]  # fmt: skip
                per[name] = (hits, r.fusion_scale)
            rows.append(per)
        return rows
    finally:
        await driver.close()


def collect(
    path: Path,
    uri: str | None,
    password: str | None,
    variants: Mapping[str, list[str]],
    sets: Sequence[str] = rq.SET_NAMES,
) -> None:
    from kg.localserver import throwaway_server

    out: Rankings = {}
    with contextlib.ExitStack() as stack:
        if uri:
            settings = Settings(neo4j={"uri": uri, "password": password})
        else:
            settings = stack.enter_context(
                throwaway_server(password="kg-bench-password", heap="1g", pagecache="512m")
            )
        for dev in dev_sets():
            if dev.name.split()[0] not in sets:
                continue
            rq.wipe(settings)
            started = time.perf_counter()
            print(f"[{dev.name}] ingest: {dev.ingest(settings)}", flush=True)
            out[dev.name] = asyncio.run(_signals(settings, dev, variants))
            print(f"[{dev.name}] ranked in {time.perf_counter() - started:.0f} s", flush=True)
    path.write_bytes(pickle.dumps(out))


def single(name: str) -> Rule:
    return lambda rankings, _scales: [c[0] for c in rankings[name]]


def hybrid(
    *,
    k: int | None = None,
    lead_rank: int = 3,
    floor: float = 0.75,
    graph: str = "graph",
    dense_floor: float | None = None,
    doc_weight: float | None = None,
) -> Rule:
    """kg's rule with these settings, through kg's own functions (confidence_weights, then
    fuse); ``graph`` names the graph ranking to fuse (``graph@NAME``: a collected variant's);
    ``dense_floor``: the vector signal's floor (None: kg's for the configured embedder)."""
    settings = Settings()
    base = settings.search.fusion_weights
    k = settings.search.fusion_k if k is None else k
    dense = vector_floor(settings.search, settings.chunks) if dense_floor is None else dense_floor
    if doc_weight is None:
        doc_weight = settings.search.fusion_document_weight

    def rule(
        rankings: Mapping[str, list[tuple[str, float, str, str]]],
        scales: Mapping[str, float | None],
    ) -> list[str]:
        rankings = {
            ("graph" if n == graph else n): r
            for n, r in rankings.items()
            if n in ("text", "vector", graph)
        }
        scales = {("graph" if n == graph else n): v for n, v in scales.items()}
        weights = {
            name: base.get(name, 0.0) * (1.0 if scales.get(name) is None else scales[name])
            for name in rankings
        }
        hits = {  # kg's rule reads only the ids and scores
            name: [ChunkHit.model_construct(id=c[0], score=c[1]) for c in ranked]
            for name, ranked in rankings.items()
        }
        weights = confidence_weights(
            hits, weights, lead_rank=lead_rank, anchor="text", anchor_floor=floor,
            floors={"vector": dense},
        )  # fmt: skip
        ids = {n: [c[0] for c in r] for n, r in rankings.items()}
        order = fused_order(ids, weights, k)
        if doc_weight:  # the document's path stands for its id
            documents = {c[0]: c[2] for r in rankings.values() for c in r}
            order = document_evidence(order, ids, weights, k, documents, doc_weight)
        return [cid for cid, _ in order]

    return rule


def evaluate(data: Rankings, rule: Rule) -> dict[str, tuple[float, float, dict[str, float]]]:
    devs = {d.name: d for d in dev_sets()}
    out = {}
    for name, rows in data.items():
        hits = []
        for per in rows:
            rankings = {n: r[0] for n, r in per.items()}
            info = {c[0]: c for ranked in rankings.values() for c in ranked}
            order = rule(rankings, {n: r[1] for n, r in per.items()})
            hits.append([rq.Hit(info[cid][2], info[cid][3]) for cid in order[: rq.LIMIT]])
        with contextlib.redirect_stdout(io.StringIO()):
            result = rq.score(devs[name], "x", hits, [0.0] * len(hits))
        out[name] = (result.r2, result.r5, dict(result.extra or {}))
    return out


def mean(figures: dict[str, tuple[float, float, dict[str, float]]], at: int) -> float:
    xquad = [v[at] for n, v in figures.items() if n.startswith("xquad")]
    rest = [v[at] for n, v in figures.items() if not n.startswith("xquad")]
    return statistics.fmean(rest + ([statistics.fmean(xquad)] if xquad else []))


RULES: Sequence[tuple[str, Rule]] = (
    ("`text` alone", single("text")),
    ("`vector` alone", single("vector")),
    ("`graph` alone", single("graph")),
    ("anchor floor 1 (always whole), k 2", hybrid(floor=1.0)),
    *((f"anchor floor {f}, k 2", hybrid(floor=f)) for f in (0.25, 0.5, 0.6, 0.7, 0.8, 0.9)),
    ("**chosen: anchor floor 0.75, k 2, lead rank 3, document evidence 3**", hybrid()),
    *(
        (f"chosen with document evidence {w}", hybrid(doc_weight=w))
        for w in (0.0, 1.0, 2.0, 5.0, 100.0)
    ),
    *((f"anchor floor 0.75, k {k}", hybrid(k=k)) for k in (1, 3, 4, 5, 10)),
    *((f"anchor floor 0.75, k 2, lead rank {r}", hybrid(lead_rank=r)) for r in (2, 4)),
    *(
        (f"anchor floor 0.75, k 2, vector floor {f}", hybrid(dense_floor=f))
        for f in (0.0, 0.5, 0.75, 1.0)
    ),
    ("anchor floor 0.5, vector floor 0.75, k 2", hybrid(floor=0.5, dense_floor=0.75)),
)


def variant_rules(data: Rankings) -> list[tuple[str, Rule]]:
    """``graph@NAME`` alone and in the chosen hybrid, for each collected variant."""
    first = next(iter(data.values()))[0]
    names = [n for n in first if n.startswith("graph@")]
    return [
        rule
        for n in names
        for rule in ((f"`{n}` alone", single(n)), (f"hybrid with `{n}`", hybrid(graph=n)))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collect", type=Path, help="ingest the sets and write the rankings")
    parser.add_argument(
        "--rankings", type=Path, nargs="+", help="fuse these rankings (joined) with each rule"
    )
    parser.add_argument(
        "--sets",
        default=",".join(rq.SET_NAMES),
        help="with --collect: a subset of " + ",".join(rq.SET_NAMES),
    )
    parser.add_argument("--uri", help="an existing Neo4j for --collect (its database is wiped)")
    parser.add_argument("--password")
    parser.add_argument(
        "--variant", action="append", default=[], metavar="NAME:KEY=JSON[,KEY=JSON]",
        help="with --collect: rank with the graph signal again under these search settings",
    )  # fmt: skip
    parser.add_argument("--extras", action="store_true", help="print each set's extra columns")
    args = parser.parse_args()
    variants = {
        name: pairs.split(",") for name, _, pairs in (v.partition(":") for v in args.variant)
    }
    chosen = [s.strip() for s in args.sets.split(",") if s.strip()]
    if unknown := set(chosen) - set(rq.SET_NAMES):
        parser.error(f"--sets: unknown {sorted(unknown)}; choose from {rq.SET_NAMES}")
    if args.collect:
        collect(args.collect, args.uri, args.password, variants, chosen)
    sources = args.rankings or ([args.collect] if args.collect else [])
    if not sources:
        parser.error("give --collect FILE, --rankings FILE..., or both")
    data: Rankings = {}
    for source in sources:
        data |= pickle.loads(source.read_bytes())
    names = list(data)
    print("| rule | " + " | ".join(names) + " | mean R@2 | mean R@5 |")
    print("|---" * (len(names) + 3) + "|")
    for label, rule in [*RULES, *variant_rules(data)]:
        figures = evaluate(data, rule)
        cells = " | ".join(f"{figures[n][0]:.1f} / {figures[n][1]:.1f}" for n in names)
        print(f"| {label} | {cells} | {mean(figures, 0):.1f} | {mean(figures, 1):.1f} |",
              flush=True)  # fmt: skip
        if args.extras:
            for name, (_, _, extra) in figures.items():
                if extra:
                    print(f"    {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in extra.items()))


if __name__ == "__main__":
    main()
