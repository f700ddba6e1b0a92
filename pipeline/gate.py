"""The regression gate of ``ndcg compare --fail-if-worse MARGIN``: did the candidate get worse?

A row of the comparison (one pair, cutoff, group, partition) *fails* when both hold:

- the drop exceeds the margin: ``mean_baseline - mean_candidate > margin`` for an absolute
  margin (``0.01``), ``> margin * |mean_baseline|`` for a relative one (``2%``): strictly
  more, so a drop of exactly the margin passes (for a measure whose better is lower, the
  unjudged fraction ``unj``, the rise; a measure with no direction, a count such as
  ``num_ret``, is refused: see :func:`check_gated_measure`);
- the drop is significant: the paired randomization test's two-sided p-value, adjusted by the
  comparison's correction (Holm or Bonferroni) within the row's *family*, is below ``alpha``.

Which rows are checked: pairs whose baseline is the first system (the production model; pairs
of two candidates are no regression), at the gated cutoffs (default: every compared one), in
these families, each adjusted on its own and held to ``alpha`` on its own:

- ``overall``: the rows over all queries, pooled over the paired partitions (always);
- ``groups``: each group's pooled rows (``--gate-groups``);
- ``partitions``: each partition's rows over its queries (``--gate-partitions``);
- ``partition groups``: each group within each partition (both flags).

Within a family the adjustment covers all its pairs and cutoffs, so checking more cutoffs or
candidates does not make a false alarm likelier. Across families it does not: a flag that gates
more rows adds a family and leaves the others exactly as they were, so adding one can add
failures but never take one away (one family for everything let three groups dilute the overall
row's significance, and a stricter command pass a drop the plain one failed). The price is a
false-alarm rate of up to ``alpha`` per family gated. Over one paired partition its rows are the
pooled rows: gated once, in the pooled families (named as the partition with ``--gate-partitions``).

A gate that cannot fail is refused (exit 2): with ``n`` paired queries (with ``--query-weights``,
those weighing above 0: one of weight 0 moves no weighted mean) the randomization test's p-value is
at least ``2 / 2**n`` (exact enumeration) or ``1 / (permutations + 1)`` (random draws), and when
even the smallest reachable p-value of a family times its number of tested checks is not below
``alpha``, no data could fail it, and "passed" would say nothing. Checks that cannot fail in a family
that can (four queries: p >= 0.125) are listed; a row without a p-value (no paired query) is one.

The judgment coverage floor (``--min-judged F``, alone or beside ``--fail-if-worse``) fails a
row whose candidate's mean Judged@k (:mod:`pipeline.coverage`: over the queries the row averages
for the candidate) is below ``F``: the candidate's score rests on too few judged results to be
read, better or worse. It checks the same rows as the margin (the gated cutoffs, with
``--gate-groups`` and ``--gate-partitions`` each group's and partition's), at cutoffs only
(Judged@k has no value over the whole ranking). A floor is no test, so nothing is adjusted, and
its failures are added to the margin's: the floor can fail a gate, never pass one.

The drop limit (``--fail-if-drop-over DROP``, alone or beside the others) fails a row whose
candidate's mean is worse than the baseline's by more than ``DROP`` (absolute, or ``%`` of the
baseline's mean), whatever its p-value: a budget, not a test. It checks the rows the margin checks,
adjusts nothing and can fail on one paired query; its failures are added to the others', and beside
a margin family that cannot fail the refusal stands unless some check failed: adding a check never
turns a refused or failing gate into a passing one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipeline.coverage import JUDGED
from pipeline.errors import UsageError
from pipeline.groups import OVERALL
from pipeline.io.format import decimals_apart, text_line, text_value
from pipeline.registry import MEASURE, MEASURES

# the p-value the gate reads (before its own adjustment over the checked rows)
P_VALUE = "p_value_permutation"
# A mean of fractions that should equal the floor may land a rounding below it: a shortfall
# within this much is no shortfall (and a drop within this much of the drop limit, no excess:
# 0.8 -> 0.79 is a drop of 0.010000000000000009 in binary).
FLOOR_TOLERANCE = 1e-12
MARGIN_FLAG = "--fail-if-worse"
DROP_FLAG = "--fail-if-drop-over"


def _number_or_percentage(text: str, flag: str, hint: str) -> tuple[float, bool]:
    """``(number, whether it ended in %)`` of a flag's text, -0 read as 0."""
    given = text.strip()
    percent = given.endswith("%")
    number = given[:-1].strip() if percent else given
    try:
        if "_" in number:  # float() reads 1_0 as 10: a typo, not a number given
            raise ValueError(number)
        return float(number) + 0.0, percent
    except ValueError:
        raise UsageError(f"{flag}: cannot read {text!r}: {hint}") from None


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
    def parse(cls, text: str, flag: str = MARGIN_FLAG) -> Margin:
        """``0.01`` (absolute) or ``2%`` (relative to the baseline's mean); ``flag`` names the
        option in the messages (``--fail-if-worse``, ``--fail-if-drop-over``)."""
        hint = "expected a number of 0 or more such as 0.01 (absolute) or a percentage such as 2%"
        value, relative = _number_or_percentage(text, flag, hint)
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{flag}: {text!r} is not a margin: {hint}")
        return cls(value / 100 if relative else value, relative)

    def allowed_drop(self, mean_baseline: float) -> float:
        return self.value * abs(mean_baseline) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


