"""Paired comparison of systems over their per-query tables: is the new model better, and where?

Input: one per-query table per system (``query_id, k, ndcg`` plus any group columns, as
``ndcg evaluate --out`` writes them). For every pair of systems, every cutoff and (with
``group_by``) every group, the two tables are paired by ``(query_id, k, *group_by)`` and the
per-query differences ``delta = candidate - baseline`` are summarised:

- ``mean_baseline``, ``mean_candidate``, ``mean_difference`` (the mean of ``delta``, which
  equals the difference of the means over the paired queries), ``relative_change``
  (``mean_difference / mean_baseline``; null when the baseline mean is 0);
- ``wins`` / ``ties`` / ``losses``: queries where the candidate is better / within
  ``TIE_TOLERANCE`` / worse: higher / lower, or lower / higher for a measure whose better is
  lower (``unj``, the unjudged fraction; :attr:`pipeline.registry.Measure.better`);
- a paired t-test: ``t = mean(delta) / (sd(delta) / sqrt(n))`` with ``n - 1`` degrees of
  freedom (sd with ``n - 1``), two-sided ``p_value_t``; null when ``n < 2`` or sd is 0
  (the statistic is undefined there, and a made-up number would be silently wrong); sd
  counts as 0 when all deltas are equal within ``TIE_TOLERANCE``;
- a paired randomization test: under the null hypothesis each delta's sign is arbitrary, so
  the signs are flipped at random ``permutations`` times and ``p_value_permutation`` is the
  share of flipped means at least as far from 0 as the observed one, ``(hits + 1) /
  (permutations + 1)``; when ``2**n <= permutations`` every sign vector is enumerated
  instead and the p-value is exact (``hits / 2**n``), as ``scipy.stats.permutation_test``
  does;
- a percentile bootstrap confidence interval (``confidence``, default 95%) of the mean
  difference from ``bootstrap_samples`` resamples of the queries with replacement.

Random draws come from ``numpy.random.default_rng(seed)``, started afresh for each row, so
a row's numbers depend only on its own data and the seed, not on which other pairs, cutoffs
or groups were compared alongside it.

The tests themselves (over arrays of deltas) are :mod:`pipeline.stats`'; here the tables are
checked, paired and cut into the segments they are run on.

With more than two systems every pair is compared, baseline first in the order given. The
p-values of one family (one cutoff and one group: all pairs) are adjusted for multiple
comparisons by Holm's step-down method (default) or Bonferroni's, named in ``correction``.

Queries present in only one table of a pair are counted (``only_baseline``,
``only_candidate``) and listed in the deltas table. By default they are left out of the
statistics (only common queries are compared); with ``all_queries`` the missing side scores
0, as ``--all-queries`` does in evaluation.

With ``group_by``, the boolean column ``overall`` marks the rows that hold the comparison over
all queries (true; their group columns are null and mean nothing); the other rows hold the
comparison within one group (false), and queries whose group value is null are a group of
their own, told from the overall rows by ``overall`` alone.

With ``partition_by`` (the hive keys of partitioned systems, such as ``dt``; see
:mod:`pipeline.compare_partitions`), pairing is by ``(*partition_by, query_id, k, *group_by)``
(a query id of two days is two queries), and every row above comes twice: pooled over every
partition (partition columns null, listed first) and for each partition.

With query weights (``--query-weights``: ``query_weights`` in :class:`Options`, each paired
query's weight in the deltas' ``query_weight`` column), every mean above is the weighted mean
``sum(w*x)/sum(w)`` over the segment's paired queries (``mean_baseline``, ``mean_candidate``,
``mean_difference`` and so ``relative_change``); the randomization test takes the weighted mean
difference as its statistic (each delta keeps its weight, its sign flips: valid, since under the
null hypothesis each delta is symmetric about 0 whatever its fixed weight), the bootstrap
resamples the queries with their weights and takes each resample's weighted mean, and the
t-test is not made (``t_statistic`` and ``p_value_t`` null: Student's t has no weighted form
that holds for any weights). A query of weight 0 moves none of them: it counts in ``queries``
and ``wins``/``ties``/``losses`` (counts, never weighted), not in ``weighed_queries``, the
queries the tests run on; ``sum_of_weights`` is the segment's total. A segment whose paired
queries all weigh 0 has no weighted mean (0/0): refused, as evaluation refuses it.

Systems are comparable only when they were evaluated with the same conventions (gain,
discount, ties, ideal, ...): :func:`convention_differences` names what differs between the
conventions recorded beside each output, for the caller to refuse or to report.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from pipeline.errors import InvalidInput, NothingToEvaluate, UsageError
from pipeline.groups import OVERALL, OVERALL_LABEL, WHOLE_RANKING, check_group_names
from pipeline.io.format import text_value
from pipeline.io.outputs import check_types
from pipeline.registry import CONVENTIONS, MEASURE, PRIMARY_MEASURE, Evaluation
from pipeline.stats import (
    CORRECTIONS,
    TIE_TOLERANCE,
    adjust_p_values,
    bootstrap_interval,
    paired_t_test,
    sign_flip_p_value,
)
from pipeline.weights import refuse_weightless_segments

# The weight of each paired query (``--query-weights``), in the deltas table when weighted.
WEIGHT = "query_weight"
# The columns a weighted comparison adds: the segment's total weight, and its queries that weigh
# more than 0 (those the randomization test and the bootstrap run on).
WEIGHT_COLUMNS = ("sum_of_weights", "weighed_queries")

KEY = ("query_id", "k")
SCORE = PRIMARY_MEASURE
# At most this many sign flips or bootstrap resamples: p-values and interval ends then resolve
# to 1e-6, beyond any decision's need, and a row still takes seconds, not days.
MAX_RESAMPLES = 1_000_000
# The seed is an int64 column of the comparison table.
MAX_SEED = 2**63 - 1
# Columns of the comparison and deltas tables: no group column may take one of these names.
RESERVED_COLUMNS = frozenset(
    {
        "query_id",
        "k",
        SCORE,
        f"{SCORE}_baseline",
        f"{SCORE}_candidate",
        "delta",
        "in_baseline",
        "in_candidate",
        OVERALL,
        WEIGHT,
    }
    | set(WEIGHT_COLUMNS)
)


@dataclass(frozen=True)
class Options:
    """How systems are compared; every field ends up in the outputs or the manifest."""

    cutoffs: tuple[int | None, ...] | None = None  # None: every cutoff both tables have
    group_by: tuple[str, ...] = ()
    all_queries: bool = False
    permutations: int = 10_000
    bootstrap_samples: int = 10_000
    confidence: float = 0.95
    seed: int = 0
    correction: str = "holm"
    # partition columns (hive keys such as dt): pairing is by (partition, query), and each
    # partition gets rows of its own beside the pooled rows over all partitions (partition null)
    partition_by: tuple[str, ...] = ()
    # the query weights the means and tests are weighted by, as their describe() records them
    # (path, weight_column, missing_query_weight); None: every query counts alike
    query_weights: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        if self.correction not in CORRECTIONS:
            raise UsageError(f"unknown correction {self.correction!r}; expected one of {', '.join(CORRECTIONS)}")
        for name in ("permutations", "bootstrap_samples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a positive integer, got {value!r}")
            if value > MAX_RESAMPLES:
                raise UsageError(f"{name} must be at most {MAX_RESAMPLES:,}, got {value:,}")
        if not 0 < self.confidence < 1:
            raise UsageError(f"confidence must be between 0 and 1, got {self.confidence!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise UsageError(f"seed must be an integer from 0 to {MAX_SEED} (2**63 - 1), got {self.seed!r}")
        if self.group_by:  # (the default Options() is built before COMPARISON_COLUMNS is defined)
            check_group_names(self.group_by, RESERVED_COLUMNS | set(COMPARISON_COLUMNS) | set(self.partition_by))
        if self.partition_by:
            check_group_names(self.partition_by, RESERVED_COLUMNS | set(COMPARISON_COLUMNS))

    def describe(self) -> dict[str, object]:
        return {
            "cutoffs": None if self.cutoffs is None else list(self.cutoffs),
            "group_by": list(self.group_by),
            "all_queries": self.all_queries,
            "permutations": self.permutations,
            "bootstrap_samples": self.bootstrap_samples,
            "confidence": self.confidence,
            "seed": self.seed,
            "correction": self.correction,
            "tie_tolerance": TIE_TOLERANCE,
            "partition_by": list(self.partition_by),
            # only when weighted: the options of unweighted comparisons read as they always did
            **({"query_weights": dict(self.query_weights)} if self.query_weights is not None else {}),
        }


@dataclass(frozen=True)
class Comparison:
    """``comparison``: one row per (pair, cutoff, group); ``deltas``: one row per (pair,
    query, cutoff) including the queries only one side has."""

    comparison: pl.DataFrame
    deltas: pl.DataFrame
    options: Options = field(default_factory=Options)


# --- pairing -------------------------------------------------------------------------------


def check_per_query(
    table: pl.DataFrame,
    name: str,
    group_by: Sequence[str] = (),
    partition_by: Sequence[str] = (),
    measure: str = SCORE,
) -> pl.DataFrame:
    """The columns a comparison needs, with clear errors for what would give wrong numbers: a
    null, NaN or infinite score (no mean or test is defined over one; ``measure`` names the
    column it came from), a null query id, a duplicate key."""
    wanted = [*partition_by, *KEY, SCORE, *group_by]
    key = [*partition_by, *KEY]
    missing = [column for column in wanted if column not in table.columns]
    if missing:
        raise InvalidInput(
            f"{name}: missing column(s) {', '.join(map(repr, missing))}; columns found: "
            f"{', '.join(map(repr, table.columns))}"
        )
    table = check_types(table.select(wanted), name)
    # a null group value is a group of its own (see ``overall``), so only keys and scores are checked
    problems = table.select(
        pl.col(SCORE).is_null().sum().alias("null_score"),
        pl.col(SCORE).is_nan().sum().alias("nan_score"),
        pl.col(SCORE).is_infinite().sum().alias("infinite_score"),
        pl.col("query_id").is_null().sum().alias("null_query"),
        (pl.len() - pl.struct(*key).n_unique()).alias("duplicates"),
    ).row(0, named=True)
    for column, count in problems.items():
        if count:
            example = _example_row(table, column, key)
            what = column.replace("_", " ") + (f" ({measure!r} column)" if column.endswith("score") else "")
            raise InvalidInput(f"{name}: {count} row(s) with {what}, e.g. {example}")
    return table


def _example_row(table: pl.DataFrame, problem: str, key: Sequence[str]) -> dict[str, object]:
    if problem == "duplicates":
        bad = table.filter(pl.struct(*key).is_duplicated())
    elif problem == "null_score":
        bad = table.filter(pl.col(SCORE).is_null())
    elif problem == "nan_score":
        bad = table.filter(pl.col(SCORE).is_nan())
    elif problem == "infinite_score":
        bad = table.filter(pl.col(SCORE).is_infinite())
    else:
        bad = table.filter(pl.col("query_id").is_null())
    return bad.row(0, named=True)


def select_cutoffs(tables: Mapping[str, pl.DataFrame], cutoffs: tuple[int | None, ...] | None) -> list[int | None]:
    """The cutoffs to compare: those asked for (each must be in every table), or every
    cutoff all tables share."""
    present = {name: set(table.get_column("k").unique().to_list()) for name, table in tables.items()}
    if cutoffs is None:
        shared = set.intersection(*present.values())
        if not shared:
            raise InvalidInput(f"the per-query tables share no cutoff k: {_cutoff_lists(present)}")
        return sorted(shared, key=_cutoff_order)
    for name, found in present.items():
        absent = [k for k in cutoffs if k not in found]
        if absent:
            raise UsageError(
                f"{name} has no rows for k={', '.join(cutoff_label(k) for k in absent)} "
                f"(it has k={', '.join(cutoff_label(k) for k in sorted(found, key=_cutoff_order))})"
            )
    return sorted(set(cutoffs), key=_cutoff_order)


def _cutoff_lists(present: Mapping[str, set[int | None]]) -> str:
    return "; ".join(
        f"{name}: {', '.join(cutoff_label(k) for k in sorted(ks, key=_cutoff_order))}" for name, ks in present.items()
    )


def _cutoff_order(k: int | None) -> float:
    return math.inf if k is None else float(k)


def cutoff_label(k: int | None) -> str:
    """``all`` (:data:`WHOLE_RANKING`) for the whole ranking, else the cutoff."""
    return WHOLE_RANKING if k is None else str(k)


def pair(
    baseline: pl.DataFrame,
    candidate: pl.DataFrame,
    *,
    group_by: Sequence[str] = (),
    all_queries: bool = False,
    partition_by: Sequence[str] = (),
) -> pl.DataFrame:
    """Both tables side by side on ``(*partition_by, query_id, k, *group_by)``: ``ndcg_baseline``,
    ``ndcg_candidate``, ``delta``, ``in_baseline``, ``in_candidate``. A query only one side
    has keeps a null for the other side (and a null delta), or 0 with ``all_queries``."""
    on = [*partition_by, *KEY, *group_by]
    left, right = _align_types(baseline.select(*on, SCORE), candidate.select(*on, SCORE), on)
    joined = left.with_columns(pl.lit(True).alias("in_baseline")).join(
        right.with_columns(pl.lit(True).alias("in_candidate")),
        on=on,
        how="full",
        coalesce=True,
        nulls_equal=True,  # k is null for the whole ranking
        suffix="_candidate",
    )
    filled = pl.col(f"{SCORE}_baseline"), pl.col(f"{SCORE}_candidate")
    if all_queries:
        filled = filled[0].fill_null(0.0), filled[1].fill_null(0.0)
    return joined.rename({SCORE: f"{SCORE}_baseline"}).select(
        *on,
        filled[0],
        filled[1],
        (filled[1] - filled[0]).alias("delta"),
        pl.col("in_baseline").fill_null(False),
        pl.col("in_candidate").fill_null(False),
    )


def _align_types(left: pl.DataFrame, right: pl.DataFrame, on: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Integer ids in one table and string ids in the other are both compared as strings,
    as evaluation does with run and qrels."""
    casts = [c for c in on if left.schema[c] != right.schema[c]]
    if not casts:
        return left, right
    as_text = [pl.col(c).cast(pl.String) for c in casts]
    return left.with_columns(as_text), right.with_columns(as_text)


