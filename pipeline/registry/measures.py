"""The measures: each a column of the per-query table, a formula over counters, its peers'
names, the cutoffs trec_eval prints it at, and how the summary combines it.

Besides CG, DCG, IDCG and NDCG (:mod:`pipeline.registry.conventions` has their formulas), the
companion measures of trec_eval, over the relevant results (a judged label >=
``relevance_threshold``, or > 0) and ``R``, the relevant documents judged for the query::

    P@k       = relevant in the top k / k          (none over the whole ranking; or / min(k, n),
                                                    n retrieved, under precision_denominator)
    recall@k  = relevant in the top k / R          (0 when R is 0)
    AP@k      = sum over relevant ranks i <= k of (relevant in the top i / i), / R   (0 when R is 0;
                or / min(k, R) under ap_denominator)
    RR@k      = 1 / the first relevant rank if it is at or above k, else 0
    success@k = 1 if a relevant result is in the top k, else 0

and the others trec_eval computes, each entry with its formula. The measures step of each engine
(``sql/measures/``, :mod:`pipeline.engines.polars.measures`) holds the one formula of each; the
steps after it (the per-query table, the summary) never name a measure.
"""

from __future__ import annotations

from pipeline.registry.measure_spec import (
    AGGREGATES,
    BETTER,
    CURVES,
    CUTOFF_CURVES,
    Aggregate,
    Better,
    Measure,
)
from pipeline.registry.peer_measures import PEER_MEASURES

__all__ = ["AGGREGATES", "BETTER", "CURVES", "CUTOFF_CURVES", "Aggregate", "Better", "Measure"]

# trec_eval's floor under a value before its logarithm (MIN_GEO_MEAN in trec_eval.h): a query
# scoring 0 pulls a geometric mean down without zeroing it.
MIN_GEOMETRIC_MEAN = 1e-5

# What the companion measures (P, recall, map, recip_rank, success) do not read: they see only
# which ranks hold a relevant document (label >= relevance_threshold, or > 0) and how many
# documents of the query are judged relevant.
_RELEVANCE_ONLY = (
    "gain, discount, log_base, ideal, empty_ideal (but a query it skips is left out of every mean), "
    "tie_bounds; under ties average, tied results are ranked by doc_id desc (the order that average "
    "averages over). They follow relevance_threshold, all_queries, queries_without_judgments, max_results, "
    "unjudged, duplicates, retrieved_scores and the ties docid-desc, docid-asc and input-order (and P its "
    "precision_denominator, map and gm_map their ap_denominator)"
)

# trec_eval's default cutoffs of P, recall, map_cut, ndcg_cut and relative_P (m_P.c and others)
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_SET = "of the whole ranking (trec_eval's set_*; at cutoff k, of the top k)"

