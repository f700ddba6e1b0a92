"""The measure and its conventions: one frozen description read by every engine.

Formulas (rank ``i`` starts at 1, ``g(i)`` is the gain of the document at rank ``i``)::

    CG@k   = sum_{i<=k} g(i)
    DCG@k  = sum_{i<=k} g(i) * d(i)
    IDCG@k = DCG@k of the ideal ranking
    NDCG@k = DCG@k / IDCG@k

Gains ``g`` (:class:`Gain`):

- ``linear``: ``g = label`` (trec_eval, ir_measures).
- ``exponential``: ``g = 2**label - 1`` (Burges et al., 2005; LightGBM, scikit-learn's
  ``dcg_score`` does linear, the "alternative" DCG of most tutorials).
- a level map such as ``1=3,2=9,4=4.5`` (trec_eval's ``-m ndcg.1=3,2=9,4=4.5``): a mapped
  level gains its mapped value (which may be 0 or negative, and level 0 may be mapped);
  an unmapped level keeps its own value as its gain.

Discounts ``d`` (:class:`Discount`):

- ``log2``: ``d(i) = 1 / log2(i + 1)`` (trec_eval, Burges).
- ``jk`` with base ``b``: ``d(i) = 1`` for ``i <= b``, else ``1 / log_b(i)``; the original
  Järvelin & Kekäläinen (2002) form, equal to ``1 / max(1, log_b(i))``.

Conventions (the defaults are trec_eval's):

1. Ordering: a query's results are ordered by score descending, ties broken by doc_id
   descending in string (byte) order; any rank column in the input is ignored.
2. Gains: negative labels count as unjudged and gain 0 whatever the gain says; unjudged
   documents (absent from the qrels) gain 0; label 0 gains 0 unless a gain map gives it a
   value. Documents with label > 0 are relevant.
3. Ideal ranking: every judged document of the query with a positive gain, including ones
   the run never retrieved, sorted by gain descending and cut at k. With inline labels (no
   qrels) the judged documents are the run's own labelled rows.
4. A query whose IDCG is 0 scores NDCG 0.
5. Queries in the run but not in the qrels are not evaluated. Queries in the qrels but not
   in the run are skipped, or score 0 when ``all_queries`` is set (trec_eval ``-c``).
   ``max_results=N`` keeps the N best-ranked results of each query after ordering
   (trec_eval ``-M``).
6. A document listed twice for one query, in the run or in the qrels, is an error.

Cutoff ``None`` means the whole ranking: DCG over every retrieved document and IDCG over
every ideal document (trec_eval's ``ndcg``); a cutoff k cuts both at k (``ndcg_cut_k``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

GainKind = Literal["linear", "exponential"]
DiscountKind = Literal["log2", "jk"]

GAIN_KINDS: tuple[str, ...] = ("linear", "exponential")
DISCOUNT_KINDS: tuple[str, ...] = ("log2", "jk")

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

    def gain_of(self, label: float) -> float:
        """The gain of one label; the reference the engines are tested against."""
        if label < 0:
            return 0.0
        for level, gain in self.levels:
            if level == label:
                return gain
        return float(2**label - 1) if self.kind == "exponential" else float(label)

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


@dataclass(frozen=True)
class Evaluation:
    """Everything that decides the numbers: cutoffs, gain, discount and conventions.

    ``cutoffs`` are the k of NDCG@k; the whole ranking (cutoff ``None``) is always computed
    as well.
    """

    cutoffs: tuple[int, ...] = (5, 10, 20)
    gain: Gain = field(default_factory=Gain)
    discount: Discount = field(default_factory=Discount)
    all_queries: bool = False
    max_results: int | None = None

    def __post_init__(self) -> None:
        if not self.cutoffs:
            raise SpecError("at least one cutoff k is needed")
        for k in self.cutoffs:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise SpecError(f"cutoff k must be a positive integer, got {k!r}")
        if len(set(self.cutoffs)) != len(self.cutoffs):
            raise SpecError(f"cutoffs repeat a value: {list(self.cutoffs)}")
        if self.max_results is not None and (
            isinstance(self.max_results, bool) or not isinstance(self.max_results, int) or self.max_results < 1
        ):
            raise SpecError(f"max_results must be a positive integer, got {self.max_results!r}")
        object.__setattr__(self, "cutoffs", tuple(sorted(self.cutoffs)))

    def describe(self) -> dict[str, object]:
        """The resolved conventions, as written into outputs and printed for users."""
        return {
            "cutoffs": list(self.cutoffs),
            "gain": str(self.gain),
            "discount": str(self.discount),
            "ties": "score desc, then doc_id desc (string order)",
            "ideal": "every judged document with positive gain",
            "empty_ideal": "zero",
            "unjudged": "gain 0",
            "negative_labels": "unjudged, gain 0",
            "all_queries": self.all_queries,
            "max_results": self.max_results,
            "duplicates": "error",
        }


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
        cutoffs.append(int(part))
    if len(set(cutoffs)) != len(cutoffs):
        raise SpecError(f"cutoffs repeat a value: {text!r}")
    return tuple(sorted(cutoffs))


def _short(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