# --- the comparison ------------------------------------------------------------------------


def compare_pair(
    paired: pl.DataFrame,
    *,
    group_by: Sequence[str] = (),
    options: Options = Options(),
    partition_by: Sequence[str] = (),
) -> pl.DataFrame:
    """The statistics of one pair: one row per cutoff over all queries, then one per
    (cutoff, group) when ``group_by`` is given, with ``overall`` telling them apart (a null
    group value is a group). With ``partition_by``, the same rows again for each partition
    (the first ones, partition columns null, pool every partition). ``paired`` is the output
    of :func:`pair`."""
    scopes: list[list[str]] = [["k"]] + ([["k", *group_by]] if group_by else [])
    if partition_by:
        scopes += [[*partition_by, *scope] for scope in scopes]
    rows = []
    for scope in scopes:
        counts = (
            paired.group_by(scope)
            .agg(
                (pl.col("in_baseline") & ~pl.col("in_candidate")).sum().alias("only_baseline"),
                (pl.col("in_candidate") & ~pl.col("in_baseline")).sum().alias("only_candidate"),
            )
            .with_columns(pl.col("only_baseline", "only_candidate").cast(pl.Int64))
        )
        compared = paired.filter(pl.col("delta").is_not_null())
        weighted = WEIGHT in paired.columns
        means = compared.group_by(scope).agg(
            pl.len().cast(pl.Int64).alias("queries"),
            *(
                _weighted_means(compared)
                if weighted
                else (
                    pl.col(f"{SCORE}_baseline").mean().alias("mean_baseline"),
                    pl.col(f"{SCORE}_candidate").mean().alias("mean_candidate"),
                    pl.col("delta").mean().alias("mean_difference"),
                )
            ),
            (pl.col("delta") > TIE_TOLERANCE).sum().cast(pl.Int64).alias("wins"),
            (pl.col("delta").abs() <= TIE_TOLERANCE).sum().cast(pl.Int64).alias("ties"),
            (pl.col("delta") < -TIE_TOLERANCE).sum().cast(pl.Int64).alias("losses"),
        )
        table = counts.join(means, on=scope, how="left", nulls_equal=True).with_columns(
            pl.col("queries").fill_null(0), pl.col("wins", "ties", "losses").fill_null(0)
        )
        if weighted:
            refuse_weightless_segments(table, scope, weights_source(options.query_weights or {}))
            table = table.with_columns(pl.col("weighed_queries").fill_null(0))
        tests = _tests_per_segment(compared, scope, options)
        table = table.join(tests, on=scope, how="left", nulls_equal=True)
        missing_groups = [
            pl.lit(None, dtype=paired.schema[g]).alias(g) for g in [*partition_by, *group_by] if g not in scope
        ]
        marker = [pl.lit(not set(group_by) & set(scope)).alias(OVERALL)] if group_by else []
        rows.append(table.with_columns(*missing_groups, *marker))
    columns = [*partition_by, *group_by, *([OVERALL] if group_by else []), "k"]
    return pl.concat([frame.select(*columns, pl.exclude(columns)) for frame in rows], how="vertical").with_columns(
        pl.when(pl.col("mean_baseline") != 0)
        .then(pl.col("mean_difference") / pl.col("mean_baseline"))
        .otherwise(None)
        .alias("relative_change")
    )


