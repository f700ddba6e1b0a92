"""The measure and its conventions: one frozen description read by every engine.

Formulas (rank ``i`` starts at 1, ``g(i)`` is the gain of the document at rank ``i``)::

    CG@k   = sum_{i<=k} g(i)
    DCG@k  = sum_{i<=k} g(i) * d(i)
    IDCG@k = DCG@k of the ideal ranking
    NDCG@k = DCG@k / IDCG@k

Besides them, the companion measures of trec_eval (``measures``; :data:`MEASURES`), over the
relevant results (a judged label >= ``relevance_threshold``, or > 0) and ``R``, the relevant
documents judged for the query::

    P@k       = relevant in the top k / k          (none over the whole ranking; or / min(k, n),
                                                    n retrieved, under precision_denominator)
    recall@k  = relevant in the top k / R          (0 when R is 0)
    AP@k      = sum over relevant ranks i <= k of (relevant in the top i / i), / R   (0 when R is 0;
                or / min(k, R) under ap_denominator)
    RR@k      = 1 / the first relevant rank if it is <= k, else 0
    success@k = 1 if a relevant result is in the top k, else 0

Gains ``g`` (:class:`Gain`):

- ``linear``: ``g = label`` (trec_eval, ir_measures, scikit-learn).
- ``exponential``: ``g = 2**label - 1`` (Burges et al., 2005; LightGBM, XGBoost,
  Elasticsearch; the "alternative" DCG of most tutorials).
- ``binary``: ``g = 1`` for a relevant label (see ``relevance_threshold``), else 0 (Spark
  MLlib's ``RankingMetrics``).
- a level map such as ``1=3,2=9,4=4.5`` (trec_eval's ``-m ndcg.1=3,2=9,4=4.5``): a mapped
  level gains its mapped value (which may be 0 or negative, and level 0 may be mapped);
  an unmapped level keeps its own value as its gain.

Gains are bounded (:data:`MAX_GAIN`, 1e300): a label whose gain exceeds it in magnitude
(a linear label above 1e300, an exponential label above 996) is refused by validation
(exit 3), and so is a gain map value beyond it (exit 2). The bound leaves room for the sums:
CG, DCG and IDCG add at most one gain per result, so they stay finite (and NDCG a ratio of
finite numbers in [0, 1]) for up to 1.7e8 results in one sum; 2**1024 - 1 would be an
infinite gain, and NaN (inf / inf) for a perfect ranking. Scaling each query's gains by its
largest would keep NDCG exact, but not the CG, DCG and IDCG columns, which are reported too.

Discounts ``d`` (:class:`Discount`):

- ``log2``: ``d(i) = 1 / log2(i + 1)`` (trec_eval, Burges). Spark's natural log cancels in
  the ratio, so its NDCG equals this one.
- ``jk`` with base ``b``: ``d(i) = 1`` for ``i <= b``, else ``1 / log_b(i)``; the original
  Järvelin & Kekäläinen (2002) form, equal to ``1 / max(1, log_b(i))``.

Conventions (each is a field of :class:`Evaluation`; the defaults are trec_eval's):

1. Ordering, ``ties``: a query's results are ordered by score descending, and tied scores
   are resolved by

   - ``docid-desc`` (default; trec_eval): doc_id descending in string (byte) order, also for
     integer ids; any rank column in the input is ignored.
   - ``input-order`` (LightGBM, XGBoost, Spark, Elasticsearch, recommender libraries): the
     order in which rows arrive (the ``arrival`` column, a row index added when the input is
     read: files in the order listed, rows in file order). When the run has a ``rank``
     column, results are ordered by that rank ascending instead (score, then arrival, break
     its ties; rows without a rank come last).
   - ``average`` (scikit-learn's ``ndcg_score``, torchmetrics): the documents of a tied
     group share the mean of their gains, so a group occupying ranks ``a..b`` adds
     ``mean gain * (d(a) + ... + d(min(b, k)))`` to DCG@k, whatever their order.

2. Gains: negative labels count as unjudged and gain 0 whatever the gain says; unjudged
   documents (absent from the qrels) gain 0; label 0 gains 0 unless a gain map gives it a
   value. A label is relevant when it is ``>= relevance_threshold`` (trec_eval's ``-l``), or
   ``> 0`` when no threshold is set; relevance decides the ``binary`` gain and leaves
   the other gains unchanged.
3. Ideal ranking, ``ideal``: the positive gains sorted descending, cut at k, taken from

   - ``judged`` (default; trec_eval): every judged document of the query, including ones
     the run never retrieved. With inline labels (no qrels) the judged documents are the
     run's own labelled rows.
   - ``retrieved`` (scikit-learn, LightGBM, XGBoost): only the documents of the evaluated
     ranking (after ``duplicates``, ``max_results`` and ``unjudged`` have applied).
   - ``judged-cut-at-hits`` (Elasticsearch's ``rank_eval``): every judged document, cut at
     the number of results in the evaluated ranking as well as at k.

4. A query whose IDCG is 0 (no relevant document in its ideal ranking), ``empty_ideal``:
   ``zero`` (default; trec_eval, scikit-learn, Spark) scores 0; ``one`` (LightGBM,
   XGBoost's ``ndcg@k``) scores 1; ``nan`` scores NaN, which then propagates into the
   mean; ``skip`` gives NDCG null and leaves the query out of the summary (its ``queries``
   count drops and its cg, dcg and idcg are not averaged either).
5. Queries in the run but not in the qrels (no judgment row at all), ``queries_without_judgments``:
   ``skip`` (default; trec_eval) leaves them out; ``evaluate`` (Elasticsearch's ``rank_eval``,
   which averages over every request it is given) evaluates them as queries whose every
   document is unjudged: R = 0, so every measure scores as it does for a query with no
   relevant document (0 for NDCG under ``empty_ideal`` zero, P, recall, AP, RR and success;
   NDCG as ``empty_ideal`` says otherwise, so ``skip`` leaves them out again). Queries in the
   qrels but not in the run are skipped, or score 0 when ``all_queries`` is set (trec_eval
   ``-c``, ir_measures): the two add queries from opposite sides, and with both every query
   of either input is evaluated. ``max_results=N`` keeps the N best-ranked results of each
   query after ordering (trec_eval ``-M``).
6. Unjudged documents, ``unjudged``: ``zero`` (default) keeps them in the ranking with gain
   0; ``drop`` removes them (documents absent from the qrels, and those with a negative
   label, which count as unjudged) from the ranking after ordering and ``max_results``,
   before cutting at k (trec_eval ``-J``).
7. Duplicates, ``duplicates``: a document listed twice for one query in the run is an
   ``error`` (default), or only its ``first`` row (the first to arrive) or its
   ``max-score`` row (the highest score; the first to arrive among equal scores) is kept
   before ordering. A duplicate in the qrels is always an error.

8. Denominators of the companion measures. ``ap_denominator``: AP@k divides by ``relevant``
   (default; trec_eval, ir_measures: R, so a query with more relevant documents than k can
   never reach 1) or by ``min-k-relevant`` (Spark MLlib's ``meanAveragePrecisionAt``,
   RecBole's ``MAP@k``: min(k, R), so it can); the whole ranking (k null) divides by R under
   both. It applies wherever AP is computed (``map`` and ``gm_map``). ``precision_denominator``:
   P@k divides by ``k`` (default; trec_eval, Spark, RecBole: the ranks past the retrieved
   count as misses) or by ``min-k-retrieved`` (TF-Ranking's ``PrecisionMetric``,
   Elasticsearch's ``precision``: min(k, n) of the n retrieved, 0 when none is retrieved).
   Both are 0 when their denominator is 0.

Tie bounds, ``tie_bounds`` (a diagnostic; it changes no score): ``ndcg_min`` and ``ndcg_max``
are NDCG@k with each group of tied results (equal scores; equal rank and score under
``input-order``) ordered by gain ascending and descending. The discount never increases
with rank, so these are the lowest and highest NDCG@k over every order of the ties; the
``average`` score lies between them. ``ties_straddle_k`` says whether ranks k and k + 1 are
tied. Refused with ``max_results`` when the ideal depends on which results are kept
(``retrieved``, or ``judged-cut-at-hits`` with ``unjudged="drop"``): there the cut picks
which tied documents count, the IDCG moves with them, and the gain orders are no longer the
extremes.

Cutoff ``None`` means the whole ranking: DCG over every retrieved document and IDCG over
every ideal document (trec_eval's ``ndcg``); a cutoff k cuts both at k (``ndcg_cut_k``).

Profiles (:data:`PROFILES`) are named bundles of these choices that reproduce a peer tool;
``ndcg profiles`` prints them, and explicit options override a profile's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

GainKind = Literal["linear", "exponential", "binary"]
DiscountKind = Literal["log2", "jk"]
Ties = Literal["docid-desc", "input-order", "average"]
Ideal = Literal["judged", "retrieved", "judged-cut-at-hits"]
EmptyIdeal = Literal["zero", "one", "skip", "nan"]
Unjudged = Literal["zero", "drop"]
Duplicates = Literal["error", "first", "max-score"]
QueriesWithoutJudgments = Literal["skip", "evaluate"]
ApDenominator = Literal["relevant", "min-k-relevant"]
PrecisionDenominator = Literal["k", "min-k-retrieved"]

# The largest gain, in magnitude, a label may earn (see the module docstring): sums of up to
# 1.7e8 such gains stay finite in a double (1.8e308).
MAX_GAIN = 1e300
# The largest cutoff: k is an int64 column of the outputs and an integer of both engines' SQL.
# A larger k ranks no differently (no query has that many results) but fits no table.
MAX_CUTOFF = 2**63 - 1

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_MAP_ENTRY = re.compile(rf"^\s*({_NUMBER})\s*=\s*({_NUMBER})\s*$")


class SpecError(ValueError):
    """A measure or convention was described in a way we cannot accept."""


@dataclass(frozen=True)
class Gain:
    """How a relevance label becomes a gain.

    ``levels`` maps relevance levels to gains and takes precedence over ``kind``; a level
    it does not name is scored by ``kind``. Negative labels always gain 0.

    >>> Gain.parse("1=3,2=9,4=4.5").gain_of(3)
    3.0
    >>> Gain.parse("exponential").gain_of(3)
    7.0
    >>> Gain("binary").gain_of(2, relevance_threshold=3)
    0.0
    """

    kind: GainKind = "linear"
    levels: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in GAIN_KINDS:
            raise SpecError(
                f"unknown gain {self.kind!r}; expected one of {', '.join(GAIN_KINDS)} or a map like 1=3,2=9"
            )
        seen = [level for level, _ in self.levels]
        if len(set(seen)) != len(seen):
            raise SpecError(f"gain map names a level twice: {self}")
        for level, level_gain in self.levels:
            if not math.isfinite(level):
                raise SpecError(f"gain map level {level!r} is not a finite number")
            if not abs(level_gain) <= MAX_GAIN:
                raise SpecError(
                    f"gain map value {level_gain!r} (level {_short(level)}) is beyond the largest gain "
                    f"{MAX_GAIN:g}: sums of such gains overflow a double"
                )

    @classmethod
    def parse(cls, text: str) -> Gain:
        text = text.strip()
        if text in GAIN_KINDS:
            return cls(kind=text)  # type: ignore[arg-type]
        kind, plus, mapped = text.partition("+")
        if plus and kind.strip() in GAIN_KINDS:
            return cls(kind=kind.strip(), levels=cls.parse(mapped).levels)  # type: ignore[arg-type]
        levels = []
        for entry in text.split(","):
            match = _MAP_ENTRY.match(entry)
            if not match:
                raise SpecError(
                    f"cannot read gain {text!r}: expected 'linear', 'exponential' or a map of "
                    f"level=gain pairs such as '1=3,2=9,4=4.5' (bad part: {entry.strip()!r})"
                )
            levels.append((float(match.group(1)), float(match.group(2))))
        return cls(kind="linear", levels=tuple(levels))

    def gain_of(self, label: float, relevance_threshold: float | None = None) -> float:
        """The gain of one label; the reference the engines are tested against."""
        if label < 0:
            return 0.0
        for level, gain in self.levels:
            if level == label:
                return gain
        if self.kind == "binary":
            return 1.0 if is_relevant(label, relevance_threshold) else 0.0
        return float(2**label - 1) if self.kind == "exponential" else float(label)

    @property
    def largest_label(self) -> float:
        """The largest label whose gain by ``kind`` stays within :data:`MAX_GAIN` (inf for
        ``binary``). Validation refuses a label above it unless the map names its level.

        >>> Gain("exponential").largest_label > 996 and Gain("exponential").gain_of(997) > MAX_GAIN
        True
        """
        if self.kind == "binary":
            return math.inf
        return math.log2(MAX_GAIN + 1) if self.kind == "exponential" else MAX_GAIN

    def formula(self) -> str:
        """How ``kind`` turns a label into a gain, for messages."""
        return {"linear": "gain = label", "exponential": "gain = 2^label - 1", "binary": "gain = 0 or 1"}[self.kind]

    def __str__(self) -> str:
        if not self.levels:
            return self.kind
        mapped = ",".join(f"{_short(level)}={_short(gain)}" for level, gain in self.levels)
        return mapped if self.kind == "linear" else f"{self.kind}+{mapped}"


@dataclass(frozen=True)
class Discount:
    """How the contribution of rank ``i`` is discounted.

    >>> Discount().factor(3)
    0.5
    >>> Discount("jk", log_base=2).factor(2)
    1.0
    """

    kind: DiscountKind = "log2"
    log_base: float = 2.0

    def __post_init__(self) -> None:
        if self.kind not in DISCOUNT_KINDS:
            raise SpecError(f"unknown discount {self.kind!r}; expected one of {', '.join(DISCOUNT_KINDS)}")
        if not (self.log_base > 1 and math.isfinite(self.log_base)):
            raise SpecError(f"log base must be a finite number greater than 1, got {self.log_base}")

    def factor(self, rank: int) -> float:
        """The discount at one rank; the reference the engines are tested against."""
        if self.kind == "jk":
            return 1.0 / max(1.0, math.log(rank) / math.log(self.log_base))
        return 1.0 / (math.log(rank + 1) / math.log(2.0))

    def __str__(self) -> str:
        return self.kind if self.kind == "log2" else f"jk(base={_short(self.log_base)})"


def is_relevant(label: float, relevance_threshold: float | None = None) -> bool:
    """Whether a label counts as relevant: ``>= relevance_threshold``, or ``> 0`` without one."""
    return label > 0 if relevance_threshold is None else label >= relevance_threshold


# --- the registry ---------------------------------------------------------------------------
# Every convention and every measure is defined once, here. The command-line flags and config
# keys (pipeline/cli.py), the API's options (pipeline/api.py::make_evaluation), the SQL
# variables (pipeline/sql_files.py) and their Spark types and refusals (engines/spark.py),
# Evaluation.describe(), `ndcg profiles` and docs/reference.md's tables are generated from it.


@dataclass(frozen=True)
class Choice:
    """One value of a convention.

    ``shown`` is how :meth:`Evaluation.describe` writes it into outputs (default: the value);
    ``spark_refuses`` is why the Spark engine refuses it, if it does (refused, never ignored);
    ``effect`` is what it does, as validation's warnings say it (e.g. "score 0").
    """

    value: str
    description: str
    shown: str = ""
    spark_refuses: str = ""
    effect: str = ""


@dataclass(frozen=True)
class Variable:
    """A ``getvariable('name')`` of ``sql/``, its Spark type, and its value for an evaluation."""

    name: str
    spark_type: str
    value: Callable[[Evaluation], Any]


@dataclass(frozen=True)
class Convention:
    """One option of an evaluation: its flag ``--name`` (dashes), config key (the same) and
    API keyword ``name`` (underscores), all meaning the same.

    ``field`` is the :class:`Evaluation` field it sets, or ``field.part`` for a part of one
    (``--log-base`` sets ``discount.log_base``). ``choices`` are its values (``open`` when
    other texts are accepted as well, as gain maps are, in the ``syntax`` described);
    ``parse`` reads a flag's or config key's text into the flag's value, ``from_text`` reads
    that value (and the API's text) into the field's (a gain map); ``switch`` makes it a
    yes/no flag. ``described_as`` is its key in
    :meth:`Evaluation.describe` (None: shown inside another one's), with ``show`` turning
    the field's value into what is written there. ``absent_means_default``: outputs written
    before the convention existed do not record it, and were evaluated by its default (the
    only behaviour there was), which ``compare`` then reads for them.
    """

    name: str
    field: str
    help: str
    default: Any
    choices: tuple[Choice, ...] = ()
    open: bool = False
    parse: Callable[[str], Any] | None = None
    from_text: Callable[[str], Any] | None = None
    switch: bool = False
    metavar: str | None = None
    syntax: str = ""
    flag_default: Any = None  # shown in the reference's usage; the flag's own default is None
    variables: tuple[Variable, ...] = ()
    described_as: str | None = None
    show: Callable[[Any], object] | None = None
    notes: tuple[tuple[str, str], ...] = ()
    in_profiles: bool = False
    absent_means_default: bool = False

    @property
    def attribute(self) -> str:
        """The :class:`Evaluation` field holding this convention (``discount`` for ``discount.kind``)."""
        return self.field.split(".")[0]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(choice.value for choice in self.choices)

    def choice(self, value: str) -> Choice:
        return next(choice for choice in self.choices if choice.value == value)

    @property
    def flag_help(self) -> str:
        """The help of the flag: its summary, then each choice with its line."""
        if not self.choices:
            return self.help
        listed = "; ".join(
            f"{c.value}{' (default)' if c.value == self.default else ''}: {c.description}"
            + (" (not on the spark engine)" if c.spark_refuses else "")
            for c in self.choices
        )
        return f"{self.help}: {listed}" + (f"; or {self.syntax}" if self.syntax else "")

    def describe(self, value: Any) -> object:
        if self.show is not None:
            return self.show(value)
        if self.choices and isinstance(value, str):
            return self.choice(value).shown or value
        return value


def decimal(text: str) -> float:
    """A flag's or config key's number as written (``--relevance-threshold``, ``--log-base``):
    Python's ``float`` also reads ``1_0`` as 10, a typo taken silently; refused here."""
    if isinstance(text, str) and "_" in text:
        raise SpecError(f"invalid float value: {text!r} (write the number without _)")
    return float(text)


decimal.__name__ = "float"  # argparse names a ValueError's type by it ("invalid float value")


def positive_int(text: str) -> int:
    """A flag's or config key's positive integer (``--max-results``)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise SpecError(f"expected a positive integer, got {text!r}")
    if int(text) > MAX_CUTOFF:
        # the engines count in 64-bit integers (DuckDB cannot run the SQL with a larger literal)
        raise SpecError(f"must be at most {MAX_CUTOFF} (2**63 - 1), got {text.strip()}")
    return int(text)


def _relevant(threshold: float | None) -> str:
    return "label > 0" if threshold is None else f"label >= {_short(threshold)}"


def _gain_map(evaluation: Evaluation) -> tuple[list[float], list[float]] | None:
    levels = evaluation.gain.levels
    return ([level for level, _ in levels], [gain for _, gain in levels]) if levels else None


def _variable(name: str, spark_type: str) -> Variable:
    """The variable of the same name as an Evaluation field, bound to that field's value."""
    return Variable(name, spark_type, lambda evaluation: getattr(evaluation, name))


def _measures(text: str) -> tuple[str, ...]:
    """``--measures``' text (:func:`parse_measures`, defined with the measures below)."""
    return parse_measures(text)


CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        "k",
        "cutoffs",
        "cutoffs, e.g. 5,10,20; the whole ranking is always added. Left out: the cutoffs --measures names "
        "(nDCG@10,P@5: 5 and 10), else 5,10,20; given, the cutoffs --measures names are added to it",
        default=(5, 10, 20),
        flag_default="5,10,20",
        syntax="comma-separated positive integers",
        variables=(Variable("ks", "ARRAY<BIGINT>", lambda evaluation: list(evaluation.cutoffs)),),
        described_as="cutoffs",
        show=list,
    ),
    Convention(
        "gain",
        "gain",
        "how a label becomes a gain",
        default="linear",
        choices=(
            Choice("linear", "gain = label (trec_eval)"),
            Choice("exponential", "gain = 2^label - 1 (LightGBM, XGBoost, Elasticsearch)"),
            Choice("binary", "1 for a relevant label, else 0 (Spark MLlib)"),
        ),
        open=True,
        from_text=Gain.parse,
        syntax="a map like 1=3,2=9 (trec_eval's: a mapped level gains its value, an unmapped one keeps its own)",
        variables=(
            Variable("gain", "STRING", lambda evaluation: evaluation.gain.kind),
            Variable("gain_map", "MAP<DOUBLE, DOUBLE>", _gain_map),
        ),
        described_as="gain",
        show=str,
        in_profiles=True,
    ),
    Convention(
        "discount",
        "discount.kind",
        "how rank i is discounted",
        default="log2",
        choices=(
            Choice("log2", "1/log2(i+1) (trec_eval)"),
            Choice("jk", "Jarvelin-Kekalainen: 1/max(1, log_b(i)), b from --log-base"),
        ),
        variables=(Variable("discount", "STRING", lambda evaluation: evaluation.discount.kind),),
        described_as="discount",
        show=str,
        in_profiles=True,
    ),
    Convention(
        "log_base",
        "discount.log_base",
        "base b of the jk discount (default 2)",
        default=2.0,
        parse=decimal,
        metavar="B",
        variables=(Variable("log_base", "DOUBLE", lambda evaluation: evaluation.discount.log_base),),
    ),
    Convention(
        "ties",
        "ties",
        "tied scores",
        default="docid-desc",
        choices=(
            Choice(
                "docid-desc",
                "doc_id descending, in string order (trec_eval)",
                "score desc, then doc_id desc (string order)",
            ),
            Choice(
                "input-order",
                "the order rows arrive, or the run's 'rank' column when it has one (LightGBM, XGBoost, Spark)",
                "input rank, else score desc, then input order",
                spark_refuses="rows have no arrival order on Spark; give scores without ties or use docid-desc",
            ),
            Choice("average", "tied documents share their mean gain (scikit-learn)", "score desc, tied gains averaged"),
        ),
        variables=(_variable("ties", "STRING"),),
        described_as="ties",
        in_profiles=True,
    ),
    Convention(
        "ideal",
        "ideal",
        "the ideal ranking",
        default="judged",
        choices=(
            Choice("judged", "every judged document (trec_eval)", "every judged document with positive gain"),
            Choice(
                "retrieved",
                "only the retrieved documents (scikit-learn, LightGBM, XGBoost)",
                "the retrieved documents with positive gain",
            ),
            Choice(
                "judged-cut-at-hits",
                "every judged document, cut at the number of results (Elasticsearch)",
                "every judged document with positive gain, cut at the number of results",
            ),
        ),
        variables=(_variable("ideal", "STRING"),),
        described_as="ideal",
        in_profiles=True,
    ),
    Convention(
        "empty_ideal",
        "empty_ideal",
        "NDCG of a query whose IDCG is 0",
        default="zero",
        choices=(
            Choice("zero", "0 (trec_eval, scikit-learn, Spark)", effect="score 0"),
            Choice("one", "1 (LightGBM, XGBoost)", effect="score 1 (--empty-ideal one)"),
            Choice(
                "skip",
                "left out of the summary (and of its query count)",
                effect="are left out of the summary (--empty-ideal skip)",
            ),
            Choice("nan", "NaN, which propagates into the means", effect="score NaN (--empty-ideal nan)"),
        ),
        variables=(_variable("empty_ideal", "STRING"),),
        described_as="empty_ideal",
        in_profiles=True,
    ),
    Convention(
        "unjudged",
        "unjudged",
        "documents absent from the qrels (or with a negative label)",
        default="zero",
        choices=(
            Choice("zero", "gain 0", "gain 0"),
            Choice("drop", "removed from the ranking before cutting at k (trec_eval -J)", "dropped from the ranking"),
        ),
        variables=(_variable("unjudged", "STRING"),),
        described_as="unjudged",
        notes=(("negative_labels", "unjudged, gain 0"),),
        in_profiles=True,
    ),
    Convention(
        "relevance_threshold",
        "relevance_threshold",
        "labels >= this are relevant (trec_eval -l; default: label > 0); used by the binary gain and the "
        "measures P, recall, map, recip_rank and success",
        default=None,
        parse=decimal,
        metavar="T",
        variables=(_variable("relevance_threshold", "DOUBLE"),),
        described_as="relevant",
        show=_relevant,
    ),
    Convention(
        "ap_denominator",
        "ap_denominator",
        "what AP@k (map, gm_map) divides by",
        default="relevant",
        choices=(
            Choice("relevant", "R, the relevant documents judged (trec_eval, ir_measures)", "relevant judged (R)"),
            Choice(
                "min-k-relevant",
                "min(k, R): a query with more relevant documents than k can still score 1 (Spark MLlib, RecBole)",
                "min(k, relevant judged)",
            ),
        ),
        variables=(_variable("ap_denominator", "STRING"),),
        described_as="ap_denominator",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "precision_denominator",
        "precision_denominator",
        "what P@k divides by",
        default="k",
        choices=(
            Choice("k", "k, even when fewer were retrieved (trec_eval, Spark MLlib, RecBole)", "k"),
            Choice(
                "min-k-retrieved",
                "min(k, retrieved): a short list is not charged for the ranks it lacks (TF-Ranking, Elasticsearch)",
                "min(k, retrieved)",
            ),
        ),
        variables=(_variable("precision_denominator", "STRING"),),
        described_as="precision_denominator",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "all_queries",
        "all_queries",
        "qrels queries missing from the run score 0 (trec_eval -c)",
        default=False,
        switch=True,
        variables=(_variable("all_queries", "BOOLEAN"),),
        described_as="all_queries",
        in_profiles=True,
    ),
    Convention(
        "queries_without_judgments",
        "queries_without_judgments",
        "run queries with no row in the qrels",
        default="skip",
        choices=(
            Choice("skip", "not evaluated (trec_eval)", "not evaluated", effect="are not evaluated"),
            Choice(
                "evaluate",
                "evaluated with every document unjudged: 0 for P, recall, map, recip_rank and success, NDCG as "
                "--empty-ideal says (Elasticsearch rank_eval)",
                "evaluated with every document unjudged",
                effect="are evaluated with every document unjudged (--queries-without-judgments evaluate)",
            ),
        ),
        variables=(_variable("queries_without_judgments", "STRING"),),
        described_as="queries_without_judgments",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "max_results",
        "max_results",
        "keep the N best-ranked results per query (trec_eval -M)",
        default=None,
        parse=positive_int,
        metavar="N",
        variables=(_variable("max_results", "BIGINT"),),
        described_as="max_results",
    ),
    Convention(
        "duplicates",
        "duplicates",
        "a document twice in one query of the run",
        default="error",
        choices=(
            Choice("error", "an error (exit 3)"),
            Choice(
                "first",
                "keep its first row to arrive",
                spark_refuses="rows have no arrival order on Spark, so 'the first' duplicate is undefined",
            ),
            Choice("max-score", "keep its best-scored row (the first to arrive among equal scores)"),
        ),
        variables=(_variable("duplicates", "STRING"),),
        described_as="duplicates",
        in_profiles=True,
    ),
    Convention(
        "tie_bounds",
        "tie_bounds",
        "also the lowest and highest NDCG any order of tied scores gives (ndcg_min, ndcg_max), whether ties "
        "straddle each cutoff, and how many queries ties can change",
        default=False,
        switch=True,
        variables=(_variable("tie_bounds", "BOOLEAN"),),
        described_as="tie_bounds",
    ),
    Convention(
        "measures",
        "measures",
        "measures besides NDCG, each at every k (and the whole ranking where defined), e.g. "
        "ndcg,P,recall,map,recip_rank,success (trec_eval's families) or nDCG@10,P@5,R@100,AP,RR,Success@1 "
        "(ir_measures'); a name with a cutoff (P@5, ndcg_cut_10) without --k evaluates only the cutoffs named and "
        "trec lines print only the measures named; ndcg (with cg, dcg, idcg) is always computed",
        default=("ndcg",),
        parse=_measures,
        from_text=_measures,
        metavar="LIST",
        variables=(
            Variable("measures", "ARRAY<STRING>", lambda evaluation: list(evaluation.measures)),
            # the per-rank signals the measures' counters read (the registry's COUNTERS)
            Variable("signals", "ARRAY<STRING>", lambda evaluation: list(evaluation.signals)),
        ),
        described_as="measures",
        show=list,
    ),
    Convention(
        "rbp_persistence",
        "rbp_persistence",
        "p of rank-biased precision (rbp, rbp_resid): the chance that a reader goes on from a rank to the next, "
        "strictly between 0 and 1 (default 0.9, trec_eval's; ir_measures' RBP defaults to 0.8)",
        default=0.9,
        parse=decimal,
        metavar="P",
        variables=(_variable("rbp_persistence", "DOUBLE"),),
        described_as="rbp_persistence",
    ),
)
CONVENTION: dict[str, Convention] = {convention.name: convention for convention in CONVENTIONS}

