"""The curves of AP that read a weight per result (``sql/curves/weighted_ap_curve.sql``,
``threshold_curve.sql``): TF-Ranking's AP over the ranks (:func:`weighted_ap_curve`) and
scikit-learn's over the distinct scores (:func:`threshold_curve`), each a result's weight 1
without ``doc_weight_col``. A curve is computed only when a measure asked reads it."""

from __future__ import annotations

import polars as pl

from pipeline.engines.polars.ranking import JUDGMENT, QUERY, SCORE, cutoffs
from pipeline.expressions import DOC_WEIGHT, relevant
from pipeline.registry import Evaluation


def weighted_ap_curve(retrieved: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, k, weighted_precision_sum, relevant_weight, relevant_listed`` of each query with a
    ranking and cutoff (sql/curves/weighted_ap_curve.sql): the sum over its relevant results at or
    above k of (relevant at or above its rank / its rank) x its weight, the weight of the relevant
    results of its whole list (TF-Ranking's AP with per-document weights), and how many they are
    (its recall's divisor); or None unless map or recall is asked under ``doc_weight_col``."""
    if "weighted_ap_curve" not in evaluation.curves:
        return None
    is_relevant = relevant(pl.col(JUDGMENT), evaluation.relevance_threshold).fill_null(False)
    weight = pl.col(DOC_WEIGHT)
    contribution = pl.when("is_relevant").then(pl.col("above") / pl.col("rank") * weight).otherwise(0.0)
    ranks = (
        retrieved.select(QUERY, "rank", JUDGMENT, DOC_WEIGHT)
        .with_columns(is_relevant.alias("is_relevant"))
        .with_columns(pl.col("is_relevant").cast(pl.Int64).cum_sum().over(QUERY, order_by="rank").alias("above"))
        # running sums added in rank order, the same bits on every run (summed per cutoff in
        # whatever order the rows sat, a map of 0.972789 differed in its last bit between runs)
        .select(
            QUERY,
            "rank",
            contribution.cum_sum().over(QUERY, order_by="rank").alias("precision_above"),
            pl.when("is_relevant")
            .then(weight)
            .otherwise(0.0)
            .cum_sum()
            .over(QUERY, order_by="rank")
            .alias("weight_above"),
            pl.col("is_relevant").cast(pl.Int64).alias("relevant_listed"),
        )
    )
    k = pl.col("k")
    # every term is >= 0 (weights are), so a running sum's largest is its value at the last rank read
    return (
        ranks.join(cutoffs(evaluation), how="cross")
        .group_by(QUERY, "k")
        .agg(
            pl.col("precision_above")
            .filter(k.is_null() | (pl.col("rank") <= k))
            .max()
            .fill_null(0.0)
            .alias("weighted_precision_sum"),
            pl.col("weight_above").max().alias("relevant_weight"),
            pl.col("relevant_listed").sum(),
        )
    )


def threshold_curve(retrieved: pl.LazyFrame, ranks: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, threshold_precision_sum, threshold_relevant_weight`` of each query with a
    ranking (sql/curves/threshold_curve.sql): scikit-learn's ``average_precision_score`` over its
    results, each distinct score t one threshold, tied scores together whatever their order: the
    sum over the thresholds of (the relevant weight scored t) x (the relevant weight scored >= t) /
    (the weight scored >= t), and the relevant weight of the ranking; or None unless
    average_precision_score is asked. Weights are doc_weight_col's (scikit-learn's sample_weight),
    each over the largest of its ranking, else 1. The relevant weights are read from the evaluated
    ranking, every judged rank of which it keeps (the measure reads a signal); the weight of every
    result from ``ranks``, the ranks num_ret counts
    (:func:`pipeline.engines.polars.ranking.counted_ranks`), which hold the unjudged ones too."""
    if "threshold_curve" not in evaluation.curves:
        return None
    is_relevant = relevant(pl.col(JUDGMENT), evaluation.relevance_threshold).fill_null(False)
    if evaluation.doc_weight_col is not None:
        # each weight over the largest of its ranking (AP is a ratio of its weights): a ranking's
        # weights summed stay finite (three of 1e308 gave 0.0 for 1/3); without, every weight is 1
        largest = ranks.group_by(QUERY).agg(pl.col(DOC_WEIGHT).max().alias("largest"))
        weight, most = pl.col(DOC_WEIGHT), pl.col("largest")
        scaled = pl.when(most > 0).then(weight / most).otherwise(weight).alias(DOC_WEIGHT)
        ranks, retrieved = (
            frame.join(largest, on=QUERY, how="left").with_columns(scaled) for frame in (ranks, retrieved)
        )

    # the weight scored at or above each score, and its relevant part: running sums from the
    # highest score down (within a score, heaviest first), as scikit-learn's cumsum adds them and
    # the same bits on every run (sum() over a score's rows added them in whatever order they sat:
    # 340 of 3,000 rankings changed in their last bits from run to run)
    def at_or_above(frame: pl.LazyFrame, name: str) -> pl.LazyFrame:
        if evaluation.doc_weight_col is None:
            # the ranking carries no weights: each result weighs 1, and counts add exactly in any order
            counted = frame.group_by(QUERY, SCORE).agg(pl.len().cast(pl.Float64).alias(name))
            return counted.with_columns(pl.col(name).cum_sum().over(QUERY, order_by=SCORE, descending=True))
        running = pl.col(DOC_WEIGHT).cum_sum().over(QUERY, order_by=[SCORE, DOC_WEIGHT], descending=True)
        # every weight is >= 0: a score's largest running sum is the one at its last row
        return frame.with_columns(running.alias(name)).group_by(QUERY, SCORE).agg(pl.col(name).max())

    thresholds = at_or_above(ranks, "weight_above").join(
        at_or_above(retrieved.filter(is_relevant), "relevant_above"), on=[QUERY, SCORE], how="left", nulls_equal=True
    )
    # each query's thresholds highest first, in one pass over its group; a score without a
    # relevant result holds the relevant weight above it
    weight_above = pl.col("weight_above").sort_by(SCORE, descending=True)
    relevant_above = pl.col("relevant_above").sort_by(SCORE, descending=True).forward_fill().fill_null(0.0)
    relevant_weight = relevant_above - relevant_above.shift(1).fill_null(0.0)
    precision = pl.when(weight_above > 0).then(relevant_above / weight_above).otherwise(0.0)
    return thresholds.group_by(QUERY).agg(
        (relevant_weight * precision).cum_sum().last().alias("threshold_precision_sum"),
        relevant_above.last().alias("threshold_relevant_weight"),
    )
