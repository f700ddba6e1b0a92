"""The measures of the peers beyond trec_eval, each by its peer's name: cwl_eval's user models and
ir_measures' Compat, ndeval's intent-aware measures over judgments per subtopic
(docs/conventions.md has each family's conventions beside the peers')."""

from __future__ import annotations

from typing import Any

from pipeline.registry.measure_spec import CUTOFF_CURVES, Measure

PEER_MEASURES: tuple[Measure, ...] = ()
# The C/W/L measures as cwl_eval, and so ir_measures, computes them: the expected gain per result
# read, sum of W(i) * gain(i) over the first 1000 ranks, the weights summing to 1 (docs/conventions.md).
_CWL_IGNORES = (
    "gain, discount, log_base, ideal, empty_ideal (a query it skips is left out of every mean), relevance_threshold, "
    "tie_bounds; under ties average, tied results are ranked by doc_id desc. It follows cwl_min_rel, cwl_max_rel, "
    "cwl_target, rbp_persistence (NERR10's p), all_queries, queries_without_judgments, max_results, unjudged, "
    "duplicates, retrieved_scores, ties"
)


def _by_peer(name: str, formula: str, curve: str, ignores: str = _CWL_IGNORES, **kind: Any) -> Measure:
    """A measure of a curve by ir_measures' name ``kind["peer"]`` (its own unless given): at a
    cutoff when its curve is read at every cutoff and ``kind["at_cutoffs"]`` is not false."""
    at_cutoffs, peer = kind.get("at_cutoffs", True), kind.get("peer") or name
    cut = at_cutoffs and curve in CUTOFF_CURVES
    return Measure(
        name,
        kind.get("title") or (f"{name}@k" if cut else name),
        formula,
        ir_measures=None if cut else peer,
        ir_measures_cut=f"{peer}@{{k}}" if cut else None,
        counters=kind.get("counters", ("judged_found",)),
        whole=not cut,
        ignores=ignores,
        curve=curve,
        at_cutoffs=at_cutoffs,
    )


PEER_MEASURES += (
    _by_peer(
        "SDCG",
        "sum over the ranks i <= min(k, 1000) of gain(i) / log2(i + 1), over that of gain 1 (cwl_eval's NDCG-k); "
        "gain(i) = (min(max(label, 0, cwl_min_rel), cwl_max_rel) - cwl_min_rel) / (cwl_max_rel - cwl_min_rel), 0 "
        "when unjudged; null for the whole ranking",
        "user_model_curve",
    ),
    _by_peer(
        "NERR8",
        "sum over the ranks i <= min(k, 1000) of P(i) * gain(i), over the sum of P(i), P(i) = (1 - gain(1)) * "
        "... * (1 - gain(i - 1)) (cwl_eval's NERR-eq8, Moffat's equation 8); gain as SDCG's; null for the whole "
        "ranking",
        "nerr_curve",
    ),
    _by_peer(
        "NERR9",
        "NERR8@k with P(i) = (1 - gain(1)) * ... * (1 - gain(i - 1)) / i (cwl_eval's NERR-eq9, Moffat's equation "
        "9); null for the whole ranking",
        "nerr_curve",
    ),
    _by_peer(
        "INST",
        "sum over the positions i <= 1000 of P(i) * gain(i) over the sum of P(i), P(i) = c(1) * ... * c(i - 1), "
        "c(i) = ((i + 2T - G(i) - 1) / (i + 2T - G(i)))^2, G(i) the gain at or above i, T = cwl_target; a "
        "position past the ranking gains 0; of the whole ranking only",
        "target_curve",
    ),
    _by_peer(
        "INSQ",
        "INST with c(i) = ((i + 2T - 1) / (i + 2T))^2, whatever the gain above; of the whole ranking only",
        "target_curve",
    ),
    _by_peer(
        "NERR10",
        "INST with c(i) = p * (1 - gain(i)), p = rbp_persistence (cwl_eval's NERR-eq10); of the whole ranking only",
        "target_curve",
    ),
    _by_peer(
        "NERR11",
        "INST with c(i) = INSQ's c(i) * (1 - gain(i)) (cwl_eval's NERR-eq11); of the whole ranking only",
        "target_curve",
    ),
    _by_peer(
        "BPM",
        "the gain of the ranks i <= m over m, m = min(k, s, 1000), s the first rank whose gain at or above it "
        "reaches T = cwl_target (none: 1000) (cwl_eval's static BPM, K = k); null for the whole ranking",
        "bpm_curve",
    ),
    _by_peer(
        "Compat",
        "sum over i <= max(n, R+) of p^(i - 1) * O(i) / i, over the same with O(i) = min(i, R+): O(i) the documents "
        "in the top i of both the ranking and the ideal (the R+ judged labelled above 0, by label, then score, 0 "
        "when not retrieved), p = compat_persistence (Clarke et al.'s compatibility, ir_measures' Compat)",
        "compat_curve",
        "gain, discount, log_base, ideal, empty_ideal, relevance_threshold, tie_bounds, cwl_min_rel, cwl_max_rel. "
        "It follows compat_persistence, all_queries, queries_without_judgments, max_results, unjudged, "
        "retrieved_scores, ties",
        counters=("retrieved_in_ranking",),
    ),
)
# ndeval's intent-aware measures over judgments per subtopic (docs/conventions.md); _GREEDY's too
_INTENT = (
    "gain, discount, log_base, ideal, empty_ideal (but a query it skips is left out of every mean), tie_bounds; "
    "under ties average, tied results are ranked by doc_id desc. They follow relevance_threshold, all_queries, "
    "queries_without_judgments, max_results, unjudged, duplicates, retrieved_scores and the ties docid-desc, "
    "docid-asc (pyndeval's order, and so ir_measures') and input-order"
)