def _weighted_means(compared: pl.DataFrame) -> tuple[pl.Expr, ...]:
    """The weighted means sum(w*x)/sum(w) of a segment, its total weight and its queries that
    weigh more than 0 (a total of 0 gives null means, refused by the caller)."""
    weight = pl.col(WEIGHT)
    total = weight.sum()
    # over the largest (one factor changes no mean), as stats.weighed: w*x stays finite (3e306: cg inf)
    scaled = weight / weight.max()

    def mean(column: str) -> pl.Expr:
        return pl.when(total > 0).then((scaled * pl.col(column)).sum() / scaled.sum()).otherwise(None)

    return (
        mean(f"{SCORE}_baseline").alias("mean_baseline"),
        mean(f"{SCORE}_candidate").alias("mean_candidate"),
        mean("delta").alias("mean_difference"),
        total.alias("sum_of_weights"),
        (weight > 0).sum().cast(pl.Int64).alias("weighed_queries"),
    )


def _tests_per_segment(compared: pl.DataFrame, scope: list[str], options: Options) -> pl.DataFrame:
    """The resampling tests need the deltas of one segment as an array: one loop iteration
    per (cutoff, group), never per query. Weighted (a ``query_weight`` column), the tests run on
    the weighted mean difference and the t-test is not made (see the module's docstring)."""
    records = []
    weighted = WEIGHT in compared.columns
    for segment in compared.partition_by(scope, maintain_order=True):
        deltas = segment.get_column("delta").to_numpy().astype(np.float64)
        weights = segment.get_column(WEIGHT).to_numpy().astype(np.float64) if weighted else None
        t, p_t = (None, None) if weighted else paired_t_test(deltas)
        low, high = bootstrap_interval(
            deltas, options.bootstrap_samples, options.seed, options.confidence, weights=weights
        )
        records.append(
            {
                **{column: segment.get_column(column)[0] for column in scope},
                "t_statistic": t,
                "p_value_t": p_t,
                "p_value_permutation": sign_flip_p_value(deltas, options.permutations, options.seed, weights),
                "ci_low": low,
                "ci_high": high,
            }
        )
    schema = {column: compared.schema[column] for column in scope} | {
        name: pl.Float64 for name in ("t_statistic", "p_value_t", "p_value_permutation", "ci_low", "ci_high")
    }
    return pl.DataFrame(records, schema=schema)


