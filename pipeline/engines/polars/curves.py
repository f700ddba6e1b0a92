"""The curves stage (``sql/curves/``): per query, the sums over the ranks of its relevant results
(:func:`relevance_curve`) and over its ranking's gains beside the ideal ranking's
(:func:`ideal_curve`, :func:`gain_curve`) that trec_eval's curve and gain measures read, and per
query and cutoff the sum ERR reads (:func:`cascade_curve`) and the subtopics ndeval's
intent-aware measures read (:func:`intent_curve`), and the C/W/L measures' expected gain per
result read (:func:`user_model_curve`); the AP curves that weigh each result are in
:mod:`pipeline.engines.polars.weighted_curves`. A curve is computed only when a measure
asked reads it (the registry's ``Measure.curve``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import polars as pl

from pipeline.engines.polars.counters import holds, sums_at_cutoffs
from pipeline.engines.polars.ranking import DOC, JUDGMENT, LABEL, QUERY, SCORE, SUBTOPIC

# the AP curves that weigh each result, in their own module: steps of this stage all the same
from pipeline.engines.polars.weighted_curves import threshold_curve as threshold_curve
from pipeline.engines.polars.weighted_curves import weighted_ap_curve as weighted_ap_curve
from pipeline.expressions import discount
from pipeline.registry import INFAP_EPSILON, MEASURE, RECALL_LEVELS, RPREC_MULTIPLES, SIGNAL, Evaluation


def in_rank_order_sum(expr: pl.Expr, order: str = "rank") -> pl.Expr:
    """The sum of ``expr`` over a query's rows added one by one in rank order: the same bits on
    every run. ``sum()`` adds in SIMD blocks whose bounds follow where the group's rows happen to
    sit in memory, which changes from run to run, and float addition is not associative."""
    return expr.fill_null(0.0).sort_by(order).cum_sum().last()


def relevance_curve(
    retrieved_ranking: pl.LazyFrame, evaluated_queries: pl.LazyFrame, evaluation: Evaluation
) -> pl.LazyFrame | None:
    """``query_id``, then of the families asked for ``bpref_sum, relevant_in_top_r,
    relevant_in_top_<x>, iprec_max_<r>, infap_sum, bing_sum``, of each evaluated query with a relevant
    result (sql/curves/relevance_curve.sql), or None when no family of the curve is asked for."""
    if "relevance_curve" not in evaluation.curves:
        return None
    asked = {MEASURE[name].selected_by for name in evaluation.columns if MEASURE[name].curve == "relevance_curve"}
    r = pl.col("relevant_in_qrels").cast(pl.Float64)

    def so_far(signal: str) -> pl.Expr:
        return pl.col(signal).cast(pl.Int64).cum_sum().over(QUERY, order_by="rank")

    per_query = [c for c in ("relevant_in_qrels", "nonrelevant_in_qrels") if c in evaluation.counters]
    relevant = (
        retrieved_ranking.select(
            QUERY,
            "rank",
            "relevant",
            so_far("relevant").alias("found"),
            so_far("nonrelevant").alias("nonrelevant_above"),
            *([so_far("pooled").alias("pooled_so_far")] if "infAP" in asked else []),
        )
        .filter(pl.col("relevant"))
        .join(evaluated_queries.select(QUERY, *per_query), on=QUERY, how="inner")
    )
    above, found, rank = pl.col("nonrelevant_above"), pl.col("found"), pl.col("rank")

    def cut(fraction: str) -> pl.Expr:
        return (float(fraction) * r + 0.9).floor()

    def bpref() -> list[pl.Expr]:
        preferences = pl.min_horizontal("nonrelevant_in_qrels", "relevant_in_qrels")
        preference = pl.when(above > 0).then(1.0 - pl.min_horizontal(above, r) / preferences).otherwise(1.0)
        return [in_rank_order_sum(preference).alias("bpref_sum")]

    def infap() -> list[pl.Expr]:
        # trec_eval's m_infap.c term by term, in its order of operations: j = rank - 1 ranks
        # above, of them pooled_so_far - 1 pooled, found - 1 relevant, nonrelevant_above judged
        # nonrelevant
        j, pooled_above, relevant_above = rank - 1.0, pl.col("pooled_so_far") - 1.0, found - 1.0
        inferred = (relevant_above + INFAP_EPSILON) / (relevant_above + above + 2 * INFAP_EPSILON)
        term = 1.0 / rank + (j / rank) * (pooled_above / j) * inferred
        return [in_rank_order_sum(pl.when(rank == 1).then(1.0).otherwise(term)).alias("infap_sum")]

    aggregations = {
        "bpref": bpref,
        "Rprec": lambda: [(rank <= r).sum().alias("relevant_in_top_r")],
        "Rprec_mult": lambda: [
            (rank <= cut(x)).sum().alias(f"relevant_in_top_{x.replace('.', '_')}") for x in RPREC_MULTIPLES
        ],
        "iprec_at_recall": lambda: [
            (found / rank)
            .filter(found >= (float(x) * r).round(0, mode="half_away_from_zero"))
            .max()
            .alias(f"iprec_max_{x.replace('.', '_')}")
            for x in RECALL_LEVELS
        ],
        "infAP": infap,
        "binG": lambda: [in_rank_order_sum(1.0 / (2 + rank - found).cast(pl.Float64).log(2)).alias("bing_sum")],
    }
    return relevant.group_by(QUERY).agg(
        expression for family, sums in aggregations.items() if family in asked for expression in sums()
    )


def ideal_curve(ideal_ranking: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """``query_id, rank, credited_gain, idcg, cost, next_gain`` of each rank j of the ideal
    ranking (sql/curves/ideal_curve.sql): its running dcg (the expression of
    :func:`~pipeline.engines.polars.counters.running_sums`), the cost max(g*(1), 1) + ... +
    max(g*(j), 1) and the gain of rank j + 1."""
    gain = pl.col("credited_gain")
    return ideal_ranking.with_columns(
        (gain * discount(pl.col("rank"), evaluation.discount)).cum_sum().over(QUERY, order_by="rank").alias("idcg"),
        pl.max_horizontal(gain, pl.lit(1.0)).cum_sum().over(QUERY, order_by="rank").alias("cost"),
        gain.shift(-1).over(QUERY, order_by="rank").alias("next_gain"),
    )


def gain_curve(
    retrieved_ranking: pl.LazyFrame, ideal: pl.LazyFrame, judgments: pl.LazyFrame, evaluation: Evaluation
) -> pl.LazyFrame | None:
    """``query_id, largest_gain``, then of the families asked for ``ideal_length, ideal_gain,
    g_sum, ndcg_rel_sum, positive_ranks, rbp_sum, judged_weight, rndcg_sum, rndcg_points`` of each
    judged query (sql/curves/gain_curve.sql), or None when no family of it is asked for. Only the
    joins and sums the asked families read are made: rbp reads neither the ideal's sums nor the
    ranking's running sums."""
    if "gain_curve" not in evaluation.curves:
        return None
    asked = {MEASURE[name].selected_by for name in evaluation.columns if MEASURE[name].curve == "gain_curve"}
    gain, rank = pl.col("credited_gain"), pl.col("rank")

    def in_rank_order(expr: pl.Expr) -> pl.Expr:
        return expr.over(QUERY, order_by="rank")

    # a negative label gains 0, so the largest gain of the judged is the largest of any
    curve = judgments.group_by(QUERY).agg(pl.col("gain").max().alias("largest_gain"))
    totals = ideal.group_by(QUERY).agg(
        pl.len().cast(pl.Int64).alias("ideal_length"), in_rank_order_sum(gain).alias("ideal_gain")
    )
    if asked & {"G", "Rndcg", "ndcg_rel"}:
        curve = curve.join(totals, on=QUERY, how="left")
    # the running sums of counters.running_sums, the same expressions in the same order (Polars
    # computes those the asked sums read)
    ranks = retrieved_ranking.with_columns(
        in_rank_order(gain.cum_sum()).alias("cg"),
        in_rank_order((gain * discount(rank, evaluation.discount)).cum_sum()).alias("dcg"),
    )
    # each rank beside the ideal's sums at rank min(i, M): the ideal's length M
    beside_ideal = (
        ranks.join(totals, on=QUERY, how="left")
        .with_columns(pl.min_horizontal(rank, pl.col("ideal_length").fill_null(0)).alias("ideal_rank"))
        .join(
            ideal.select(QUERY, pl.col("rank").alias("ideal_rank"), "idcg", "cost"),
            on=[QUERY, "ideal_rank"],
            how="left",
        )
        if asked & {"G", "ndcg_rel"}
        else ranks
    )
    cost = pl.col("cost").fill_null(0.0) + (rank - pl.col("ideal_length").fill_null(0)).clip(lower_bound=0)
    weight = pl.lit(evaluation.rbp_persistence).pow(rank - 1)
    judged = pl.col("judged") if "judged" in retrieved_ranking.collect_schema().names() else pl.lit(False)
    sums = {
        "G": lambda: [
            in_rank_order_sum(pl.when(gain != 0).then(gain / (2.0 + cost - pl.col("cg")).log(2))).alias("g_sum")
        ],
        "ndcg_rel": lambda: [
            in_rank_order_sum(pl.when(gain > 0).then(pl.col("dcg") / pl.col("idcg"))).alias("ndcg_rel_sum"),
            (gain > 0).sum().cast(pl.Int64).alias("positive_ranks"),
        ],
        "rbp": lambda: [
            in_rank_order_sum(pl.max_horizontal(gain, pl.lit(0.0)) * weight).alias("rbp_sum"),
            in_rank_order_sum(pl.when(judged).then(weight)).alias("judged_weight"),
        ],
    }
    if asked & set(sums):
        per_rank = beside_ideal.group_by(QUERY).agg(
            expression for family, made in sums.items() if family in asked for expression in made()
        )
        curve = curve.join(per_rank, on=QUERY, how="left")
    if "Rndcg" in asked:
        curve = curve.join(_rndcg_points(ranks, ideal), on=QUERY, how="left")
    return curve


