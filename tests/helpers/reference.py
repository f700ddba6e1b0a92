"""A short, independent pure-Python NDCG, written from the formulas and the conventions of
pipeline/registry/'s docstring (trec_eval's by default).

It shares no code with the package, so agreement with it is evidence, not tautology. Run rows
are ``(query, doc, score)`` or ``(query, doc, score, rank)``; a row's position in the list is
its arrival.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable


def relevant(label: float, threshold: float | None) -> bool:
    return label > 0 if threshold is None else label >= threshold


def gain(
    label: float | None,
    kind: str = "linear",
    levels: dict[float, float] | None = None,
    threshold: float | None = None,
) -> float:
    if label is None or label < 0:
        return 0.0
    if levels and float(label) in levels:
        return levels[float(label)]
    if kind == "binary":
        return 1.0 if relevant(label, threshold) else 0.0
    return 2.0**label - 1.0 if kind == "exponential" else float(label)


def discount(rank: int, kind: str = "log2", base: float = 2.0) -> float:
    if kind == "jk":
        return 1.0 if rank <= base else 1.0 / math.log(rank, base)
    return 1.0 / math.log2(rank + 1)


def dcg(gains: list[float], k: int | None, kind: str = "log2", base: float = 2.0) -> float:
    cut = gains if k is None else gains[:k]
    return sum(g * discount(i, kind, base) for i, g in enumerate(cut, start=1))


def tie_averaged(scores: list[float], gains: list[float], k: int | None, kind: str, base: float) -> tuple[float, float]:
    """(CG, DCG) when each group of equal scores shares its mean gain: the group's mean gain
    times the sum of the discounts of the positions it occupies, cut at k."""
    cg = total = 0.0
    start = 0
    while start < len(scores):
        end = start
        while end + 1 < len(scores) and scores[end + 1] == scores[start]:
            end += 1
        mean = sum(gains[start : end + 1]) / (end - start + 1)
        last = end + 1 if k is None else min(end + 1, k)  # 1-based last position counted
        positions = range(start + 1, last + 1)
        cg += mean * len(positions)
        total += mean * sum(discount(p, kind, base) for p in positions)
        start = end + 1
    return cg, total


def _keep_one_per_doc(rows: list[tuple], duplicates: str, retrieved_scores: str = "all") -> list[tuple]:
    """rows are (arrival, doc, score, rank); keep the first, or the best-scored then first; then
    under retrieved_scores "positive" only a kept row scored above 0 (torchmetrics' preds > 0)."""
    kept: dict = {}
    for row in rows:
        _, doc, score, _ = row
        if doc not in kept or (duplicates == "max-score" and score > kept[doc][2]):
            kept[doc] = row
        elif duplicates == "error":
            raise ValueError(f"duplicate {doc!r}")
    return sorted(row for row in kept.values() if retrieved_scores == "all" or row[2] > 0)


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
    ties: str = "docid-desc",
    ideal: str = "judged",
    empty_ideal: str = "zero",
    unjudged: str = "zero",
    duplicates: str = "error",
    relevance_threshold: float | None = None,
    queries_without_judgments: str = "skip",
    retrieved_scores: str = "all",
) -> dict[tuple, tuple[float, float, float, float | None]]:
    """{(query_id, k): (cg, dcg, idcg, ndcg)}; k None is the whole ranking."""
    labels: dict = defaultdict(dict)
    for query_id, doc_id, label in qrels:
        labels[query_id][doc_id] = label
    results: dict = defaultdict(list)
    for arrival, row in enumerate(run):
        query_id, doc_id, score = row[:3]
        rank = row[3] if len(row) > 3 else None
        results[query_id].append((arrival, doc_id, score, rank))
    # a run query without judgments judges nothing: every document unjudged, no ideal
    queries = [q for q in results if q in labels or queries_without_judgments == "evaluate"]
    if all_queries:
        queries += [q for q in labels if q not in results]

    def gain_of(label: float | None) -> float:
        return gain(label, gain_kind, levels, relevance_threshold)

    rules = {
        "discount_kind": discount_kind,
        "base": base,
        "max_results": max_results,
        "ideal": ideal,
        "empty_ideal": empty_ideal,
        "unjudged": unjudged,
    }

    table = {}
    for query_id in dict.fromkeys(queries):
        ordered = table_order(_keep_one_per_doc(results.get(query_id, []), duplicates, retrieved_scores), ties)
        scored = score_order(
            ordered, labels[query_id], [None, *cutoffs], gain_of, average_ties=ties == "average", **rules
        )
        table.update({(query_id, k): values for k, values in scored.items()})
    return table