def _intent(name: str, title: str, formula: str, *, peer: str = "", at_cutoffs: bool = True) -> Measure:
    return _by_peer(name, formula, "intent_curve", _INTENT, title=title, peer=peer, at_cutoffs=at_cutoffs)


PEER_MEASURES += (
    _intent(
        "strec",
        "ST-recall@k",
        "subtopics with a relevant result in the top k / S (ndeval's strec@k, subtopic recall); null for the whole "
        "ranking",
        peer="StRecall",
    ),
    _intent(
        "P_IA",
        "P-IA@k",
        "the (result, subtopic) pairs of the top k where the result is relevant to the subtopic / (k * S): the mean "
        "over the S subtopics of P@k (ndeval's P-IA@k, k even when fewer were retrieved); null for the whole ranking",
    ),
    _intent(
        "ERR_IA",
        "ERR-IA@k",
        "sum over the (rank i <= k, subtopic) pairs whose result is relevant to the subtopic of (1 - alpha)^(n - 1) "
        "/ i, n the results relevant to it at or above i, over S * the sum over i <= k of (1 - alpha)^(i - 1) / i "
        "(ndeval's ERR-IA@k with its collection-independent normalisation, alpha = 0.5 as ir_measures always "
        "takes it); at k = 1 unnormalised, as ndeval leaves it: the subtopics the first result is relevant to; "
        "null for the whole ranking",
    ),
    _intent(
        "AP_IA",
        "AP-IA",
        "the mean over the S subtopics of AP: the sum over the ranks i of the results relevant to the subtopic of "
        "(such results at or above i) / i, over the documents judged relevant to it (ndeval's MAP-IA); of the whole "
        "ranking only",
        at_cutoffs=False,
    ),
    _intent(
        "alpha_DCG",
        "alpha-DCG@k",
        "sum over the (rank i <= k, subtopic) pairs whose result is relevant to the subtopic of (1 - alpha)^(n - 1) "
        "/ log2(i + 1), n the results relevant to it at or above i, over S * the sum over i <= k of (1 - alpha)^(i - "
        "1) / log2(i + 1) (ndeval's alpha-DCG@k with its collection-independent normalisation, alpha = 0.5); at "
        "k = 1 unnormalised, as ndeval leaves it; null for the whole ranking",
    ),
    _intent(
        "NRBP",
        "NRBP",
        "(1 - (1 - alpha) * beta) / S * the sum over the (rank i, subtopic) pairs whose result is relevant to the "
        "subtopic of beta^(i - 1) * (1 - alpha)^(n - 1), n the results relevant to it at or above i (ndeval's NRBP, "
        "novelty- and rank-biased precision, alpha = beta = 0.5); of the whole ranking only",
        at_cutoffs=False,
    ),
)
_GREEDY = (
    "{}'s sum over that of ndeval's greedy ideal (each rank the judged document adding most given the ones above, "
    "ties to the greatest doc_id): ndeval's {}; "
)
PEER_MEASURES += tuple(
    _intent(name, title, _GREEDY.format(of, title) + whole, at_cutoffs=cut)
    for name, title, of, whole, cut in (
        ("alpha_nDCG", "alpha-nDCG@k", "alpha_DCG", "null for the whole ranking", True),
        ("nERR_IA", "nERR-IA@k", "ERR_IA", "null for the whole ranking", True),
        ("nNRBP", "nNRBP", "NRBP", "of the whole ranking only", False),
    )
)
# scikit-learn's average precision of one ranking, a query's results as its y_true (relevant or not)
# and y_score, with doc_weight_col's weights as its sample_weight (precision_recall_curve's
# thresholds: each distinct score one, tied scores together)
PEER_MEASURES += (
    Measure(
        "average_precision_score",
        "AP over score thresholds (scikit-learn's average_precision_score)",
        "sum over the distinct scores t of the ranking of (R(t) - R(t')) * P(t), t' the next higher score: P(t) "
        "= the relevant weight scored >= t / the weight scored >= t, R(t) = the relevant weight scored >= t / the "
        "relevant weight of the ranking; a result weighs doc_weight_col's weight (scikit-learn's sample_weight), "
        "else 1; 0 when the ranking holds no relevant weight; of the whole ranking only",
        counters=("retrieved_in_ranking",),
        ignores="gain, discount, log_base, ideal, empty_ideal (but a query it skips is left out of every mean), "
        "tie_bounds, ties (tied scores are one threshold, in any order; but max_results cutting a tie group keeps "
        "the results the tie order ranks first). It follows relevance_threshold, "
        "all_queries, queries_without_judgments, max_results, unjudged, duplicates, retrieved_scores, doc_weight_col",
        curve="threshold_curve",
        line="average_precision_score",
    ),
)
