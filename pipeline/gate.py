"""The regression gate of ``ndcg compare --fail-if-worse MARGIN``: did the candidate get worse?

A row of the comparison (one pair, cutoff, group, partition) *fails* when both hold:

- the drop exceeds the margin: ``mean_baseline - mean_candidate > margin`` for an absolute
  margin (``0.01``), ``> margin * |mean_baseline|`` for a relative one (``2%``): strictly
  more, so a drop of exactly the margin passes;
- the drop is significant: the paired randomization test's two-sided p-value, adjusted by the
  comparison's correction (Holm or Bonferroni) over *every row the gate checks* (all gated
  pairs, cutoffs, groups and partitions: one family, so checking more rows does not make a
  false alarm likelier), is below ``alpha``.

Which rows are checked: pairs whose baseline is the first system (the production model; pairs
of two candidates are no regression), at the gated cutoffs (default: every compared one), the
rows over all queries (``overall``; with ``groups`` each group's rows too) of the pooled
partitions (with ``partitions`` each partition's rows too, and over one paired partition only
its rows, which are the pooled rows). A row without a p-value (no
paired query) cannot fail. The randomization test is distribution-free and exact on few
queries; with ``n`` queries its p-value is at least ``2 / 2**n``, so fewer than 6 paired
queries can never be significant at 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipeline.errors import UsageError
from pipeline.groups import OVERALL
from pipeline.io.format import text_line, text_value

# the p-value the gate reads (before its own adjustment over the checked rows)
P_VALUE = "p_value_permutation"


@dataclass(frozen=True)
class Margin:
    """How much worse the candidate may be: ``value`` in NDCG (absolute), or a fraction of the
    baseline's mean (``relative``; ``2%`` is ``Margin(0.02, relative=True)``)."""

    value: float
    relative: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | float) or not math.isfinite(self.value):
            raise UsageError(f"the margin must be a finite number, got {self.value!r}")
        if self.value < 0:
            raise UsageError(f"the margin must be 0 or more (how much worse the candidate may be), got {self.value!r}")

    @classmethod
    def parse(cls, text: str) -> Margin:
        """``0.01`` (absolute) or ``2%`` (relative to the baseline's mean)."""
        given = text.strip()
        relative = given.endswith("%")
        number = given[:-1].strip() if relative else given
        hint = "expected a number of 0 or more such as 0.01 (absolute) or a percentage such as 2%"
        try:
            if "_" in number:  # float() reads 1_0 as 10: a typo, not a margin
                raise ValueError(number)
            value = float(number) + 0.0  # -0 is 0
        except ValueError:
            raise UsageError(f"--fail-if-worse: cannot read {text!r}: {hint}") from None
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"--fail-if-worse: {text!r} is not a margin: {hint}")
        return cls(value / 100 if relative else value, relative)

    def allowed_drop(self, mean_baseline: float) -> float:
        return self.value * abs(mean_baseline) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