# The choices a plain Evaluation field must take (gain and discount kinds are checked by Gain
# and Discount, which also accept parameters).
CHOICES: dict[str, tuple[str, ...]] = {
    c.field: c.values for c in CONVENTIONS if c.choices and not c.open and c.field == c.name
}
GAIN_KINDS: tuple[str, ...] = CONVENTION["gain"].values
DISCOUNT_KINDS: tuple[str, ...] = CONVENTION["discount"].values
# The variables of sql/ that an evaluation binds, in the order of the conventions.
SQL_VARIABLES: tuple[Variable, ...] = tuple(variable for c in CONVENTIONS for variable in c.variables)


def spark_refusals() -> dict[str, dict[str, str]]:
    """``{variable: {value: why}}``: the choices the Spark engine refuses, and why."""
    return {
        c.variables[0].name: {choice.value: choice.spark_refuses for choice in c.choices if choice.spark_refuses}
        for c in CONVENTIONS
        if any(choice.spark_refuses for choice in c.choices)
    }


# Evaluation's defaults are the registry's.
_DEFAULTS: dict[str, Any] = {convention.name: convention.default for convention in CONVENTIONS}


# --- measures and their counters ---------------------------------------------------------------
# A measure is a formula over counters (how many relevant results are at or above k, how many
# documents the query has judged relevant, ...), and NDCG's sums. A counter counts one per-rank
# signal in one way (an accumulation); the engines compute only the counters of the measures
# asked for, generically from this registry: the signals ride along in the ranking, and every
# accumulation of an asked signal is one running aggregate (sql/counters.sql, `_counters`).
# The measures step (sql/measures.sql, `_measures`) then turns counters into measures, one
# formula each; the steps after it (per_query, the summary) never name a measure.

