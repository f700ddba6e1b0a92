"""The measures stage (``sql/measures/``): every evaluated query at each ordering and cutoff with
the sums and counters its measures read (:func:`counted`), then the measures, one formula each
(:func:`set_measures`, :func:`curve_measures`, :func:`gain_measures`, :func:`top_k_measures`,
:func:`measures`: the only steps that name a measure), and the tie bounds beside them
(:func:`final`).
"""

from __future__ import annotations

import polars as pl

from pipeline.engines.polars.ranking import INPUT_RANK, QUERY, SCORE
from pipeline.registry import MEASURE, PRIMARY_MEASURE, RECALL_LEVELS, RPREC_MULTIPLES, Evaluation, measure_columns


def counted(
    counters: pl.LazyFrame,
    relevance_curve: pl.LazyFrame | None,
    gain_curve: pl.LazyFrame | None,
    cutoffs: pl.LazyFrame,
    sums_at_cutoffs: pl.LazyFrame,
    ideal_at_cutoffs: pl.LazyFrame,
    cascade_curve: pl.LazyFrame | None = None,
    intent_curve: pl.LazyFrame | None = None,
    user_model_curve: pl.LazyFrame | None = None,
    nerr_curve: pl.LazyFrame | None = None,
    target_curve: pl.LazyFrame | None = None,
    bpm_curve: pl.LazyFrame | None = None,
    compat_curve: pl.LazyFrame | None = None,
    weighted_ap_curve: pl.LazyFrame | None = None,
    threshold_curve: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Every evaluated query at each cutoff, with its sums and rank counters (null where none
    was kept at or above k), its ``idcg`` and its per-query counters (those of the curves too,
    when asked; ``cascade_curve``'s, ``intent_curve``'s, ``user_model_curve``'s,
    ``nerr_curve``'s and ``bpm_curve``'s at each cutoff, given for the ranking by score)."""
    for curve in (relevance_curve, gain_curve, target_curve, compat_curve, threshold_curve):
        if curve is not None:
            counters = counters.join(curve, on=QUERY, how="left")
    table = (
        counters.join(cutoffs, how="cross")
        .join(sums_at_cutoffs, on=[QUERY, "k"], how="left", nulls_equal=True)
        .join(ideal_at_cutoffs, on=[QUERY, "k"], how="left", nulls_equal=True)
    )
    for curve in (cascade_curve, intent_curve, user_model_curve, nerr_curve, bpm_curve, weighted_ap_curve):
        if curve is not None:
            table = table.join(curve, on=[QUERY, "k"], how="left", nulls_equal=True)
    return table


def _ratio(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    return pl.when(denominator > 0).then(numerator / denominator).otherwise(0.0)


def set_measures(counted: pl.LazyFrame, evaluation: Evaluation, *, companions: bool) -> pl.LazyFrame:
    """``counted``, then trec_eval's counts and measures of the retrieved set that are asked
    for (with ``companions`` false, none), one formula each; a set measure at cutoff k is of
    the top k (min(k, n) of the n retrieved)."""
    k = pl.col("k")
    rel_ret = pl.col("relevant_found").fill_null(0)
    rel = pl.col("relevant_in_qrels").fill_null(0)
    n = pl.col("retrieved_in_ranking").fill_null(0)
    ret = pl.when(k.is_null()).then(n).otherwise(pl.min_horizontal(k, n))
    formulas = {
        "num_q": pl.lit(1.0),
        "num_ret": ret.cast(pl.Float64),
        "num_rel": rel.cast(pl.Float64),
        "num_rel_ret": rel_ret.cast(pl.Float64),
        "num_nonrel_judged_ret": pl.col("nonrelevant_found").fill_null(0).cast(pl.Float64),
        "set_P": _ratio(rel_ret, ret),
        "set_relative_P": _ratio(rel_ret, pl.min_horizontal(ret, rel)),
        "set_recall": _ratio(rel_ret, rel),
        "set_map": _ratio(rel_ret * rel_ret, ret * rel),
        "set_F": _ratio(2.0 * rel_ret, ret + rel),
        "utility": (2 * rel_ret - ret).cast(pl.Float64),
    }
    asked = [name for name in evaluation.columns if name in formulas] if companions else []
    return counted.with_columns(formulas[name].alias(name) for name in asked)


def _empty_ideal_score(evaluation: Evaluation) -> pl.Expr:
    return {
        "zero": pl.lit(0.0),
        "one": pl.lit(1.0),
        "nan": pl.lit(float("nan")),
        "skip": pl.lit(None, dtype=pl.Float64),
    }[evaluation.empty_ideal]


def curve_measures(set_measures: pl.LazyFrame, evaluation: Evaluation, *, companions: bool) -> pl.LazyFrame:
    """``set_measures``, then trec_eval's R-precision, interpolated precision, bpref, infAP and
    binG that are asked for (with ``companions`` false, none), of the whole ranking only (null
    at a cutoff), from the sums of :func:`~pipeline.engines.polars.curves.relevance_curve`."""
    asked = [name for name in evaluation.columns if MEASURE[name].curve == "relevance_curve"] if companions else []
    if not asked:
        return set_measures
    r = pl.col("relevant_in_qrels").cast(pl.Float64)
    last_precision = pl.col("relevant_found").fill_null(0) / pl.col("retrieved_in_ranking")
    last_precision = pl.when(pl.col("retrieved_in_ranking") > 0).then(last_precision).otherwise(0.0)

    def ratio(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
        return pl.when(denominator > 0).then(numerator.fill_null(0) / denominator).otherwise(0.0)

    def interpolated(level: str) -> pl.Expr:
        best = pl.col(f"iprec_max_{level.replace('.', '_')}")
        return pl.when(best.is_null()).then(0.0).otherwise(pl.max_horizontal(best, last_precision))

    formulas = {
        "rprec": ratio(pl.col("relevant_in_top_r"), r),
        **{
            f"rprec_mult_{x.replace('.', '_')}": ratio(
                pl.col(f"relevant_in_top_{x.replace('.', '_')}"), (float(x) * r + 0.9).floor()
            )
            for x in RPREC_MULTIPLES
        },
        **{f"iprec_at_recall_{level.replace('.', '_')}": interpolated(level) for level in RECALL_LEVELS},
        "iprec_11pt_avg": pl.sum_horizontal(interpolated(level) for level in RECALL_LEVELS) / 11.0,
        "bpref": ratio(pl.col("bpref_sum"), r),
        "gm_bpref": ratio(pl.col("bpref_sum"), r),
        "infap": ratio(pl.col("infap_sum"), r),
        "binG": ratio(pl.col("bing_sum"), r),
    }
    whole = pl.col("k").is_null()
    return set_measures.with_columns(pl.when(whole).then(formulas[name]).alias(name) for name in asked)


def gain_measures(curve_measures: pl.LazyFrame, evaluation: Evaluation, *, companions: bool) -> pl.LazyFrame:
    """``curve_measures``, then G, Rndcg, ndcg_rel, rbp and rbp_resid that are asked for (with
    ``companions`` false, none), of the whole ranking only (null at a cutoff), from
    :func:`~pipeline.engines.polars.curves.gain_curve`'s sums and the whole ranking's dcg and
    idcg (a query whose ideal is empty scores as its ndcg)."""
    asked = [name for name in evaluation.columns if MEASURE[name].curve == "gain_curve"] if companions else []
    if not asked:
        return curve_measures
    idcg = pl.col("idcg").fill_null(0.0)
    ndcg = pl.col("dcg").fill_null(0.0) / idcg
    ideal_length = pl.col("ideal_length").fill_null(0)
    normalized = pl.when(idcg <= 0).then(_empty_ideal_score(evaluation))
    # trec_eval's m_Rndcg.c adds the whole ranking's NDCG from n = M + 2 on (n = M + 1 leaves it out)
    past_ideal = (pl.col("retrieved_in_ranking").fill_null(0) >= ideal_length + 2).cast(pl.Float64)
    rndcg = (pl.col("rndcg_sum").fill_null(0.0) + past_ideal * ndcg) / (
        pl.col("rndcg_points").fill_null(0) + past_ideal
    )
    rel_sum = pl.col("ndcg_rel_sum").fill_null(0.0) + (ideal_length - pl.col("positive_ranks").fill_null(0)) * ndcg
    p = evaluation.rbp_persistence
    # rbp_gain: trec_eval's scaling keeps rbp in [0, 1]; ranx and trectools credit the gain itself
    rbp_scale = (
        pl.max_horizontal(pl.col("largest_gain").fill_null(0.0), pl.lit(1.0))
        if evaluation.rbp_gain == "scaled"
        else pl.lit(1.0)
    )
    formulas = {
        "G": normalized.otherwise(pl.col("g_sum").fill_null(0.0) / pl.col("ideal_gain")),
        "Rndcg": pl.when(idcg <= 0)
        .then(_empty_ideal_score(evaluation))
        .when(pl.col("relevant_in_qrels").fill_null(0) == 0)
        .then(0.0)
        .otherwise(rndcg),
        "ndcg_rel": normalized.when(rel_sum > 0).then(rel_sum / ideal_length).otherwise(0.0),
        "rbp": (1.0 - p) * pl.col("rbp_sum").fill_null(0.0) / rbp_scale,
        # 1 - (the weight of the judged ranks): the unjudged ranks' and the tail's, p^n; never
        # below 0 by a rounding of 1 - (1 - p^n)
        "rbp_resid": pl.max_horizontal(1.0 - (1.0 - p) * pl.col("judged_weight").fill_null(0.0), pl.lit(0.0)),
    }
    whole = pl.col("k").is_null()
    return curve_measures.with_columns(pl.when(whole).then(formulas[name]).alias(name) for name in asked)


def top_k_measures(gain_measures: pl.LazyFrame, evaluation: Evaluation, *, companions: bool) -> pl.LazyFrame:
    """``gain_measures``, then the measures of the top k that are asked for (with ``companions``
    false, none), one formula each, from the counters (the rank counters null where none was
    kept at or above k)."""
    k = pl.col("k")
    found = pl.col("relevant_found").fill_null(0)
    rel = pl.col("relevant_in_qrels").fill_null(0)
    retrieved = pl.min_horizontal(k, pl.col("retrieved_in_ranking").fill_null(0))
    ap_divisor = ap_denominator(evaluation)
    average_precision = (
        pl.when(ap_divisor > 0).then(pl.col("relevant_precision_sum").fill_null(0.0) / ap_divisor).otherwise(0.0)
    )
    recall = pl.when(pl.col("relevant_in_qrels") > 0).then(found / pl.col("relevant_in_qrels")).otherwise(0.0)
    if evaluation.doc_weight_col is not None:
        # TF-Ranking's AP with per-document weights, and its recall over the list's relevant
        # results, not the judged ones (curves.weighted_ap_curve)
        relevant_weight = pl.col("relevant_weight").fill_null(0.0)
        weighted = pl.col("weighted_precision_sum").fill_null(0.0)
        average_precision = pl.when(relevant_weight > 0).then(weighted / relevant_weight).otherwise(0.0)
        recall = _ratio(found, pl.col("relevant_listed").fill_null(0))
    formulas = {
        "P": precision(found, evaluation),
        "recall": recall,
        "map": average_precision,
        # the first relevant rank is null where none is at or above k
        "recip_rank": (1.0 / pl.col("relevant_first_rank")).fill_null(0.0),
        "success": (found > 0).cast(pl.Float64),
        "gm_map": average_precision,
        # null for the whole ranking (k null)
        "relative_P": pl.when(k.is_not_null()).then(_ratio(found, pl.min_horizontal(k, rel))),
        "unj": (retrieved - pl.col("judged_found").fill_null(0)) / k,
        "judged": pl.col("judged_found").fill_null(0) / k,
        # expected reciprocal rank: curves.cascade_curve's sum (none: no graded result at or above k)
        "err": pl.col("err_sum").fill_null(0.0),
    }
    asked = [name for name in evaluation.columns if name in formulas] if companions else []
    return gain_measures.with_columns(formulas[name].alias(name) for name in asked)


def intent_measures(top_k_measures: pl.LazyFrame, evaluation: Evaluation, *, companions: bool) -> pl.LazyFrame:
    """``top_k_measures``, then ndeval's intent-aware measures that are asked for (with
    ``companions`` false, none), one formula each, over S (``intent_subtopics``; S = 0, or no
    relevant result at or above k: 0) from curves.intent_curve's sums. ERR_IA and alpha_DCG
    divide by ndeval's ideal ideal, but not at k = 1 (ndeval normalises from the second rank on);
    NRBP scales by (1 - (1 - alpha) * beta) / S, alpha and beta ndeval's 0.5. alpha_nDCG, nERR_IA
    and nNRBP divide the sums by the greedy ideal's."""
    k = pl.col("k")
    subtopics = pl.col("intent_subtopics").fill_null(0)

    def normalised(total: str, norm: str) -> pl.Expr:
        summed = pl.col(total).fill_null(0.0)
        return pl.when(k == 1).then(summed).when(k.is_not_null()).then(_ratio(summed, subtopics * pl.col(norm)))

    def ideal_share(total: str, ideal: str) -> pl.Expr:
        return _ratio(pl.col(total).fill_null(0.0), pl.col(ideal).fill_null(0.0))

    formulas = {
        # null for the whole ranking (k null)
        "strec": pl.when(k.is_not_null()).then(_ratio(pl.col("intent_covered").fill_null(0), subtopics)),
        "P_IA": pl.when(k.is_not_null()).then(_ratio(pl.col("intent_pairs").fill_null(0), k * subtopics)),
        "ERR_IA": normalised("intent_err_sum", "intent_err_norm"),
        "alpha_DCG": normalised("intent_dcg_sum", "intent_dcg_norm"),
        # the whole ranking's only (k null)
        "AP_IA": pl.when(k.is_null()).then(_ratio(pl.col("intent_ap_sum").fill_null(0.0), subtopics)),
        "NRBP": pl.when(k.is_null()).then(
            _ratio((1.0 - 0.5 * 0.5) * pl.col("intent_nrbp_sum").fill_null(0.0), subtopics)
        ),
        # over the greedy ideal's sums (curves.intent_ideal)
        "alpha_nDCG": pl.when(k.is_not_null()).then(ideal_share("intent_dcg_sum", "intent_ideal_dcg")),
        "nERR_IA": pl.when(k.is_not_null()).then(ideal_share("intent_err_sum", "intent_ideal_err")),
        "nNRBP": pl.when(k.is_null()).then(ideal_share("intent_nrbp_sum", "intent_ideal_nrbp")),
    }
    asked = [name for name in evaluation.columns if name in formulas] if companions else []
    return top_k_measures.with_columns(formulas[name].alias(name) for name in asked)


