"""Per-query table to summary: each measure combined per cutoff as its ``Measure.aggregate``
says, a mean unless the registry says otherwise (``sql/summary.sql``).

A query whose ndcg is null (``empty_ideal="skip"``) is left out of every mean and of the
``queries`` count; a NaN ndcg (``empty_ideal="nan"``) is kept and makes the ndcg mean NaN.

With groups, the boolean column ``overall`` tells the rows over all queries (true; their group
columns are null and mean nothing) from the rows of one group (false). Group values may be
null themselves: the queries whose group value is null are a group of their own, and only
``overall`` tells that group's rows from the overall rows.
"""

from __future__ import annotations

import polars as pl

from pipeline.groups import OVERALL, RESERVED_COLUMNS, check_group_names
from pipeline.registry import MEASURE, MEASURE_NAMES, MIN_GEOMETRIC_MEAN, PRIMARY_MEASURE

# The weight of each query while the means are taken (--query-weights): a column of no output
WEIGHT = "_query_weight"
# A weights table's column ``weight_<measure>`` weighs that measure's mean instead of ``weight``
# (--doc-weight-col: TF-Ranking's list weight of P reads relevance where NDCG's reads gain)
MEASURE_WEIGHT = "weight_"

MEASURES = MEASURE_NAMES
TIE_BOUNDS = ("ndcg_min", "ndcg_max")
# How the summary combines each column: the registry's Measure.aggregate; the tie bounds are means.
AGGREGATE_OF: dict[str, str] = {
    **{name: m.aggregate for name, m in MEASURE.items()},
    **dict.fromkeys(TIE_BOUNDS, "mean"),
}
# An order of ties changes a query's score when its bounds differ by more than this. Bounds
# of ties among equal gains sum the same values in the same order, so they are equal exactly.
TIE_SENSITIVITY = 1e-12

__all__ = ["MEASURES", "OVERALL", "RESERVED_COLUMNS", "TIE_BOUNDS", "TIE_SENSITIVITY", "check_group_names", "summarize"]


def _combined(column: str, aggregate: str, counted: pl.Expr, weight: pl.Expr | None = None) -> pl.Expr:
    """One measure over the counted queries: a running sum in query order (a plain sum() or
    mean() would let the optimizer drop the sort), so that reruns give the same bits; divided
    by the count for a mean; of ln(max(value, 1e-5)), divided, then exp, for a geometric mean
    (trec_eval's gm_map: MIN_GEO_MEAN). With ``weight`` (``--query-weights``), a mean is
    sum(w * x) / sum(w) and a geometric mean exp(sum(w * ln x) / sum(w)), the weights scaled by
    the largest of the counted queries (as :func:`pipeline.stats.weighed` scales them); a sum stays a sum."""
    value = pl.col(column).filter(counted)
    if aggregate == "geometric_mean":
        # a null value stays null (max_horizontal alone would take the floor for it)
        value = pl.when(value.is_not_null()).then(pl.max_horizontal(value, pl.lit(MIN_GEOMETRIC_MEAN)).log())
    order = pl.col("query_id").filter(counted)
    if aggregate == "sum":
        return value.sort_by(order).cum_sum().last()
    if weight is None:
        total, count = value.sort_by(order).cum_sum().last(), counted.sum()
    else:
        # scaled by the largest, one factor for every weight (it changes no mean): weight x value and
        # their sums stay finite (weights of 3e306 gave a mean cg of inf and a gm_map of 0.0, exit 0)
        weights = weight.filter(counted)
        weights = weights / weights.max()
        total, count = (value * weights).sort_by(order).cum_sum().last(), weights.sort_by(order).cum_sum().last()
    return (total / count).exp() if aggregate == "geometric_mean" else total / count


def summarize(
    per_query: pl.LazyFrame, *, group_by: tuple[str, ...] | list[str] = (), weights: pl.DataFrame | None = None
) -> pl.LazyFrame:
    """``[group columns], k, queries, cg, dcg, idcg, ndcg``: each measure over the queries
    evaluated at each cutoff, as its ``Measure.aggregate`` says (a mean unless the registry
    says otherwise: :data:`AGGREGATE_OF`); with ``group_by``, one row per group and cutoff (``overall`` false; queries
    with a null group value are a group), then the overall rows (``overall`` true, group
    columns null). With tie bounds in ``per_query``, also the means ``ndcg_min``,
    ``ndcg_max`` and ``tie_sensitive_queries``, how many queries an order of ties could score
    differently. With ``weights`` (``query_id, weight`` of every evaluated query, checked by
    :mod:`pipeline.weights`), every mean and geometric mean is weighted by its queries' weights
    (a column ``weight_<measure>`` of ``weights`` weighs that measure's); sums and the counts of
    queries are not."""
    # every measure is combined over the evaluated queries (spec.Measure.aggregate): those
    # whose primary measure is not null
    counted = pl.col(PRIMARY_MEASURE).is_not_null()
    columns = per_query.collect_schema().names()
    weight, own_weights = None, set()
    if weights is not None:
        own_weights = {c[len(MEASURE_WEIGHT) :] for c in weights.columns if c.startswith(MEASURE_WEIGHT)}
        per_query = per_query.join(
            weights.lazy().select(
                "query_id",
                pl.col("weight").alias(WEIGHT),
                *[pl.col(MEASURE_WEIGHT + m).alias(WEIGHT + m) for m in own_weights],
            ),
            on="query_id",
            how="left",
        )
        weight = pl.col(WEIGHT)

    def weight_of(measure: str) -> pl.Expr | None:
        return pl.col(WEIGHT + measure) if measure in own_weights else weight

    means = [counted.sum().cast(pl.Int64).alias("queries")]
    means += [_combined(m, AGGREGATE_OF[m], counted, weight_of(m)).alias(m) for m in columns if m in AGGREGATE_OF]
    if "ndcg_min" in columns:
        # queries that an order of their ties could score differently (see sql/summary.sql)
        sensitive = (pl.col("ndcg_max") - pl.col("ndcg_min")) > TIE_SENSITIVITY
        # null, like the means, when no query was averaged
        means.append(
            pl.when(counted.any()).then(sensitive.filter(counted).sum().cast(pl.Int64)).alias("tie_sensitive_queries")
        )
    overall = per_query.group_by("k").agg(means).sort("k", nulls_last=False)
    if not group_by:
        return overall
    check_group_names(group_by)
    by_group = (
        per_query.group_by(*group_by, "k")
        .agg(means)
        .sort([*group_by, "k"], nulls_last=False)
        .select(*group_by, pl.lit(False).alias(OVERALL), pl.exclude(group_by))
    )
    schema = per_query.collect_schema()
    overall = overall.select(
        *[pl.lit(None, dtype=schema[c]).alias(c) for c in group_by], pl.lit(True).alias(OVERALL), pl.all()
    )
    return pl.concat([by_group, overall])
