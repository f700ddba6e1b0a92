"""A short, independent pure-Python NDCG, written from the formulas and trec_eval's rules.

It shares no code with the package, so agreement with it is evidence, not tautology.
"""

from __future__ import annotations

import math
from collections import defaultdict


def gain(label: float | None, kind: str = "linear", levels: dict[float, float] | None = None) -> float:
    if label is None or label < 0:
        return 0.0
    if levels and float(label) in levels:
        return levels[float(label)]
    return 2.0**label - 1.0 if kind == "exponential" else float(label)


def discount(rank: int, kind: str = "log2", base: float = 2.0) -> float:
    if kind == "jk":
        return 1.0 if rank <= base else 1.0 / math.log(rank, base)
    return 1.0 / math.log2(rank + 1)


def dcg(gains: list[float], k: int | None, kind: str = "log2", base: float = 2.0) -> float:
    cut = gains if k is None else gains[:k]
    return sum(g * discount(i, kind, base) for i, g in enumerate(cut, start=1))


def ndcg_table(
    run: list[tuple],
    qrels: list[tuple],
    cutoffs: list[int],
    *,
    gain_kind: str = "linear",
    levels: dict[float, float] | None = None,
    discount_kind: str = "log2",
    base: float = 2.0,
    all_queries: bool = False,
    max_results: int | None = None,
) -> dict[tuple, tuple[float, float, float, float]]:
    """{(query_id, k): (cg, dcg, idcg, ndcg)}; k None is the whole ranking."""
    labels: dict = defaultdict(dict)
    for query_id, doc_id, label in qrels:
        labels[query_id][doc_id] = label
    results: dict = defaultdict(list)
    for query_id, doc_id, score in run:
        results[query_id].append((score, str(doc_id), doc_id))
    queries = [q for q in results if q in labels]
    if all_queries:
        queries += [q for q in labels if q not in results]
    table = {}
    for query_id in queries:
        ordered = sorted(results.get(query_id, []), reverse=True)  # score desc, then doc_id string desc
        if max_results is not None:
            ordered = ordered[:max_results]
        gains = [gain(labels[query_id].get(doc_id), gain_kind, levels) for _, _, doc_id in ordered]
        ideal = sorted(
            (g for g in (gain(v, gain_kind, levels) for v in labels[query_id].values()) if g > 0), reverse=True
        )
        for k in [None, *cutoffs]:
            d = dcg(gains, k, discount_kind, base)
            i = dcg(ideal, k, discount_kind, base)
            cg = sum(gains if k is None else gains[:k])
            table[(query_id, k)] = (cg, d, i, d / i if i > 0 else 0.0)
    return table