Accumulation = Literal["found", "precision_sum", "first_rank", "in_qrels", "in_ranking"]
Aggregate = Literal["mean", "sum", "geometric_mean"]
AGGREGATES: tuple[str, ...] = ("mean", "sum", "geometric_mean")
# Which way a measure moves when the system gets better (the gate's "worse"); None: neither
Better = Literal["higher", "lower"] | None
BETTER: tuple[str | None, ...] = ("higher", "lower", None)


@dataclass(frozen=True)
class Signal:
    """A per-rank input the counters read: whether it holds for the document at a rank (from
    its judgment: false for a document the qrels do not judge)."""

    name: str
    holds: str


SIGNALS: tuple[Signal, ...] = (
    Signal("relevant", "a judged label (>= 0) at or above relevance_threshold (> 0 when unset)"),
    Signal("judged", "a label >= 0 (a negative label counts as unjudged)"),
    Signal("nonrelevant", "a judged label (>= 0) that is not relevant"),
    # trec_eval's pool: a document of the qrels with a negative label was pooled but not judged
    # (its RELVALUE_UNJUDGED), one absent from them was never pooled (RELVALUE_NONPOOL); infAP
    # tells the two apart
    Signal("pooled", "the document is in the query's judgments, whatever its label (a negative one too)"),
)
SIGNAL_NAMES: tuple[str, ...] = tuple(signal.name for signal in SIGNALS)