COMPARISON_COLUMNS = (
    "baseline",
    "candidate",
    "k",
    "queries",
    "only_baseline",
    "only_candidate",
    "mean_baseline",
    "mean_candidate",
    "mean_difference",
    "relative_change",
    "wins",
    "ties",
    "losses",
    "t_statistic",
    "p_value_t",
    "p_value_permutation",
    "ci_low",
    "ci_high",
    "correction",
    "p_adjusted_t",
    "p_adjusted_permutation",
    "permutations",
    "bootstrap_samples",
    "confidence",
    "seed",
)


def compare_systems(
    tables: Mapping[str, pl.DataFrame | pl.LazyFrame],
    options: Options = Options(),
    *,
    measure: str = SCORE,
    weights: pl.DataFrame | None = None,
) -> Comparison:
    """Every pair of systems (baseline first, in the order given), at each cutoff and group.

    ``tables`` maps a system's name to its per-query table (``measure``, named in errors, in the
    ``ndcg`` column). Returns the comparison table
    (columns ``baseline, candidate, *group_by, k, ...``, see :data:`COMPARISON_COLUMNS`, and
    :data:`WEIGHT_COLUMNS` when weighted) and the per-query deltas. ``weights`` (``query_id,
    weight``, checked by :mod:`pipeline.weights`, one row for each query of every table) weighs
    the means and the tests; it goes with ``options.query_weights``, which says whose they are.
    """
    if (weights is None) != (options.query_weights is None):
        raise ValueError("weights and options.query_weights go together: both or neither")
    if len(tables) < 2:
        raise UsageError(f"comparing needs at least two systems, got {len(tables)}")
    checked = {
        name: check_per_query(
            table.collect() if isinstance(table, pl.LazyFrame) else table,
            name,
            options.group_by,
            options.partition_by,
            measure,
        )
        for name, table in tables.items()
    }
    cutoffs = select_cutoffs(checked, options.cutoffs)
    in_cutoffs = pl.col("k").is_in([k for k in cutoffs if k is not None]) | (
        pl.col("k").is_null() if None in cutoffs else pl.lit(False)
    )
    checked = {name: table.filter(in_cutoffs) for name, table in checked.items()}

    comparisons, deltas = [], []
    for baseline, candidate in itertools.combinations(checked, 2):
        paired = pair(
            checked[baseline],
            checked[candidate],
            group_by=options.group_by,
            all_queries=options.all_queries,
            partition_by=options.partition_by,
        )
        _require_shared_queries(paired, checked, baseline, candidate)
        if weights is not None:
            paired = _with_weights(paired, weights)
        names = [pl.lit(baseline).alias("baseline"), pl.lit(candidate).alias("candidate")]
        deltas.append(paired.select(*names, pl.all()))
        compared = compare_pair(paired, group_by=options.group_by, options=options, partition_by=options.partition_by)
        comparisons.append(compared.select(*names, pl.all()))
    comparison = _with_corrections(pl.concat(comparisons, how="vertical_relaxed"), options)
    if measure in MEASURE and MEASURE[measure].better == "lower":
        comparison = comparison.rename({"wins": "losses", "losses": "wins"})
    group_columns = [*options.partition_by, *options.group_by, *([OVERALL] if options.group_by else [])]
    # the pooled rows first, then each partition's; within them overall rows first, then the groups
    # (the null group first), each by cutoff
    order = [pl.col(OVERALL).not_(), *options.group_by] if options.group_by else []
    order = [*options.partition_by, *order]
    comparison = comparison.select(
        "baseline",
        "candidate",
        *group_columns,
        *[c for c in COMPARISON_COLUMNS if c not in ("baseline", "candidate")],
        *(WEIGHT_COLUMNS if weights is not None else ()),
    ).sort([*order, "k"], nulls_last=False, maintain_order=True)
    delta_table = pl.concat(deltas, how="vertical_relaxed").sort(
        ["baseline", "candidate", "k", "delta"], nulls_last=True, maintain_order=True
    )
    return Comparison(comparison=comparison, deltas=delta_table, options=options)


