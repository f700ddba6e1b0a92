"""The measure and its conventions: one frozen description read by every engine.

Formulas (rank ``i`` starts at 1, ``g(i)`` is the gain of the document at rank ``i``)::

    CG@k   = sum_{i<=k} g(i)
    DCG@k  = sum_{i<=k} g(i) * d(i)
    IDCG@k = DCG@k of the ideal ranking
    NDCG@k = DCG@k / IDCG@k

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
5. Queries in the run but not in the qrels are not evaluated. Queries in the qrels but not
   in the run are skipped, or score 0 when ``all_queries`` is set (trec_eval ``-c``,
   ir_measures). ``max_results=N`` keeps the N best-ranked results of each query after
   ordering (trec_eval ``-M``).
6. Unjudged documents, ``unjudged``: ``zero`` (default) keeps them in the ranking with gain
   0; ``drop`` removes them (documents absent from the qrels, and those with a negative
   label, which count as unjudged) from the ranking after ordering and ``max_results``,
   before cutting at k (trec_eval ``-J``).
7. Duplicates, ``duplicates``: a document listed twice for one query in the run is an
   ``error`` (default), or only its ``first`` row (the first to arrive) or its
   ``max-score`` row (the highest score; the first to arrive among equal scores) is kept
   before ordering. A duplicate in the qrels is always an error.

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
from dataclasses import dataclass, field
from typing import Literal

GainKind = Literal["linear", "exponential", "binary"]
DiscountKind = Literal["log2", "jk"]
Ties = Literal["docid-desc", "input-order", "average"]
Ideal = Literal["judged", "retrieved", "judged-cut-at-hits"]
EmptyIdeal = Literal["zero", "one", "skip", "nan"]
Unjudged = Literal["zero", "drop"]
Duplicates = Literal["error", "first", "max-score"]

GAIN_KINDS: tuple[str, ...] = ("linear", "exponential", "binary")
DISCOUNT_KINDS: tuple[str, ...] = ("log2", "jk")
TIES: tuple[str, ...] = ("docid-desc", "input-order", "average")
IDEALS: tuple[str, ...] = ("judged", "retrieved", "judged-cut-at-hits")
EMPTY_IDEALS: tuple[str, ...] = ("zero", "one", "skip", "nan")
UNJUDGED: tuple[str, ...] = ("zero", "drop")
DUPLICATES: tuple[str, ...] = ("error", "first", "max-score")

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


@dataclass(frozen=True)
class Evaluation:
    """Everything that decides the numbers: cutoffs, gain, discount and conventions.

    ``cutoffs`` are the k of NDCG@k; the whole ranking (cutoff ``None``) is always computed
    as well. The conventions are described in this module's docstring.
    """

    cutoffs: tuple[int, ...] = (5, 10, 20)
    gain: Gain = field(default_factory=Gain)
    discount: Discount = field(default_factory=Discount)
    all_queries: bool = False
    max_results: int | None = None
    ties: Ties = "docid-desc"
    ideal: Ideal = "judged"
    empty_ideal: EmptyIdeal = "zero"
    unjudged: Unjudged = "zero"
    duplicates: Duplicates = "error"
    relevance_threshold: float | None = None
    tie_bounds: bool = False

    def __post_init__(self) -> None:
        if not self.cutoffs:
            raise SpecError("at least one cutoff k is needed")
        for k in self.cutoffs:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise SpecError(f"cutoff k must be a positive integer, got {k!r}")
            if k > MAX_CUTOFF:
                raise SpecError(f"cutoff k must be at most {MAX_CUTOFF} (2**63 - 1), got {k}")
        if len(set(self.cutoffs)) != len(self.cutoffs):
            raise SpecError(f"cutoffs repeat a value: {list(self.cutoffs)}")
        if self.max_results is not None and (
            isinstance(self.max_results, bool) or not isinstance(self.max_results, int) or self.max_results < 1
        ):
            raise SpecError(f"max_results must be a positive integer, got {self.max_results!r}")
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
        object.__setattr__(self, "cutoffs", tuple(sorted(self.cutoffs)))
        if threshold is not None:
            object.__setattr__(self, "relevance_threshold", float(threshold))

    @property
    def ideal_depends_on_kept_ties(self) -> bool:
        """Whether the ideal ranking depends on which results are kept, not only on the qrels."""
        return self.ideal == "retrieved" or (self.ideal == "judged-cut-at-hits" and self.unjudged == "drop")

    @property
    def reads_input_order(self) -> bool:
        """Whether the numbers depend on the order rows arrive (or on an input rank column)."""
        return self.ties == "input-order" or self.duplicates != "error"

    def describe(self) -> dict[str, object]:
        """The resolved conventions, as written into outputs and printed for users."""
        return {
            "cutoffs": list(self.cutoffs),
            "gain": str(self.gain),
            "discount": str(self.discount),
            "ties": TIES_DESCRIBED[self.ties],
            "ideal": IDEALS_DESCRIBED[self.ideal],
            "empty_ideal": self.empty_ideal,
            "unjudged": "gain 0" if self.unjudged == "zero" else "dropped from the ranking",
            "negative_labels": "unjudged, gain 0",
            "relevant": "label > 0"
            if self.relevance_threshold is None
            else f"label >= {_short(self.relevance_threshold)}",
            "all_queries": self.all_queries,
            "max_results": self.max_results,
            "duplicates": self.duplicates,
            "tie_bounds": self.tie_bounds,
        }


CHOICES: dict[str, tuple[str, ...]] = {
    "ties": TIES,
    "ideal": IDEALS,
    "empty_ideal": EMPTY_IDEALS,
    "unjudged": UNJUDGED,
    "duplicates": DUPLICATES,
}

TIES_DESCRIBED = {
    "docid-desc": "score desc, then doc_id desc (string order)",
    "input-order": "input rank, else score desc, then input order",
    "average": "score desc, tied gains averaged",
}

IDEALS_DESCRIBED = {
    "judged": "every judged document with positive gain",
    "retrieved": "the retrieved documents with positive gain",
    "judged-cut-at-hits": "every judged document with positive gain, cut at the number of results",
}


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
            "Spark MLlib RankingMetrics.ndcgAt(k) with ground-truth sets (binary relevance)",
            "Spark counts a document predicted twice twice; it takes the prediction list as ordered",
            gain=Gain("binary"),
            ties="input-order",
        ),
        _profile(
            "elasticsearch",
            "Elasticsearch rank_eval dcg with normalize: true",
            "Elasticsearch breaks score ties by shard and Lucene doc id; input order stands in for that",
            gain=Gain("exponential"),
            ties="input-order",
            ideal="judged-cut-at-hits",
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
    columns = ("gain", "discount", "ties", "ideal", "empty_ideal", "unjudged", "duplicates", "all_queries")
    header = ("profile", *columns, "reproduces")
    rows = []
    for profile in PROFILES.values():
        described = profile.evaluation(cutoffs=(1,))
        values = [str(getattr(described, name)) for name in columns]
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