# How a counter accumulates its signal: each is computed for every signal asked for, in one
# running aggregate over the ranks where it holds, read off at each cutoff (k null: the whole
# ranking); in_qrels is per query, from the judgments, the same at every cutoff.
ACCUMULATIONS: dict[str, str] = {
    "found": "ranks at or above k where the signal holds",
    "precision_sum": "sum over those ranks i of (found at i) / i",
    "first_rank": "the first rank where the signal holds (null when none is at or above k)",
    "in_qrels": "documents of the query's judgments where the signal holds (at every k)",
    "in_ranking": "documents of the query's ranking by score (after max_results and unjudged drop)",
}
# The one count of the ranking itself, not of a signal of the judgments: how many documents
# were retrieved (trec_eval's num_ret). Asking for it keeps every rank of the ranking by score
# (an unjudged rank is retrieved too), so only the measures that read it pay for it.
RETRIEVED = "retrieved"


@dataclass(frozen=True)
class Counter:
    """One per-query, per-cutoff count: ``accumulation`` of the per-rank ``signal``. Its name
    is ``<signal>_<accumulation>`` (``relevant_found``): the column of Polars' counters, and
    in SQL the column ``<accumulation>`` of the counters row joined as ``<signal>``
    (``relevant.found``)."""

    signal: str
    accumulation: Accumulation
    counts: str

    def __post_init__(self) -> None:
        if (self.signal == RETRIEVED) != (self.accumulation == "in_ranking"):
            raise SpecError(f"counter {self.name!r}: in_ranking is the count of the ranking ({RETRIEVED!r}) alone")
        if self.signal not in (*SIGNAL_NAMES, RETRIEVED):
            raise SpecError(f"counter {self.name!r}: unknown signal {self.signal!r}")
        if self.accumulation not in ACCUMULATIONS:
            raise SpecError(f"counter {self.name!r}: unknown accumulation {self.accumulation!r}")

    @property
    def name(self) -> str:
        return f"{self.signal}_{self.accumulation}"


COUNTERS: tuple[Counter, ...] = (
    Counter("relevant", "found", "relevant results at or above k"),
    Counter("relevant", "precision_sum", "the precision at each relevant rank i <= k, summed (AP's numerator)"),
    Counter("relevant", "first_rank", "the first relevant rank, if at or above k"),
    Counter("relevant", "in_qrels", "documents judged relevant for the query (R)"),
    Counter("judged", "found", "judged results (label >= 0) at or above k"),
    Counter("nonrelevant", "found", "judged nonrelevant results at or above k"),
    Counter("nonrelevant", "in_qrels", "documents judged nonrelevant for the query (N, bpref's)"),
    Counter(RETRIEVED, "in_ranking", "results retrieved for the query (n; min(k, n) at or above k)"),
    Counter("pooled", "found", "results in the judgments (any label, a negative one too) at or above k"),
)
COUNTER: dict[str, Counter] = {counter.name: counter for counter in COUNTERS}