def _with_weights(paired: pl.DataFrame, weights: pl.DataFrame) -> pl.DataFrame:
    """Each paired query's weight (``query_weight``), by its id (as text when the id types
    differ, as pairing matches them) and the partition columns ``weights`` has (list weights are
    a partition's); a query without one is a caller's error, since the weights were matched to
    every query of every table before."""
    as_text = paired.schema["query_id"] != weights.schema["query_id"]
    key = pl.col("query_id").cast(pl.String) if as_text else pl.col("query_id")
    partitions = [name for name in weights.columns if name not in ("query_id", "weight")]
    table = weights.select(*partitions, key.alias("_weight_key"), pl.col("weight").cast(pl.Float64).alias(WEIGHT))
    joined = paired.with_columns(key.alias("_weight_key")).join(
        table, on=[*partitions, "_weight_key"], how="left", maintain_order="left"
    )
    if joined.get_column(WEIGHT).null_count():
        raise ValueError("a paired query without a weight: weights must cover every query of every table")
    return joined.drop("_weight_key")


def _require_shared_queries(
    paired: pl.DataFrame, tables: Mapping[str, pl.DataFrame], baseline: str, candidate: str
) -> None:
    """Two systems without a query in common have nothing to compare: that is an error (as in
    evaluation), not a table of empty rows, and its message shows both sides' ids."""
    if paired.filter(pl.col("in_baseline") & pl.col("in_candidate")).height:
        return
    sides = []
    for name in (baseline, candidate):
        ids = tables[name].get_column("query_id")
        shown = ", ".join(repr(v) for v in ids.unique(maintain_order=True).head(3).to_list())
        sides.append(f"{name}: {ids.dtype} ids, e.g. {shown}")
    raise NothingToEvaluate(f"{baseline} and {candidate} share no query to compare ({'; '.join(sides)})")