def _rndcg_points(ranks: pl.LazyFrame, ideal: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, rndcg_sum, rndcg_points``: NDCG@b at each rank b where the ideal's gain changes,
    the ranking's dcg at its last rank <= b, found by an as-of join (each boundary beside every
    rank of its query, then filtered, was 0.17 s of all_trec's 2.5 s CPU at 2M rows; the same
    bits)."""
    gain = pl.col("credited_gain")
    boundaries = ideal.filter(pl.col("next_gain").is_null() | (pl.col("next_gain") != gain)).select(
        QUERY, pl.col("rank").alias("boundary"), "idcg"
    )
    return (
        boundaries.sort(QUERY, "boundary")
        .join_asof(
            ranks.select(QUERY, "rank", "dcg").sort(QUERY, "rank"),
            left_on="boundary",
            right_on="rank",
            by=QUERY,
            strategy="backward",
            check_sortedness=False,
        )
        .group_by(QUERY)
        .agg(
            in_rank_order_sum(pl.col("dcg").fill_null(0.0) / pl.col("idcg"), "boundary").alias("rndcg_sum"),
            pl.len().cast(pl.Int64).alias("rndcg_points"),
        )
    )


def cascade_curve(retrieved_ranking: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, k, err_sum`` of each query and cutoff with a graded result at or above k (k
    null: the whole ranking; sql/curves/cascade_curve.sql): the sum over its graded ranks i <= k
    of R(i) / i times the chance that the reader reaches rank i, R(g) = (2^g - 1) / 2^g_max
    (NaN at and below a rank labelled above g_max); or None when ERR is not asked for."""
    if "cascade_curve" not in evaluation.curves:
        return None
    label, g_max = pl.col(JUDGMENT), evaluation.err_max_grade
    # a label above g_max has no stop chance (R would pass 1): NaN, from its rank down
    stop_chance = pl.when(label > g_max).then(float("nan")).otherwise((pl.lit(2.0).pow(label) - 1.0) / 2.0**g_max)
    stops = retrieved_ranking.filter(pl.col(JUDGMENT) > 0).select(QUERY, "rank", stop_chance.alias("stop_chance"))
    rank = pl.col("rank")

    def in_rank_order(expr: pl.Expr) -> pl.Expr:
        return expr.over(QUERY, order_by="rank")

    # the chance that the reader gets to each graded rank: no stop above it
    reach = in_rank_order((1.0 - pl.col("stop_chance")).cum_prod().shift(1, fill_value=1.0))
    running = stops.with_columns(reach.alias("reach")).select(
        QUERY,
        "rank",
        in_rank_order(rank.shift(-1)).alias("next_rank"),
        in_rank_order((pl.col("stop_chance") * pl.col("reach") / rank).cum_sum()).alias("err_sum"),
    )
    # read off at each cutoff as the running sums are (sql/counters/sums_at_cutoffs.sql): the
    # sum in rank order up to the last graded rank at or above k, the bits of the SQL's sum
    return sums_at_cutoffs(running, evaluation)


