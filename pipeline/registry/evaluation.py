"""The evaluation: one frozen value holding every convention, its cutoffs and the measures asked
for, checked once; what each engine reads, and what an output records of how it was computed."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Literal

from pipeline.registry.base import MAX_CUTOFF, MAX_ERR_GRADE, SpecError, number_text
from pipeline.registry.conventions import CHOICES, CONVENTION, CONVENTIONS, DEFAULTS
from pipeline.registry.counters import COUNTERS, RETRIEVED, SIGNAL, Signal, signals_of
from pipeline.registry.gain import Discount, Gain
from pipeline.registry.measures import COMPANION_MEASURES, CURVES, MEASURE, MEASURES, measure_columns
from pipeline.registry.names import measure_conventions, measure_cutoffs, resolve_measures
from pipeline.registry.parameters import same_setting, setting_text

# What per-document weights (doc_weight_col) weigh, and the conventions they need: TF-Ranking's
# NDCGMetric sorts the list it is given and finds its ideal among the same results, so the list is
# the run's rows of weight above 0, whole and each once.
# scikit-learn's average_precision_score reads them as its sample_weight. The means of P, recall,
# AP, MRR and Hits weigh each list by its relevance (TF-Ranking's list weight), NDCG's by its gain.
RELEVANCE_WEIGHTED_MEASURES = ("P", "recall", "map", "recip_rank", "success")
DOCUMENT_WEIGHTED_MEASURES = ("cg", "dcg", "idcg", "ndcg", *RELEVANCE_WEIGHTED_MEASURES, "average_precision_score")
WEIGHTED_AP_CURVE = "weighted_ap_curve"
# What doc_weight_col sets where the field holds its default: TF-Ranking's ideal is among the
# list's own results, and its P@k divides by min(k, the list's size)
DOCUMENT_WEIGHT_SETS: dict[str, object] = {"ideal": "retrieved", "precision_denominator": "min-k-retrieved"}
DOCUMENT_WEIGHT_CONVENTIONS: dict[str, object] = {
    "ideal": "retrieved",  # "judged", the default, is taken as "retrieved" (DOCUMENT_WEIGHT_SETS)
    "tie_bounds": False,
    "max_results": None,
    "unjudged": "zero",
    "duplicates": "error",
    "retrieved_scores": "all",
    "all_queries": False,
}


# The words of the refusals of _check_document_weights, each value given as shown (the column as
# its repr): pipeline/sql_weight_refusals.py builds sql/ndcg.sql's from the same functions.
def unweighted_measures_message(column: str, unweighted: str) -> str:
    return (
        f"doc_weight_col {column}: per-document weights are defined here for ndcg (with cg, dcg, idcg), P, recall, "
        "map, recip_rank and success, as TF-Ranking's NDCGMetric, PrecisionMetric, RecallMetric, "
        "MeanAveragePrecisionMetric, MRRMetric and HitsMetric weigh them, and for average_precision_score, as "
        "scikit-learn's sample_weight weighs it, only; "
        f"{unweighted} would not be weighted: evaluate them without doc_weight_col"
    )


def ties_average_message(column: str) -> str:
    # TF-Ranking orders tied scores at random; one order of them is kept here, never their mean gain
    return (
        f"doc_weight_col {column} needs ties docid-desc, docid-asc or input-order (TF-Ranking orders tied scores at "
        "random, one order of them; the mean gain of --ties average is not its), got ties average"
    )


def convention_needed_message(column: str, name: str, value: str) -> str:
    needed = {**DOCUMENT_WEIGHT_CONVENTIONS, **DOCUMENT_WEIGHT_SETS}[name]
    return (
        f"doc_weight_col {column} needs {name} {setting_text(name, needed)} (TF-Ranking weighs the list it is "
        f"given, as given), got {name} {value}"
    )


def blank_weight_column_message(shown: str) -> str:
    return f"doc_weight_col must name a column of the run (or of the qrels), got {shown}"


# The words of the refusals of the weights' source (doc_weights_in, unjudged_weight), shared with
# sql/ndcg.sql's and the macros' rules (pipeline/sql_weight_refusals.py)
QRELS_WEIGHTS_WITHOUT_COLUMN = (
    "doc_weights_in qrels reads the weights of doc_weight_col's column of the qrels: name the column with "
    "doc_weight_col"
)
UNJUDGED_WEIGHT_WITHOUT_QRELS_WEIGHTS = (
    "unjudged_weight weighs the results the qrels do not judge when the weights are the qrels' "
    "(doc_weights_in qrels); the run's own weights weigh every result: leave unjudged_weight out"
)


def unjudged_weight_message(shown: str) -> str:
    return f"unjudged_weight must be a finite number >= 0, got {shown}"


Ties = Literal["docid-desc", "docid-asc", "input-order", "average"]
Ideal = Literal["judged", "retrieved", "judged-cut-at-hits"]
EmptyIdeal = Literal["zero", "one", "skip", "nan"]
Unjudged = Literal["zero", "drop"]
Duplicates = Literal["error", "first", "max-score"]
QueriesWithoutJudgments = Literal["skip", "evaluate"]
ApDenominator = Literal["relevant", "min-k-relevant"]
PrecisionDenominator = Literal["k", "min-k-retrieved"]
RetrievedScores = Literal["all", "positive"]
DocWeightsIn = Literal["run", "qrels"]
RbpGain = Literal["scaled", "unscaled"]

# The conventions a measure's counters_under names must be the registry's
for _measure in MEASURES:
    for _convention, _value, _ in _measure.counters_under:
        if _convention not in CONVENTION or _value not in CONVENTION[_convention].values:
            raise SpecError(f"measure {_measure.name!r}: counters_under names no choice {_convention}={_value!r}")


def counters_of(measures: tuple[str, ...] | list[str], evaluation: Evaluation | None = None) -> tuple[str, ...]:
    """The counters the measures named read, in the registry's order: with ``evaluation``,
    those its conventions add too (:attr:`Measure.counters_under`).

    >>> counters_of(("ndcg", "recall"))
    ('relevant_found', 'relevant_in_qrels')
    >>> from pipeline.registry import Evaluation
    >>> counters_of(("P",), Evaluation(precision_denominator="min-k-retrieved"))
    ('relevant_found', 'retrieved_in_ranking')
    """
    read = {name for measure in measures for name in MEASURE[measure].counters}
    if evaluation is not None:
        read |= {
            name
            for measure in measures
            for convention, value, counters in MEASURE[measure].counters_under
            if getattr(evaluation, convention) == value
            for name in counters
        }
    return tuple(counter.name for counter in COUNTERS if counter.name in read)


@dataclass(frozen=True)
class Evaluation:
    """Everything that decides the numbers: cutoffs, gain, discount and conventions.

    ``cutoffs`` are the k of NDCG@k; the whole ranking (cutoff ``None``) is always computed
    as well. Left empty, they are those the measures name (``P@5``: 5), else the default
    (:func:`measure_cutoffs`); given, the cutoffs the measures name are added to them. The
    conventions are described in this module's docstring.
    """

    cutoffs: tuple[int, ...] = ()
    measures: tuple[str, ...] = DEFAULTS["measures"]
    gain: Gain = Gain(DEFAULTS["gain"])
    discount: Discount = Discount(DEFAULTS["discount"], DEFAULTS["log_base"])
    all_queries: bool = DEFAULTS["all_queries"]
    max_results: int | None = DEFAULTS["max_results"]
    ties: Ties = DEFAULTS["ties"]
    ideal: Ideal = DEFAULTS["ideal"]
    empty_ideal: EmptyIdeal = DEFAULTS["empty_ideal"]
    unjudged: Unjudged = DEFAULTS["unjudged"]
    duplicates: Duplicates = DEFAULTS["duplicates"]
    relevance_threshold: float | None = DEFAULTS["relevance_threshold"]
    tie_bounds: bool = DEFAULTS["tie_bounds"]
    queries_without_judgments: QueriesWithoutJudgments = DEFAULTS["queries_without_judgments"]
    ap_denominator: ApDenominator = DEFAULTS["ap_denominator"]
    precision_denominator: PrecisionDenominator = DEFAULTS["precision_denominator"]
    rbp_persistence: float = DEFAULTS["rbp_persistence"]
    rbp_gain: RbpGain = DEFAULTS["rbp_gain"]
    err_max_grade: int = DEFAULTS["err_max_grade"]
    retrieved_scores: RetrievedScores = DEFAULTS["retrieved_scores"]
    cwl_min_rel: float = DEFAULTS["cwl_min_rel"]
    cwl_max_rel: float = DEFAULTS["cwl_max_rel"]
    cwl_target: float = DEFAULTS["cwl_target"]
    compat_persistence: float = DEFAULTS["compat_persistence"]
    doc_weight_col: str | None = DEFAULTS["doc_weight_col"]
    doc_weights_in: DocWeightsIn = DEFAULTS["doc_weights_in"]
    unjudged_weight: float | None = DEFAULTS["unjudged_weight"]

    def __post_init__(self) -> None:
        if not self.cutoffs:  # none given: the cutoffs the measures name, else the default
            object.__setattr__(self, "cutoffs", measure_cutoffs(self.measures))
        for k in self.cutoffs:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise SpecError(f"cutoff k must be a positive integer, got {k!r}")
            if k > MAX_CUTOFF:
                raise SpecError(f"cutoff k must be at most {MAX_CUTOFF} (2**63 - 1), got {k}")
        if len(set(self.cutoffs)) != len(self.cutoffs):
            raise SpecError(f"cutoffs repeat a value: {list(self.cutoffs)}")
        self._take_measure_parameters()
        # the families asked for, and the cutoffs their names carry (P@5) among the cutoffs
        measures, named_cutoffs = resolve_measures(self.measures)
        object.__setattr__(self, "measures", measures)
        object.__setattr__(self, "cutoffs", tuple(sorted({*self.cutoffs, *named_cutoffs})))
        if self.max_results is not None and (
            isinstance(self.max_results, bool) or not isinstance(self.max_results, int) or self.max_results < 1
        ):
            raise SpecError(f"max_results must be a positive integer, got {self.max_results!r}")
        if self.max_results is not None and self.max_results > MAX_CUTOFF:
            raise SpecError(f"max_results must be at most {MAX_CUTOFF} (2**63 - 1), got {self.max_results}")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise SpecError(f"unknown {name} {getattr(self, name)!r}; expected one of {', '.join(allowed)}")
        threshold = self.relevance_threshold
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold)
        ):
            raise SpecError(f"relevance_threshold must be a finite number, got {threshold!r}")
        if self.tie_bounds and self.max_results is not None and self.ideal_depends_on_kept_ties:
            raise SpecError(
                "tie_bounds cannot be combined with max_results when the ideal comes from the results "
                f"(ideal {self.ideal!r}{', unjudged drop' if self.unjudged == 'drop' else ''}): which tied "
                "results max_results keeps changes the ideal too, so the bounds would not be exact"
            )
        for name in ("rbp_persistence", "compat_persistence"):
            persistence = getattr(self, name)
            if isinstance(persistence, bool) or not isinstance(persistence, (int, float)) or not 0 < persistence < 1:
                # p = 1 weighs every rank alike and scales RBP by 1 - p = 0; outside [0, 1] it is no chance
                raise SpecError(f"{name} must be a number strictly between 0 and 1, got {persistence!r}")
            object.__setattr__(self, name, float(persistence))
        grade = self.err_max_grade
        if isinstance(grade, bool) or not isinstance(grade, int) or not 1 <= grade <= MAX_ERR_GRADE:
            # 2^g_max must be a finite double
            raise SpecError(f"err_max_grade must be a positive integer up to {MAX_ERR_GRADE}, got {grade!r}")
        self._check_cwl_scale()
        self._check_document_weights()
        object.__setattr__(self, "cutoffs", tuple(sorted(self.cutoffs)))
        if threshold is not None:
            object.__setattr__(self, "relevance_threshold", float(threshold))

    def _check_cwl_scale(self) -> None:
        """The label scale of the C/W/L measures (SDCG): cwl_max_rel above cwl_min_rel, both
        finite and at least 0."""
        low, high = self.cwl_min_rel, self.cwl_max_rel
        for name, value in (("cwl_min_rel", low), ("cwl_max_rel", high)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SpecError(f"{name} must be a finite number at least 0, got {value!r}")
        if low < 0:
            # cwl_eval reads a label below 0 as 0 first, so a scale below 0 only lifts the 0s
            raise SpecError(f"cwl_min_rel must be a finite number at least 0, got {low!r}")
        if not high > low:
            raise SpecError(
                f"cwl_max_rel must be above cwl_min_rel ({number_text(float(low))}), got {number_text(float(high))}"
            )
        object.__setattr__(self, "cwl_min_rel", float(low))
        object.__setattr__(self, "cwl_max_rel", float(high))
        target = self.cwl_target
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0.5 < target < math.inf:
            # at 0.5 or below INST's chance of going on, ((i + 2T - G - 1) / (i + 2T - G))^2, can be 0
            raise SpecError(f"cwl_target must be a finite number above 0.5, got {target!r}")
        object.__setattr__(self, "cwl_target", float(target))

    def _check_document_weights(self) -> None:
        """Per-document weights (``doc_weight_col``) are TF-Ranking's, defined for its NDCG over the
        list it is given: the measures and conventions where they have no such meaning are
        refused by name, never computed unweighted."""
        column, unjudged = self.doc_weight_col, self.unjudged_weight
        if unjudged is not None:
            number = isinstance(unjudged, numbers.Real) and not isinstance(unjudged, bool)
            try:
                value = float(unjudged) + 0.0 if number else math.nan  # + 0.0: -0 is 0
            except OverflowError:  # an int beyond float64
                value = math.inf
            if not 0 <= value < math.inf:
                raise SpecError(unjudged_weight_message(repr(unjudged)))
            if self.doc_weights_in != "qrels":
                raise SpecError(UNJUDGED_WEIGHT_WITHOUT_QRELS_WEIGHTS)
            object.__setattr__(self, "unjudged_weight", value)
        if column is None:
            if self.doc_weights_in == "qrels":
                raise SpecError(QRELS_WEIGHTS_WITHOUT_COLUMN)
            return
        if not isinstance(column, str) or not column.strip():
            raise SpecError(blank_weight_column_message(repr(column)))
        unweighted = [name for name in self.columns if name not in DOCUMENT_WEIGHTED_MEASURES]
        if unweighted:
            raise SpecError(unweighted_measures_message(repr(column), ", ".join(unweighted)))
        # the weights are the run's: a judged document the run does not list has none, so the ideal
        # is TF-Ranking's, the weighted list's own results by weight x gain (shown as ideal
        # retrieved), and its P@k divides by min(k, the list's size); a default is taken as those,
        # an option given otherwise is refused (pipeline.api.make_evaluation)
        for name, needed in DOCUMENT_WEIGHT_SETS.items():
            if getattr(self, name) == DEFAULTS[name]:
                object.__setattr__(self, name, needed)
        if self.ties == "average":
            # TF-Ranking orders tied scores at random; one order of them is kept here, never their mean gain
            raise SpecError(ties_average_message(repr(column)))
        for name, allowed in DOCUMENT_WEIGHT_CONVENTIONS.items():
            value = getattr(self, name)
            if value != allowed:
                raise SpecError(convention_needed_message(repr(column), name, setting_text(name, value)))

    def _take_measure_parameters(self) -> None:
        """The conventions ir_measures' parameters of the measures named ask for (``P(rel=2)@5``:
        relevance_threshold 2), taken where the field holds its default; a field set otherwise
        contradicts the name (:func:`pipeline.make_evaluation` names the option that set it)."""
        for name, (value, asker) in measure_conventions(self.measures).items():
            attribute, _, part = CONVENTION[name].field.partition(".")
            current = getattr(getattr(self, attribute), part) if part else getattr(self, attribute)
            if same_setting(name, current, value):
                continue
            default = DEFAULTS[name] if name != "gain" else Gain(DEFAULTS[name])
            if current != default:
                raise SpecError(
                    f"{name} {setting_text(name, current)} contradicts {asker}, which asks for {name} "
                    f"{setting_text(name, value)}; a convention holds for the whole evaluation, so leave {name} "
                    f"out (the parameter sets it), or evaluate {asker} on its own"
                )
            taken = replace(getattr(self, attribute), **{part: value}) if part else value
            object.__setattr__(self, attribute, taken)

    @property
    def columns(self) -> tuple[str, ...]:
        """The measures' columns of the per-query table and the summary, in the registry's order."""
        return measure_columns(self.measures)

    @property
    def companions(self) -> tuple[str, ...]:
        """The companion measures asked for (P, recall, map, recip_rank, success)."""
        return tuple(name for name in self.columns if name in COMPANION_MEASURES)

    @property
    def counters(self) -> tuple[str, ...]:
        """The counters (:data:`COUNTERS`) the measures asked for read under these conventions:
        none for NDCG alone."""
        return counters_of(self.columns, self)

    @property
    def signals(self) -> tuple[Signal, ...]:
        """The per-rank signals those counters read (none for NDCG alone), in the registry's order."""
        return tuple(SIGNAL[name] for name in signals_of(self.counters) if name != RETRIEVED)

    @property
    def counts_retrieved(self) -> bool:
        """Whether a counter asked reads the count of the ranking itself (num_ret's), which keeps
        every rank of the ranking by score."""
        return RETRIEVED in signals_of(self.counters)

    @property
    def curves(self) -> tuple[str, ...]:
        """The per-query curves (:data:`~pipeline.registry.measures.CURVES`) the measures asked read."""
        read = {MEASURE[name].curve for name in self.columns}
        if self.doc_weight_col is not None and {"map", "recall"} & set(self.columns):
            # TF-Ranking's AP sums and the list's relevant results (its recall's divisor), beside the counters
            read.add(WEIGHTED_AP_CURVE)
        return tuple(curve for curve in CURVES if curve in read)

    @property
    def ideal_depends_on_kept_ties(self) -> bool:
        """Whether the ideal ranking depends on which results are kept, not only on the qrels."""
        return self.ideal == "retrieved" or (self.ideal == "judged-cut-at-hits" and self.unjudged == "drop")

    @property
    def reads_input_rank(self) -> bool:
        """Whether ties follow the run's own ``rank`` column, which must then be numeric and
        never null."""
        return self.ties == "input-order"

    @property
    def reads_input_order(self) -> bool:
        """Whether the numbers depend on the order rows arrive (or on an input rank column)."""
        return self.ties == "input-order" or self.duplicates != "error"

    def describe(self) -> dict[str, object]:
        """The resolved conventions, as written into outputs and printed for users (the keys
        and texts of the registry, :data:`CONVENTIONS`)."""
        described: dict[str, object] = {}
        for convention in CONVENTIONS:
            if convention.described_as is not None:
                described[convention.described_as] = convention.describe(getattr(self, convention.attribute))
            described.update(convention.notes)
        return described
