"""The counters stage (``sql/counters/``): where each signal holds, the running sums of the gains
and the running counts of the signals in rank order, read off at each cutoff, the evaluated
queries and their per-query counters.

The signals are the registry's data (:meth:`pipeline.registry.Signal.bounds`): a signal's
predicate over a rank's label is built from its bounds here, as ``sql/counters/signals.sql``
reads them from the variable ``signals``; this engine keeps them as columns, one per signal
asked, and counts them in the same pass over the ranking as its sums.
"""

from __future__ import annotations

import polars as pl

from pipeline.engines.polars.ranking import JUDGMENT, QUERY
from pipeline.expressions import discount
from pipeline.registry import COUNTER, Evaluation, Signal


def holds(signal: Signal, evaluation: Evaluation) -> pl.Expr:
    """Whether ``signal`` holds for each row's label (never for a null one: not judged)."""
    bounds = signal.bounds(evaluation.relevance_threshold)
    label = pl.col(JUDGMENT)
    condition = label.is_not_null()
    if bounds["low"] is not None:
        condition &= (label >= bounds["low"]) if bounds["low_closed"] else (label > bounds["low"])
    if bounds["high"] is not None:
        condition &= (label <= bounds["high"]) if bounds["high_closed"] else (label < bounds["high"])
    return condition


def signals(frame: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """``frame`` with a column per signal asked (named as the signal): whether it holds for the
    row's label. A rank of the ranking by score, or a judged document."""
    return frame.with_columns(holds(signal, evaluation).alias(signal.name) for signal in evaluation.signals)


def running_sums(ranking: pl.LazyFrame, evaluation: Evaluation, *, counted: bool = False) -> pl.LazyFrame:
    """``query_id, rank, next_rank, cg, dcg`` (and the signals counted): running sums in rank
    order, the same bits on every run (a parallel sum in arbitrary row order does not give
    that); ``next_rank`` says up to which cutoff a sum holds.

    With ``counted`` (``ranking`` has the signals' columns), also the rank counters the asked
    measures read (the registry's COUNTERS, each named ``<signal>_<accumulation>``), in the same
    pass: per signal, ``found`` (the ranks so far where it holds), ``precision_sum`` (found /
    rank summed over them) and ``first_rank`` (the first of them, null until one is found)."""

    def in_rank_order(expr: pl.Expr) -> pl.Expr:
        return expr.over(QUERY, order_by="rank")

    wanted = [
        COUNTER[name] for name in evaluation.counters if COUNTER[name].accumulation not in ("in_qrels", "in_ranking")
    ]
    wanted = wanted if counted else []
    read = list(dict.fromkeys(counter.signal for counter in wanted))
    found = {s: in_rank_order(pl.col(s).cast(pl.Int64).cum_sum()).alias(f"{s}_found") for s in read}
    discounted = pl.col("credited_gain") * discount(pl.col("rank"), evaluation.discount)
    cumulative = ranking.select(
        QUERY,
        "rank",
        *read,
        in_rank_order(pl.col("rank").shift(-1)).alias("next_rank"),
        in_rank_order(pl.col("credited_gain").cum_sum()).alias("cg"),
        in_rank_order(discounted.cum_sum()).alias("dcg"),
        *found.values(),
    )

    def accumulated(signal: str, accumulation: str) -> pl.Expr:
        holds_here, found_so_far = pl.col(signal), pl.col(f"{signal}_found")
        if accumulation == "precision_sum":
            return in_rank_order(pl.when(holds_here).then(found_so_far / pl.col("rank")).otherwise(0.0).cum_sum())
        # first_rank: a rank where the signal holds is at or above this one once one is found
        return pl.when(found_so_far > 0).then(pl.col("rank").filter(holds_here).min().over(QUERY))

    # no select after, and no column set to itself (a `found` counter is the `<signal>_found`
    # column above): either split the plan that the cutoffs of sums_at_cutoffs share, and
    # Polars ran the ranking once per cutoff (4x slower at 1M rows; `--measures P` at trec_eval's
    # 10 cutoffs 9x NDCG's CPU time at 2M rows)
    derived = [c for c in wanted if c.accumulation != "found"]
    if not derived:
        return cumulative
    return cumulative.with_columns(accumulated(c.signal, c.accumulation).alias(c.name) for c in derived)


def sums_at_cutoffs(running: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """Long ``query_id, k``, then the sums and counters of :func:`running_sums` (not its
    signals): at each cutoff, those of the last kept rank at or above it."""
    last_rank = pl.col("next_rank").is_null()
    kept_out = {QUERY, "rank", "next_rank", *(signal.name for signal in evaluation.signals)}
    sums = [c for c in running.collect_schema().names() if c not in kept_out]
    return pl.concat(
        [
            running.filter(
                last_rank if k is None else (pl.col("rank") <= k) & (last_rank | (pl.col("next_rank") > k))
            ).select(QUERY, pl.lit(k, dtype=pl.Int64).alias("k"), *sums)
            for k in [None, *evaluation.cutoffs]
        ]
    )


def evaluated_queries(
    run_queries: pl.LazyFrame,
    judged_queries: pl.LazyFrame,
    retrieved: pl.LazyFrame,
    evaluation: Evaluation,
) -> pl.LazyFrame:
    """``query_id``: the judged queries the run has, or with ``all_queries`` every judged
    query, and with ``queries_without_judgments`` evaluate every query of the run too; then
    ``retrieved_in_ranking`` when asked: how many documents ``retrieved``, the ranking by score,
    holds (every rank of it is kept then)."""
    if evaluation.queries_without_judgments == "evaluate":
        evaluated = pl.concat([run_queries, judged_queries]).unique() if evaluation.all_queries else run_queries
    elif evaluation.all_queries:
        evaluated = judged_queries
    else:
        evaluated = run_queries.join(judged_queries, on=QUERY, how="semi")
    if evaluation.counts_retrieved:
        ranks = retrieved.group_by(QUERY).agg(pl.len().cast(pl.Int64).alias("retrieved_in_ranking"))
        evaluated = evaluated.join(ranks, on=QUERY, how="left").with_columns(
            pl.col("retrieved_in_ranking").fill_null(0)
        )
    return evaluated


def counters(evaluated: pl.LazyFrame, judged: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """The evaluated queries with their per-query counters (``<signal>_in_qrels``: how many of
    the query's judged documents a signal holds for, 0 for a query without judgments;
    ``relevant_in_qrels`` is R). The rank counters come with the sums of the ranking by score
    (:func:`running_sums`), joined at each cutoff by :func:`pipeline.engines.polars.measures.counted`."""
    totals = [COUNTER[name] for name in evaluation.counters if COUNTER[name].accumulation == "in_qrels"]
    if not totals:
        return evaluated
    counted = (
        signals(judged, evaluation)
        .group_by(QUERY)
        .agg(pl.col(c.signal).sum().cast(pl.Int64).alias(c.name) for c in totals)
    )
    return evaluated.join(counted, on=QUERY, how="left").with_columns(pl.col(c.name).fill_null(0) for c in totals)