def _with_corrections(comparison: pl.DataFrame, options: Options) -> pl.DataFrame:
    """Adjust p-values within each family: the pairs compared at one cutoff in one group (the
    overall rows are a family of their own)."""
    family = ["k", *options.partition_by, *options.group_by, *([OVERALL] if options.group_by else [])]
    adjusted = []
    for frame in comparison.with_row_index("_row").partition_by(family, maintain_order=True):
        adjusted.append(
            frame.select(
                "_row",
                pl.Series(
                    "p_adjusted_t", adjust_p_values(frame["p_value_t"].to_list(), options.correction), pl.Float64
                ),
                pl.Series(
                    "p_adjusted_permutation",
                    adjust_p_values(frame["p_value_permutation"].to_list(), options.correction),
                    pl.Float64,
                ),
            )
        )
    return (
        comparison.with_row_index("_row")
        .join(pl.concat(adjusted), on="_row", how="left")
        .sort("_row")
        .drop("_row")
        .with_columns(
            pl.lit(options.correction).alias("correction"),
            pl.lit(options.permutations, dtype=pl.Int64).alias("permutations"),
            pl.lit(options.bootstrap_samples, dtype=pl.Int64).alias("bootstrap_samples"),
            pl.lit(options.confidence, dtype=pl.Float64).alias("confidence"),
            pl.lit(options.seed, dtype=pl.Int64).alias("seed"),
        )
    )


