"""The Polars engine: run + qrels LazyFrames to the per-query LazyFrame, in one lazy plan.

A package by stage, as ``sql/`` is a folder by stage: each step of
:data:`pipeline.sql_files.PER_QUERY_STEPS` (``sql/<stage>/<step>.sql``) has a twin of its name in
the module of its stage (``pipeline/engines/polars/<stage>.py``: :mod:`.ranking`,
:mod:`.counters`, :mod:`.curves`, :mod:`.measures`), so the two engines read side by side; the
last step, ``per_query.sql``, is :func:`per_query` here. Where the SQL switches on a variable,
this engine picks the expression in Python; both compute the same thing. The signals and the
counters the measures read are built from the registry, and only those asked for.
"""

from __future__ import annotations

import polars as pl

from pipeline.engines.polars import counters, curves, measures, ranking
from pipeline.engines.polars.relstring import relstrings
from pipeline.expressions import with_input_order
from pipeline.registry import MEASURE_NAMES, Evaluation

QUERY = ranking.QUERY
PER_QUERY_COLUMNS = (QUERY, "k", *MEASURE_NAMES)

__all__ = ["PER_QUERY_COLUMNS", "per_query", "relstrings"]


def per_query(
    run: pl.LazyFrame,
    qrels: pl.LazyFrame,
    evaluation: Evaluation,
    *,
    run_queries: pl.DataFrame | None = None,
    judged_queries: pl.DataFrame | None = None,
) -> pl.LazyFrame:
    """One row per evaluated query and cutoff: ``query_id, k, cg, dcg, idcg, ndcg``, then the
    companion measures of ``evaluation.measures`` (``P, recall, map, recip_rank, success``),
    and with ``evaluation.tie_bounds`` also ``ndcg_min, ndcg_max, ties_straddle_k``.

    ``run`` has ``query_id, doc_id, score`` and optionally ``arrival`` (input position) and
    ``rank`` (an input rank); ``qrels`` has ``query_id, doc_id, relevance``. ``k`` is null for
    the whole ranking. Inputs are assumed validated (no nulls; no duplicates unless the
    evaluation has a duplicate policy); see :mod:`pipeline.validate`.

    ``run_queries`` and ``judged_queries``, the distinct ``query_id`` values of the run and of
    the qrels when the caller has them (validation counts them anyway), save passes over the
    inputs; with both, text ids are replaced by their hashes while the plan runs when no two
    of them hash alike (see :func:`_hashed_query_ids`).
    """
    hashed_ids = _hashed_query_ids(run_queries, judged_queries)
    if hashed_ids is not None:
        run, qrels = run.with_columns(QUERY_HASH), qrels.with_columns(QUERY_HASH)
        run_queries = hashed_ids.filter(pl.col("in_run")).select(pl.col(HASHED).alias(QUERY))
        judged_queries = hashed_ids.filter(pl.col("judged")).select(pl.col(HASHED).alias(QUERY))
    # cached for the same reason as the ranking below: the counters, curves and ideal each read
    # their own columns of it, and all_trec read the qrels 8 times (2M rows: ~0.2 s CPU of 4)
    judged = ranking.judgments(qrels, evaluation).cache()
    judged_ids = judged.select(QUERY).unique() if judged_queries is None else judged_queries.lazy()
    # Every step is per query, so the run's queries without judgments are not filtered out of
    # the run here (a join over every row) but left out of the evaluated queries below.
    run = with_input_order(run)
    deduplicated = ranking.deduplicated(run, evaluation)
    # the ranking by score before the judgments are joined, cached: num_ret counts its ranks,
    # and the join then keeps only the judged ones (see ranking.orderings)
    by_score = ranking.ranked(deduplicated, evaluation, "retrieved").cache()
    retrieved = ranking.orderings(by_score, deduplicated, judged, evaluation)
    # Read by the counters, the curves, the sums and the retrieved count, each projecting its
    # own columns: Polars' common-subplan elimination saw those branches as different plans and
    # read, ranked and joined the run with the judgments once per branch (3 times for all_trec).
    # One explicit cache makes every branch read the one ranking (all_trec: 6.6 s -> 4.0 s CPU
    # at 2M rows).
    retrieved = {name: frame.cache() for name, frame in retrieved.items()}
    counted_ranks = ranking.counted_ranks(by_score, retrieved["retrieved"], evaluation)
    evaluated = counters.evaluated_queries(
        # the run's queries, also those whose every result retrieved_scores removed (their
        # ranking is empty)
        run.select(QUERY).unique() if run_queries is None else run_queries.lazy(),
        judged_ids,
        counted_ranks,
        evaluation,
    )
    evaluated = counters.counters(evaluated, judged, evaluation)
    rankings = ranking.rankings(retrieved, judged, evaluation)
    ideal_ranking = rankings.pop("ideal")
    ideal_at_cutoffs = counters.sums_at_cutoffs(counters.running_sums(ideal_ranking, evaluation), evaluation)
    ideal_at_cutoffs = ideal_at_cutoffs.select(QUERY, "k", idcg="dcg")
    # the signals of the ranking by score, counted in the same pass over its rows as its sums
    # (no second sort, no second read of the ranking)
    rankings["retrieved"] = counters.signals(rankings["retrieved"], evaluation)
    relevance_curve = curves.relevance_curve(rankings["retrieved"], evaluated, evaluation)
    gain_curve = curves.gain_curve(
        rankings["retrieved"], curves.ideal_curve(ideal_ranking, evaluation), judged, evaluation
    )
    cascade_curve = curves.cascade_curve(rankings["retrieved"], evaluation)
    intent_pairs = curves.intent_pairs(retrieved["retrieved"], qrels, evaluation)
    intent_ideal = curves.intent_ideal(curves.intent_greedy(qrels, evaluation), evaluation)
    intent_curve = curves.intent_curve(intent_pairs, intent_ideal, evaluation)
    cwl_gains = curves.cwl_gains(rankings["retrieved"], evaluation)
    user_model_curve = curves.user_model_curve(cwl_gains, evaluation)
    nerr_curve = curves.nerr_curve(curves.nerr_runs(cwl_gains, evaluation), evaluation)
    target_curve = curves.target_curve(curves.target_runs(cwl_gains, evaluation))
    bpm_curve = curves.bpm_curve(cwl_gains, evaluation)
    compat_curve = curves.compat_curve(retrieved["retrieved"], judged, evaluation)
    weighted_ap_curve = curves.weighted_ap_curve(retrieved["retrieved"], evaluation)
    threshold_curve = curves.threshold_curve(retrieved["retrieved"], counted_ranks, evaluation)
    per_ordering = {}
    for ordering, ranks in rankings.items():
        companions = ordering == "retrieved"
        sums = counters.sums_at_cutoffs(counters.running_sums(ranks, evaluation, counted=companions), evaluation)
        table = measures.counted(
            evaluated,
            relevance_curve,
            gain_curve,
            ranking.cutoffs(evaluation),
            sums,
            ideal_at_cutoffs,
            cascade_curve if companions else None,
            intent_curve if companions else None,
            user_model_curve if companions else None,
            nerr_curve if companions else None,
            target_curve if companions else None,
            bpm_curve if companions else None,
            compat_curve if companions else None,
            weighted_ap_curve if companions else None,
            threshold_curve if companions else None,
        )
        steps = (
            measures.set_measures,
            measures.curve_measures,
            measures.gain_measures,
            measures.top_k_measures,
            measures.intent_measures,
        )
        for step in (*steps, measures.measures):
            table = step(table, evaluation, companions=companions)
        per_ordering[ordering] = table
    final = measures.final(per_ordering, retrieved["retrieved"], evaluation)
    if hashed_ids is not None:
        final = (
            final.rename({QUERY: HASHED})
            .join(hashed_ids.lazy().select(QUERY, HASHED), on=HASHED)
            .select(QUERY, pl.exclude(QUERY, HASHED))
        )
    return final.sort([QUERY, "k"], nulls_last=False)


# Grouping and joining by a u64 measured 1 s faster than by the text ids at 10M rows
# (100,000 queries): every step groups by query.
HASHED = "query_hash"
QUERY_HASH = pl.col(QUERY).hash(seed=7).alias(QUERY)


def _hashed_query_ids(run_queries: pl.DataFrame | None, judged_queries: pl.DataFrame | None) -> pl.DataFrame | None:
    """``query_id, query_hash, in_run, judged``: every text query id of either input with its
    hash, or None when the ids are not text, are not given, or two of them hash alike (then
    the plan keeps the ids themselves; a shared hash would merge two queries)."""
    if run_queries is None or judged_queries is None or run_queries.schema[QUERY] != pl.String:
        return None
    ids = (
        pl.concat(
            [run_queries.select(QUERY, in_run=pl.lit(True)), judged_queries.select(QUERY, judged=pl.lit(True))],
            how="diagonal",
        )
        .group_by(QUERY)
        .agg(pl.col("in_run").any(), pl.col("judged").any())
        .with_columns(QUERY_HASH.alias(HASHED))
    )
    return ids if ids[HASHED].n_unique() == ids.height else None
