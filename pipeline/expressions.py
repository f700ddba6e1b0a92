"""The building blocks of NDCG as Polars expressions, usable in your own queries.

>>> import polars as pl
>>> from pipeline.expressions import gain, discount, rank_by_score
>>> from pipeline.spec import Gain, Discount
>>> frame = pl.DataFrame({"query_id": [1, 1, 1], "doc_id": ["a", "b", "c"],
...                       "score": [0.2, 0.9, 0.2], "relevance": [3, 0, 2]})
>>> (frame.with_columns(rank=rank_by_score())
...       .with_columns(dcg_term=gain(pl.col("relevance"), Gain()) * discount(pl.col("rank"), Discount()))
...       .sort("rank")["doc_id"].to_list())
['b', 'c', 'a']
"""

from __future__ import annotations

import math

import polars as pl

from pipeline.spec import Discount, Gain

QUERY, DOC, SCORE = "query_id", "doc_id", "score"


def gain(label: pl.Expr, spec: Gain) -> pl.Expr:
    """The gain of each label as Float64 (see :class:`pipeline.spec.Gain`).

    A missing label (an unjudged document) gains 0, and so does a negative label.
    """
    label = label.cast(pl.Float64)
    by_kind = (pl.lit(2.0).pow(label) - 1.0) if spec.kind == "exponential" else label
    mapped: pl.Expr = by_kind
    for level, level_gain in reversed(spec.levels):
        mapped = pl.when(label == level).then(pl.lit(level_gain, dtype=pl.Float64)).otherwise(mapped)
    return pl.when(label.is_null() | (label < 0)).then(pl.lit(0.0)).otherwise(mapped)


def discount(rank: pl.Expr, spec: Discount) -> pl.Expr:
    """The discount factor of each 1-based rank (see :class:`pipeline.spec.Discount`)."""
    rank = rank.cast(pl.Float64)
    if spec.kind == "jk":
        return 1.0 / pl.max_horizontal(pl.lit(1.0), rank.log() / math.log(spec.log_base))
    return 1.0 / ((rank + 1.0).log() / math.log(2.0))


def rank_by_score(query: str = QUERY, score: str = SCORE, doc: str = DOC) -> pl.Expr:
    """1-based rank within each query: score descending, ties by doc_id descending in string
    order (trec_eval's ordering)."""
    return pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(
        query, order_by=[pl.col(score), pl.col(doc).cast(pl.String)], descending=True
    )


def rank_by_gain(query: str = QUERY, gain_column: str = "gain") -> pl.Expr:
    """1-based rank of the ideal ordering: gain descending (ties cannot change IDCG)."""
    return pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(query, order_by=pl.col(gain_column), descending=True)