def score_order(
    ordered: list[tuple],
    labels: dict,
    cutoffs: list[int | None],
    gain_of: Callable[[float | None], float],
    *,
    average_ties: bool,
    discount_kind: str,
    base: float,
    max_results: int | None,
    ideal: str,
    empty_ideal: str,
    unjudged: str,
) -> dict:
    """{k: (cg, dcg, idcg, ndcg)} of one query's results in the given order."""
    if max_results is not None:
        ordered = ordered[:max_results]
    if unjudged == "drop":
        # unjudged: not in the qrels, or labelled below 0
        ordered = [r for r in ordered if labels.get(r[1], -1) >= 0]
    scores = [r[2] for r in ordered]
    gains = [gain_of(labels.get(r[1])) for r in ordered]
    pool = gains if ideal == "retrieved" else [gain_of(v) for v in labels.values()]
    ideal_gains = sorted((g for g in pool if g > 0), reverse=True)
    if ideal == "judged-cut-at-hits":
        ideal_gains = ideal_gains[: len(ordered)]
    out = {}
    for k in cutoffs:
        if average_ties:
            cg, d = tie_averaged(scores, gains, k, discount_kind, base)
        else:
            cg, d = sum(gains if k is None else gains[:k]), dcg(gains, k, discount_kind, base)
        i = dcg(ideal_gains, k, discount_kind, base)
        if i > 0:
            score: float | None = d / i
        else:
            score = {"zero": 0.0, "one": 1.0, "nan": math.nan, "skip": None}[empty_ideal]
        out[k] = (cg, d, i, score)
    return out


def tie_bounds_table(
    run: list[tuple],
    qrels: list[tuple],
    cutoffs: list[int],
    **options: object,
) -> dict[tuple, tuple[float | None, float | None, bool | None]]:
    """{(query_id, k): (ndcg_min, ndcg_max, ties_straddle_k)} by brute force: every order of
    every group of tied results is scored, and the lowest and highest NDCG kept. Ties are
    equal scores, or equal (input rank, score) under input-order ties. Same options as
    :func:`ndcg_table`; small inputs only (the orders multiply)."""
    table = ndcg_table(run, qrels, cutoffs, **options)  # type: ignore[arg-type]
    ties = options.get("ties", "docid-desc")
    labels, results = by_query(run, qrels)
    rules = {name: options.get(name, default) for name, default in RULE_DEFAULTS.items()}
    levels = options.get("levels")
    threshold = options.get("relevance_threshold")

    def gain_of(label: float | None) -> float:
        return gain(label, options.get("gain_kind", "linear"), levels, threshold)  # type: ignore[arg-type]

    def tie_key(row: tuple) -> tuple:
        return (row[3] is None, row[3] or 0, -row[2]) if ties == "input-order" else (-row[2],)

    bounds = {}
    for query_id in {q for q, _ in table}:
        one_per_doc = _keep_one_per_doc(
            results.get(query_id, []),
            options.get("duplicates", "error"),  # type: ignore[arg-type]
            options.get("retrieved_scores", "all"),  # type: ignore[arg-type]
        )
        rows = sorted(one_per_doc, key=tie_key)
        groups = [list(group) for _, group in itertools.groupby(rows, key=tie_key)]
        lowest: dict = {}
        highest: dict = {}
        for choice in itertools.product(*(itertools.permutations(group) for group in groups)):
            ordered = [row for group in choice for row in group]
            scored = score_order(ordered, labels[query_id], [None, *cutoffs], gain_of, average_ties=False, **rules)
            for k, (_, _, _, value) in scored.items():
                if value is None or math.isnan(value):
                    lowest[k] = highest[k] = value
                    continue
                lowest[k] = value if k not in lowest else min(lowest[k], value)
                highest[k] = value if k not in highest else max(highest[k], value)
        # the ranking as the ties convention orders it, to find the ties across each cutoff
        kept = table_order(rows, ties)
        if options.get("max_results") is not None:
            kept = kept[: options["max_results"]]  # type: ignore[misc]
        if rules["unjudged"] == "drop":
            kept = [r for r in kept if labels[query_id].get(r[1], -1) >= 0]
        for k in [None, *cutoffs]:
            straddles = None if k is None else (k < len(kept) and tie_key(kept[k - 1]) == tie_key(kept[k]))
            bounds[(query_id, k)] = (
                lowest.get(k, table[(query_id, k)][3]),
                highest.get(k, table[(query_id, k)][3]),
                straddles,
            )
    return bounds