@dataclass(frozen=True)
class Measure:
    """One per-query measure: a column of the per-query table, combined into the summary.

    ``trec_eval`` names the measure over the whole ranking and ``trec_eval_cut`` at cutoff
    ``{k}`` (None: trec_eval has no such measure, so trec lines leave it out); ``ir_measures``
    likewise in ir_measures' syntax. ``counters`` are the :data:`COUNTERS` its formula reads
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
    judgments (``num_ret``, ``idcg``), which no gate can read as better or worse.
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

    def __post_init__(self) -> None:
        unknown = [name for name in self.counters if name not in COUNTER]
        unknown += [name for _, _, counters in self.counters_under for name in counters if name not in COUNTER]
        if unknown:
            raise SpecError(f"measure {self.name!r} reads unknown counters {unknown}; COUNTERS has {list(COUNTER)}")
        for convention, value, _ in self.counters_under:
            if convention not in CONVENTION or value not in CONVENTION[convention].values:
                raise SpecError(f"measure {self.name!r}: counters_under names no choice {convention}={value!r}")
        if self.aggregate not in AGGREGATES:
            raise SpecError(f"measure {self.name!r}: unknown aggregate {self.aggregate!r}")
        if self.better not in BETTER:
            raise SpecError(f"measure {self.name!r}: better is one of {BETTER}, got {self.better!r}")
        if self.aggregate == "geometric_mean" and not self.whole:
            # its summary would take the null of the whole ranking for the floor, 1e-5
            raise SpecError(f"measure {self.name!r}: a geometric mean needs a value at every cutoff (whole=True)")

    @property
    def selected_by(self) -> str:
        """The name ``--measures`` selects it by: its family's (``cg`` comes with ``ndcg``)."""
        return self.family or self.name

    def trec_name(self, k: int | None) -> str | None:
        """trec_eval's name at cutoff ``k`` (None: the whole ranking).

        >>> MEASURE["ndcg"].trec_name(10), MEASURE["ndcg"].trec_name(None)
        ('ndcg_cut_10', 'ndcg')
        """
        template = self.trec_eval if k is None else self.trec_eval_cut
        return None if template is None else template.format(k=k)


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
    "unjudged, duplicates and the ties docid-desc and input-order (and P its precision_denominator, map and "
    "gm_map their ap_denominator)"
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
# trec_eval's measures of where the relevant results sit (sql/relevance_curve.sql,
# sql/measures_curve.sql): of the whole ranking only; R relevant and N judged nonrelevant
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
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "gm_bpref",
        "GM-bpref",
        "bpref, combined by geometric mean: exp(mean(ln(max(bpref, 1e-5))))",
        trec_eval="gm_bpref",
        counters=_CURVE,
        family="bpref",
        aggregate="geometric_mean",
        ignores=_RELEVANCE_ONLY,
        trec_per_query=False,
    ),
)
# trec_eval's inferred AP (m_infap.c; Yilmaz and Aslam, CIKM 2006), from the same per-query
# step as the curve (sql/relevance_curve.sql): a judgment pool of which only a sample was
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
        family="infAP",
        ignores=_RELEVANCE_ONLY,
    ),
)
# trec_eval's experimental gain measures and rank-biased precision (sql/relevance_curve.sql and
# sql/measures_curve.sql for binG; sql/ideal_curve.sql, sql/gain_curve.sql and
# sql/measures_gain.sql for the others), of the whole ranking only. n results retrieved;
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
        "max_results, unjudged, duplicates"
    )


MEASURES += (
    Measure(
        "G",
        "G (normalized gain)",
        "sum over the ranks i with g(i) != 0 of g(i) / log2(2 + c(i) - (g(1) + ... + g(i))), c(i) = max(g*(1), 1) "
        "+ ... + max(g*(i), 1) (g* = 0 past M), over g*(1) + ... + g*(M) (trec_eval's m_G.c)",
        trec_eval="G",
        ignores=_normalized_by_the_ideal("discount, log_base, relevance_threshold, tie_bounds"),
    ),
    Measure(
        "binG",
        "binary G",
        "the sum over the relevant results of 1 / log2(2 + results not relevant above it), / R (0 when none "
        "is retrieved): G with gain 1 for a relevant result (trec_eval's m_binG.c)",
        trec_eval="binG",
        counters=_CURVE,
        ignores=_RELEVANCE_ONLY,
    ),
    Measure(
        "Rndcg",
        "NDCG at the R levels",
        "the mean of NDCG@b over the ranks b where the ideal's gain changes (the last of each gain level, M "
        "included), and of the whole ranking's NDCG when n >= M + 2 (trec_eval's m_Rndcg.c counts it from "
        "n = M + 2, not M + 1); 0 when R is 0",
        trec_eval="Rndcg",
        counters=_GAIN_CURVE,
        ignores=_normalized_by_the_ideal("tie_bounds (relevance_threshold only through R)") + ", discount, log_base",
    ),
    Measure(
        "ndcg_rel",
        "NDCG averaged over the relevant documents",
        "(the sum of NDCG@i over the ranks i with g(i) > 0, plus the whole ranking's NDCG once for each of "
        "the M positive gains of the ideal not retrieved) / M; 0 when that sum is not positive "
        "(trec_eval's m_ndcg_rel.c)",
        trec_eval="ndcg_rel",
        ignores=_normalized_by_the_ideal("relevance_threshold, tie_bounds") + ", discount, log_base",
    ),
    Measure(
        "rbp",
        "RBP (rank-biased precision)",
        "(1 - p) * sum over the ranks i of r(i) * p^(i-1), r(i) = max(g(i), 0) / max(1, the query's largest "
        "judged gain) in [0, 1], p = rbp_persistence (Moffat and Zobel 2008; trec_eval's m_rbp.c meant "
        "this scaling, but reads uninitialised bounds: docs/conventions.md)",
        trec_eval="rbp",
        ir_measures="RBP",
        ignores="discount, log_base, ideal, empty_ideal (but a query it skips is left out), relevance_threshold "
        "(unless the gain is binary), tie_bounds; under ties average a rank earns its tie group's mean gain",
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
        "relevance_threshold, tie_bounds",
        better=None,
    ),
)
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


# trec_eval 10.0's measure table (measures.c's te_trec_measures, its prefs and avgjg measures
# aside): the order it prints a query's lines in, and its summary's. A name is a measure of
# trec_eval, whose lines are the name itself, ``<name>_<k>`` at a cutoff (P_5) or
# ``<name>_<parameter>`` (iprec_at_recall_0.10); runid (the run's name) and relstring (the
# labels of the top results) are lines of the trec output, not measures of the registry.
TREC_EVAL_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success",
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "yaap", "rbp",
    "rbp_resid", "unj",
)  # fmt: skip
# The named sets --measures takes, trec_eval's nicknames (measures.c): the trec_eval measures
# each prints, at trec_eval's default cutoffs and parameters of each. official is what
# trec_eval prints when no -m is given.
TREC_EVAL_SETS: dict[str, tuple[str, ...]] = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall", "P",
    ),
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
        "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg",
        "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret",
    ),
}  # fmt: skip
MEASURE_SETS: dict[str, str] = {
    "all_trec": "every measure trec_eval's -m all_trec prints that the registry has, at trec_eval's cutoffs",
    "official": "trec_eval's default output (no -m): runid, num_q, num_ret, num_rel, num_rel_ret, map, gm_map, "
    "Rprec, bpref, recip_rank, iprec_at_recall, P at trec_eval's cutoffs",
}


# trec_eval's relstring (m_relstring.c) is not a measure but a line of the trec output per
# query: the labels of the top results, a character each. ``relstring`` takes trec_eval's
# default 10 results (and comes with all_trec), ``relstring_<n>`` the top n (its -mrelstring.n).
RELSTRING = "relstring"
RELSTRING_LENGTH = 10
_RELSTRING_NAME = re.compile(r"relstring(?:_(\d+))?")


def relstring_asked(measures: tuple[str, ...] | list[str]) -> tuple[str, int] | None:
    """``(line name, length)`` of the relstring ``measures`` ask for (``relstring_20``: 20
    results; ``relstring`` or a set that has it: 10), or None.

    >>> relstring_asked(("ndcg", "relstring_20")), relstring_asked(("all_trec",)), relstring_asked(("P",))
    (('relstring_20', 20), ('relstring', 10), None)
    """
    for name in measures:
        match = _RELSTRING_NAME.fullmatch(name)
        if match:
            return name, int(match.group(1)) if match.group(1) else RELSTRING_LENGTH
    if any(RELSTRING in TREC_EVAL_SETS[name] for name in measures if name in TREC_EVAL_SETS):
        return RELSTRING, RELSTRING_LENGTH
    return None


def trec_eval_measure(measure: Measure, k: int | None) -> str | None:
    """The trec_eval measure (a name of :data:`TREC_EVAL_ORDER`) whose line ``measure``
    prints at cutoff ``k`` (None: the whole ranking), or None when trec_eval has none.

    >>> trec_eval_measure(MEASURE["P"], 5), trec_eval_measure(MEASURE["map"], 10)
    ('P', 'map_cut')
    >>> trec_eval_measure(MEASURE["iprec_at_recall_0_10"], None), trec_eval_measure(MEASURE["gm_map"], None)
    ('iprec_at_recall', 'gm_map')
    """
    line = measure.trec_name(k)
    if line is None:
        return None
    template = measure.trec_eval if k is None else measure.trec_eval_cut
    base = template.removesuffix("_{k}") if template else line
    for name in (base, re.sub(r"_[0-9.]+$", "", base)):
        if name in TREC_EVAL_ORDER:
            return name
    return None