MEASURES: tuple[Measure, ...] = (
    Measure("cg", "CG@k", "sum_{i<=k} g(i)", family="ndcg"),
    Measure("dcg", "DCG@k", "sum_{i<=k} g(i) * d(i)", family="ndcg"),
    Measure("idcg", "IDCG@k", "DCG@k of the ideal ranking", family="ndcg", better=None),
    Measure(
        "ndcg",
        "NDCG@k",
        "DCG@k / IDCG@k (a query whose IDCG is 0 scores as empty_ideal says)",
        trec_eval="ndcg",
        trec_eval_cut="ndcg_cut_{k}",
        ir_measures="nDCG",
        ir_measures_cut="nDCG@{k}",
        trec_cutoffs=TREC_CUTOFFS,
    ),
    Measure(
        "P",
        "P@k",
        "relevant in the top k / k (k even when fewer were retrieved; min(k, retrieved) under "
        "precision_denominator min-k-retrieved, 0 when none is); null for the whole ranking",
        trec_eval_cut="P_{k}",
        ir_measures_cut="P@{k}",
        counters=("relevant_found",),
        counters_under=(("precision_denominator", "min-k-retrieved", ("retrieved_in_ranking",)),),
        whole=False,
        ignores=_RELEVANCE_ONLY,
        trec_cutoffs=TREC_CUTOFFS,
    ),
    Measure(
        "recall",
        "R@k",
        "relevant in the top k / relevant judged (0 when none is); the whole ranking: every relevant retrieved",
        trec_eval_cut="recall_{k}",
        ir_measures_cut="R@{k}",
        counters=("relevant_found", "relevant_in_qrels"),
        ignores=_RELEVANCE_ONLY,
        trec_cutoffs=TREC_CUTOFFS,
    ),
    Measure(
        "map",
        "AP@k",
        "sum of the precision at each relevant rank i <= k / relevant judged (min(k, relevant judged) under "
        "ap_denominator min-k-relevant; 0 when none is)",
        trec_eval="map",
        trec_eval_cut="map_cut_{k}",
        ir_measures="AP",
        ir_measures_cut="AP@{k}",
        counters=("relevant_precision_sum", "relevant_in_qrels"),
        ignores=_RELEVANCE_ONLY,
        trec_cutoffs=TREC_CUTOFFS,
    ),
    Measure(
        "recip_rank",
        "RR@k",
        "1 / rank of the first relevant result if it is at or above k, else 0",
        trec_eval="recip_rank",
        ir_measures="RR",
        ir_measures_cut="RR@{k}",
        counters=("relevant_first_rank",),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "success",
        "Success@k",
        "1 if a relevant result is in the top k, else 0",
        trec_eval_cut="success_{k}",
        ir_measures_cut="Success@{k}",
        counters=("relevant_found",),
        ignores=_RELEVANCE_ONLY,
        trec_cutoffs=(1, 5, 10),
    ),
    # trec_eval's counts and the measures of the retrieved set (m_num_*.c, m_set_*.c), its
    # relative precision, utility and unjudged fraction, and ir_measures' Judged@k
    Measure(
        "num_q",
        "queries",
        "1 for each evaluated query, summed: how many were evaluated",
        trec_eval="num_q",
        ir_measures="NumQ",
        aggregate="sum",
        ignores=_RELEVANCE_ONLY,
        trec_per_query=False,
        whole_number=True,
        better=None,
    ),
    Measure(
        "num_ret",
        "retrieved",
        "results retrieved (after max_results and unjudged drop; at cutoff k, min(k, retrieved)), summed",
        trec_eval="num_ret",
        ir_measures="NumRet",
        counters=("retrieved_in_ranking",),
        aggregate="sum",
        ignores=_RELEVANCE_ONLY,
        whole_number=True,
        better=None,
    ),
    Measure(
        "num_rel",
        "relevant judged",
        "documents judged relevant for the query (R), summed",
        trec_eval="num_rel",
        ir_measures="NumRel",
        counters=("relevant_in_qrels",),
        aggregate="sum",
        ignores=_RELEVANCE_ONLY,
        whole_number=True,
        better=None,
    ),
    Measure(
        "num_rel_ret",
        "relevant retrieved",
        "relevant results (at cutoff k, in the top k), summed",
        trec_eval="num_rel_ret",
        ir_measures="NumRelRet",
        counters=("relevant_found",),
        aggregate="sum",
        ignores=_RELEVANCE_ONLY,
        whole_number=True,
    ),
    Measure(
        "num_nonrel_judged_ret",
        "nonrelevant judged retrieved",
        "judged nonrelevant results (at cutoff k, in the top k), summed",
        trec_eval="num_nonrel_judged_ret",
        counters=("nonrelevant_found",),
        aggregate="sum",
        ignores=_RELEVANCE_ONLY,
        whole_number=True,
        better=None,
    ),
    Measure(
        "gm_map",
        "GM-AP@k",
        "AP@k (its denominator as ap_denominator says), combined by geometric mean: exp(mean(ln(max(AP, 1e-5))))",
        trec_eval="gm_map",
        counters=("relevant_precision_sum", "relevant_in_qrels"),
        aggregate="geometric_mean",
        ignores=_RELEVANCE_ONLY,
        trec_per_query=False,
    ),
    Measure(
        "relative_P",
        "relative P@k",
        "relevant in the top k / min(k, relevant judged) (0 when none is); null for the whole ranking",
        trec_eval_cut="relative_P_{k}",
        counters=("relevant_found", "relevant_in_qrels"),
        whole=False,
        ignores=_RELEVANCE_ONLY,
        trec_cutoffs=TREC_CUTOFFS,
    ),
    Measure(
        "set_P",
        "set precision",
        f"relevant retrieved / retrieved (0 when none is), {_SET}",
        trec_eval="set_P",
        ir_measures="SetP",
        counters=("relevant_found", "retrieved_in_ranking"),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "set_relative_P",
        "set relative precision",
        f"relevant retrieved / min(retrieved, relevant judged) (0 when either is 0), {_SET}",
        trec_eval="set_relative_P",
        counters=("relevant_found", "relevant_in_qrels", "retrieved_in_ranking"),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "set_recall",
        "set recall",
        f"relevant retrieved / relevant judged (0 when none is), {_SET}",
        trec_eval="set_recall",
        ir_measures="SetR",
        counters=("relevant_found", "relevant_in_qrels"),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "set_map",
        "set AP",
        f"set_P * set_recall: relevant retrieved^2 / (retrieved * relevant judged), {_SET}",
        trec_eval="set_map",
        counters=("relevant_found", "relevant_in_qrels", "retrieved_in_ranking"),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "set_F",
        "set F1",
        f"2 * set_P * set_recall / (set_P + set_recall) = 2 * relevant retrieved / (retrieved + relevant "
        f"judged) (beta 1; 0 when no relevant is retrieved), {_SET}",
        trec_eval="set_F",
        ir_measures="SetF",
        counters=("relevant_found", "relevant_in_qrels", "retrieved_in_ranking"),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "utility",
        "utility",
        "relevant retrieved - nonrelevant retrieved (trec_eval's default coefficients 1, -1, 0, 0; an "
        f"unjudged result counts as nonrelevant), {_SET}",
        trec_eval="utility",
        counters=("relevant_found", "retrieved_in_ranking"),
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "unj",
        "unjudged@k",
        "results in the top k not judged (absent from the qrels or labelled below 0) / k: the ranks "
        "past the retrieved count as judged (trec_eval's unj); null for the whole ranking",
        trec_eval_cut="unj_{k}",
        counters=("judged_found", "retrieved_in_ranking"),
        whole=False,
        ignores=_RELEVANCE_ONLY,
        trec_cutoffs=(5, 10, 20),
        better="lower",
    ),
    Measure(
        "judged",
        "Judged@k",
        "judged results (label >= 0) in the top k / k: the ranks past the retrieved count as unjudged "
        "(ir_measures' Judged@k; 1 - unj@k when k results were retrieved); null for the whole ranking",
        ir_measures_cut="Judged@{k}",
        counters=("judged_found",),
        whole=False,
        ignores=_RELEVANCE_ONLY,
    ),
)
# trec_eval's measures of where the relevant results sit (sql/curves/relevance_curve.sql,
# sql/measures/curve_measures.sql): of the whole ranking only; R relevant and N judged nonrelevant
# documents, n retrieved. A rank cutoff from a fraction x of R is floor(x * R + 0.9), as
# trec_eval's m_Rprec_mult.c computes it; a count of relevant from a recall level r is
# round(r * R), halves away from 0, as trec_eval 10.0's m_iprec_at_recall.c (lround; 9.0 and
# before added 0.9 and truncated).
_CURVE = ("relevant_found", "nonrelevant_found", "relevant_in_qrels", "nonrelevant_in_qrels", "retrieved_in_ranking")
RPREC_MULTIPLES = tuple(f"{i * 0.2:.2f}" for i in range(1, 11))
RECALL_LEVELS = tuple(f"{i * 0.1:.2f}" for i in range(11))
MEASURES += (
    Measure(
        "rprec",
        "R-precision",
        "relevant in the top R / R (0 when R is 0): precision at rank R",
        trec_eval="Rprec",
        ir_measures="Rprec",
        counters=_CURVE,
        curve="relevance_curve",
        family="Rprec",
        ignores=_RELEVANCE_ONLY,
    ),
    *(
        Measure(
            f"rprec_mult_{x.replace('.', '_')}",
            f"precision at {x} R",
            f"relevant in the top c / c, c = floor({x} * R + 0.9) (0 when c is 0)",
            trec_eval=f"Rprec_mult_{x}",
            counters=_CURVE,
            curve="relevance_curve",
            family="Rprec_mult",
            ignores=_RELEVANCE_ONLY,
        )
        for x in RPREC_MULTIPLES
    ),
    *(
        Measure(
            f"iprec_at_recall_{r.replace('.', '_')}",
            f"interpolated precision at recall {r}",
            f"the highest precision at a rank where relevant found >= round({r} * R), or after it (the "
            "last retrieved rank's included); 0 when no rank reaches it",
            trec_eval=f"iprec_at_recall_{r}",
            ir_measures=f"IPrec@{float(r):g}",
            counters=_CURVE,
            curve="relevance_curve",
            family="iprec_at_recall",
            ignores=_RELEVANCE_ONLY,
        )
        for r in RECALL_LEVELS
    ),
    Measure(
        "iprec_11pt_avg",
        "11-point interpolated precision",
        "the mean of iprec_at_recall at the 11 recall levels 0.0, 0.1, ..., 1.0",
        trec_eval="11pt_avg",
        counters=_CURVE,
        curve="relevance_curve",
        family="iprec_at_recall",
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "bpref",
        "bpref",
        "the sum over the relevant results of 1 - min(judged nonrelevant above it, R) / min(N, R) (1 with "
        "none above), / R (0 when R is 0); unjudged results are passed over",
        trec_eval="bpref",
        ir_measures="Bpref",
        counters=_CURVE,
        curve="relevance_curve",
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "gm_bpref",
        "GM-bpref",
        "bpref, combined by geometric mean: exp(mean(ln(max(bpref, 1e-5))))",
        trec_eval="gm_bpref",
        counters=_CURVE,
        curve="relevance_curve",
        family="bpref",
        aggregate="geometric_mean",
        ignores=_RELEVANCE_ONLY,
        trec_per_query=False,
    ),
)
# trec_eval's inferred AP (m_infap.c; Yilmaz and Aslam, CIKM 2006), from the same per-query
# step as the curve (sql/curves/relevance_curve.sql): a judgment pool of which only a sample was
# judged. A retrieved document absent from the judgments was never pooled and counts as a
# nonrelevant rank above; one in them with a negative label was pooled but not judged, and its
# relevance is inferred from the judged ones above it (the relevant share of them, eps-smoothed).
INFAP_EPSILON = 1e-5  # trec_eval.h's INFAP_EPSILON
MEASURES += (
    Measure(
        "infap",
        "inferred AP",
        "the sum over the relevant results at rank k of 1 (k = 1), else 1/k + (p/k) * (r + eps) / (r + n + 2 "
        "eps), with p pooled results above k (in the judgments, a negative label too), r relevant and n "
        "judged nonrelevant above k, eps = 1e-5; / R (0 when R is 0); of the whole ranking only",
        trec_eval="infAP",
        ir_measures="infAP",
        counters=("relevant_found", "nonrelevant_found", "pooled_found", "relevant_in_qrels"),
        curve="relevance_curve",
        family="infAP",
        ignores=_RELEVANCE_ONLY,
    ),
)
# trec_eval's experimental gain measures and rank-biased precision (sql/curves/relevance_curve.sql
# and sql/measures/curve_measures.sql for binG; sql/curves/ideal_curve.sql, gain_curve.sql and
# sql/measures/gain_measures.sql for the others), of the whole ranking only. n results retrieved;
# g(i) the gain rank i earns (the gain convention's, a tie group's mean under ties average, as
# NDCG's); the ideal ranking (the ideal convention's) holds M positive gains g*(1) >= ... >=
# g*(M); NDCG@b is the ndcg of cutoff b (dcg of the ranks <= b over idcg of the ideal's top b).
# trec_eval's gains are its ndcg's (linear, or a level map such as G.1=3,2=9), so these follow
# the gain convention as ndcg does; Rndcg and ndcg_rel are NDCG at particular cutoffs, so they
# follow the discount too (trec_eval: log2), while G's discount and binG's are their own.
_GAIN_CURVE = ("relevant_in_qrels", "retrieved_in_ranking")