def unpaired_queries(deltas: pl.DataFrame) -> pl.DataFrame:
    """The queries only one side of a pair has: ``baseline, candidate, side, queries`` (the
    distinct query ids, over every cutoff)."""
    return (
        deltas.filter(pl.col("in_baseline") != pl.col("in_candidate"))
        .with_columns(
            pl.when(pl.col("in_baseline")).then(pl.lit("baseline")).otherwise(pl.lit("candidate")).alias("side")
        )
        .group_by("baseline", "candidate", "side", maintain_order=True)
        .agg(pl.col("query_id").cast(pl.String).unique().sort().alias("queries"))
    )


# --- conventions ---------------------------------------------------------------------------


# Recorded options that change no query's NDCG@k: the cutoffs (pairing is by k, and a k one
# side lacks is an error), the tie bounds (extra columns), all_queries (a zero-filled query is
# one side's only, and compare's own all_queries decides it).
_COMPARABLE_ANYWAY = frozenset({"cutoffs", "tie_bounds", "all_queries", "measures"})


def convention_differences(
    conventions: Mapping[str, Mapping[str, object] | None],
) -> tuple[dict[str, dict[str, object]], list[str]]:
    """What differs between the systems' recorded conventions, and which systems have none
    recorded. The first is ``{convention: {system: value}}`` over the conventions that decide
    NDCG@k (those :meth:`Evaluation.describe` names, less ``_COMPARABLE_ANYWAY``); a
    convention one manifest lacks counts as ``"not recorded"``, or as its default when the
    output predates it (``Convention.absent_means_default``)."""
    recorded = {name: values for name, values in conventions.items() if values is not None}
    unknown = [name for name, values in conventions.items() if values is None]
    defaults = Evaluation().describe()
    deciding = [key for key in defaults if key not in _COMPARABLE_ANYWAY]
    absent = {
        c.described_as: defaults[c.described_as] for c in CONVENTIONS if c.absent_means_default and c.described_as
    }
    differences: dict[str, dict[str, object]] = {}
    for key in deciding:
        values = {name: values.get(key, absent.get(key, "not recorded")) for name, values in recorded.items()}
        if len({json.dumps(v, sort_keys=True, default=str) for v in values.values()}) > 1:
            differences[key] = values
    return differences, unknown


def describe_differences(differences: Mapping[str, Mapping[str, object]]) -> str:
    """``gain: a=linear, b=exponential; ...`` for messages."""
    return "; ".join(
        f"{key}: {', '.join(f'{name}={value}' for name, value in values.items())}"
        for key, values in differences.items()
    )


# --- rendering -------------------------------------------------------------------------------


def _group_cell(row: Mapping[str, object], column: str) -> str:
    """``overall`` on the overall rows, ``(null)`` for the group whose value is null (a value that
    looks like either, or holds a control character, quoted)."""
    from pipeline.io.format import group_cell

    return group_cell(row[column], overall=bool(row.get(OVERALL)), overall_marker=OVERALL_LABEL)


def partition_cell(row: Mapping[str, object], partition_by: Sequence[str]) -> str:
    """``dt=2026-11-22`` for a partition's rows, ``pooled`` for the rows over every paired
    partition (partition values are folder names, never null)."""
    if all(row[c] is None for c in partition_by):
        return "pooled"
    return "/".join(f"{c}={text_value(row[c])}" for c in partition_by)


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def p_value_text(value: float | None) -> str:
    """A p-value as printed: 4 decimals, or 2 significant digits below 1e-4."""
    return "-" if value is None else (f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}")