def measures(top_k_measures: pl.LazyFrame, evaluation: Evaluation, *, companions: bool) -> pl.LazyFrame:
    """``query_id, k``, then the measures asked for (the registry's order; with
    ``companions`` false, the ranking of a tie bound, the NDCG family only) of every evaluated
    query and cutoff: NDCG's from the sums and SDCG's from its curve, one formula each, the others
    from the steps before it. With them, the only Polars steps that name a measure."""
    dcg, idcg = pl.col("dcg").fill_null(0.0), pl.col("idcg").fill_null(0.0)
    formulas = {
        "cg": pl.col("cg").fill_null(0.0),
        "dcg": dcg,
        "idcg": idcg,
        "ndcg": pl.when(idcg > 0).then(dcg / idcg).otherwise(_empty_ideal_score(evaluation)),
        # the C/W/L measures' NDCG, curves.user_model_curve's: none kept (no gain at or above k) is 0
        "SDCG": pl.when(pl.col("k").is_not_null()).then(pl.col("sdcg_value").fill_null(0.0)),
        "NERR8": pl.when(pl.col("k").is_not_null()).then(pl.col("nerr8_value").fill_null(0.0)),
        "NERR9": pl.when(pl.col("k").is_not_null()).then(pl.col("nerr9_value").fill_null(0.0)),
        "INST": pl.when(pl.col("k").is_null()).then(pl.col("inst_value").fill_null(0.0)),
        "INSQ": pl.when(pl.col("k").is_null()).then(pl.col("insq_value").fill_null(0.0)),
        "NERR10": pl.when(pl.col("k").is_null()).then(pl.col("nerr10_value").fill_null(0.0)),
        "NERR11": pl.when(pl.col("k").is_null()).then(pl.col("nerr11_value").fill_null(0.0)),
        "BPM": pl.when(pl.col("k").is_not_null()).then(pl.col("bpm_value").fill_null(0.0)),
        "Compat": pl.when(pl.col("k").is_null()).then(pl.col("compat_value").fill_null(0.0)),
        # scikit-learn's AP over score thresholds (weighted_curves.threshold_curve): no relevant weight is 0
        "average_precision_score": pl.when(pl.col("k").is_null()).then(
            _ratio(pl.col("threshold_precision_sum"), pl.col("threshold_relevant_weight")).fill_null(0.0)
        ),
    }
    asked = evaluation.columns if companions else measure_columns((PRIMARY_MEASURE,))
    return top_k_measures.select(
        QUERY, "k", *(formulas[name].alias(name) if name in formulas else pl.col(name) for name in asked)
    )


