"""Per-query table to summary: the mean of each measure per cutoff (``sql/summary.sql``)."""

from __future__ import annotations

import polars as pl

MEASURES = ("cg", "dcg", "idcg", "ndcg")


def summarize(per_query: pl.LazyFrame) -> pl.LazyFrame:
    """``k, queries, cg, dcg, idcg, ndcg``: means over the queries evaluated at each cutoff."""
    return (
        per_query.group_by("k")
        .agg(pl.len().cast(pl.Int64).alias("queries"), *[pl.col(m).mean() for m in MEASURES])
        .sort("k", nulls_last=False)
    )
