"""Profiles: named bundles of conventions that reproduce a peer tool's numbers (``--profile``,
``ndcg profiles``); explicit options override a profile's."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.registry.base import SpecError
from pipeline.registry.conventions import CONVENTIONS
from pipeline.registry.evaluation import Evaluation
from pipeline.registry.gain import Gain


@dataclass(frozen=True)
class Profile:
    """A named bundle of choices that reproduces one peer tool's NDCG.

    ``settings`` are :class:`Evaluation` fields; anything not named keeps its default.
    ``differences`` says what the profile still cannot mimic.
    """

    name: str
    tool: str
    settings: tuple[tuple[str, object], ...]
    differences: str = ""

    def evaluation(self, **overrides: object) -> Evaluation:
        """The profile's :class:`Evaluation`, with explicit ``overrides`` winning."""
        return Evaluation(**{**dict(self.settings), **overrides})  # type: ignore[arg-type]


def _profile(name: str, tool: str, differences: str = "", **settings: object) -> Profile:
    return Profile(name=name, tool=tool, settings=tuple(settings.items()), differences=differences)


PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        _profile("trec_eval", "trec_eval 10 / pytrec_eval: ndcg, ndcg_cut.k"),
        _profile(
            "ir_measures",
            "ir_measures nDCG@k (pytrec_eval provider)",
            all_queries=True,
        ),
        _profile(
            "sklearn",
            "scikit-learn ndcg_score(y_true, y_score, k), one query per row",
            "ndcg_score refuses negative labels and lists of one document; ignore_ties=True "
            "orders ties by an unstable sort",
            ties="average",
            ideal="retrieved",
        ),
        _profile(
            "lightgbm",
            "LightGBM metric ndcg@k (default label_gain 2^i - 1)",
            "LightGBM counts duplicate rows twice and refuses negative or fractional labels",
            gain=Gain("exponential"),
            ties="input-order",
            ideal="retrieved",
            empty_ideal="one",
        ),
        _profile(
            "xgboost",
            "XGBoost eval_metric ndcg@k (ndcg@k- scores empty queries 0: add --empty-ideal zero)",
            "XGBoost compares scores as float32 and counts duplicate rows twice",
            gain=Gain("exponential"),
            ties="input-order",
            ideal="retrieved",
            empty_ideal="one",
        ),
        _profile(
            "spark_mllib",
            "Spark MLlib RankingMetrics ndcgAt(k), precisionAt(k), recallAt(k), meanAveragePrecisionAt(k) "
            "with ground-truth sets (binary relevance)",
            "Spark counts a document predicted twice twice; it takes the prediction list as ordered",
            gain=Gain("binary"),
            ties="input-order",
            ap_denominator="min-k-relevant",
        ),
        _profile(
            "recbole",
            "RecBole NDCG@k, Precision@k, Recall@k, MAP@k, MRR@k, Hit@k (binary relevance)",
            "RecBole ranks by torch.topk, whose order among tied scores is unspecified; input order stands in for it",
            gain=Gain("binary"),
            ties="input-order",
            ap_denominator="min-k-relevant",
        ),
        _profile(
            "gdeval",
            "gdeval.pl of the TREC Web Track (ndcg@k with gains 2^label - 1, err@k), the topics it prints: in "
            "the run, with a label above 0",
            "gdeval refuses labels above 4 and topic ids that are not numbers, and counts a document listed "
            "twice in the run twice",
            gain=Gain("exponential"),
            empty_ideal="skip",
        ),
        _profile(
            "ndeval",
            "ndeval 4.5's intent-aware measures (strec, P-IA, ERR-IA, MAP-IA, alpha-DCG, NRBP; alpha-nDCG, nERR-IA, "
            "nNRBP over its greedy ideal) as pyndeval, and so ir_measures, runs it: results by score, then docno "
            "ascending; the mean over the run's judged topics",
            "ndeval run by hand orders by the run's rank column (--ties input-order on a run with a rank column) or, "
            "with -traditional, by score then docno descending (--ties docid-desc); it scores at most 20 ranks, "
            "refuses negative judgments and topics that are not numbers, and prints -nan for the nNRBP of a topic "
            "without a relevant judgment, 0 here",
            ties="docid-asc",
        ),
        _profile(
            "torchmetrics",
            "torchmetrics' retrieval metrics (1.7.4 and later): RetrievalNormalizedDCG, RetrievalPrecision, "
            "RetrievalRecall, RetrievalMRR over the rows passed, a query without a relevant one scoring 0 "
            "(empty_target_action='neg')",
            "a result scored 0 or below is not retrieved for every measure here, where torchmetrics drops it from "
            "precision, recall, MAP and MRR only and keeps it in nDCG, hit rate and R-precision (for their numbers "
            "use --retrieved-scores all); its precision, recall, MAP and MRR order tied scores by torch.topk or "
            "argsort, in an unspecified order (doc_id descending stands in, as under ties average); its MAP divides "
            "by the relevant results retrieved within top_k, neither R nor min(k, R); its precision of the whole "
            "list divides by the list's length; it sees only the rows passed, so recall's R is theirs: judge only "
            "the retrieved documents (inline labels)",
            ties="average",
            ideal="retrieved",
            queries_without_judgments="evaluate",
            retrieved_scores="positive",
        ),
        _profile(
            "tfranking",
            "TF-Ranking's NDCGMetric and PrecisionMetric (gains 2^label - 1, the ideal from the list given, P@k over "
            "min(k, list size), a label >= 1 relevant, every list evaluated); with --doc-weight-col, its document and "
            "list weights and its RecallMetric, MeanAveragePrecisionMetric, MRRMetric and HitsMetric",
            "TF-Ranking orders tied scores at random (shuffle_ties), where doc_id descending stands in; it drops a "
            "result labelled below 0 from the list as padding, where it keeps its rank here, unjudged; its MAP "
            "divides by the relevant results of the list, which map here does with --doc-weight-col only (else by "
            "the qrels' relevant documents, trec_eval's R), and so does recall; its ARP, OPA and other metrics with "
            "weights are not computed here (refused with --doc-weight-col)",
            gain=Gain("exponential"),
            ideal="retrieved",
            precision_denominator="min-k-retrieved",
            queries_without_judgments="evaluate",
            # its binary relevance (P, recall, AP, MRR, Hits and their list weights) is label >= 1: the
            # same as label > 0 for integer labels, not for fractional ones
            relevance_threshold=1.0,
        ),
        _profile(
            "elasticsearch",
            "Elasticsearch rank_eval dcg with normalize: true, precision (ignore_unlabeled: false), "
            "mean_reciprocal_rank; every rated request is averaged, one without ratings too",
            "Elasticsearch breaks score ties by shard and Lucene doc id; input order stands in for that",
            gain=Gain("exponential"),
            ties="input-order",
            ideal="judged-cut-at-hits",
            precision_denominator="min-k-retrieved",
            queries_without_judgments="evaluate",
        ),
    )
}


def profile_named(name: str) -> Profile:
    """The profile called ``name``, or an error listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise SpecError(f"unknown profile {name!r}; expected one of {', '.join(PROFILES)}") from None


def profiles_table() -> str:
    """The profiles and the choices each makes, as a Markdown table (``ndcg profiles``)."""
    columns = [convention for convention in CONVENTIONS if convention.in_profiles]
    header = ("profile", *(convention.name for convention in columns), "reproduces")
    rows = []
    for profile in PROFILES.values():
        described = profile.evaluation(cutoffs=(1,))
        values = [str(getattr(described, convention.attribute)) for convention in columns]
        rows.append((profile.name, *values, profile.tool))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    notes = [f"- {p.name}: {p.differences}" for p in PROFILES.values() if p.differences]
    return "\n".join([line(header), rule, *map(line, rows), "", "Not reproduced:", *notes]) + "\n"
