"""Judgment coverage: how much of a score rests on judged documents.

A score computed over documents nobody judged says less than its digits suggest: an unjudged
result gains 0 (``unjudged zero``, trec_eval's convention), so a system that retrieves what the
judges never saw reads as worse, and one judged on a fraction of its top k as known when it is
not. The measure of it is ``judged`` (:data:`pipeline.registry.MEASURES`): ir_measures' Judged@k,
the judged results (label >= 0) in the top k divided by k, the ranks past the retrieved counting
as unjudged. trec_eval's ``unj`` counts the other way (unjudged / k, the ranks past the retrieved
counting as judged), so ``judged = 1 - unj`` only where k results were retrieved; the gate and
the report read ``judged``.

Judged@k has no value over the whole ranking (k would be the ranking's length), so coverage
is read at cutoffs only.

:func:`candidate_judged` gives, for the gate of ``ndcg compare --min-judged``, each candidate's
mean Judged@k over the queries its comparison rows average (the paired queries; with
``all_queries`` also the queries one side lacks, a query the candidate lacks counting 0: it
retrieved nothing, so nothing judged), per cutoff, group and partition, as the comparison's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.errors import UsageError
from pipeline.groups import OVERALL

JUDGED = "judged"
# What to add to `ndcg evaluate` for its outputs to hold Judged@k at each cutoff.
JUDGED_FLAG = "--measures judged"


def missing_judged(system: str, where: str = "") -> UsageError:
    """A system whose per-query table holds no Judged@k where it is needed: what to do."""
    return UsageError(
        f"system {system!r} has no {JUDGED!r} (Judged@k) values in its per-query table{where}: --min-judged reads the "
        f"candidate's Judged@k; evaluate it with {JUDGED_FLAG} (ndcg evaluate ... {JUDGED_FLAG}), or compare "
        "runs scored here with --run, which computes it"
    )


def candidate_judged(
    tables: Mapping[str, pl.DataFrame],
    cutoffs: Sequence[int],
    *,
    column: str = JUDGED,
    group_by: Sequence[str] = (),
    partition_by: Sequence[str] = (),
    all_queries: bool = False,
) -> pl.DataFrame:
    """Each candidate's mean Judged@k (``column`` of its per-query table) against the first
    system (the baseline), at ``cutoffs``: one row per (candidate, cutoff) over all queries, per
    group (``overall`` marks the rows over all queries) and per partition (partition columns
    null on the pooled rows), keyed as the comparison's rows are: ``baseline, candidate,
    *partition_by, *group_by, [overall], k, judged_queries, judged``. A candidate without the
    column, or without a value at one of ``cutoffs``, is refused (exit 2, saying how to get it)."""
    from pipeline.compare import SCORE, check_per_query, pair

    names = list(tables)
    at_cutoffs = pl.col("k").is_in(list(cutoffs))
    baseline = check_per_query(tables[names[0]].filter(at_cutoffs), names[0], group_by, partition_by)
    found = []
    for name in names[1:]:
        table = tables[name].filter(at_cutoffs)
        if column not in table.columns:
            raise missing_judged(name)
        lacking = table.filter(pl.col(column).is_null())
        if lacking.height:
            row = lacking.row(0, named=True)
            where = [f"k={row['k']}", *(f"partition {key}={row[key]}" for key in partition_by)]
            raise missing_judged(name, f" at {', '.join(where)} ({lacking.height} row(s))")
        if column != SCORE:  # (it is the score itself when Judged@k is the measure compared)
            table = table.drop(SCORE, strict=False).rename({column: SCORE})
        judged = check_per_query(table, name, group_by, partition_by, JUDGED)
        paired = pair(baseline, judged, group_by=group_by, all_queries=all_queries, partition_by=partition_by)
        rows = _means(paired.filter(pl.col("delta").is_not_null()), group_by, partition_by)
        found.append(rows.select(pl.lit(names[0]).alias("baseline"), pl.lit(name).alias("candidate"), pl.all()))
    return pl.concat(found, how="vertical_relaxed") if found else pl.DataFrame()


def _means(paired: pl.DataFrame, group_by: Sequence[str], partition_by: Sequence[str]) -> pl.DataFrame:
    """The candidate side's mean per scope of the comparison (see :func:`pipeline.compare.compare_pair`)."""
    from pipeline.compare import SCORE

    scopes: list[list[str]] = [["k"]] + ([["k", *group_by]] if group_by else [])
    if partition_by:
        scopes += [[*partition_by, *scope] for scope in scopes]
    frames = []
    for scope in scopes:
        means = paired.group_by(scope).agg(
            pl.len().cast(pl.Int64).alias("judged_queries"), pl.col(f"{SCORE}_candidate").mean().alias(JUDGED)
        )
        absent = [pl.lit(None, dtype=paired.schema[g]).alias(g) for g in [*partition_by, *group_by] if g not in scope]
        marker = [pl.lit(not set(group_by) & set(scope)).alias(OVERALL)] if group_by else []
        frames.append(means.with_columns(*absent, *marker))
    keys = [*partition_by, *group_by, *([OVERALL] if group_by else []), "k"]
    return pl.concat([frame.select(*keys, "judged_queries", JUDGED) for frame in frames], how="vertical")
