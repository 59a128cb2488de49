"""Entity-resolution throughput: ours at 10k/100k/1M synthetic mentions vs all-pairs fuzzy.

Run:
    .venv/bin/python bench/resolve_bench.py                      # 10k, 100k, 1M + baseline at 10k
    .venv/bin/python bench/resolve_bench.py --sizes 10000 --baseline-sizes 10000
    .venv/bin/python bench/resolve_bench.py --mode crossover     # flat vs HNSW k-NN timing

Every size runs in its own subprocess so peak RSS (``ru_maxrss``, which sees FAISS and numpy,
unlike tracemalloc) belongs to that size alone. Mentions are generated deterministically: made-up
component names in several spelling conventions (PascalCase, kebab, snake, ``svc``), typos and
some Cyrillic transliterations, with a skewed entity frequency. Resolution quality against the
generator's gold labels is printed too. The baseline is neo4j-graphrag's FuzzyMatchResolver
approach: rapidfuzz WRatio over all pairs within a label (multi-threaded ``cdist``), connected
components at >= 0.8. Only what ran is reported; nothing is extrapolated.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kg.models import Mention
from kg.resolve import HashingEmbedder, Resolver, make_embedder
from kg.resolve.evaluate import fuzzy_clusters, quality
from kg.resolve.index import knn
from kg.settings import ResolveSettings

SYLLABLES = [
    "ka", "ro", "mi", "te", "lu", "san", "dor", "vel", "pi", "nor", "zen", "bar", "fo", "lin",
    "gra", "tor", "mes", "ul", "ri", "da", "vo", "sim", "pel", "kor", "na", "bi", "sol", "ter",
]  # fmt: skip
SUFFIXES = ["Service", "DB", "Gateway", "Worker", "", "", "Api", "Store"]
TYPES = ["Service", "Database", "Technology", "Team", "Product"]
LAT2CYR = str.maketrans(
    {"a": "а", "b": "б", "d": "д", "e": "е", "f": "ф", "g": "г", "i": "и", "k": "к", "l": "л",
     "m": "м", "n": "н", "o": "о", "p": "п", "r": "р", "s": "с", "t": "т", "u": "у", "v": "в",
     "z": "з"}
)  # fmt: skip


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def _entities(count: int, rng: random.Random) -> list[tuple[list[str], str, str]]:
    seen: set[str] = set()
    out: list[tuple[list[str], str, str]] = []
    while len(out) < count:
        words = [_word(rng) for _ in range(rng.randint(1, 2))]
        suffix = rng.choice(SUFFIXES)
        key = " ".join(words) + "|" + suffix
        if key in seen:
            continue
        seen.add(key)
        out.append((words, suffix, rng.choice(TYPES)))
    return out


def _variant(words: list[str], suffix: str, rng: random.Random) -> str:
    parts = list(words)
    if rng.random() < 0.08:  # a typo: two neighbouring letters swapped in a long word
        i = rng.randrange(len(parts))
        w = parts[i]
        if len(w) >= 6:
            j = rng.randrange(1, len(w) - 2)
            parts[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    tail = {"Service": rng.choice(["Service", "svc", "service"]), "DB": rng.choice(["DB", "db"])}
    end = [tail.get(suffix, suffix)] if suffix else []
    style = rng.random()
    if style < 0.05:
        return " ".join(parts).translate(LAT2CYR) + (" " + end[0] if end else "")
    if style < 0.35:
        return "".join(p.capitalize() for p in parts + end)
    if style < 0.55:
        return "-".join(p.lower() for p in parts + end)
    if style < 0.70:
        return "_".join(p.lower() for p in parts + end)
    return " ".join(p.capitalize() for p in parts + end)


def generate(n: int, seed: int = 7) -> tuple[list[Mention], list[int]]:
    """``n`` mentions of ``n // 10`` entities, skewed so some entities are mentioned often."""
    rng = random.Random(seed)
    entities = _entities(max(1, n // 10), rng)
    mentions: list[Mention] = []
    gold: list[int] = []
    for _ in range(n):
        index = int(len(entities) * rng.random() ** 2)
        words, suffix, etype = entities[index]
        mentions.append(Mention(_variant(words, suffix, rng), etype))
        gold.append(index)
    return mentions, gold


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str, n: int) -> dict[str, object]:
    mentions, gold = generate(n)
    base_rss = _rss_mb()
    cpu_start = _cpu_s()
    start = time.perf_counter()
    if kind == "ours":
        settings = ResolveSettings()
        res = Resolver(settings, make_embedder(settings)).resolve(mentions)
        labels: list[object] = list(res.entity_ids)
        extra: dict[str, object] = {
            "groups": res.stats.groups,
            "entities": res.stats.entities,
            "index": res.stats.index,
            "phases": res.stats.seconds,
        }
    else:
        labels = list(fuzzy_clusters([m.name for m in mentions], [m.type for m in mentions]))
        extra = {"entities": len(set(labels))}
    seconds = time.perf_counter() - start
    cpu = _cpu_s() - cpu_start
    q = quality(labels, gold)  # type: ignore[arg-type]
    return {
        "kind": kind,
        "mentions": n,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_rss_mb": round(_rss_mb(), 0),
        "rss_before_mb": round(base_rss, 0),
        "pairwise_p": round(q.precision, 3),
        "pairwise_r": round(q.recall, 3),
        "pairwise_f1": round(q.f1, 3),
        "bcubed_f1": round(q.bcubed_f1, 3),
        **extra,
    }


def run_child(kind: str, n: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def crossover(sizes: list[int]) -> None:
    """Time flat vs HNSW all-rows k-NN (k=11) on synthetic name vectors."""
    print("| rows | flat s | hnsw s |")
    print("|---|---|---|")
    embedder = HashingEmbedder(256)
    for n in sizes:
        mentions, _ = generate(n * 3)
        names = list(dict.fromkeys(m.name for m in mentions))[:n]
        vectors = embedder.embed(names)
        times = []
        for above in (len(vectors) + 1, 0):
            start = time.perf_counter()
            knn(vectors, 11, approximate_above=above)
            times.append(time.perf_counter() - start)
        print(f"| {len(vectors)} | {times[0]:.2f} | {times[1]:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["throughput", "crossover"], default="throughput")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--baseline-sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    if args.mode == "crossover":
        crossover(args.sizes if args.sizes != [10_000, 100_000, 1_000_000] else
                  [5_000, 10_000, 20_000, 40_000, 80_000])  # fmt: skip
        return
    import os

    print(f"cpus={os.cpu_count()} numpy={np.__version__}")
    ours = {n: run_child("ours", n) for n in args.sizes}
    base = {n: run_child("fuzzy", n) for n in args.baseline_sizes}
    print(
        "| mentions | method | wall s | CPU s | peak RSS MB | groups | entities | index "
        "| pairwise P | pairwise R | pairwise F1 | B³ F1 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sorted(set(ours) | set(base)):
        for r in (ours.get(n), base.get(n)):
            if r is None:
                continue
            name = "ours" if r["kind"] == "ours" else "all-pairs WRatio (neo4j-graphrag)"
            print(
                f"| {n:,} | {name} | {r['seconds']} | {r['cpu_seconds']} | "
                f"{r['peak_rss_mb']:.0f} | {r.get('groups', '-')} | {r['entities']} | "
                f"{r.get('index', '-')} | {r['pairwise_p']} | {r['pairwise_r']} | "
                f"{r['pairwise_f1']} | {r['bcubed_f1']} |"
            )
            if "phases" in r:
                print(f"<!-- {n:,} ours phases (wall s): {r['phases']} -->")
        if n in ours and n in base:
            ratio = float(base[n]["seconds"]) / max(float(ours[n]["seconds"]), 1e-9)  # type: ignore[arg-type]
            print(f"| {n:,} | speed-up, wall (all-pairs / ours) | {ratio:.1f}x | | | | | | | | | |")


if __name__ == "__main__":
    main()
