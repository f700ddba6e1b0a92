"""What a measure is: a column of the per-query table, a formula over counters and the curves it
reads, its peers' names, and how the summary combines it (:mod:`pipeline.registry.measures` lists
them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.registry.base import SpecError
from pipeline.registry.counters import COUNTER

Aggregate = Literal["mean", "sum", "geometric_mean"]
AGGREGATES: tuple[str, ...] = ("mean", "sum", "geometric_mean")
# Which way a measure moves when the system gets better (the gate's "worse"); None: neither
Better = Literal["higher", "lower"] | None
BETTER: tuple[str | None, ...] = ("higher", "lower", None)
# The per-query steps a measure's formula may read besides the counters (sql/curves/, the Polars
# engine's curves module); an engine computes a curve only when a measure asked reads it.
CURVES: dict[str, str] = {
    "relevance_curve": "per query, sums over the ranks of its relevant results (Rprec, iprec, bpref, infAP, binG)",
    "gain_curve": "per query, sums over its ranking's gains beside the ideal ranking's (G, Rndcg, ndcg_rel, rbp)",
    "cascade_curve": "per query and cutoff, the sum of the cascade's stops over its graded results (ERR)",
    "intent_curve": "per query and cutoff, the subtopics its relevant results cover and their sums (strec, P_IA, "
    "ERR_IA, AP_IA, alpha_DCG, NRBP)",
    "user_model_curve": "per query and cutoff, the C/W/L user model's expected gain per result read (SDCG)",
    "nerr_curve": "per query and cutoff, the C/W/L forms of ERR, whose reader stops at a gain (NERR8, NERR9)",
    "target_curve": "per query, the C/W/L measures read over 1000 positions (INST, INSQ, NERR10, NERR11)",
    "bpm_curve": "per query and cutoff, the C/W/L measure whose reader stops at a target gain or k (BPM)",
    "compat_curve": "per query, the rank-biased overlap of its ranking with the ideal ranking (Compat)",
    "weighted_ap_curve": "per query and cutoff, TF-Ranking's AP sums with document weights (doc_weight_col)",
    "threshold_curve": "per query, scikit-learn's AP sums over its distinct scores (average_precision_score)",
}
# The curves read at every cutoff (a row per query and cutoff); the others: the whole ranking only.
CUTOFF_CURVES: tuple[str, ...] = ("cascade_curve", "intent_curve", "user_model_curve", "nerr_curve", "bpm_curve")
CUTOFF_CURVES = (*CUTOFF_CURVES, "weighted_ap_curve")


@dataclass(frozen=True)
class Measure:
    """One per-query measure: a column of the per-query table, combined into the summary.

    ``trec_eval`` names the measure over the whole ranking and ``trec_eval_cut`` at cutoff
    ``{k}`` (None: trec_eval has no such measure); ``ir_measures`` likewise in ir_measures'
    syntax. Trec lines carry trec_eval's name, or ir_measures' for a measure trec_eval lacks
    (:meth:`line_name`). ``counters`` are the :data:`COUNTERS` its formula reads
    (the NDCG family reads NDCG's own sums instead). ``aggregate`` is how the summary combines
    the per-query values over the evaluated queries (those whose :data:`PRIMARY_MEASURE` is
    not null), in query order: ``mean``, ``sum`` (trec_eval's ``num_rel_ret``), or
    ``geometric_mean`` (trec_eval's ``gm_map``: exp of the mean of ln(max(x, 1e-5)),
    :data:`MIN_GEOMETRIC_MEAN`). ``family`` is the measure ``--measures`` selects it with
    (empty: itself); ``whole`` says whether it is defined over the whole ranking (the row
    with k null; where it is not, that row holds null); ``ignores`` names the conventions
    that do not change it. ``trec_cutoffs`` are trec_eval's default cutoffs of the family (the
    ones ``--measures all_trec`` prints); ``trec_per_query`` says whether trec_eval prints a
    line per query (not for ``num_q`` and the geometric means); ``whole_number`` that it
    prints the value as a whole number (the counts ``num_*``). ``counters_under`` are
    ``(convention, value, counters)``: the counters it reads besides when that convention has
    that value (P@k reads the retrieved count under ``precision_denominator`` min-k-retrieved).
    ``better`` is the direction of a better system, which the regression gate reads:
    ``higher``, ``lower`` (the unjudged fraction), or None for a count or a property of the
    judgments (``num_ret``, ``idcg``), which no gate can read as better or worse. ``line`` is
    the name of its trec line (over the whole ranking) where neither trec_eval nor ir_measures
    has the measure (scikit-learn's ``average_precision_score``).
    """

    name: str
    title: str
    formula: str
    trec_eval: str | None = None
    trec_eval_cut: str | None = None
    ir_measures: str | None = None
    ir_measures_cut: str | None = None
    counters: tuple[str, ...] = ()
    aggregate: Aggregate = "mean"
    family: str = ""
    whole: bool = True
    ignores: str = ""
    trec_cutoffs: tuple[int, ...] = ()
    trec_per_query: bool = True
    whole_number: bool = False
    counters_under: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    better: Better = "higher"
    curve: str = ""
    at_cutoffs: bool = True
    line: str = ""

    def __post_init__(self) -> None:
        if self.curve and self.curve not in CURVES:
            raise SpecError(f"measure {self.name!r}: unknown curve {self.curve!r}; CURVES has {list(CURVES)}")
        unknown = [name for name in self.counters if name not in COUNTER]
        unknown += [name for _, _, counters in self.counters_under for name in counters if name not in COUNTER]
        if unknown:
            raise SpecError(f"measure {self.name!r} reads unknown counters {unknown}; COUNTERS has {list(COUNTER)}")
        if self.aggregate not in AGGREGATES:
            raise SpecError(f"measure {self.name!r}: unknown aggregate {self.aggregate!r}")
        if self.better not in BETTER:
            raise SpecError(f"measure {self.name!r}: better is one of {BETTER}, got {self.better!r}")
        if self.aggregate == "geometric_mean" and not self.whole:
            # its summary would take the null of the whole ranking for the floor, 1e-5
            raise SpecError(f"measure {self.name!r}: a geometric mean needs a value at every cutoff (whole=True)")

    @property
    def whole_only(self) -> bool:
        """Whether it has a value over the whole ranking only, null at every cutoff: the curve
        measures (bpref, Rprec, infAP, G, rbp, ...), which trec_eval defines at no cutoff, and
        those that say so (``at_cutoffs`` false: ndeval's MAP-IA, which reads a cutoff curve)."""
        return not self.at_cutoffs or (bool(self.curve) and self.curve not in CUTOFF_CURVES)

    @property
    def selected_by(self) -> str:
        """The name ``--measures`` selects it by: its family's (``cg`` comes with ``ndcg``)."""
        return self.family or self.name

    def trec_name(self, k: int | None) -> str | None:
        """trec_eval's name at cutoff ``k`` (None: the whole ranking).

        >>> from pipeline.registry.measures import MEASURE
        >>> MEASURE["ndcg"].trec_name(10), MEASURE["ndcg"].trec_name(None)
        ('ndcg_cut_10', 'ndcg')
        """
        template = self.trec_eval if k is None else self.trec_eval_cut
        return None if template is None else template.format(k=k)

    def line_name(self, k: int | None) -> str | None:
        """The name of its trec line at cutoff ``k``: trec_eval's; for a measure trec_eval does
        not have at all, ir_measures' (over the whole ranking, its name without the cutoff),
        so that a measure asked for is never left out silently; for one neither has, its ``line``.
        None: no line (a measure of trec_eval's families at a cutoff, or over the whole ranking,
        trec_eval does not print).

        >>> from pipeline.registry.measures import MEASURE
        >>> MEASURE["ndcg"].line_name(10), MEASURE["err"].line_name(10), MEASURE["err"].line_name(None)
        ('ndcg_cut_10', 'ERR@10', 'ERR')
        >>> MEASURE["recall"].line_name(None) is None  # trec_eval's recall has cutoffs only
        True
        """
        if self.trec_eval or self.trec_eval_cut:
            return self.trec_name(k)
        if self.line:  # neither has it (scikit-learn's average_precision_score): its own
            return self.line if k is None else None
        if k is not None:
            return None if self.ir_measures_cut is None else self.ir_measures_cut.format(k=k)
        if self.ir_measures:
            return self.ir_measures
        return None if self.ir_measures_cut is None else self.ir_measures_cut.replace("{k}", "").rstrip("@_")