def table_order(rows: list[tuple], ties: str) -> list[tuple]:
    """The rows as ``ties`` ranks them: input rank ascending (missing last), then score
    descending, then arrival (input-order); or score descending, then doc_id as a string
    ascending (docid-asc) or descending (the others; Python compares strings by code point,
    which is UTF-8's byte order)."""
    if ties == "input-order":
        return sorted(rows, key=lambda r: (r[3] is None, r[3] or 0, -r[2], r[0]))
    if ties == "docid-asc":
        return sorted(rows, key=lambda r: (-r[2], str(r[1])))
    return sorted(rows, key=lambda r: (r[2], str(r[1])), reverse=True)


RULE_DEFAULTS: dict[str, object] = {
    "discount_kind": "log2",
    "base": 2.0,
    "max_results": None,
    "ideal": "judged",
    "empty_ideal": "zero",
    "unjudged": "zero",
}


def summary(table: dict[tuple, tuple[float, float, float, float | None]]) -> dict:
    """{k: (queries, cg, dcg, idcg, ndcg)}: means over the queries whose ndcg is not None."""
    by_k: dict = defaultdict(list)
    for (_, k), values in table.items():
        if values[3] is not None:
            by_k[k].append(values)
    ks = {k for _, k in table}
    out = {}
    for k in ks:
        rows = by_k.get(k, [])
        means = [sum(r[i] for r in rows) / len(rows) if rows else None for i in range(4)]
        out[k] = (len(rows), *means)
    return out


def by_query(run: list[tuple], qrels: list[tuple]) -> tuple[dict, dict]:
    """The judgments as ``{query: {doc: label}}`` and the results as ``{query: [(arrival, doc,
    score, input rank or None)]}``, in arrival order."""
    labels: dict = defaultdict(dict)
    for query_id, doc_id, label in qrels:
        labels[query_id][doc_id] = label
    results: dict = defaultdict(list)
    for arrival, row in enumerate(run):
        results[row[0]].append((arrival, row[1], row[2], row[3] if len(row) > 3 else None))
    return labels, results


def err_table(
    run: list[tuple],
    qrels: list[tuple],
    cutoffs: list[int],
    *,
    err_max_grade: int = 4,
    all_queries: bool = False,
    max_results: int | None = None,
    ties: str = "docid-desc",
    unjudged: str = "zero",
    duplicates: str = "error",
    queries_without_judgments: str = "skip",
    retrieved_scores: str = "all",
    **ignored: object,
) -> dict[tuple, float]:
    """{(query_id, k): ERR@k} (k None: the whole ranking), as gdeval.pl's err loop computes it
    (Chapelle et al. 2009): a reader stops at rank i with probability R = (2^label - 1) /
    2^err_max_grade (0 for a label <= 0 or none), and ERR@k = sum over i <= k of R(i) / i times
    the chance of reaching i; NaN from a rank labelled above err_max_grade on (R past 1). Ties
    under ``average`` are ordered by doc_id descending, as under
    ``docid-desc``; ``ignored`` are the options that do not change ERR (gain, discount, ...)."""
    labels: dict = defaultdict(dict)
    for query_id, doc_id, label in qrels:
        labels[query_id][doc_id] = label
    results: dict = defaultdict(list)
    for arrival, row in enumerate(run):
        results[row[0]].append((arrival, row[1], row[2], row[3] if len(row) > 3 else None))
    queries = [q for q in results if q in labels or queries_without_judgments == "evaluate"]
    if all_queries:
        queries += [q for q in labels if q not in results]
    table = {}
    for query_id in dict.fromkeys(queries):
        ordered = table_order(_keep_one_per_doc(results.get(query_id, []), duplicates, retrieved_scores), ties)
        if max_results is not None:
            ordered = ordered[:max_results]
        judged = labels.get(query_id, {})
        if unjudged == "drop":
            ordered = [r for r in ordered if judged.get(r[1], -1) >= 0]
        stops = [_stop_chance(judged.get(r[1]), err_max_grade) for r in ordered]
        for k in [None, *cutoffs]:
            score, reach = 0.0, 1.0
            for i, stop in enumerate(stops if k is None else stops[:k], start=1):
                score += stop * reach / i
                reach *= 1.0 - stop
            table[(query_id, k)] = score
    return table


def _stop_chance(label: float | None, err_max_grade: int) -> float:
    if label is None or label <= 0:
        return 0.0
    return math.nan if label > err_max_grade else (2.0**label - 1.0) / 2.0**err_max_grade