def ap_denominator(evaluation: Evaluation) -> pl.Expr:
    """What AP@k divides by (``ap_denominator``): R, or min(k, R) (R for the whole ranking)."""
    relevant_in_qrels = pl.col("relevant_in_qrels").fill_null(0)
    if evaluation.ap_denominator == "relevant":
        return relevant_in_qrels
    k = pl.col("k")
    return pl.when(k.is_null()).then(relevant_in_qrels).otherwise(pl.min_horizontal(k, relevant_in_qrels))


def precision(found: pl.Expr, evaluation: Evaluation) -> pl.Expr:
    """P@k: ``found`` / k, or / min(k, retrieved) under ``precision_denominator``
    min-k-retrieved (0 when nothing was retrieved); null for the whole ranking (k null)."""
    k = pl.col("k")
    if evaluation.precision_denominator == "k":
        return found / k
    retrieved = pl.min_horizontal(k, pl.col("retrieved_in_ranking").fill_null(0))
    return pl.when(k.is_null()).then(None).when(retrieved > 0).then(found / retrieved).otherwise(0.0)


def straddles(as_ranked: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """``query_id, k, ties_straddle_k``: whether the results at rank k and k + 1 are tied."""

    def next_in_rank_order(column: str) -> pl.Expr:
        return pl.col(column).shift(-1).over(QUERY, order_by="rank")

    tied_with_next = next_in_rank_order(SCORE) == pl.col(SCORE)
    if evaluation.ties == "input-order":
        tied_with_next = tied_with_next & next_in_rank_order(INPUT_RANK).eq_missing(pl.col(INPUT_RANK))
    return as_ranked.select(
        QUERY, pl.col("rank").alias("k"), tied_with_next.fill_null(False).alias("ties_straddle_k")
    ).filter(pl.col("k").is_in(evaluation.cutoffs))


def final(measures: dict[str, pl.LazyFrame], as_ranked: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    final = measures["retrieved"]
    if evaluation.tie_bounds:
        for ordering, column in (("worst", "ndcg_min"), ("best", "ndcg_max")):
            final = final.join(
                measures[ordering].select(QUERY, "k", pl.col("ndcg").alias(column)),
                on=[QUERY, "k"],
                how="left",
                nulls_equal=True,
            )
        final = final.join(straddles(as_ranked, evaluation), on=[QUERY, "k"], how="left").with_columns(
            pl.when(pl.col("k").is_not_null()).then(pl.col("ties_straddle_k").fill_null(False))
        )
    return final