def in_trec_eval_sets(measure: Measure, k: int | None, sets: tuple[str, ...] | list[str]) -> bool:
    """Whether one of the named ``sets`` prints ``measure``'s line at ``k``, at trec_eval's
    default cutoffs of it.

    >>> in_trec_eval_sets(MEASURE["P"], 5, ("official",)), in_trec_eval_sets(MEASURE["map"], 5, ("official",))
    (True, False)
    """
    name = trec_eval_measure(measure, k)
    if name is None or (k is not None and k not in measure.trec_cutoffs):
        return False
    return any(name in TREC_EVAL_SETS[s] for s in sets)


def counters_of(measures: tuple[str, ...] | list[str], evaluation: Evaluation | None = None) -> tuple[str, ...]:
    """The counters the measures named read, in the registry's order: with ``evaluation``,
    those its conventions add too (:attr:`Measure.counters_under`).

    >>> counters_of(("ndcg", "recall"))
    ('relevant_found', 'relevant_in_qrels')
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


def signals_of(counters: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The per-rank signals those counters read, in the registry's order (what rides along in
    the ranking: none when only NDCG is asked for), then :data:`RETRIEVED` when the count of
    the ranking is read (every rank of the ranking by score is then kept)."""
    read = {COUNTER[name].signal for name in counters}
    return tuple(name for name in (*SIGNAL_NAMES, RETRIEVED) if name in read)


# The variables of sql/summary.sql: which measures it sums and which it combines by geometric
# mean (every other one is a mean). They follow the registry, never an evaluation, so every
# summary (the duckdb CLI's too, unset: all means) combines a measure the same way.
SUMMARY_VARIABLE_TYPES: dict[str, str] = {"sum_measures": "ARRAY<STRING>", "geometric_mean_measures": "ARRAY<STRING>"}


def summary_variables(measures: tuple[Measure, ...] = MEASURES) -> dict[str, list[str]]:
    """The variables of ``sql/summary.sql`` for ``measures`` (the registry's by default).

    >>> summary_variables()["geometric_mean_measures"]
    ['gm_map', 'gm_bpref']
    """
    return {
        "sum_measures": [m.name for m in measures if m.aggregate == "sum"],
        "geometric_mean_measures": [m.name for m in measures if m.aggregate == "geometric_mean"],
    }


def measure_columns(families: tuple[str, ...]) -> tuple[str, ...]:
    """The per-query columns of the measures of ``families``, in the registry's order.

    >>> measure_columns(("ndcg", "map"))
    ('cg', 'dcg', 'idcg', 'ndcg', 'map')
    """
    return tuple(m.name for m in MEASURES if m.selected_by in families)


def _measure_patterns() -> list[tuple[re.Pattern[str], str]]:
    """Every spelling of a measure: its own name, trec_eval's names (``map``, ``map_cut_10``,
    ``map_cut``) and ir_measures' (``AP``, ``AP@10``, ``R``), a cutoff as a group."""
    spellings: dict[str, str] = {m.selected_by: m.selected_by for m in MEASURES}
    spellings.update({m.name: m.selected_by for m in MEASURES})
    cut: dict[str, str] = {}
    for m in MEASURES:
        for whole, template in ((m.trec_eval, m.trec_eval_cut), (m.ir_measures, m.ir_measures_cut)):
            if whole:
                spellings[whole] = m.selected_by
            if template:
                cut[template] = m.selected_by
                spellings[template.replace("{k}", "").rstrip("_@")] = m.selected_by
    patterns = [(re.compile(re.escape(name)), family) for name, family in spellings.items()]
    patterns += [(re.compile(re.escape(t).replace(re.escape("{k}"), r"(\d+)")), f) for t, f in cut.items()]
    return patterns


_MEASURE_PATTERNS = _measure_patterns()


def measure_named(text: str) -> tuple[str, int | None]:
    """``(family, cutoff or None)`` of one measure as ``--measures`` takes it: a family's name
    (``ndcg``, ``P``, ``recall``, ``map``, ``recip_rank``, ``success``), trec_eval's name of
    one (``P_5``, ``map_cut_10``) or ir_measures' (``nDCG@10``, ``R@100``, ``AP``, ``RR``).

    >>> measure_named("AP@10"), measure_named("recip_rank"), measure_named("ndcg_cut_5")
    (('map', 10), ('recip_rank', None), ('ndcg', 5))
    """
    name = text.strip() if isinstance(text, str) else text
    for pattern, family in _MEASURE_PATTERNS:
        match = pattern.fullmatch(name) if isinstance(name, str) else None
        if match:
            cutoff = int(match.group(1)) if match.groups() else None
            if cutoff is not None and not 1 <= cutoff <= MAX_CUTOFF:
                raise SpecError(f"measure {name!r}: its cutoff must be a positive integer, at most 2**63 - 1")
            return family, cutoff
    raise SpecError(
        f"unknown measure {name!r}; expected {', '.join(MEASURE_FAMILIES)} (trec_eval's families), or a "
        "name of trec_eval (P_5, map_cut_10, ndcg_cut_10, success_1) or ir_measures (nDCG@10, P@5, R@100, AP, "
        "RR, Success@1)"
    )


def parse_measures(text: str) -> tuple[str, ...]:
    """Read ``"ndcg,P,map"`` or ``"nDCG@10,P@5,RR"`` into the measures as given, each checked.

    >>> parse_measures("nDCG@10, P@5,RR")
    ('nDCG@10', 'P@5', 'RR')
    """
    names = tuple(part.strip() for part in text.split(","))
    for name in names:
        if name not in MEASURE_SETS and not _RELSTRING_NAME.fullmatch(name):
            measure_named(name)
    return names