@dataclass(frozen=True)
class Gate:
    """What the gate checks: the margin, the significance level ``alpha``, the cutoffs (None:
    every compared cutoff), and whether each group's and each partition's rows are gated too."""

    margin: Margin
    alpha: float = 0.05
    cutoffs: tuple[int | None, ...] | None = None
    groups: bool = False
    partitions: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not 0 < self.alpha < 1:
            raise UsageError(f"--alpha must be a number between 0 and 1 (exclusive), got {self.alpha!r}")

    def describe(self) -> dict[str, Any]:
        return {
            "margin": str(self.margin),
            "margin_value": self.margin.value,
            "relative": self.margin.relative,
            "alpha": self.alpha,
            "cutoffs": None if self.cutoffs is None else list(self.cutoffs),
            "groups": self.groups,
            "partitions": self.partitions,
            "test": P_VALUE,
        }


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: every checked row (``checks``) and the failing ones (``failures``),
    each a dict naming the pair, cutoff, group and partition with its numbers."""

    gate: Gate
    checks: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def describe(self) -> dict[str, Any]:
        return {
            **self.gate.describe(),
            "passed": not self.failed,
            "checked": len(self.checks),
            "failures": self.failures,
        }

    def lines(self) -> list[str]:
        """What stdout says: one line per failure, or that it passed."""
        head = (
            f"# gate (--fail-if-worse {self.gate.margin}, alpha {self.gate.alpha}, {len(self.checks)} check(s), "
            f"randomization p-values adjusted together)"
        )
        if not self.failed:
            return [f"{head}: passed"]
        return [f"{head}: FAILED"] + [f"# gate FAILED: {describe_failure(row)}" for row in self.failures]


def describe_failure(row: dict[str, Any]) -> str:
    where = [f"k={row['k_label']}"]
    # NDCG unless said: another measure is named, so its means are not read as NDCG's
    measure = "" if row.get("measure", "ndcg") == "ndcg" else f"{row['measure']} "
    if row.get("group"):
        where.append(f"group {row['group']}")
    if row.get("partition"):
        where.append(f"partition {text_line(row['partition'])}")
    return (
        f"{text_value(row['candidate'])} vs {text_value(row['baseline'])} at {', '.join(where)}: "
        f"{measure}mean {row['mean_baseline']:.4f} -> "
        f"{row['mean_candidate']:.4f} ({row['mean_difference']:+.4f}, {_relative(row['relative_change'])}), "
        f"a drop beyond {row['allowed_drop']:.4f}, p = {row['p_gate']:.4g} < {row['alpha']}"
    )


def _relative(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def check_gate(
    comparison: pl.DataFrame,
    gate: Gate,
    *,
    group_by: Sequence[str] = (),
    partition_by: Sequence[str] = (),
    correction: str = "holm",
    measure: str = "ndcg",
) -> GateResult:
    """The gate over a comparison table (:func:`pipeline.compare.compare_systems`'s) of
    ``measure`` (named in the failures)."""
    from pipeline.compare import cutoff_label
    from pipeline.stats import adjust_p_values

    if comparison.height == 0:
        return GateResult(gate)
    first = comparison.get_column("baseline")[0]
    rows = comparison.filter(pl.col("baseline") == first)
    if gate.cutoffs is not None:
        compared = set(rows.get_column("k").to_list())
        absent = [k for k in gate.cutoffs if k not in compared]
        if absent:
            shown = ", ".join(cutoff_label(k) for k in sorted(compared, key=lambda k: math.inf if k is None else k))
            raise UsageError(
                f"--gate-k {', '.join(cutoff_label(k) for k in absent)} is not a compared cutoff (compared: {shown})"
            )
        wanted = [k for k in gate.cutoffs if k is not None]
        rows = rows.filter(pl.col("k").is_in(wanted) | (pl.col("k").is_null() if None in gate.cutoffs else False))
    if group_by and not gate.groups:
        rows = rows.filter(pl.col(OVERALL))
    pooled = pl.all_horizontal(pl.col(c).is_null() for c in partition_by) if partition_by else None
    if pooled is not None and not gate.partitions:
        rows = rows.filter(pooled)
    elif pooled is not None and rows.filter(~pooled).select(partition_by).n_unique() == 1:
        # one paired partition: its rows are the pooled rows, and gated twice they would double
        # the family (a drop the pooled rows alone fail would pass); gated once, as the partition
        rows = rows.filter(~pooled)
    checks = rows.to_dicts()
    adjusted = adjust_p_values([row[P_VALUE] for row in checks], correction)
    failures = []
    for row, p in zip(checks, adjusted, strict=True):
        row["p_gate"] = p
        row["k_label"] = cutoff_label(row["k"])
        row["alpha"] = gate.alpha
        row["measure"] = measure
        row["group"] = _group_text(row, group_by)
        row["partition"] = _partition_text(row, partition_by)
        mean_baseline, difference = row["mean_baseline"], row["mean_difference"]
        if mean_baseline is None or difference is None or p is None:
            row["allowed_drop"] = None
            continue
        row["allowed_drop"] = gate.margin.allowed_drop(mean_baseline)
        if -difference > row["allowed_drop"] and p < gate.alpha:
            failures.append(_failure(row, group_by, partition_by))
    return GateResult(gate, [_failure(row, group_by, partition_by) for row in checks], failures)


def _group_text(row: dict[str, Any], group_by: Sequence[str]) -> str | None:
    if not group_by or row.get(OVERALL):
        return None
    return ", ".join(f"{g}={'(null)' if row[g] is None else repr(row[g])}" for g in group_by)


def _partition_text(row: dict[str, Any], partition_by: Sequence[str]) -> str | None:
    if not partition_by or all(row[c] is None for c in partition_by):
        return None
    return "/".join(f"{c}={row[c]}" for c in partition_by)


def _failure(row: dict[str, Any], group_by: Sequence[str], partition_by: Sequence[str]) -> dict[str, Any]:
    keep = [
        "baseline",
        "candidate",
        "measure",
        *partition_by,
        *group_by,
        *([OVERALL] if group_by else []),
        "k",
        "k_label",
        "group",
        "partition",
        "queries",
        "mean_baseline",
        "mean_candidate",
        "mean_difference",
        "relative_change",
        "allowed_drop",
        P_VALUE,
        "p_gate",
        "alpha",
    ]
    return {key: row.get(key) for key in keep}
