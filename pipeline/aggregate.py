"""Per-query table to summary: the mean of each measure per cutoff (``sql/summary.sql``).

A query whose ndcg is null (``empty_ideal="skip"``) is left out of every mean and of the
``queries`` count; a NaN ndcg (``empty_ideal="nan"``) is kept and makes the ndcg mean NaN.
"""

from __future__ import annotations

import polars as pl

MEASURES = ("cg", "dcg", "idcg", "ndcg")


def summarize(per_query: pl.LazyFrame) -> pl.LazyFrame:
    """``k, queries, cg, dcg, idcg, ndcg``: means over the queries evaluated at each cutoff."""
    counted = pl.col("ndcg").is_not_null()
    return (
        per_query.group_by("k")
        .agg(
            counted.sum().cast(pl.Int64).alias("queries"),
            *[pl.col(m).filter(counted).mean() for m in MEASURES],
        )
        .sort("k", nulls_last=False)
    )