def _relevant_judgments(qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """``query_id, doc_id, subtopic`` of each judgment relevant to its subtopic. A judgment under
    no subtopic (qrels without subtopics, or a null one) is under one subtopic of its own, "", as
    ir_measures reads judgments without subtopics (its subtopic "0")."""
    if SUBTOPIC not in qrels.collect_schema().names():
        qrels = qrels.with_columns(pl.lit(None, pl.String).alias(SUBTOPIC))
    relevant = holds(SIGNAL["relevant"], evaluation)
    judged = qrels.select(QUERY, DOC, pl.col(SUBTOPIC).fill_null(""), pl.col(LABEL).cast(pl.Float64).alias(JUDGMENT))
    return judged.filter(relevant).select(QUERY, DOC, SUBTOPIC)


def intent_pairs(retrieved: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, rank, subtopic, found_so_far, subtopic_relevant, subtopics``
    (sql/curves/intent_pairs.sql): each rank of the ranking by score with each subtopic its
    result is relevant to, the results relevant to the subtopic at or above it, R (the
    documents judged relevant to the subtopic) and S (the query's subtopics with a relevant
    judgment). None when no measure asked reads the intent curve."""
    if "intent_curve" not in evaluation.curves:
        return None
    relevant_judgments = _relevant_judgments(qrels, evaluation)
    subtopic_relevant = relevant_judgments.group_by(QUERY, SUBTOPIC).agg(pl.len().alias("subtopic_relevant"))
    subtopics = subtopic_relevant.group_by(QUERY).agg(pl.len().alias("subtopics"))
    found = pl.col("rank").rank("ordinal").over(QUERY, SUBTOPIC).cast(pl.Int64)
    return (
        retrieved.select(QUERY, DOC, "rank")
        .join(relevant_judgments, on=[QUERY, DOC], how="inner")
        .with_columns(found.alias("found_so_far"))
        .join(subtopic_relevant, on=[QUERY, SUBTOPIC], how="inner")
        .join(subtopics, on=QUERY, how="inner")
        .select(QUERY, "rank", SUBTOPIC, "found_so_far", "subtopic_relevant", "subtopics")
    )


GREEDY_IDEAL_MEASURES = ("alpha_nDCG", "nERR_IA", "nNRBP")
# nNRBP's ideal is built to 55 + ceil(log2 S) ranks: deeper, a rank adds at most S * 0.5^(i - 1)
# < 2^-53 to ndeval's sum (at least 1), which leaves its double unchanged
NNRBP_DEPTH = 55


def intent_greedy(qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, rank, gain`` (sql/curves/intent_greedy.sql): ndeval's greedy ideal ranking
    of each query with a document relevant to a subtopic. None unless alpha_nDCG, nERR_IA or
    nNRBP is asked. Each rank takes, of the documents not yet placed, the one of the largest gain
    (the sum over its subtopics of 0.5^(documents placed above relevant to it)), of equal gains
    the greatest doc_id; as deep as the largest cutoff, or nNRBP's depth."""
    if not set(GREEDY_IDEAL_MEASURES) & set(evaluation.columns):
        return None
    relevant_judgments = _relevant_judgments(qrels, evaluation).with_columns(pl.col(DOC).cast(pl.String))
    subtopics = pl.col(SUBTOPIC).n_unique().over(QUERY)
    nnrbp_depth = (NNRBP_DEPTH + subtopics.cast(pl.Float64).log(2).ceil()).cast(pl.Int64)
    wanted = pl.max_horizontal(
        pl.lit(max(evaluation.cutoffs, default=0)), nnrbp_depth if "nNRBP" in evaluation.columns else pl.lit(0)
    )
    pairs = relevant_judgments.select(
        QUERY,
        DOC,
        pl.col(SUBTOPIC).rank("dense").over(QUERY).cast(pl.Int64).alias("subtopic_number"),
        pl.min_horizontal(pl.col(DOC).n_unique().over(QUERY), wanted).cast(pl.Int64).alias("depth"),
    )
    schema = pl.Schema({QUERY: relevant_judgments.collect_schema()[QUERY], "rank": pl.Int64(), "gain": pl.Float64()})
    return pairs.map_batches(_greedy_ranks, schema=schema, streamable=False)


def intent_ideal(intent_greedy: pl.LazyFrame | None, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, k, intent_ideal_err, intent_ideal_dcg, intent_ideal_nrbp``
    (sql/curves/intent_ideal.sql): the greedy ideal's sums at each cutoff (k null: the whole
    ranking) of g / i and g / log2(i + 1) over its ranks i <= k, and of 0.5^(i - 1) * g over
    all, g its gain at i, each in rank order. None when the ideal is not asked."""
    if intent_greedy is None:
        return None
    rank, gain = pl.col("rank"), pl.col("gain")
    cutoffs = pl.LazyFrame({"k": [*evaluation.cutoffs, None]}, schema={"k": pl.Int64})
    return (
        intent_greedy.join(cutoffs, how="cross")
        .filter(pl.col("k").is_null() | (rank <= pl.col("k")))
        .group_by(QUERY, "k")
        .agg(
            in_rank_order_sum(gain / rank).alias("intent_ideal_err"),
            in_rank_order_sum(gain * math.log(2.0) / (rank + 1.0).log()).alias("intent_ideal_dcg"),
            in_rank_order_sum(pl.lit(NRBP_BETA).pow(rank - 1) * gain).alias("intent_ideal_nrbp"),
        )
    )


def _greedy_ranks(pairs: pl.DataFrame) -> pl.DataFrame:
    """``query_id, rank, gain`` of ndeval's greedy ideal from ``query_id, doc_id,
    subtopic_number, depth`` (a row per document and subtopic it is relevant to): rank by rank,
    every query at once, until each has its ``depth`` ranks."""
    left = pairs.with_columns(pl.lit(1.0).alias("gain"))
    placed = []
    rank = 1
    while left.height:
        # sums of powers of 2, the same in any order to the rank 54 (docs/conventions.md)
        scores = left.group_by(QUERY, DOC).agg(pl.col("gain").sum())
        best = scores.filter(pl.col("gain") == pl.col("gain").max().over(QUERY))
        picks = best.group_by(QUERY).agg(pl.col(DOC).max(), pl.col("gain").first())
        placed.append(picks.select(QUERY, pl.lit(rank, pl.Int64).alias("rank"), "gain"))
        covered = left.join(picks.select(QUERY, DOC), on=[QUERY, DOC]).select(QUERY, "subtopic_number", covered=True)
        left = (
            left.join(picks.select(QUERY, DOC), on=[QUERY, DOC], how="anti")
            .join(covered, on=[QUERY, "subtopic_number"], how="left")
            .with_columns(pl.when(pl.col("covered")).then(pl.col("gain") * INTENT_ALPHA_KEPT).otherwise("gain"))
            .drop("covered")
            .filter(pl.col("depth") > rank)
        )
        rank += 1
    schema = pl.Schema({QUERY: pairs.schema[QUERY], "rank": pl.Int64(), "gain": pl.Float64()})
    return pl.concat(placed) if placed else pl.DataFrame(schema=schema)


def intent_curve(
    intent_pairs: pl.LazyFrame | None, intent_ideal: pl.LazyFrame | None, evaluation: Evaluation
) -> pl.LazyFrame | None:
    """``query_id, k, intent_subtopics, intent_covered, intent_pairs, intent_err_sum,
    intent_ap_sum, intent_dcg_sum, intent_nrbp_sum, intent_err_norm, intent_dcg_norm`` of each
    query and cutoff with a result relevant to a subtopic at or above k (k null: the whole
    ranking; sql/curves/intent_curve.sql): S; the subtopics covered at or above k; the (rank,
    subtopic) pairs there; over those pairs, g = (1 - alpha)^(n - 1) the gain of a pair (n the
    results relevant to its subtopic at or above its rank; alpha 0.5, ndeval's), the sums of g /
    rank, n / rank / R, g / log2(rank + 1) and beta^(rank - 1) * g (beta 0.5); and ERR-IA's and
    alpha-DCG's ideal ideal at k for one subtopic; and the greedy ideal's sums (intent_ideal), when
    asked. None when no measure asked reads it."""
    if intent_pairs is None:
        return None
    rank, found = pl.col("rank"), pl.col("found_so_far")
    terms = intent_pairs.with_columns(
        # ndeval's alpha, 0.5: each earlier result relevant to the subtopic halves its gain
        (pl.lit(INTENT_ALPHA_KEPT).pow(found - 1) / rank).alias("err_term"),
        (found.cast(pl.Float64) / rank / pl.col("subtopic_relevant")).alias("ap_term"),
        (pl.lit(INTENT_ALPHA_KEPT).pow(found - 1) * math.log(2.0) / (rank + 1.0).log()).alias("dcg_term"),
        (pl.lit(NRBP_BETA).pow(rank - 1) * pl.lit(INTENT_ALPHA_KEPT).pow(found - 1)).alias("nrbp_term"),
    )

    def in_subtopic_order(expr: pl.Expr) -> pl.Expr:
        return expr.sort_by(SUBTOPIC).cum_sum().last()

    def in_rank_order(expr: pl.Expr) -> pl.Expr:
        return expr.over(QUERY, order_by="rank")

    # each rank's pairs summed in subtopic order, then the ranks' in rank order
    per_rank = terms.group_by(QUERY, "rank").agg(
        pl.col("subtopics").max(),
        (found == 1).sum().alias("covered"),
        pl.len().alias("pair_count"),
        in_subtopic_order(pl.col("err_term")).alias("err_term"),
        in_subtopic_order(pl.col("ap_term")).alias("ap_term"),
        in_subtopic_order(pl.col("dcg_term")).alias("dcg_term"),
        in_subtopic_order(pl.col("nrbp_term")).alias("nrbp_term"),
    )
    running = per_rank.select(
        QUERY,
        "rank",
        in_rank_order(rank.shift(-1)).alias("next_rank"),
        pl.col("subtopics").cast(pl.Int64).alias("intent_subtopics"),
        in_rank_order(pl.col("covered").cum_sum()).cast(pl.Int64).alias("intent_covered"),
        in_rank_order(pl.col("pair_count").cum_sum()).cast(pl.Int64).alias("intent_pairs"),
        in_rank_order(pl.col("err_term").cum_sum()).alias("intent_err_sum"),
        in_rank_order(pl.col("ap_term").cum_sum()).alias("intent_ap_sum"),
        in_rank_order(pl.col("dcg_term").cum_sum()).alias("intent_dcg_sum"),
        in_rank_order(pl.col("nrbp_term").cum_sum()).alias("intent_nrbp_sum"),
    )
    norms = pl.LazyFrame(
        {
            "k": list(evaluation.cutoffs),
            "intent_err_norm": [_ideal_ideal(k, lambda i: 1.0 / i) for k in evaluation.cutoffs],
            "intent_dcg_norm": [
                _ideal_ideal(k, lambda i: math.log(2.0) / math.log(i + 1.0)) for k in evaluation.cutoffs
            ],
        },
        schema={"k": pl.Int64, "intent_err_norm": pl.Float64, "intent_dcg_norm": pl.Float64},
    )
    curve = sums_at_cutoffs(running, evaluation).join(norms, on="k", how="left")
    if intent_ideal is None:
        return curve
    return curve.join(intent_ideal, on=[QUERY, "k"], how="left", nulls_equal=True)


# 1 - alpha: the share of its gain a result relevant to a subtopic keeps for each earlier one
# (ndeval's alpha, 0.5, which ir_measures' ERR_IA always uses); NRBP's beta, ndeval's 0.5
INTENT_ALPHA_KEPT = 0.5
NRBP_BETA = 0.5


def _ideal_ideal(k: int, discount: Callable[[int], float]) -> float:
    """ndeval's "ideal ideal" at k for one subtopic (every rank relevant to it): the sum over
    i <= k of (1 - alpha)^(i - 1) * discount(i), added in rank order (ERR-IA: 1 / i; alpha-DCG:
    1 / log2(i + 1))."""
    total = 0.0
    for i in range(1, k + 1):
        total += INTENT_ALPHA_KEPT ** (i - 1) * discount(i)
    return total


# cwl_eval reads the first 1000 results of a ranking (its max_n), and its weights run that deep
CWL_DEPTH = 1000

# the terms of psi_1 added before its asymptotic series takes over, at x + 10
TRIGAMMA_SHIFT = 10


# the curves of cwl_eval's measures, which read cwl_gains
CWL_CURVES = ("user_model_curve", "nerr_curve", "target_curve", "bpm_curve")


def cwl_gains(retrieved_ranking: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, rank, gain`` of the ranks i <= 1000 of positive gain on the C/W/L scale
    (sql/curves/cwl_gains.sql): (min(label, cwl_max_rel) - cwl_min_rel) / (cwl_max_rel -
    cwl_min_rel) for a label above cwl_min_rel; or None when no C/W/L measure is asked for."""
    if not set(CWL_CURVES) & set(evaluation.curves):
        return None
    low, high = evaluation.cwl_min_rel, evaluation.cwl_max_rel
    label, rank = pl.col(JUDGMENT), pl.col("rank")
    return retrieved_ranking.filter((label > low) & (rank <= CWL_DEPTH)).select(
        QUERY, "rank", ((pl.min_horizontal(label, pl.lit(high)) - low) / (high - low)).alias("gain")
    )


def user_model_curve(gains: pl.LazyFrame | None, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, k, sdcg_value`` of each query and cutoff k (not the whole ranking) with a rank
    of positive gain at or above k (sql/curves/user_model_curve.sql): SDCG@k, the sum over the
    ranks i <= min(k, 1000) of gain(i) / log2(i + 1) over the sum of 1 / log2(i + 1) for i = 1 to
    min(k, 1000), gain(i) = (min(label, cwl_max_rel) - cwl_min_rel) / (cwl_max_rel - cwl_min_rel)
    for a label above cwl_min_rel; or None when no C/W/L measure is asked for."""
    if gains is None or "user_model_curve" not in evaluation.curves:
        return None
    rank = pl.col("rank")
    running = gains.select(
        QUERY,
        "rank",
        rank.shift(-1).over(QUERY, order_by="rank").alias("next_rank"),
        (pl.col("gain") / (rank + 1.0).log(2)).cum_sum().over(QUERY, order_by="rank").alias("sdcg_value"),
    )
    # the denominator at each cutoff: the discounts of the first min(k, 1000) ranks, in rank order
    discount_sums, total = {}, 0.0
    for i in range(1, CWL_DEPTH + 1):
        total += 1.0 / math.log2(i + 1.0)
        discount_sums[i] = total
    at_cutoffs = sums_at_cutoffs(running, evaluation).filter(pl.col("k").is_not_null())
    denominator = pl.col("k").clip(upper_bound=CWL_DEPTH).replace_strict(discount_sums, return_dtype=pl.Float64)
    return at_cutoffs.with_columns(pl.col("sdcg_value") / denominator)


def nerr_runs(gains: pl.LazyFrame | None, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, rank, gain, reach, reach_past, next_rank`` of each rank i <= 1000 of positive
    gain (sql/curves/nerr_runs.sql): the chance of no stop above it, and at or above it (the
    products of 1 - gain in rank order), and the next rank of positive gain; or None when
    neither NERR8 nor NERR9 is asked for."""
    if gains is None or "nerr_curve" not in evaluation.curves:
        return None

    def in_rank_order(expr: pl.Expr) -> pl.Expr:
        return expr.over(QUERY, order_by="rank")

    stays = 1.0 - pl.col("gain")
    return gains.with_columns(
        in_rank_order(stays.cum_prod().shift(1, fill_value=1.0)).alias("reach"),
        in_rank_order(stays.cum_prod()).alias("reach_past"),
        in_rank_order(pl.col("rank").shift(-1)).alias("next_rank"),
    )


def nerr_curve(runs: pl.LazyFrame | None, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, k, nerr8_value, nerr9_value`` of each query with a rank of positive gain and
    cutoff k (sql/curves/nerr_curve.sql): the sum over i <= K = min(k, 1000) of P(i) * gain(i)
    over the sum of P(i), P(i) = reach(i) (NERR8) or reach(i) / i (NERR9); the ranks between
    two of positive gain share one chance, summed by prefix sums of the weights."""
    if runs is None:
        return None
    harmonic, total = [0.0], 0.0
    for i in range(1, CWL_DEPTH + 1):
        total += 1.0 / i
        harmonic.append(total)
    depths = pl.LazyFrame(
        {"k": list(evaluation.cutoffs), "depth": [min(k, CWL_DEPTH) for k in evaluation.cutoffs]},
        schema={"k": pl.Int64, "depth": pl.Int64},
    )
    rank = pl.col("rank")
    numerators = (
        runs.join(depths, how="cross")
        .filter(rank <= pl.col("depth"))
        .group_by(QUERY, "k")
        .agg(
            in_rank_order_sum(pl.col("reach") * pl.col("gain")).alias("nerr8_sum"),
            in_rank_order_sum(pl.col("reach") * pl.col("gain") / rank).alias("nerr9_sum"),
        )
    )
    first = runs.group_by(QUERY).agg(
        pl.lit(0, pl.Int64).alias("after_rank"), pl.lit(1.0).alias("chance"), rank.min().alias("until_rank")
    )
    later = runs.select(QUERY, rank.alias("after_rank"), pl.col("reach_past").alias("chance"), "next_rank")
    spans = pl.concat([first, later.rename({"next_rank": "until_rank"})], how="vertical_relaxed")
    end = pl.min_horizontal(pl.col("until_rank").fill_null(pl.col("depth")), pl.col("depth"))
    start = pl.col("after_rank")

    def prefix(position: pl.Expr) -> pl.Expr:
        return position.replace_strict(list(range(CWL_DEPTH + 1)), harmonic, return_dtype=pl.Float64)

    denominators = (
        spans.join(depths, how="cross")
        .filter(start < pl.col("depth"))
        .group_by(QUERY, "k")
        .agg(
            in_rank_order_sum(pl.col("chance") * (end - start), "after_rank").alias("nerr8_norm"),
            in_rank_order_sum(pl.col("chance") * (prefix(end) - prefix(start)), "after_rank").alias("nerr9_norm"),
        )
    )
    return denominators.join(numerators, on=[QUERY, "k"], how="left").select(
        QUERY,
        "k",
        (pl.col("nerr8_sum").fill_null(0.0) / pl.col("nerr8_norm")).alias("nerr8_value"),
        (pl.col("nerr9_sum").fill_null(0.0) / pl.col("nerr9_norm")).alias("nerr9_value"),
    )


def target_runs(gains: pl.LazyFrame | None, evaluation: Evaluation) -> pl.LazyFrame | None:
    """Each rank i <= 1000 of positive gain and rank 1 (gain 0 where none) of a query with one
    (sql/curves/target_runs.sql): ``gain, next_rank`` (none: 1001), ``inst_from, inst_to`` (i + b,
    next_rank + b; b = 2T - 1 - the gain at or above i), INST's ``inst_p`` (its c telescopes
    between rows: the product of ((j + b_j) / (next_j + b_j))^2 over the rows above), INSQ's
    ``insq_p`` = (2T / (i + 2T - 1))^2, ``patience_p`` = p^(i - 1), ``kept_before`` (no stop above
    i), the sums over the positions 1..i and 1..next_rank - 1 of INSQ's P and of p^(j - 1), and
    INSQ's over 1..1000 (``insq_total``); or None when no measure reads target_curve."""
    if gains is None or "target_curve" not in evaluation.curves:
        return None
    twice, patience = 2.0 * evaluation.cwl_target, evaluation.rbp_persistence
    positions = pl.LazyFrame({"rank": list(range(1, CWL_DEPTH + 1))}, schema={"rank": pl.Int64})
    n = pl.col("rank").cast(pl.Float64)
    # added in position order once for every query
    position_sums = positions.select(
        "rank",
        ((twice / (n + twice - 1.0)) ** 2).cum_sum().alias("insq_sum"),
        (patience ** (n - 1.0)).cum_sum().alias("nerr10_sum"),
    )
    insq_total = position_sums.filter(pl.col("rank") == CWL_DEPTH).select(pl.col("insq_sum").alias("insq_total"))
    ranked = gains.with_columns(pl.col("rank").cast(pl.Int64))
    first = ranked.select(QUERY).unique().with_columns(pl.lit(1, pl.Int64).alias("rank"), pl.lit(0.0).alias("gain"))
    b = 2.0 * evaluation.cwl_target - 1.0 - pl.col("gain").cum_sum().over(QUERY, order_by="rank")
    read = pl.concat([ranked, first.join(ranked, on=[QUERY, "rank"], how="anti")]).with_columns(
        pl.col("rank").shift(-1).over(QUERY, order_by="rank").fill_null(CWL_DEPTH + 1).alias("next_rank"),
        b.alias("inst_b"),
    )
    i, following = pl.col("rank").cast(pl.Float64), pl.col("next_rank").cast(pl.Float64)
    return (
        read.with_columns(
            (i + pl.col("inst_b")).alias("inst_from"),
            (following + pl.col("inst_b")).alias("inst_to"),
            (((i + pl.col("inst_b")) / (following + pl.col("inst_b"))) ** 2)
            .cum_prod()
            .shift(1, fill_value=1.0)
            .over(QUERY, order_by="rank")
            .alias("inst_p"),
            ((twice / (i + twice - 1.0)) ** 2).alias("insq_p"),
            (patience ** (i - 1.0)).alias("patience_p"),
            (1.0 - pl.col("gain"))
            .cum_prod()
            .shift(1, fill_value=1.0)
            .over(QUERY, order_by="rank")
            .alias("kept_before"),
            (pl.col("next_rank") - 1).alias("last_rank"),
        )
        .join(position_sums, on="rank", how="left")
        .join(position_sums, left_on="last_rank", right_on="rank", how="left", suffix="_last")
        .join(insq_total, how="cross")
        .drop("inst_b", "last_rank")
    )


def trigamma_difference(lower: pl.Expr, upper: pl.Expr, span: pl.Expr) -> pl.Expr:
    """psi_1(lower) - psi_1(upper) for 0 < lower < upper = lower + span (span exact, a whole
    number), psi_1(x) the sum over j >= 0 of 1 / (x + j)^2: the first ten terms of each added,
    then the asymptotic series at z = x + 10 >= 10 to z^-15, whose next term is below 1e-16 of it.
    Its leading terms 1/z are taken apart as span / (z_lower z_upper): their difference, about
    span / x^2, is what is left of two values about 1 / x, which a subtraction would lose (all
    but a few digits at x = 1e10, INST's 2T - 1 - G at a target T of 5e9)."""

    def near(x: pl.Expr) -> pl.Expr:
        return pl.sum_horizontal(*(1.0 / ((x + j) * (x + j)) for j in range(TRIGAMMA_SHIFT)))

    def series(z: pl.Expr) -> pl.Expr:
        w = 1.0 / (z * z)
        return (
            w / z * (1 / 6 - w * (1 / 30 - w * (1 / 42 - w * (1 / 30 - w * (5 / 66 - w * (691 / 2730 - w * 7 / 6))))))
        )

    z_lower, z_upper = lower + float(TRIGAMMA_SHIFT), upper + float(TRIGAMMA_SHIFT)
    # 1/z_lower - 1/z_upper and its square's half, without the subtraction
    leading = span / (z_lower * z_upper)
    squares = leading * (1.0 / z_lower + 1.0 / z_upper) / 2.0
    return near(lower) - near(upper) + leading + squares + series(z_lower) - series(z_upper)


def target_curve(runs: pl.LazyFrame | None) -> pl.LazyFrame | None:
    """``query_id, inst_value, insq_value, nerr10_value, nerr11_value`` of each query with a rank
    i <= 1000 of positive gain (sql/curves/target_curve.sql): over the positions 1 to 1000 (past
    the ranking, gain 0), the sum of P(i) * gain(i) over the sum of P(i), P(i) = c(1) * ... *
    c(i - 1), c(i) = ((i + a - 1) / (i + a))^2, a = 2T - G(i) (INST, G(i) the gain at or above i)
    or 2T (INSQ); p * (1 - gain(i)) (NERR10); INSQ's c times (1 - gain(i)) (NERR11); or None when
    none is asked for. From a row of ``runs`` to the next the gain is 0, so P's sum there has a
    closed form: INST's P(i) * (i + b)^2 * (psi_1(i + b) - psi_1(next + b)); NERR10's and
    NERR11's the chance of no stop at or above i times the sums over positions the runs carry."""
    if runs is None:
        return None
    kept_past = pl.col("kept_before") * (1.0 - pl.col("gain"))
    spanned = runs.with_columns(
        (
            pl.col("inst_p")
            * pl.col("inst_from") ** 2
            * trigamma_difference(
                pl.col("inst_from"), pl.col("inst_to"), (pl.col("next_rank") - pl.col("rank")).cast(pl.Float64)
            )
        ).alias("inst_reach"),
        (
            pl.col("patience_p") * pl.col("kept_before")
            + kept_past * (pl.col("nerr10_sum_last") - pl.col("nerr10_sum"))
        ).alias("nerr10_reach"),
        (pl.col("insq_p") * pl.col("kept_before") + kept_past * (pl.col("insq_sum_last") - pl.col("insq_sum"))).alias(
            "nerr11_reach"
        ),
        (pl.col("patience_p") * pl.col("kept_before")).alias("nerr10_p"),
        (pl.col("insq_p") * pl.col("kept_before")).alias("nerr11_p"),
    )

    def expected_gain(name: str) -> pl.Expr:
        reach = pl.col("insq_total").first() if name == "insq" else in_rank_order_sum(pl.col(f"{name}_reach"))
        return in_rank_order_sum(pl.col(f"{name}_p") * pl.col("gain")) / reach

    return spanned.group_by(QUERY).agg(
        *(expected_gain(name).alias(f"{name}_value") for name in ("inst", "insq", "nerr10", "nerr11"))
    )


def bpm_curve(gains: pl.LazyFrame | None, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, k, bpm_value`` of each query and cutoff k (not the whole ranking) with a rank
    of positive gain read (sql/curves/bpm_curve.sql): the reader reads the first m = min(k, s,
    1000) positions, s the first rank whose gain at or above it, added in rank order as
    cwl_eval's cumulative sum, reaches T (none: 1000); BPM@k is the gain of the ranks i <= m over
    m; or None when BPM is not asked for."""
    if gains is None or "bpm_curve" not in evaluation.curves:
        return None
    rank = pl.col("rank")
    stops = (
        gains.with_columns(pl.col("gain").cum_sum().over(QUERY, order_by="rank").alias("gained"))
        .filter(pl.col("gained") >= evaluation.cwl_target)
        .group_by(QUERY)
        .agg(rank.min().alias("stop_rank"))
    )
    cutoffs = pl.LazyFrame({"k": list(evaluation.cutoffs)}, schema={"k": pl.Int64})
    read = pl.min_horizontal(pl.col("k"), pl.col("stop_rank").fill_null(CWL_DEPTH), pl.lit(CWL_DEPTH))
    return (
        gains.join(stops, on=QUERY, how="left")
        .join(cutoffs, how="cross")
        .with_columns(read.alias("depth"))
        .filter(rank <= pl.col("depth"))
        .group_by(QUERY, "k")
        .agg((in_rank_order_sum(pl.col("gain")) / pl.col("depth").first()).alias("bpm_value"))
    )


def compat_curve(retrieved: pl.LazyFrame, judged: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame | None:
    """``query_id, compat_value`` of each query with a ranking (sql/curves/compat_curve.sql):
    ir_measures' Compat, the rank-biased overlap with the ideal ranking (the judged documents
    labelled above 0 by label, then the run's score, 0 when not retrieved, then the ranking's
    order), over the ideal's own: the sum over i <= max(n, |ideal|) of p^(i - 1) * O(i) / i,
    O(i) the documents in the top i of both; or None when Compat is not asked for."""
    if "compat_curve" not in evaluation.curves:
        return None
    ranked = retrieved.select(QUERY, DOC, SCORE, "rank")
    lengths = ranked.group_by(QUERY).agg(pl.len().alias("ranking_length"))
    # the order of the documents not retrieved among themselves changes no overlap: not broken
    ideal = (
        judged.filter(pl.col(JUDGMENT) > 0)
        .select(QUERY, DOC, JUDGMENT)
        .join(lengths.select(QUERY), on=QUERY, how="inner")
        .join(ranked, on=[QUERY, DOC], how="left")
    )
    # by label descending, then the run's score (0 when not retrieved) descending, then the ranking's order
    in_ideal_order = [-pl.col(JUDGMENT), -pl.col(SCORE).fill_null(0.0), pl.col("rank")]
    ideal = ideal.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
        .over(QUERY, order_by=in_ideal_order, nulls_last=True)
        .alias("ideal_rank")
    )
    ideal_lengths = ideal.group_by(QUERY).agg(pl.len().alias("ideal_length"))
    completed = (
        ideal.filter(pl.col("rank").is_not_null())
        .group_by(QUERY, pl.max_horizontal("rank", "ideal_rank").cast(pl.Int64).alias("i"))
        .agg(pl.len().alias("documents"))
    )
    ideal_length = pl.col("ideal_length").fill_null(0)
    positions = (
        lengths.join(ideal_lengths, on=QUERY, how="left")
        .select(
            QUERY,
            ideal_length.alias("ideal_length"),
            pl.int_ranges(1, pl.max_horizontal("ranking_length", ideal_length) + 1, dtype=pl.Int64).alias("i"),
        )
        .explode("i")
    )
    i = pl.col("i")
    weighted = positions.join(completed, on=[QUERY, "i"], how="left").select(
        QUERY,
        "i",
        (pl.lit(evaluation.compat_persistence).pow(i - 1) / i).alias("weight"),
        pl.min_horizontal(i, "ideal_length").alias("ideal_overlap"),
        pl.col("documents").fill_null(0).cum_sum().over(QUERY, order_by="i").alias("overlap"),
    )
    sums = weighted.group_by(QUERY).agg(
        in_rank_order_sum(pl.col("weight") * pl.col("overlap"), "i").alias("compat_sum"),
        in_rank_order_sum(pl.col("weight") * pl.col("ideal_overlap"), "i").alias("compat_best"),
    )
    best = pl.col("compat_best")
    # an empty ideal (no document labelled above 0) scores 0
    return sums.select(QUERY, pl.when(best > 0).then(pl.col("compat_sum") / best).otherwise(0.0).alias("compat_value"))