def _normalized_by_the_ideal(ignored: str) -> str:
    """What G, Rndcg and ndcg_rel ignore (``ignored``) and follow."""
    return (
        f"{ignored}; under ties average a rank earns its tie group's mean gain, as in NDCG. They follow gain, "
        "ideal, empty_ideal (a query whose ideal holds no positive gain scores as its ndcg does), all_queries, "
        "max_results, unjudged, duplicates, retrieved_scores"
    )


MEASURES += (
    Measure(
        "G",
        "G (normalized gain)",
        "sum over the ranks i with g(i) != 0 of g(i) / log2(2 + c(i) - (g(1) + ... + g(i))), c(i) = max(g*(1), 1) "
        "+ ... + max(g*(i), 1) (g* = 0 past M), over g*(1) + ... + g*(M) (trec_eval's m_G.c)",
        trec_eval="G",
        ignores=_normalized_by_the_ideal("discount, log_base, relevance_threshold, tie_bounds"),
        curve="gain_curve",
    ),
    Measure(
        "binG",
        "binary G",
        "the sum over the relevant results of 1 / log2(2 + results not relevant above it), / R (0 when none "
        "is retrieved): G with gain 1 for a relevant result (trec_eval's m_binG.c)",
        trec_eval="binG",
        counters=_CURVE,
        curve="relevance_curve",
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "Rndcg",
        "NDCG at the R levels",
        "the mean of NDCG@b over the ranks b where the ideal's gain changes (the last of each gain level, M "
        "included), and of the whole ranking's NDCG when n >= M + 2 (trec_eval's m_Rndcg.c counts it from "
        "n = M + 2, not M + 1); a query whose ideal holds no positive gain scores as its ndcg (--empty-ideal), "
        "another with R = 0 scores 0 (m_Rndcg.c; only a --relevance-threshold above a positive label makes one)",
        trec_eval="Rndcg",
        counters=_GAIN_CURVE,
        ignores=_normalized_by_the_ideal("tie_bounds (relevance_threshold only through R)") + ", discount, log_base",
        curve="gain_curve",
    ),
    Measure(
        "ndcg_rel",
        "NDCG averaged over the relevant documents",
        "(the sum of NDCG@i over the ranks i with g(i) > 0, plus the whole ranking's NDCG once for each of "
        "the M positive gains of the ideal not retrieved) / M; 0 when that sum is not positive "
        "(trec_eval's m_ndcg_rel.c)",
        trec_eval="ndcg_rel",
        ignores=_normalized_by_the_ideal("relevance_threshold, tie_bounds") + ", discount, log_base",
        curve="gain_curve",
    ),
    Measure(
        "rbp",
        "RBP (rank-biased precision)",
        "(1 - p) * sum over the ranks i of r(i) * p^(i-1), r(i) = max(g(i), 0) / max(1, the query's largest "
        "judged gain) in [0, 1], p = rbp_persistence (Moffat and Zobel 2008; trec_eval's m_rbp.c meant "
        "this scaling, but reads uninitialised bounds: docs/conventions.md); under rbp_gain unscaled "
        "r(i) = max(g(i), 0), which a graded query can take past 1 (ranx, trectools)",
        trec_eval="rbp",
        ir_measures="RBP",
        ignores="discount, log_base, ideal, empty_ideal (but a query it skips is left out), relevance_threshold "
        "(unless the gain is binary), tie_bounds; under ties average a rank earns its tie group's mean gain",
        curve="gain_curve",
    ),
    Measure(
        "rbp_resid",
        "RBP residual",
        "the weight RBP gives to what is not judged: (1 - p) * sum of p^(i-1) over the unjudged ranks i <= n "
        "(absent from the qrels, or labelled below 0), plus p^n for the ranks past the ranking "
        "(Moffat and Zobel 2008): 1 - (1 - p) * the sum over the judged ranks; RBP + residual bounds RBP "
        "from above. trec_eval prints 0 when no unjudged result is retrieved (the tail p^n left out)",
        trec_eval="rbp_resid",
        counters=("judged_found",),
        family="rbp",
        ignores="gain, discount, log_base, ideal, empty_ideal (but a query it skips is left out), "
        "relevance_threshold, tie_bounds, rbp_gain",
        better=None,
        curve="gain_curve",
    ),
)
# Expected reciprocal rank (Chapelle, Metzler, Zhang and Grinspan, CIKM 2009) as gdeval (the
# TREC Web Track's gdeval.pl) computes it, and so ir_measures' ERR@k, which runs gdeval: a
# reader goes down the ranking and stops at rank i with the probability R(i) its label gives,
# R(g) = (2^g - 1) / 2^g_max (0 for a label <= 0 or not judged), g_max = err_max_grade (gdeval's
# fixed 4). It reads labels, not gains, and the judged ranks' labels are kept through the signal
# of judged_found (sql/counters/signals.sql).
MEASURES += (
    Measure(
        "err",
        "ERR@k",
        "sum over the ranks i <= k of R(i) / i * (1 - R(1)) * ... * (1 - R(i - 1)), R(i) = (2^label - 1) / "
        "2^g_max for a label > 0, else 0, g_max = err_max_grade (default 4, gdeval's); not normalised; a judgment "
        "labelled above g_max is refused (exit 3), as gdeval refuses it",
        ir_measures_cut="ERR@{k}",
        counters=("judged_found",),
        ignores="gain, discount, log_base, ideal, empty_ideal (but a query it skips is left out of every mean), "
        "relevance_threshold, tie_bounds; under ties average, tied results are ranked by doc_id desc (gdeval's "
        "order). It follows err_max_grade, all_queries, queries_without_judgments, max_results, unjudged, "
        "duplicates, retrieved_scores and the ties docid-desc (gdeval's), docid-asc and input-order",
        curve="cascade_curve",
    ),
)
MEASURES += PEER_MEASURES
MEASURE: dict[str, Measure] = {measure.name: measure for measure in MEASURES}
MEASURE_NAMES: tuple[str, ...] = tuple(MEASURE)
# The measure that decides which queries are evaluated (a null one is left out of every mean)
# and that compare and the report rank systems by.
PRIMARY_MEASURE = "ndcg"
# The names --measures takes (families, in the registry's order). The NDCG family (cg, dcg,
# idcg, ndcg) is always computed, since it decides which queries are evaluated; the others,
# the companions, only when asked for.
MEASURE_FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(m.selected_by for m in MEASURES))
COMPANION_MEASURES: tuple[str, ...] = tuple(m.name for m in MEASURES if m.selected_by != PRIMARY_MEASURE)


def measure_columns(families: tuple[str, ...]) -> tuple[str, ...]:
    """The per-query columns of the measures of ``families``, in the registry's order.

    >>> measure_columns(("ndcg", "map"))
    ('cg', 'dcg', 'idcg', 'ndcg', 'map')
    """
    return tuple(m.name for m in MEASURES if m.selected_by in families)