def resolve_measures(given: tuple[str, ...] | list[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The families ``given`` selects (the NDCG family always; in the registry's order) and
    the cutoffs their names carry (``P@5``: 5), which are evaluated as if given to ``k``.

    >>> resolve_measures(("RR", "P@5", "ndcg_cut_10"))
    (('ndcg', 'P', 'recip_rank'), (5, 10))
    """
    if isinstance(given, str) or not isinstance(given, (tuple, list)) or not given:
        raise SpecError(f"measures must be a non-empty list of measure names, got {given!r}")
    sets = tuple(name for name in MEASURE_SETS if name in given)
    strings = tuple(dict.fromkeys(text for text in given if isinstance(text, str) and _RELSTRING_NAME.fullmatch(text)))
    if len(strings) > 1:
        raise SpecError(f"one relstring at a time (trec_eval prints one), got {', '.join(strings)}")
    for text in strings:
        length = _RELSTRING_NAME.fullmatch(text).group(1)  # type: ignore[union-attr]
        if length is not None and not 1 <= int(length) <= MAX_CUTOFF:
            raise SpecError(f"measure {text!r}: its length must be a positive integer, at most 2**63 - 1")
    named = [measure_named(text) for text in given if text not in MEASURE_SETS and text not in strings]
    named += [(m.selected_by, k) for m in MEASURES for k in (None, *m.trec_cutoffs) if in_trec_eval_sets(m, k, sets)]
    families = {PRIMARY_MEASURE, *(family for family, _ in named)}
    cutoffs = sorted({k for _, k in named if k is not None})
    # a set's name stays among the measures: trec lines then print each family at its own cutoffs
    # relstring is a line of the trec output, not a column: kept by name, as the sets are
    return (*(f for f in MEASURE_FAMILIES if f in families), *sets, *strings), tuple(cutoffs)


# trec_eval's and ir_measures' names of one measure over the whole ranking (map, AP, RR, ndcg,
# IPrec@0.1), each to the measure's column; a name not among them (P, recall, ndcg_cut, map_cut,
# success, Rprec_mult) names a family, as trec_eval's -m does.
_WHOLE_RANKING_NAMES: dict[str, str] = {
    name: m.name for m in MEASURES for name in (m.trec_eval, m.ir_measures) if name is not None
}
_CUT_TEMPLATES: dict[str, str] = {
    template: m.name for m in MEASURES for template in (m.trec_eval_cut, m.ir_measures_cut) if template is not None
}


def _cut_family(family: str) -> bool:
    """Whether a family has a measure at a cutoff (P, ndcg_cut), not only over the whole ranking."""
    return any(m.trec_eval_cut or m.ir_measures_cut for m in MEASURES if m.selected_by == family)


def names_a_cutoff(given: tuple[str, ...] | list[str]) -> bool:
    """Whether a name of ``--measures`` (not a set's) carries its own cutoff (``P@5``, ``ndcg_cut_10``).

    >>> names_a_cutoff(("nDCG@10", "AP")), names_a_cutoff(("P", "map", "all_trec"))
    (True, False)
    """
    return any(measure_named(name)[1] is not None for name in _one_by_one(given))


def _one_by_one(given: tuple[str, ...] | list[str]) -> list[str]:
    """The names of ``--measures`` that are measures: neither a set's nor relstring's (a line)."""
    return [name for name in given if name not in MEASURE_SETS and not _RELSTRING_NAME.fullmatch(name.strip())]


def measure_cutoffs(given: tuple[str, ...] | list[str]) -> tuple[int, ...]:
    """The cutoffs evaluated when ``--k`` is not given: those the names carry (``P@5``: 5; a
    set's: trec_eval's of each of its families), and the default cutoffs (``--k``'s) when no
    name carries one or a name asks for a family at its cutoffs (``P``, ``ndcg_cut``), as
    trec_eval's ``-m P`` does.

    >>> measure_cutoffs(("nDCG@10", "P@5", "R@100", "AP", "RR")), measure_cutoffs(("P", "nDCG@10"))
    ((5, 10, 100), (5, 10, 20))
    >>> measure_cutoffs(("ndcg",))
    (5, 10, 20)
    """
    _, named_cutoffs = resolve_measures(given)
    families_at_cutoffs = [
        name
        for name in _one_by_one(given)
        if name.strip() not in _WHOLE_RANKING_NAMES
        and measure_named(name)[1] is None
        and _cut_family(measure_named(name)[0])
    ]
    with_default = families_at_cutoffs or not names_a_cutoff(given)
    return tuple(sorted({*named_cutoffs, *(_DEFAULTS["k"] if with_default else ())}))


@dataclass(frozen=True)
class NamedLines:
    """The measures ``--measures`` names one by one, as trec lines print them when a name
    carries a cutoff and ``--k`` is not given: ``nDCG@10,P@5,R@100,AP,RR`` prints
    ``ndcg_cut_10``, ``P_5``, ``recall_100``, ``map`` and ``recip_rank``, nothing else.

    ``cells`` are ``(measure column, cutoff)`` pairs (None: the whole ranking): a name with a
    cutoff, a name of one measure over the whole ranking (``AP``, ``map``, ``RR``, ``ndcg``),
    and a set's (``all_trec``: each of its measures at trec_eval's cutoffs of it).
    ``every_cutoff`` are the columns of the families named without a cutoff (``P``,
    ``recall``, ``map_cut``, ``Rprec_mult``): at every cutoff evaluated and over the whole
    ranking, as trec_eval's ``-m P`` prints them.
    """

    cells: frozenset[tuple[str, int | None]]
    every_cutoff: frozenset[str]

    def shows(self, measure: str, k: int | None) -> bool:
        """Whether the line of ``measure`` at cutoff ``k`` (None: the whole ranking) is asked for."""
        return measure in self.every_cutoff or (measure, k) in self.cells


def named_lines(given: tuple[str, ...] | list[str] | None, *, k_given: bool) -> NamedLines | None:
    """The lines the names of ``--measures`` ask for (:class:`NamedLines`), or None when every
    measure is printed at every cutoff evaluated: ``--k`` was given, or no name carries a cutoff.

    >>> lines = named_lines(("nDCG@10", "AP"), k_given=False)
    >>> lines.shows("ndcg", 10), lines.shows("ndcg", None), lines.shows("map", None), lines.shows("map", 10)
    (True, False, True, False)
    >>> named_lines(("nDCG@10", "AP"), k_given=True) is None
    True
    """
    if not given or k_given or not names_a_cutoff(given):
        return None
    cells: set[tuple[str, int | None]] = set()
    every_cutoff: set[str] = set()
    for name in (*_one_by_one(given), *(name for name in given if name in MEASURE_SETS)):
        if name in MEASURE_SETS:
            cells.update(
                (m.name, k) for m in MEASURES if m.trec_eval or m.trec_eval_cut for k in (None, *m.trec_cutoffs)
            )
            continue
        family, cutoff = measure_named(name)
        text = name.strip()
        if cutoff is not None:
            cut = next(column for template, column in _CUT_TEMPLATES.items() if _fills(template, text))
            cells.add((cut, cutoff))
        elif text in _WHOLE_RANKING_NAMES:
            cells.add((_WHOLE_RANKING_NAMES[text], None))
        else:
            every_cutoff.update(m.name for m in MEASURES if m.selected_by == family)
    return NamedLines(frozenset(cells), frozenset(every_cutoff))


def _fills(template: str, name: str) -> bool:
    """Whether ``name`` is ``template`` (``P@{k}``) with a number for ``{k}``."""
    return re.fullmatch(re.escape(template).replace(re.escape("{k}"), r"\d+"), name) is not None


def conventions_table() -> str:
    """The flags of the conventions and the measures, as the Markdown tables of docs/reference.md
    (between its ``registry`` markers; ``python -m pipeline.spec`` prints them)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| flag | meaning |", "|---|---|"]
    for c in CONVENTIONS:
        if c.switch:
            usage = f"{c.flag}` / `--no-{c.flag[2:]}"
        elif c.choices:
            usage = f"{c.flag} {'|'.join(c.values)}" + ("|MAP" if c.open else "")
        else:
            usage = f"{c.flag} {c.flag_default or c.metavar or c.name.upper()}"
        rows.append(f"| `{cell(usage)}` | {cell(c.flag_help)} |")
    rows += ["", "| measure | per query | trec_eval | ir_measures | summary |", "|---|---|---|---|---|"]
    for m in MEASURES:
        names = [
            ", ".join(f"`{name}`" for name in (whole, cut) if name) or "-"
            for whole, cut in ((m.trec_eval, m.trec_eval_cut), (m.ir_measures, m.ir_measures_cut))
        ]
        summary = {
            "mean": "mean over the evaluated queries",
            "sum": "sum over the evaluated queries",
            "geometric_mean": "geometric mean over the evaluated queries (of max(value, 1e-5))",
        }[m.aggregate]
        rows.append(f"| `{m.name}` ({m.title}) | {cell(m.formula)} | {names[0]} | {names[1]} | {summary} |")
    ignoring: dict[str, list[str]] = {}
    for m in MEASURES:
        if m.ignores:
            ignoring.setdefault(m.ignores, []).append(f"`{m.name}`")
    rows += ["", *(f"{', '.join(names)} ignore these conventions: {text}." for text, names in ignoring.items())]
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class Evaluation:
    """Everything that decides the numbers: cutoffs, gain, discount and conventions.

    ``cutoffs`` are the k of NDCG@k; the whole ranking (cutoff ``None``) is always computed
    as well. Left empty, they are those the measures name (``P@5``: 5), else the default
    (:func:`measure_cutoffs`); given, the cutoffs the measures name are added to them. The
    conventions are described in this module's docstring.
    """

    cutoffs: tuple[int, ...] = ()
    measures: tuple[str, ...] = _DEFAULTS["measures"]
    gain: Gain = Gain(_DEFAULTS["gain"])
    discount: Discount = Discount(_DEFAULTS["discount"], _DEFAULTS["log_base"])
    all_queries: bool = _DEFAULTS["all_queries"]
    max_results: int | None = _DEFAULTS["max_results"]
    ties: Ties = _DEFAULTS["ties"]
    ideal: Ideal = _DEFAULTS["ideal"]
    empty_ideal: EmptyIdeal = _DEFAULTS["empty_ideal"]
    unjudged: Unjudged = _DEFAULTS["unjudged"]
    duplicates: Duplicates = _DEFAULTS["duplicates"]
    relevance_threshold: float | None = _DEFAULTS["relevance_threshold"]
    tie_bounds: bool = _DEFAULTS["tie_bounds"]
    queries_without_judgments: QueriesWithoutJudgments = _DEFAULTS["queries_without_judgments"]
    ap_denominator: ApDenominator = _DEFAULTS["ap_denominator"]
    precision_denominator: PrecisionDenominator = _DEFAULTS["precision_denominator"]
    rbp_persistence: float = _DEFAULTS["rbp_persistence"]

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
        persistence = self.rbp_persistence
        if isinstance(persistence, bool) or not isinstance(persistence, (int, float)) or not 0 < persistence < 1:
            # p = 1 weighs every rank alike and scales RBP by 1 - p = 0; outside [0, 1] it is no chance
            raise SpecError(f"rbp_persistence must be a number strictly between 0 and 1, got {persistence!r}")
        object.__setattr__(self, "rbp_persistence", float(persistence))
        object.__setattr__(self, "cutoffs", tuple(sorted(self.cutoffs)))
        if threshold is not None:
            object.__setattr__(self, "relevance_threshold", float(threshold))

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
    def signals(self) -> tuple[str, ...]:
        """The per-rank signals those counters read, which ride along in the ranking."""
        return signals_of(self.counters)

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


def parse_cutoffs(text: str) -> tuple[int, ...]:
    """Read ``"5,10,20"`` into cutoffs, refusing anything but positive integers.

    >>> parse_cutoffs("20, 5,10")
    (5, 10, 20)
    """
    cutoffs = []
    for part in text.split(","):
        part = part.strip()
        if not re.fullmatch(r"\d+", part) or int(part) < 1:
            raise SpecError(f"cannot read k {text!r}: each cutoff must be a positive integer (bad part: {part!r})")
        if int(part) > MAX_CUTOFF:
            raise SpecError(f"cutoff k must be at most {MAX_CUTOFF} (2**63 - 1), got {part}")
        cutoffs.append(int(part))
    if len(set(cutoffs)) != len(cutoffs):
        raise SpecError(f"cutoffs repeat a value: {text!r}")
    return tuple(sorted(cutoffs))


def _short(value: float) -> str:
    # beyond 2**53 a float's integer digits are not its value's: print it as a float
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def write_conventions_table(path: str) -> None:
    """Replace the lines between the ``registry`` markers of ``path`` (docs/reference.md) with
    :func:`conventions_table`, so a new convention or measure never leaves the docs stale."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    begin = text.index("\n", text.index("<!-- registry: begin")) + 1
    end = text.index("<!-- registry: end -->")
    with open(path, "w", encoding="utf-8") as file:
        file.write(text[:begin] + conventions_table() + text[end:])


# --- input and execution options --------------------------------------------------------------
# How an evaluation reads and checks its inputs and how it runs, declared once as the conventions
# are: the flags of `ndcg evaluate` and `ndcg validate` (pipeline/cli_flags.py), their config keys
# (pipeline/config.py reads them off the parser), the keywords of the API's functions
# (pipeline/api.py) and the fields of the job (pipeline/job.py) are generated from OPTIONS. They
# decide what is read, what is refused or warned about and how the engines run; what a number is,
# is the conventions'.


@dataclass(frozen=True)
class OptionGroup:
    """Options taken together: the title of their flags in ``--help``, the commands that take
    them as flags (and config keys), the API functions that take them as keywords."""

    name: str
    commands: tuple[str, ...]
    functions: tuple[str, ...]


OPTION_GROUPS: dict[str, OptionGroup] = {
    group.name: group
    for group in (
        OptionGroup("inputs", ("evaluate", "validate"), ("per_query", "check", "evaluate")),
        OptionGroup("validation", ("evaluate", "validate", "compare"), ("per_query", "check", "evaluate")),
        OptionGroup("execution", ("evaluate",), ("evaluate",)),
        OptionGroup("batch job", ("evaluate",), ()),
    )
}


@dataclass(frozen=True)
class Option:
    """One option of how inputs are read and checked and how the job runs: its flag ``--name``
    (dashes), config key (the same) and API keyword ``name`` (underscores), all meaning the same.

    ``group`` names its :class:`OptionGroup`. ``field`` is where a job holds it: a field of
    :class:`pipeline.job.Job`, or ``holder.part`` for a part of one (``execution.threads``,
    ``checks.warn_results_over``, ``columns.query``). ``default`` is the value when it is not
    given, by any front; ``parse`` reads a flag's or config key's text (None: the text itself),
    ``choices`` are its only values, ``switch`` makes it a flag without a value.
    """

    name: str
    group: str
    field: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] = ()
    switch: bool = False
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def holder(self) -> str:
        """The job's field holding this option (``execution`` for ``execution.threads``)."""
        return self.field.split(".")[0]


def max_threads() -> int:
    """More worker threads than 4 per CPU only adds switching, and a number far beyond it makes
    DuckDB try to start them all (a hang, or a failed allocation): the bound of ``--threads``."""
    import os

    return 4 * (os.cpu_count() or 1)


def thread_count(text: str) -> int:
    """``--threads``' text: a positive integer, at most :func:`max_threads`."""
    if not text.strip().isdigit() or int(text) < 1:
        raise SpecError(f"expected a positive integer, got {text!r}")
    if int(text) > max_threads():
        raise SpecError(
            f"at most {max_threads()} threads (4 x the {max_threads() // 4} CPUs of this machine), got {text}"
        )
    return int(text)


def results_limit(text: str) -> int | None:
    """``--warn-results-over``' text: a whole number >= 0, where 0 turns the warning off (None)."""
    if not text.strip().isdigit():
        raise SpecError(f"expected a whole number >= 0, got {text!r}")
    return int(text) or None


thread_count.__name__ = results_limit.__name__ = "int"  # argparse names a ValueError's type by it

# the formats an input may be read as (pipeline/io/read.py reads them)
INPUT_FORMATS: tuple[str, ...] = ("parquet", "trec", "csv", "tsv", "delta")
_FORMAT_HELP = "default: from the extension (a Delta table: its log)"


def _one_input(column: str, role: str, shared_flag: str) -> str:
    return f"{column} column of the {role} only, over {shared_flag} (which names it in both inputs)"


OPTIONS: tuple[Option, ...] = (
    Option("run_format", "inputs", "run_format", _FORMAT_HELP, choices=INPUT_FORMATS),
    Option("qrels_format", "inputs", "qrels_format", _FORMAT_HELP, choices=INPUT_FORMATS),
    Option("query_col", "inputs", "columns.query", "query id column (default: query_id)", "query_id"),
    Option("doc_col", "inputs", "columns.doc", "document id column (default: doc_id)", "doc_id"),
    Option("score_col", "inputs", "columns.score", "score column of the run (default: score)", "score"),
    Option("label_col", "inputs", "columns.label", "label column (default: relevance)", "relevance"),
    # the same names in one input only, over the flags above (which name them in both)
    Option("run_query_col", "inputs", "columns.run_query", _one_input("query id", "run", "--query-col")),
    Option("run_doc_col", "inputs", "columns.run_doc", _one_input("document id", "run", "--doc-col")),
    Option("qrels_query_col", "inputs", "columns.qrels_query", _one_input("query id", "judgments", "--query-col")),
    Option("qrels_doc_col", "inputs", "columns.qrels_doc", _one_input("document id", "judgments", "--doc-col")),
    Option("qrels_label_col", "inputs", "columns.qrels_label", _one_input("label", "judgments", "--label-col")),
    Option(
        "run_version",
        "inputs",
        "run_version",
        "a Delta table's version to read as the run: a number, or an ISO time such as 2026-11-21T00:00:00Z "
        "(the last version committed by then); default: its current version",
        metavar="N|TIME",
    ),
    Option("qrels_version", "inputs", "qrels_version", "the same for a Delta table of judgments", metavar="N|TIME"),
    Option(
        "allow_fractional_labels",
        "validation",
        "checks.allow_fractional_labels",
        "accept labels such as 0.5 (default: labels must be integers, a fractional label is an error)",
        False,
        switch=True,
    ),
    Option(
        "warn_results_over",
        "validation",
        "checks.warn_results_over",
        "warn about queries with more than N results in the run (default 1000; 0 turns the warning off)",
        1000,
        parse=results_limit,
        metavar="N",
    ),
    Option(
        "threads",
        "execution",
        "execution.threads",
        "worker threads (DuckDB engine), at most 4 x the machine's CPUs",
        parse=thread_count,
    ),
    Option(
        "memory_limit",
        "execution",
        "execution.memory_limit",
        "memory limit, e.g. 4GB: a larger run is split into buckets of queries that fit (written to TMPDIR "
        "first) and evaluated one bucket at a time (both engines); also DuckDB's memory_limit",
    ),
    Option(
        "spark_master",
        "execution",
        "execution.spark_master",
        "Spark master URL (spark engine); default: the session of spark-submit, else local[*]",
    ),
    Option(
        "missing_qrels_partition",
        "batch job",
        "missing_qrels_partition",
        "a run partition whose folder is missing from judgments partitioned like the run: error "
        "(default, exit 3) or score it against all the judgments (whole)",
        "error",
        choices=("error", "whole"),
    ),
    Option(
        "skip_unchanged",
        "batch job",
        "skip_unchanged",
        "leave a partition's outputs in --out (local) alone when its manifest.json records the same inputs "
        "(files: size, modification and change times; objects: size, ETag, version id; Delta: version), "
        "options and version; recompute the others",
        False,
        switch=True,
    ),
)
OPTION: dict[str, Option] = {option.name: option for option in OPTIONS}


def options_for(*, command: str | None = None, function: str | None = None) -> tuple[Option, ...]:
    """The options a command takes as flags, or an API function as keywords."""
    return tuple(
        option
        for option in OPTIONS
        if (command is None or command in OPTION_GROUPS[option.group].commands)
        and (function is None or function in OPTION_GROUPS[option.group].functions)
    )


def option_fields(given: dict[str, Any], holders: dict[str, Callable[..., Any]]) -> dict[str, Any]:
    """The options in ``given`` (by name) as the fields that hold them: ``{"run_format": ...,
    "execution": holders["execution"](threads=..., ...)}``; a holder is built from the parts
    given (the others keep its defaults), and only when one is.

    >>> option_fields({"threads": 2, "run_format": "csv"}, {"execution": dict})
    {'run_format': 'csv', 'execution': {'threads': 2}}
    """
    fields: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {}
    for option in OPTIONS:
        if option.name in given:
            holder, _, part = option.field.partition(".")
            if part:
                parts.setdefault(holder, {})[part] = given[option.name]
            else:
                fields[holder] = given[option.name]
    return {**fields, **{holder: holders[holder](**values) for holder, values in parts.items()}}


if __name__ == "__main__":  # python -m pipeline.spec [--write docs/reference.md]
    import sys

    if sys.argv[1:2] == ["--write"]:
        write_conventions_table(sys.argv[2] if len(sys.argv) > 2 else "docs/reference.md")
    else:
        print(conventions_table(), end="")
