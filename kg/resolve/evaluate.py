"""Quality of a clustering against gold labels, and the two baselines we compare with.

Why here: the benchmark script, the quality floor test and docs all need the same metrics.

- Pairwise precision/recall/F1: over all mention pairs, "same cluster" vs "same gold entity".
- B-cubed F1: per-mention precision/recall of its cluster, averaged (less dominated by big
  clusters than pairwise).
- ``exact_name_clusters``: identical name string, after uppercasing, is one node; types are not
  looked at (Microsoft GraphRAG merges entities by upper-cased title; LightRAG by name).
- ``fuzzy_clusters``: neo4j-graphrag's FuzzyMatchResolver: within one label, rapidfuzz WRatio
  (default processor) >= 0.8, connected components.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process, utils


@dataclass(frozen=True)
class Quality:
    """Pairwise and B-cubed scores of one clustering."""

    precision: float
    recall: float
    f1: float
    bcubed_precision: float
    bcubed_recall: float
    bcubed_f1: float
    clusters: int


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def quality(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> Quality:
    """Compare a predicted cluster label per mention with the gold label per mention."""
    if len(predicted) != len(gold):
        raise ValueError("one predicted and one gold label per mention")
    joint = Counter(zip(predicted, gold, strict=True))
    pred_sizes = Counter(predicted)
    gold_sizes = Counter(gold)

    def pairs(n: int) -> int:
        return n * (n - 1) // 2

    tp = sum(pairs(n) for n in joint.values())
    pred_pairs = sum(pairs(n) for n in pred_sizes.values())
    gold_pairs = sum(pairs(n) for n in gold_sizes.values())
    precision = tp / pred_pairs if pred_pairs else 1.0
    recall = tp / gold_pairs if gold_pairs else 1.0
    total = len(predicted)
    b_p = sum(n * n / pred_sizes[p] for (p, _), n in joint.items()) / total if total else 1.0
    b_r = sum(n * n / gold_sizes[g] for (_, g), n in joint.items()) / total if total else 1.0
    return Quality(
        precision, recall, _f1(precision, recall), b_p, b_r, _f1(b_p, b_r), len(pred_sizes)
    )


def exact_name_clusters(names: Sequence[str]) -> list[str]:
    """GraphRAG/LightRAG style: the upper-cased, trimmed name is the node."""
    return [name.strip().upper() for name in names]


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def fuzzy_clusters(
    names: Sequence[str], types: Sequence[str], threshold: float = 0.8
) -> list[tuple[str, int]]:
    """All pairs within a type, WRatio >= threshold, connected components (union-find)."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for name, etype in zip(names, types, strict=True):
        by_type[etype].append(name)
    label: dict[tuple[str, str], tuple[str, int]] = {}
    for etype, members in by_type.items():
        unique = sorted(set(members))
        parent = list(range(len(unique)))

        scores = process.cdist(
            unique,
            unique,
            scorer=fuzz.WRatio,
            processor=utils.default_process,
            score_cutoff=threshold * 100,
            dtype=np.uint8,
            workers=-1,
        )
        rows, cols = np.nonzero(scores)
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            if i < j:
                a, b = _find(parent, i), _find(parent, j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        for i, name in enumerate(unique):
            label[(name, etype)] = (etype, _find(parent, i))
    return [label[(n, t)] for n, t in zip(names, types, strict=True)]