def parse_min_judged(text: str) -> float:
    """``--min-judged``' text: a fraction from 0 to 1 (``0.9``), or a percentage (``90%``)."""
    hint = "expected the least Judged@k the candidate may have, from 0 to 1 (0.9) or as a percentage (90%)"
    value, percent = _number_or_percentage(text, "--min-judged", hint)
    value = value / 100 if percent else value
    if not 0 <= value <= 1:  # NaN fails too
        raise UsageError(f"--min-judged: {text!r} is not a fraction of judged results: {hint}")
    return value


@dataclass(frozen=True)
class Gate:
    """What the gate checks: the margin of the significance test (``margin``, ``--fail-if-worse``;
    None: none), its level ``alpha``, the drop allowed without a test (``max_drop``,
    ``--fail-if-drop-over``; None: none), the judgment coverage floor ``min_judged`` (None: none),
    the cutoffs (None: every compared cutoff), and whether each group's and each partition's rows
    are gated too."""

    margin: Margin | None = None
    alpha: float = 0.05
    cutoffs: tuple[int | None, ...] | None = None
    groups: bool = False
    partitions: bool = False
    min_judged: float | None = None
    max_drop: Margin | None = None

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not 0 < self.alpha < 1:
            raise UsageError(f"--alpha must be a number between 0 and 1 (exclusive), got {self.alpha!r}")
        for name, flag in (("margin", MARGIN_FLAG), ("max_drop", DROP_FLAG)):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Margin):
                raise UsageError(
                    f"{name} ({flag}) must be a pipeline.gate.Margin (Margin(0.01), Margin.parse('2%')), got {value!r}"
                )
        if self.margin is None and self.min_judged is None and self.max_drop is None:
            raise UsageError(
                "a gate needs a margin (--fail-if-worse), a drop limit (--fail-if-drop-over) or a judgment coverage "
                "floor (--min-judged)"
            )
        if self.min_judged is not None and (
            isinstance(self.min_judged, bool)
            or not isinstance(self.min_judged, int | float)
            or not 0 <= self.min_judged <= 1
        ):
            raise UsageError(f"--min-judged must be a fraction from 0 to 1, got {self.min_judged!r}")

    def describe(self) -> dict[str, Any]:
        margin = self.margin
        return {
            "margin": None if margin is None else str(margin),
            "margin_value": None if margin is None else margin.value,
            "relative": None if margin is None else margin.relative,
            "alpha": self.alpha,
            "cutoffs": None if self.cutoffs is None else list(self.cutoffs),
            "groups": self.groups,
            "partitions": self.partitions,
            "test": P_VALUE,
            "min_judged": self.min_judged,
            "max_drop": None if self.max_drop is None else str(self.max_drop),
        }


