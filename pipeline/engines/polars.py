"""The Polars engine: run + qrels LazyFrames to the per-query LazyFrame, in one lazy plan.

Each step mirrors a CTE of ``sql/per_query.sql`` and carries its name, so the two engines can
be read side by side.
"""

from __future__ import annotations

import polars as pl

from pipeline.expressions import discount, gain, rank_by_gain, rank_by_score
from pipeline.spec import Evaluation

QUERY, DOC, SCORE, LABEL = "query_id", "doc_id", "score", "relevance"
PER_QUERY_COLUMNS = (QUERY, "k", "cg", "dcg", "idcg", "ndcg")


def per_query(run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """One row per evaluated query and cutoff: ``query_id, k, cg, dcg, idcg, ndcg``.

    ``run`` has ``query_id, doc_id, score``; ``qrels`` has ``query_id, doc_id, relevance``.
    ``k`` is null for the whole ranking. Inputs are assumed validated (no duplicates, no
    nulls); see :mod:`pipeline.validate`.
    """
    judgments = _judgments(qrels, evaluation)
    retrieved = _retrieved(run, judgments, evaluation)
    evaluated_queries = _evaluated_queries(retrieved, judgments, evaluation)
    retrieved_at_cutoffs = _sums_at_cutoffs(retrieved, evaluation, cg="cg", dcg="dcg")
    ideal = judgments.filter(pl.col("gain") > 0).with_columns(rank=rank_by_gain())
    ideal_at_cutoffs = _sums_at_cutoffs(
        ideal.with_columns(discounted_gain=pl.col("gain") * discount(pl.col("rank"), evaluation.discount)),
        evaluation,
        cg=None,
        dcg="idcg",
    )
    return _final(evaluated_queries, retrieved_at_cutoffs, ideal_at_cutoffs, evaluation)


def _judgments(qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    return qrels.select(QUERY, DOC, gain(pl.col(LABEL), evaluation.gain).alias("gain"))


def _retrieved(run: pl.LazyFrame, judgments: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    judged_queries = judgments.select(QUERY).unique()
    ranked = run.select(QUERY, DOC, SCORE).join(judged_queries, on=QUERY, how="semi").with_columns(rank=rank_by_score())
    if evaluation.max_results is not None:
        ranked = ranked.filter(pl.col("rank") <= evaluation.max_results)
    return ranked.join(judgments, on=[QUERY, DOC], how="left").select(
        QUERY,
        "rank",
        pl.col("gain").fill_null(0.0),
        (pl.col("gain").fill_null(0.0) * discount(pl.col("rank"), evaluation.discount)).alias("discounted_gain"),
    )


def _evaluated_queries(retrieved: pl.LazyFrame, judgments: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    queries = retrieved.select(QUERY)
    if evaluation.all_queries:
        queries = pl.concat([queries, judgments.select(QUERY)])
    return queries.unique()


def _sums_at_cutoffs(ranked: pl.LazyFrame, evaluation: Evaluation, *, cg: str | None, dcg: str) -> pl.LazyFrame:
    """Long ``query_id, k, [cg], dcg`` from one group-by: every cutoff is a sum over the first
    k ranks. Values are summed in rank order, never in the order rows happen to arrive from a
    parallel join, so that reruns give the same bits."""
    cutoffs: list[int | None] = [None, *evaluation.cutoffs]
    sums = []
    for k in cutoffs:
        for column, name in (("discounted_gain", dcg), ("gain", cg)):
            if name is None:
                continue
            # A running sum's last value: a plain sum() would let the optimizer drop the sort.
            in_rank_order = pl.col(column).sort_by("rank")
            taken = in_rank_order if k is None else in_rank_order.head(k)
            sums.append(taken.cum_sum().last().fill_null(0.0).alias(f"{name}@{k}"))
    wide = ranked.group_by(QUERY).agg(sums)
    return pl.concat(
        [
            wide.select(
                QUERY,
                pl.lit(k, dtype=pl.Int64).alias("k"),
                *([pl.col(f"{cg}@{k}").alias(cg)] if cg is not None else []),
                pl.col(f"{dcg}@{k}").alias(dcg),
            )
            for k in cutoffs
        ]
    )


def _final(
    evaluated_queries: pl.LazyFrame,
    retrieved_at_cutoffs: pl.LazyFrame,
    ideal_at_cutoffs: pl.LazyFrame,
    evaluation: Evaluation,
) -> pl.LazyFrame:
    cutoffs = pl.LazyFrame({"k": [None, *evaluation.cutoffs]}, schema={"k": pl.Int64})
    return (
        evaluated_queries.join(cutoffs, how="cross")
        .join(retrieved_at_cutoffs, on=[QUERY, "k"], how="left", nulls_equal=True)
        .join(ideal_at_cutoffs, on=[QUERY, "k"], how="left", nulls_equal=True)
        .select(
            QUERY,
            "k",
            pl.col("cg").fill_null(0.0),
            pl.col("dcg").fill_null(0.0),
            pl.col("idcg").fill_null(0.0),
        )
        .with_columns(
            ndcg=pl.when(pl.col("idcg") > 0).then(pl.col("dcg") / pl.col("idcg")).otherwise(pl.lit(0.0)),
        )
        .sort([QUERY, "k"], nulls_last=False)
    )
