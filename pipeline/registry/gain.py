"""How a label becomes a gain and how a rank is discounted (:class:`Gain`, :class:`Discount`),
and when a label is relevant: the formulas the engines are tested against.

Gains are bounded (:data:`~pipeline.registry.base.MAX_GAIN`, 1e300): a label whose gain exceeds
it in magnitude (a linear label above 1e300, an exponential label above 996) is refused by
validation (exit 3), and so is a gain map value beyond it (exit 2). The bound leaves room for the
sums: CG, DCG and IDCG add at most one gain per result, so they stay finite (and NDCG a ratio of
finite numbers in [0, 1]) for up to 1.7e8 results in one sum; 2**1024 - 1 would be an infinite
gain, and NaN (inf / inf) for a perfect ranking. Scaling each query's gains by its largest would
keep NDCG exact, but not the CG, DCG and IDCG columns, which are reported too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from pipeline.registry.base import MAX_GAIN, SpecError, number_text

GainKind = Literal["linear", "exponential", "binary"]
DiscountKind = Literal["log2", "jk"]
# the kinds the gain and discount conventions choose among (pipeline.registry.conventions
# describes each, and checks that its choices are these)
GAIN_KINDS: tuple[GainKind, ...] = ("linear", "exponential", "binary")
DISCOUNT_KINDS: tuple[str, ...] = ("log2", "jk")

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_MAP_ENTRY = re.compile(rf"^\s*({_NUMBER})\s*=\s*({_NUMBER})\s*$")


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
                    f"gain map value {level_gain!r} (level {number_text(level)}) is beyond the largest gain "
                    f"{MAX_GAIN:g}: sums of such gains overflow a double"
                )

    @classmethod
    def parse(cls, text: str) -> Gain:
        text = text.strip()
        if text in GAIN_KINDS:
            return cls(kind=text)
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
        mapped = ",".join(f"{number_text(level)}={number_text(gain)}" for level, gain in self.levels)
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
        return self.kind if self.kind == "log2" else f"jk(base={number_text(self.log_base)})"


def is_relevant(label: float, relevance_threshold: float | None = None) -> bool:
    """Whether a label counts as relevant: a judged label (>= 0) ``>= relevance_threshold``, or
    ``> 0`` without one."""
    return label > 0 if relevance_threshold is None else label >= max(relevance_threshold, 0.0)