@dataclass(frozen=True)
class Family:
    """One family of the gate's checks: their p-values are adjusted together (``correction``
    over ``checks``) and each adjusted p-value is held to ``alpha``. ``smallest_p`` is the
    smallest p-value any of its checks can reach (:func:`pipeline.stats.smallest_sign_flip_p`)."""

    name: str
    checks: int
    tested: int  # the checks with a p-value (a check without paired queries has none)
    correction: str
    alpha: float
    smallest_p: float | None
    failed: int = 0

    @property
    def can_fail(self) -> bool:
        """Whether some data could fail it: the first step of Holm (and Bonferroni's only one)
        holds the smallest p-value to ``alpha / tested``."""
        return self.smallest_p is not None and self.tested * self.smallest_p < self.alpha

    def text(self) -> str:
        """``overall (1 check, Holm, alpha 0.05)``."""
        return f"{self.name} ({_checks(self.checks)}, {self.correction.title()}, alpha {self.alpha:g})"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rows": FAMILY_ROWS[self.name],
            "checks": self.checks,
            "tested": self.tested,
            "correction": self.correction,
            "alpha": self.alpha,
            "smallest_p": self.smallest_p,
            "failed": self.failed,
            "passed": self.failed == 0,
        }


def _checks(count: int) -> str:
    return f"{count} check{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: every checked row (``checks``) and the failing ones (``failures``),
    each a dict naming the pair, cutoff, group, partition and family with its numbers, and the
    families they were held in; with a judgment coverage floor, its checks and failures
    (``coverage_checks``, ``coverage_failures``: the candidate's Judged@k of each gated row);
    with a drop limit, its checks and failures (``drop_checks``, ``drop_failures``);
    ``unreachable``, why each family that no data could fail cannot (beside a failure it is
    said; alone, the gate is refused: ``refusal`` holds why, and :func:`check_gate` raises
    :class:`GateCannotFail` with this verdict)."""

    gate: Gate
    checks: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    families: list[Family] = field(default_factory=list)
    coverage_checks: list[dict[str, Any]] = field(default_factory=list)
    coverage_failures: list[dict[str, Any]] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)
    drop_checks: list[dict[str, Any]] = field(default_factory=list)
    drop_failures: list[dict[str, Any]] = field(default_factory=list)
    refusal: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.failures or self.coverage_failures or self.drop_failures)

    @property
    def verdict(self) -> str:
        """``passed``, ``FAILED`` (exit 6) or ``REFUSED`` (a gate that cannot fail: exit 2)."""
        return "REFUSED" if self.refusal else "FAILED" if self.failed else "passed"

    def failure_texts(self) -> list[str]:
        """One line per failure: the margin's, the drop limit's, then the coverage floor's."""
        return (
            [describe_failure(row) for row in self.failures]
            + [describe_drop_failure(row) for row in self.drop_failures]
            + [describe_coverage_failure(row) for row in self.coverage_failures]
        )

    def describe(self) -> dict[str, Any]:
        coverage = None
        if self.gate.min_judged is not None:
            coverage = {
                "measure": JUDGED,
                "min_judged": self.gate.min_judged,
                "checked": len(self.coverage_checks),
                "passed": not self.coverage_failures,
                "checks": self.coverage_checks,
                "failures": self.coverage_failures,
            }
        drop = None
        if self.gate.max_drop is not None:
            drop = {
                "max_drop": str(self.gate.max_drop),
                "max_drop_value": self.gate.max_drop.value,
                "relative": self.gate.max_drop.relative,
                "test": None,
                "checked": len(self.drop_checks),
                "passed": not self.drop_failures,
                "checks": self.drop_checks,
                "failures": self.drop_failures,
            }
        return {
            **self.gate.describe(),
            # null when refused: a gate that cannot fail neither passed nor failed
            "passed": None if self.refusal else not self.failed,
            "refused": self.refusal,
            "checked": len(self.checks),
            "families": [family.describe() for family in self.families],
            "checks": self.checks,
            "failures": self.failures,
            "cannot_fail": [row for row in self.checks if not row["can_fail"]],
            "unreachable_families": self.unreachable,
            "coverage": coverage,
            "drop": drop,
        }

    def _weighted(self) -> str:
        return " of the weighted mean differences" if any("weighed_queries" in row for row in self.checks) else ""

    def lines(self) -> list[str]:
        """What stdout says: the verdict, each family's, the drop limit's, the coverage floor's,
        one line per failure, and the checks that no data could fail."""
        count = len(self.families)
        parts = []
        if self.gate.margin is not None:
            parts.append(
                f"--fail-if-worse {self.gate.margin}, alpha {self.gate.alpha}, {len(self.checks)} check(s) in "
                f"{count} famil{'y' if count == 1 else 'ies'}, randomization p-values{self._weighted()} adjusted "
                "within each family"
            )
        if self.gate.max_drop is not None:
            parts.append(f"--fail-if-drop-over {self.gate.max_drop}, {_checks(len(self.drop_checks))}, no test")
        if self.gate.min_judged is not None:
            parts.append(f"--min-judged {self.gate.min_judged:g}, {_checks(len(self.coverage_checks))} of Judged@k")
        head = "REFUSED: it cannot fail whatever the data (exit 2)" if self.refusal else self.verdict
        lines = [f"# gate ({'; '.join(parts)}): {head}"]
        for family in self.families:
            verdict = f"FAILED ({family.failed} failure(s))" if family.failed else "passed"
            if not family.can_fail:
                verdict = "cannot fail whatever the data (below)"
            lines.append(f"# gate family {family.text()}: {FAMILY_ROWS[family.name]}: {verdict}")
        if self.gate.max_drop is not None:
            lines.append(self._drop_line())
        if self.gate.min_judged is not None:
            lines.append(self._coverage_line())
        lines += [f"# gate FAILED: {text}" for text in self.failure_texts()]
        lines += [f"# gate: {text}" for text in self.unreachable]
        idle = [row for row in self.checks if not row["can_fail"]]
        if idle:
            shown = "; ".join(_idle_text(row) for row in idle[:5]) + (
                f"; ... ({len(idle)} in all)" if len(idle) > 5 else ""
            )
            lines.append(
                f"# gate: {_checks(len(idle))} cannot fail whatever the data (too few paired queries or "
                f"permutations to reach alpha): {shown}"
            )
        return lines

    def _drop_line(self) -> str:
        from pipeline.compare import cutoff_label

        ks = sorted({row["k"] for row in self.drop_checks}, key=lambda k: math.inf if k is None else k)
        cutoffs = [cutoff_label(k) for k in ks]
        failed = len(self.drop_failures)
        verdict = f"FAILED ({failed} failure(s))" if failed else "passed"
        measured = [row for row in self.drop_checks if row["worse_by"] is not None]
        largest = max(measured, key=lambda row: row["worse_by"], default=None)
        if largest is None:
            seen = ""
        elif largest["worse_by"] > FLOOR_TOLERANCE:
            seen = f", largest {_worse_word(largest['measure'])} {largest['worse_by']:.4f} ({_where(largest)})"
        else:
            seen = f", no {_worse_word(largest['measure'])} in any check"
        return (
            f"# gate drop (--fail-if-drop-over {self.gate.max_drop}): the candidate's mean against the baseline's, "
            f"no significance test, at k={', '.join(cutoffs) or '-'} ({_checks(len(self.drop_checks))}{seen}): "
            f"{verdict}"
        )

    def _coverage_line(self) -> str:
        cutoffs = sorted({row["k"] for row in self.coverage_checks})
        failed = len(self.coverage_failures)
        verdict = f"FAILED ({failed} failure(s))" if failed else "passed"
        lowest = min(
            (row for row in self.coverage_checks if row[JUDGED] is not None), key=lambda row: row[JUDGED], default=None
        )
        seen = "" if lowest is None else f", lowest {lowest[JUDGED]:.4f} ({_where(lowest)})"
        return (
            f"# gate judgment coverage (--min-judged {self.gate.min_judged:g}): the candidate's mean Judged@k over "
            f"its compared queries at k={', '.join(map(str, cutoffs)) or '-'} ({_checks(len(self.coverage_checks))}"
            f"{seen}): {verdict}"
        )


def _idle_text(row: dict[str, Any]) -> str:
    smallest = row["smallest_p"]
    reach = "no paired query" if smallest is None else f"p >= {smallest:.4g}"
    weighted = " of weight above 0" if row.get("weighed_queries") is not None else ""
    return f"{_where(row)} ({_tested(row)} paired queries{weighted}, {reach}; family {row['family']})"


def _where(row: dict[str, Any]) -> str:
    where = [f"k={row['k_label']}"]
    if row.get("group"):
        where.append(f"group {text_line(str(row['group']))}")
    if row.get("partition"):
        where.append(f"partition {text_line(row['partition'])}")
    return f"{text_value(row['candidate'])} vs {text_value(row['baseline'])} at {', '.join(where)}"


def describe_failure(row: dict[str, Any]) -> str:
    # NDCG unless said: another measure is named, so its means are not read as NDCG's
    measure = "" if row.get("measure", "ndcg") == "ndcg" else f"{row['measure']} "
    decimals = decimals_apart(abs(row["mean_difference"]), row["allowed_drop"])
    return (
        f"{_where(row)}: {measure}{_mean(row)} {row['mean_baseline']:.{decimals}f} -> "
        f"{row['mean_candidate']:.{decimals}f} ({row['mean_difference']:+.{decimals}f}, "
        f"{_relative(row['relative_change'])}), "
        f"{_worse(row.get('measure', 'ndcg'))} beyond {row['allowed_drop']:.{decimals}f}, "
        f"p = {row['p_gate']:.4g} < {row['alpha']} "
        f"(family {row['family']}: {_checks(row['family_checks'])}, {str(row['correction']).title()})"
    )


def describe_drop_failure(row: dict[str, Any]) -> str:
    measure = "" if row.get("measure", "ndcg") == "ndcg" else f"{row['measure']} "
    decimals = decimals_apart(row["worse_by"], row["allowed_drop"])
    return (
        f"{_where(row)}: {measure}{_mean(row)} {row['mean_baseline']:.{decimals}f} -> "
        f"{row['mean_candidate']:.{decimals}f} ({row['mean_difference']:+.{decimals}f}, "
        f"{_relative(row['relative_change'])}), {_worse(row['measure'])} beyond {row['allowed_drop']:.{decimals}f} "
        f"(--fail-if-drop-over {row['max_drop']}, no significance test; {row['queries']} paired queries; "
        f"family {row['family']})"
    )


def describe_coverage_failure(row: dict[str, Any]) -> str:
    return (
        f"{_where(row)}: Judged@{row['k_label']} {row[JUDGED]:.{decimals_apart(row[JUDGED], row['min_judged'])}f} "
        f"is below the floor of --min-judged {row['min_judged']!r} (the candidate's mean over "
        f"{row['judged_queries']} queries; family {row['family']})"
    )


def _worse_word(measure: str) -> str:
    return "rise" if MEASURE[measure].better == "lower" else "drop"


def _worse(measure: str) -> str:
    return "a rise (lower is better)" if MEASURE[measure].better == "lower" else "a drop"


def check_gated_measure(measure: str, flag: str = MARGIN_FLAG) -> None:
    """A gate reads a measure's direction: one with none (a count, a property of the
    judgments) is refused rather than gated as if higher were better."""
    if MEASURE[measure].better is None:
        gated = ", ".join(m.name for m in MEASURES if m.better is not None and m.selected_by == "ndcg")
        raise UsageError(
            f"{flag} cannot gate {measure}: {MEASURE[measure].title} is neither better higher nor "
            f"lower (a count, or a property of the judgments); gate a measure of quality ({gated}, P, map, ...) "
            "and compare this one without the gate"
        )


def _mean(row: dict[str, Any]) -> str:
    return "weighted mean" if row.get("weighed_queries") is not None else "mean"


def _tested(row: dict[str, Any]) -> int:
    """The paired queries the randomization test runs on: with query weights, those weighing above 0."""
    return int(row.get("weighed_queries", row.get("queries")) or 0)


def _relative(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


# The families, in the order they are checked, and the rows each holds. Each gated dimension is a
# family of its own, held to alpha on its own: a flag that gates more rows adds a family and leaves
# the others as they were, so it can add failures, never take one away.
FAMILY_ROWS = {
    "overall": "the rows over all queries (pooled over the paired partitions)",
    "groups": "each group's rows (--gate-groups)",
    "partitions": "each partition's rows over its queries (--gate-partitions)",
    "partition groups": "each group's rows within each partition (--gate-groups --gate-partitions)",
}


def check_gate(
    comparison: pl.DataFrame,
    gate: Gate,
    *,
    group_by: Sequence[str] = (),
    partition_by: Sequence[str] = (),
    correction: str = "holm",
    measure: str = "ndcg",
    coverage: pl.DataFrame | None = None,
) -> GateResult:
    """The gate over a comparison table (:func:`pipeline.compare.compare_systems`'s) of
    ``measure`` (named in the failures): each family of checks adjusted on its own. A family
    that no data could fail (too few paired queries or permutations for its p-values to reach
    alpha) is refused: a gate that cannot fail would say "passed" on any drop. With a coverage
    floor, ``coverage`` holds the candidates' Judged@k of the rows
    (:func:`pipeline.coverage.candidate_judged`)."""
    from pipeline.compare import cutoff_label

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
    pooled = pl.all_horizontal(pl.col(c).is_null() for c in partition_by) if partition_by else pl.lit(True)
    overall = pl.col(OVERALL) if group_by else pl.lit(True)
    partitions = rows.filter(~pooled).select(partition_by).unique().to_dicts() if partition_by else []
    # over one paired partition the pooled rows are that partition's rows: gated once, in the
    # families of the pooled rows, and named as the partition with --gate-partitions
    only_partition = partitions[0] if len(partitions) == 1 and gate.partitions else None
    selections = [("overall", pooled & overall)]
    if gate.groups and group_by:
        selections.append(("groups", pooled & ~overall))
    if gate.partitions and len(partitions) > 1:
        selections.append(("partitions", ~pooled & overall))
        if gate.groups and group_by:
            selections.append(("partition groups", ~pooled & ~overall))
    families, checks, failures = [], [], []
    for name, selection in selections if gate.margin is not None else []:
        family_rows = [{**row, **(only_partition or {})} for row in rows.filter(selection).to_dicts()]
        family, checked = _check_family(name, family_rows, gate, correction, measure, group_by, partition_by)
        families.append(family)
        checks += checked
        failures += [row for row in checked if row["failed"]]
    idle = [family for family in families if not family.can_fail]
    unreachable = [
        _cannot_fail(family, [row for row in checks if row["family"] == family.name], gate.max_drop is not None)
        for family in idle
    ]
    keep = lambda row: _failure(row, group_by, partition_by)  # noqa: E731
    covered: list[dict[str, Any]] = []
    if gate.min_judged is not None:
        keys = [*partition_by, *group_by, *([OVERALL] if group_by else []), "k"]
        at_cutoffs = rows.filter(pl.col("k").is_not_null())
        if at_cutoffs.height == 0:
            raise UsageError(
                "--min-judged reads the candidate's Judged@k, which has no value over the whole ranking (k would be "
                "the ranking's length): gate a cutoff (--gate-k 10, or compare one with --k)"
            )
        if coverage is None or coverage.height == 0:
            raise UsageError("--min-judged needs the candidates' Judged@k (pipeline.coverage.candidate_judged)")
        joined = at_cutoffs.join(
            coverage, on=["baseline", "candidate", *keys], how="left", nulls_equal=True, suffix="_coverage"
        )
        for name, selection in selections:
            for row in joined.filter(selection).to_dicts():
                covered.append(_coverage_check({**row, **(only_partition or {})}, name, gate, group_by, partition_by))
    coverage_failures = [row for row in covered if row["failed"]]
    dropped: list[dict[str, Any]] = []
    if gate.max_drop is not None:
        for name, selection in selections:
            for row in rows.filter(selection).to_dicts():
                row = {**row, **(only_partition or {})}
                dropped.append(_drop_check(row, name, gate.max_drop, measure, group_by, partition_by))
    drop_failures = [row for row in dropped if row["failed"]]
    drop_idle = bool(dropped) and all(row["worse_by"] is None for row in dropped)
    if drop_idle:
        unreachable.append(
            f"the gate cannot fail: --fail-if-drop-over {gate.max_drop} has no gated row with a paired query, so no "
            "mean to compare; compare systems that share queries in the rows gated"
        )
    result = GateResult(
        gate,
        [keep(row) for row in checks],
        [keep(row) for row in failures],
        families,
        covered,
        coverage_failures,
        unreachable,
        dropped,
        drop_failures,
    )
    # a family that cannot fail makes a passing gate meaningless (exit 2, saying why), but never
    # hides another check's failure: that verdict stands (exit 6), the idle family named beside it
    if unreachable and not result.failed:
        reason = unreachable[0]
        if gate.max_drop is not None and not drop_idle:
            reason += (
                f". --fail-if-drop-over {gate.max_drop} gates the drop without a test and passed; leave "
                "--fail-if-worse out to gate on the drop alone"
            )
        raise GateCannotFail(reason, dataclasses.replace(result, refusal=reason))
    return result


class GateCannotFail(UsageError):
    """A gate that no data could fail, refused (exit 2) with its verdict (``result``, whose
    ``refusal`` says why), so that the comparison it was asked over can still be shown;
    :func:`pipeline.compare_job.compare_job` adds that comparison (``compared``)."""

    def __init__(self, message: str, result: GateResult) -> None:
        super().__init__(message)
        self.result = result
        self.compared: Any = None


def _drop_check(
    row: dict[str, Any],
    family: str,
    max_drop: Margin,
    measure: str,
    group_by: Sequence[str],
    partition_by: Sequence[str],
) -> dict[str, Any]:
    """One row's drop check, without a test: failed when the candidate's mean is worse than the
    baseline's by more than the limit (a row without a paired query has no means: not checked)."""
    from pipeline.compare import cutoff_label

    mean_baseline, difference = row.get("mean_baseline"), row.get("mean_difference")
    allowed = worse_by = None
    failed = False
    if mean_baseline is not None and difference is not None:
        allowed = max_drop.allowed_drop(mean_baseline)
        # worse is lower for most measures, higher for one whose better is lower (unj)
        worse_by = difference if MEASURE[measure].better == "lower" else -difference
        failed = worse_by > allowed + FLOOR_TOLERANCE
    return {
        "baseline": row["baseline"],
        "candidate": row["candidate"],
        "measure": measure,
        **{column: row.get(column) for column in [*partition_by, *group_by, *([OVERALL] if group_by else [])]},
        "k": row["k"],
        "k_label": cutoff_label(row["k"]),
        "group": _group_text(row, group_by),
        "partition": _partition_text(row, partition_by),
        "queries": row.get("queries"),
        **({"weighed_queries": row["weighed_queries"]} if "weighed_queries" in row else {}),
        "mean_baseline": mean_baseline,
        "mean_candidate": row.get("mean_candidate"),
        "mean_difference": difference,
        "relative_change": row.get("relative_change"),
        "worse_by": worse_by,
        "allowed_drop": allowed,
        "max_drop": str(max_drop),
        "family": family,
        "failed": failed,
    }


def _coverage_check(
    row: dict[str, Any], family: str, gate: Gate, group_by: Sequence[str], partition_by: Sequence[str]
) -> dict[str, Any]:
    """One row's coverage check: failed when the candidate's Judged@k is below the floor (a row
    without a compared query has no Judged@k, and nothing to fail)."""
    from pipeline.compare import cutoff_label

    judged, floor = row.get(JUDGED), gate.min_judged
    failed = judged is not None and floor is not None and judged < floor - FLOOR_TOLERANCE
    return {
        "baseline": row["baseline"],
        "candidate": row["candidate"],
        **{column: row.get(column) for column in [*partition_by, *group_by, *([OVERALL] if group_by else [])]},
        "k": row["k"],
        "k_label": cutoff_label(row["k"]),
        "group": _group_text(row, group_by),
        "partition": _partition_text(row, partition_by),
        "judged_queries": row.get("judged_queries") or 0,
        JUDGED: judged,
        "min_judged": floor,
        "family": family,
        "failed": failed,
    }


def _check_family(
    name: str,
    rows: list[dict[str, Any]],
    gate: Gate,
    correction: str,
    measure: str,
    group_by: Sequence[str],
    partition_by: Sequence[str],
) -> tuple[Family, list[dict[str, Any]]]:
    """The rows of one family, adjusted together and each held to alpha."""
    from pipeline.compare import cutoff_label
    from pipeline.stats import adjust_p_values, smallest_sign_flip_p

    adjusted = adjust_p_values([row[P_VALUE] for row in rows], correction)
    smallest_of_all: list[float] = []
    for row, p in zip(rows, adjusted, strict=True):
        smallest = smallest_sign_flip_p(_tested(row), int(row["permutations"]))
        if row[P_VALUE] is not None and smallest is not None:
            smallest_of_all.append(smallest)
        row.update(
            p_gate=p,
            k_label=cutoff_label(row["k"]),
            alpha=gate.alpha,
            measure=measure,
            group=_group_text(row, group_by),
            partition=_partition_text(row, partition_by),
            family=name,
            family_checks=len(rows),
            correction=correction,
            smallest_p=smallest,
            # whatever the others do, a check's adjusted p-value is at least its own p-value
            can_fail=smallest is not None and row[P_VALUE] is not None and smallest < gate.alpha,
            failed=False,
        )
        mean_baseline, difference = row["mean_baseline"], row["mean_difference"]
        if gate.margin is None or mean_baseline is None or difference is None or p is None:
            row["allowed_drop"] = None
            continue
        row["allowed_drop"] = gate.margin.allowed_drop(mean_baseline)
        # worse is lower for most measures, higher for one whose better is lower (unj)
        worse_by = difference if MEASURE[measure].better == "lower" else -difference
        row["failed"] = worse_by > row["allowed_drop"] and p < gate.alpha
    tested = sum(row[P_VALUE] is not None for row in rows)
    family = Family(
        name,
        checks=len(rows),
        tested=tested,
        correction=correction,
        alpha=gate.alpha,
        smallest_p=min(smallest_of_all) if smallest_of_all else None,
        failed=sum(row["failed"] for row in rows),
    )
    return family, rows


def _cannot_fail(family: Family, rows: list[dict[str, Any]], with_drop_limit: bool) -> str:
    """Why a family can never fail, and what would let it."""
    from pipeline.stats import smallest_sign_flip_p

    if family.smallest_p is None:
        return (
            f"the gate cannot fail: family {family.text()} has no check with a paired query, so no p-value; "
            "compare systems that share queries in the rows gated"
        )
    best = min((row for row in rows if row["smallest_p"] is not None), key=lambda row: row["smallest_p"])
    permutations = int(best["permutations"])
    threshold = family.alpha / family.tested
    changes = []
    needed_permutations = permutations
    while family.tested / (needed_permutations + 1) >= family.alpha:
        needed_permutations = max(needed_permutations + 1, math.floor(family.tested / family.alpha))
    if needed_permutations > permutations:
        changes.append(f"--permutations {needed_permutations} or more")
    needed_queries = next(n for n in range(1, 64) if (smallest_sign_flip_p(n, needed_permutations) or 1.0) < threshold)
    weighted = " of weight above 0" if best.get("weighed_queries") is not None else ""
    if _tested(best) < needed_queries:
        changes.append(f"at least {needed_queries} paired queries{weighted} in a check")
    changes += ["fewer checks in the family (--gate-k, fewer candidates, or without the flag that adds it)"]
    changes += [f"a larger --alpha than {family.alpha:g}"]
    if not with_drop_limit:
        changes += ["a gate on the drop alone, without a test (--fail-if-drop-over DROP in place of --fail-if-worse)"]
    return (
        f"the gate cannot fail: family {family.text()}: the smallest p-value its checks can reach is "
        f"{family.smallest_p:.4g} ({_tested(best)} paired queries{weighted} at best, {permutations} permutations: "
        f"{_where(best)}), and {family.correction.title()} over {_checks(family.tested)} needs one below "
        f"{family.alpha:g}/{family.tested} = {threshold:.4g}: it would pass whatever the drop. It needs "
        f"{' or '.join(changes)}"
    )


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
        "weighed_queries",  # with query weights only
        "mean_baseline",
        "mean_candidate",
        "mean_difference",
        "relative_change",
        "allowed_drop",
        P_VALUE,
        "p_gate",
        "alpha",
        "family",
        "family_checks",
        "correction",
        "smallest_p",
        "can_fail",
    ]
    return {key: row.get(key) for key in keep if key in row or key != "weighed_queries"}
