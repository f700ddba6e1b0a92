"""The building blocks of NDCG as Polars expressions, usable in your own queries.

>>> import polars as pl
>>> from pipeline.expressions import gain, discount, rank_by_score
>>> from pipeline.registry import Gain, Discount
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

from pipeline.registry import Discount, Gain, Ties

QUERY, DOC, SCORE = "query_id", "doc_id", "score"
# Where a row stands in its input (files in the order listed, then rows), and the input's own
# rank column when it has one: what the "input-order" ties and the duplicate policies read.
ARRIVAL, INPUT_RANK, RANK_COLUMN = "arrival", "input_rank", "rank"
DOC_WEIGHT = "doc_weight"
# The columns that tie bounds add (Evaluation.tie_bounds) to the per-query table and the summary.
TIE_BOUNDS_PER_QUERY = ("ndcg_min", "ndcg_max", "ties_straddle_k")
TIE_BOUNDS_SUMMARY = ("ndcg_min", "ndcg_max", "tie_sensitive_queries")


def gain(label: pl.Expr, spec: Gain, relevance_threshold: float | None = None) -> pl.Expr:
    """The gain of each label as Float64 (see :class:`pipeline.registry.Gain`).

    A missing label (an unjudged document) gains 0, and so does a negative label.
    """
    label = label.cast(pl.Float64)
    if spec.kind == "binary":
        by_kind = relevant(label, relevance_threshold).cast(pl.Float64)
    elif spec.kind == "exponential":
        by_kind = pl.lit(2.0).pow(label) - 1.0
    else:
        by_kind = label
    mapped: pl.Expr = by_kind
    for level, level_gain in reversed(spec.levels):
        mapped = pl.when(label == level).then(pl.lit(level_gain, dtype=pl.Float64)).otherwise(mapped)
    return pl.when(label.is_null() | (label < 0)).then(pl.lit(0.0)).otherwise(mapped)


def relevant(label: pl.Expr, relevance_threshold: float | None = None) -> pl.Expr:
    """Whether each label counts as relevant: a judged label (>= 0: a negative one counts as
    unjudged) ``>= relevance_threshold``, or ``> 0`` without one (the signal ``relevant``)."""
    return label > 0 if relevance_threshold is None else label >= max(relevance_threshold, 0.0)


def discount(rank: pl.Expr, spec: Discount) -> pl.Expr:
    """The discount factor of each 1-based rank (see :class:`pipeline.registry.Discount`)."""
    rank = rank.cast(pl.Float64)
    if spec.kind == "jk":
        return 1.0 / pl.max_horizontal(pl.lit(1.0), rank.log() / math.log(spec.log_base))
    return 1.0 / ((rank + 1.0).log() / math.log(2.0))


def rank_by_score(query: str = QUERY, score: str = SCORE, doc: str = DOC, *, ties: Ties = "docid-desc") -> pl.Expr:
    """1-based rank within each query: score descending, ties by doc_id descending in string
    order (trec_eval's ordering; also the order within tied groups that ``average`` averages),
    or with ``ties="docid-asc"`` ascending (pyndeval's).

    With ``ties="input-order"`` the frame needs the ``input_rank`` and ``arrival`` columns of
    :func:`with_input_order`: input rank ascending (missing ranks last), then score
    descending, then arrival.
    """
    keys = [pl.col(score), pl.col(doc).cast(pl.String)]
    if ties == "docid-asc":
        # one descending sort: a string cannot be negated, its descending dense rank can (the
        # smallest doc_id ranks highest); over the whole frame, which orders as within a query
        keys = [pl.col(score), pl.col(doc).cast(pl.String).rank("dense", descending=True)]
    elif ties == "input-order":
        # one descending sort: negate the keys that go up
        keys = [-pl.col(INPUT_RANK), pl.col(score), -pl.col(ARRIVAL).cast(pl.Int64), pl.col(doc).cast(pl.String)]
    return position_in(query, keys)


def rank_ties_by_gain(
    query: str = QUERY, score: str = SCORE, doc: str = DOC, *, ties: Ties = "docid-desc", best_first: bool
) -> pl.Expr:
    """1-based rank with the ties of :func:`rank_by_score` broken by ``gain``: descending (the
    best order of the ties, ``best_first``) or ascending (the worst). Ties are equal scores,
    or with ``ties="input-order"`` equal (input rank, score). Needs a ``gain`` column."""
    by_gain = pl.col("gain") if best_first else -pl.col("gain")
    keys = [pl.col(score), by_gain, pl.col(doc).cast(pl.String)]
    if ties == "input-order":
        keys = [-pl.col(INPUT_RANK), *keys]
    return position_in(query, keys)


def with_input_order(run: pl.LazyFrame) -> pl.LazyFrame:
    """The run as ``query_id, doc_id, score, arrival, input_rank, doc_weight``.

    ``arrival`` is kept when the reader added it and is otherwise the row's position in
    ``run``; ``input_rank`` is the run's ``rank`` column as Float64, or null without a numeric one;
    ``doc_weight`` the run's document weights (``--doc-weight-col``), or 1.
    """
    schema = run.collect_schema()
    names = schema.names()
    if ARRIVAL not in names:
        run = run.with_row_index(ARRIVAL)
    # a rank column of text is no input order (refused where one is read: pipeline.inputs); cast, a
    # value such as 'zz' failed the DuckDB engine's reading of a run that never asked for it
    ranked = RANK_COLUMN in names and schema[RANK_COLUMN].is_numeric()
    input_rank = pl.col(RANK_COLUMN).cast(pl.Float64) if ranked else pl.lit(None, dtype=pl.Float64)
    # weight 1 multiplies every gain exactly: the run's weights only under --doc-weight-col
    weight = pl.col(DOC_WEIGHT).cast(pl.Float64) if DOC_WEIGHT in names else pl.lit(1.0, dtype=pl.Float64)
    return run.select(
        QUERY, DOC, SCORE, pl.col(ARRIVAL).cast(pl.Int64), input_rank.alias(INPUT_RANK), weight.alias(DOC_WEIGHT)
    )


def first_copy(query: str = QUERY, doc: str = DOC, *, by_score: bool) -> pl.Expr:
    """True on the one row kept of each (query, document): the first to arrive, or with
    ``by_score`` the highest score (the first to arrive among equal scores)."""
    keys = [pl.col(SCORE), -pl.col(ARRIVAL).cast(pl.Int64)] if by_score else [-pl.col(ARRIVAL).cast(pl.Int64)]
    return position_in([query, doc], keys) == 1


def rank_by_gain(query: str = QUERY, gain_column: str = "gain") -> pl.Expr:
    """1-based rank of the ideal ordering: gain descending (ties cannot change IDCG)."""
    return position_in(query, [pl.col(gain_column)])


def position_in(group: str | list[str], keys: list[pl.Expr]) -> pl.Expr:
    """1-based position of each row within its ``group`` in descending order of ``keys``,
    compared in turn, nulls last. Rows whose keys are all equal take the order they arrive in
    (the callers' keys never tie, or tie only where the order cannot change a sum).

    The rank of one struct of the keys measured twice as fast as ``int_range().over(order_by=)``
    (10M rows, keys score and doc_id: 2.1 s against 4.4 s)."""
    return pl.struct(keys).rank("ordinal", descending=True).over(group).cast(pl.Int64)