def comparison_table(result: Comparison, unpaired: pl.DataFrame, *, digits: int = 4) -> str:
    """A fixed-width table for people: one line per pair, group and cutoff."""
    group_by = list(result.options.group_by)
    partition_by = list(result.options.partition_by)
    header = [
        "baseline",
        "candidate",
        *(["partition"] if partition_by else []),
        *group_by,
        "k",
        "n",
        "mean base",
        "mean cand",
        "diff",
        "rel",
        "W/T/L",
        "p(t)",
        "p(perm)",
        f"{result.options.confidence:.0%} CI",
        f"p adj ({result.options.correction})",
    ]
    body = []
    for row in result.comparison.iter_rows(named=True):
        ci = "-" if row["ci_low"] is None else f"[{row['ci_low']:+.{digits}f}, {row['ci_high']:+.{digits}f}]"
        relative = "-" if row["relative_change"] is None else f"{row['relative_change']:+.1%}"
        adjusted = f"{p_value_text(row['p_adjusted_t'])} / {p_value_text(row['p_adjusted_permutation'])}"
        body.append(
            [
                text_value(row["baseline"]),
                text_value(row["candidate"]),
                *([partition_cell(row, partition_by)] if partition_by else []),
                *[_group_cell(row, g) for g in group_by],
                cutoff_label(row["k"]),
                str(row["queries"]),
                _number(row["mean_baseline"], digits),
                _number(row["mean_candidate"], digits),
                "-" if row["mean_difference"] is None else f"{row['mean_difference']:+.{digits}f}",
                relative,
                f"{row['wins']}/{row['ties']}/{row['losses']}",
                p_value_text(row["p_value_t"]),
                p_value_text(row["p_value_permutation"]),
                ci,
                adjusted,
            ]
        )
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)) for line in [header, *body]]
    weighted = weighting_note(result.options)
    notes = [
        f"# paired by {'partition and ' if partition_by else ''}query"
        f"{' and ' + ', '.join(group_by) if group_by else ''}; diff = candidate - baseline; "
        f"{'weighted ' if weighted else 't-test, '}randomization test ({result.options.permutations} sign flips), "
        f"{'weighted ' if weighted else ''}percentile bootstrap "
        f"({result.options.bootstrap_samples} resamples), seed {result.options.seed}; "
        f"p adjusted (t / perm) by {result.options.correction} over the pairs of each cutoff and group",
        *([f"# {weighted}"] if weighted else []),
    ]
    for row in unpaired.iter_rows(named=True):
        queries = row["queries"]
        shown = ", ".join(map(text_value, queries[:5])) + (", ..." if len(queries) > 5 else "")
        handling = "scored 0 for the other side" if result.options.all_queries else "left out (see --all-queries)"
        notes.append(
            f"# {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} only in {text_value(row[row['side']])} "
            f"({text_value(row['baseline'])} vs {text_value(row['candidate'])}), {handling}: {shown}"
        )
    return "\n".join([*notes, *lines]) + "\n"


def weighting_note(options: Options) -> str | None:
    """What a weighted comparison weighs and how, for every output that prints one (None when
    unweighted): the file, its column, and which test reads the weighted mean difference."""
    weights = options.query_weights
    if weights is None:
        return None
    missing = weights.get("missing_query_weight")
    unweighted = f", a query without a row {missing:g}" if isinstance(missing, int | float) else ""
    whose = f"query weights: {weights.get('path')} (column {weights.get('weight_column')}{unweighted})"
    if "doc_weight_col" in weights:
        whose = (
            f"list weights (TF-Ranking's) of --doc-weight-col {weights['doc_weight_col']!r} for "
            f"{weights.get('measure')}: {weights.get('list_weight')} over each query's results, the same in every run"
        )
    return (
        f"{whose}: means are "
        "sum(w*x)/sum(w) over the paired queries; the randomization test (p(perm), what the gate reads) flips "
        "the signs of the weighted differences, the bootstrap resamples queries with their weights; no t-test "
        "(p(t) -); n and W/T/L count queries, a query of weight 0 moves no mean or test"
    )


def weights_source(weights: Mapping[str, object]) -> str:
    """Whose weights a comparison is weighted by, as its errors name them."""
    if "doc_weight_col" in weights:
        return f"the systems (their list weights of --doc-weight-col {weights['doc_weight_col']!r})"
    return str(weights.get("path"))


def comparison_json(
    result: Comparison, unpaired: pl.DataFrame, conventions: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The comparison, the unpaired queries, the options and the conventions as one object."""
    return {
        "comparison": result.comparison.to_dicts(),
        "unpaired": unpaired.to_dicts(),
        "options": result.options.describe(),
        "conventions": dict(conventions) if conventions is not None else None,
    }
