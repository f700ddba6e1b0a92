"""``ndcg compare --output-format markdown``: the comparison as GitHub-flavoured Markdown, for a
CI step summary (``>> $GITHUB_STEP_SUMMARY``): a heading naming the measure and the systems, the
gate's verdict in one line, the comparison table (means, differences, wins, p-values, interval),
the gate's lines, and the queries that got worse the most.

Every value that came from data (a system's name, a query id, a group value, a partition folder)
is one line (:func:`pipeline.io.format.text_value`) with each character Markdown reads inline
escaped, so that no id opens a link, closes a table cell or forges a verdict. The text depends on
the comparison alone (no time, no path of the machine): the same comparison prints the same page.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.compare import Comparison, cutoff_label, p_value_text, partition_cell, weighting_note
from pipeline.gate import GateResult
from pipeline.groups import OVERALL, OVERALL_LABEL
from pipeline.io.format import group_cell, text_line, text_value
from pipeline.registry import MEASURE
from pipeline.stats import TIE_TOLERANCE

# the queries listed per pair and cutoff under "most regressed queries"
REGRESSED_SHOWN = 5
# what Markdown reads inline (emphasis, code, links, HTML, entities, tables, strike-through, math
# on GitHub): each is written with a backslash, which CommonMark allows before any punctuation
_INLINE = frozenset("\\`*_[]<>|~&$!#")


def markdown_text(text: str) -> str:
    """Free text (a gate line) with Markdown's inline characters escaped, on one line."""
    return "".join("\\" + char if char in _INLINE else char for char in text_line(text))


def markdown_value(value: object) -> str:
    """A value from data as a table cell: as every text output prints it, escaped."""
    return markdown_text(text_value(value))


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> list[str]:
    align = ["---:" if right else "---" for right in numeric]
    return [_row(header), _row(align), *(_row(row) for row in rows)]


def _signed(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def _plain(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def comparison_markdown(
    result: Comparison,
    unpaired: pl.DataFrame,
    *,
    measure: str,
    gate: GateResult | None = None,
    digits: int = 4,
) -> str:
    """The page: heading, verdict, comparison table, notes, the gate's lines, the most regressed
    queries (of the pairs the gate reads: the first system against each other one)."""
    comparison = result.comparison
    options = result.options
    title = MEASURE[measure].title if measure in MEASURE else measure
    systems = list(dict.fromkeys([*comparison.get_column("baseline"), *comparison.get_column("candidate")]))
    baseline, candidates = systems[0], systems[1:]
    names = ", ".join(markdown_value(c) for c in candidates)
    plural = "s" if len(candidates) > 1 else ""
    lines = [f"### ndcg compare: {title}, candidate{plural} {names} against baseline {markdown_value(baseline)}", ""]
    if gate is not None:
        lines += [_verdict(gate), ""]
    lines += _comparison_rows(result, digits)
    lines += ["", _notes(result)]
    for row in unpaired.iter_rows(named=True):
        queries = row["queries"]
        shown = ", ".join(markdown_value(q) for q in queries[:5]) + (", ..." if len(queries) > 5 else "")
        handling = "scored 0 for the other side" if options.all_queries else "left out (see --all-queries)"
        lines += [
            "",
            f"{len(queries)} quer{'y' if len(queries) == 1 else 'ies'} only in {markdown_value(row[row['side']])} "
            f"({markdown_value(row['baseline'])} vs {markdown_value(row['candidate'])}), {handling}: {shown}",
        ]
    if gate is not None:
        lines += ["", "#### Regression gate", ""]
        lines += [f"- {markdown_text(line.removeprefix('# '))}" for line in gate.lines()]
    lines += ["", *_regressed(result, measure, gate, digits)]
    return "\n".join(lines) + "\n"


def _verdict(gate: GateResult) -> str:
    if gate.refusal:
        return "**Regression gate: REFUSED** (exit 2): it cannot fail whatever the data; see below."
    if gate.failed:
        count = len(gate.failure_texts())
        return f"**Regression gate: FAILED** (exit 6): {count} failure{'' if count == 1 else 's'}, listed below."
    return "**Regression gate: passed**"


def _comparison_rows(result: Comparison, digits: int) -> list[str]:
    options = result.options
    group_by, partition_by = list(options.group_by), list(options.partition_by)
    header = [
        "baseline",
        "candidate",
        *(["partition"] if partition_by else []),
        *(markdown_value(g) for g in group_by),
        "k",
        "queries",
        "mean baseline",
        "mean candidate",
        "difference",
        "relative",
        "wins / ties / losses",
        "p (t-test)",
        "p (randomization)",
        f"{options.confidence:.0%} interval",
        f"p adjusted ({options.correction}): t / randomization",
    ]
    numeric = [False, False, *([False] if partition_by else []), *([False] * len(group_by)), *([True] * 11)]
    rows = []
    for row in result.comparison.iter_rows(named=True):
        interval = "-" if row["ci_low"] is None else f"[{row['ci_low']:+.{digits}f}, {row['ci_high']:+.{digits}f}]"
        rows.append(
            [
                markdown_value(row["baseline"]),
                markdown_value(row["candidate"]),
                *([markdown_text(partition_cell(row, partition_by))] if partition_by else []),
                *(
                    markdown_text(group_cell(row[g], overall=bool(row.get(OVERALL)), overall_marker=OVERALL_LABEL))
                    for g in group_by
                ),
                cutoff_label(row["k"]),
                str(row["queries"]),
                _plain(row["mean_baseline"], digits),
                _plain(row["mean_candidate"], digits),
                _signed(row["mean_difference"], digits),
                "-" if row["relative_change"] is None else f"{row['relative_change']:+.1%}",
                f"{row['wins']} / {row['ties']} / {row['losses']}",
                p_value_text(row["p_value_t"]),
                p_value_text(row["p_value_permutation"]),
                interval,
                f"{p_value_text(row['p_adjusted_t'])} / {p_value_text(row['p_adjusted_permutation'])}",
            ]
        )
    return _table(header, rows, numeric)


def _notes(result: Comparison) -> str:
    options = result.options
    paired = "partition and query" if options.partition_by else "query"
    groups = f"; {markdown_text(OVERALL_LABEL)} marks the rows over all queries" if options.group_by else ""
    pooled = "; pooled: the rows over every paired partition" if options.partition_by else ""
    weighted = weighting_note(options)
    tests = "weighted randomization test" if weighted else "paired t-test, randomization test"
    return (
        f"Paired by {paired}; difference = candidate − baseline; {tests} "
        f"({options.permutations} sign flips), {'weighted ' if weighted else ''}percentile bootstrap "
        f"({options.bootstrap_samples} resamples), seed {options.seed}; p adjusted by {options.correction} over "
        f"the pairs of each cutoff and group{groups}{pooled}."
        + (f" **Weighted**: {markdown_text(weighted)}." if weighted else "")
    )


def _regressed(result: Comparison, measure: str, gate: GateResult | None, digits: int) -> list[str]:
    """The queries that got worse the most, per pair of the first system and cutoff (the gated
    cutoffs with a gate that names them), worst first, ties by partition and query id."""
    deltas = result.deltas
    options = result.options
    lower_is_better = measure in MEASURE and MEASURE[measure].better == "lower"
    first = result.comparison.get_column("baseline")[0]
    cutoffs = gate.gate.cutoffs if gate is not None and gate.gate.cutoffs is not None else None
    chosen = deltas.filter(pl.col("baseline") == first, pl.col("delta").is_not_null())
    if cutoffs is not None:
        at = pl.col("k").is_in([k for k in cutoffs if k is not None])
        chosen = chosen.filter(at | (pl.col("k").is_null() if None in cutoffs else pl.lit(False)))
    worse = pl.col("delta") if lower_is_better else -pl.col("delta")
    chosen = chosen.with_columns(worse.alias("_worse_by")).filter(pl.col("_worse_by") > TIE_TOLERANCE)
    sides = [f"{measure}_{side}" for side in ("baseline", "candidate")]
    if not set(sides) <= set(deltas.columns):  # a comparison made outside compare_job: ndcg's place
        sides = [f"ndcg_{side}" for side in ("baseline", "candidate")]
    partition_by, group_by = list(options.partition_by), list(options.group_by)
    title = MEASURE[measure].title if measure in MEASURE else measure
    lines = [
        "#### Most regressed queries",
        "",
        f"The {REGRESSED_SHOWN} queries whose {title} got worse the most, per pair and cutoff "
        f"({'higher' if lower_is_better else 'lower'} is worse; paired queries"
        f"{' and those --all-queries scores 0' if options.all_queries else ''}).",
        "",
    ]
    if chosen.height == 0:
        return [*lines, "No query got worse."]
    header = [
        "baseline",
        "candidate",
        "k",
        *(["partition"] if partition_by else []),
        "query",
        *(markdown_value(g) for g in group_by),
        "baseline value",
        "candidate value",
        "difference",
    ]
    numeric = [False, False, True, *([False] if partition_by else []), False, *([False] * len(group_by)), *[True] * 3]
    candidates = list(dict.fromkeys(chosen.get_column("candidate")))
    ks = sorted(set(chosen.get_column("k")), key=lambda k: float("inf") if k is None else k)
    worst_first = ["_worse_by", *partition_by, "query_id"]
    chosen = chosen.with_columns(pl.col("query_id").cast(pl.String))
    rows = []
    for candidate in candidates:
        for k in ks:
            at_k = pl.col("k").is_null() if k is None else pl.col("k") == k
            part = chosen.filter(pl.col("candidate") == candidate, at_k)
            part = part.sort(worst_first, descending=[True, *([False] * (len(worst_first) - 1))], nulls_last=True)
            for row in part.head(REGRESSED_SHOWN).iter_rows(named=True):
                rows.append(
                    [
                        markdown_value(row["baseline"]),
                        markdown_value(row["candidate"]),
                        cutoff_label(row["k"]),
                        *([markdown_text(partition_cell(row, partition_by))] if partition_by else []),
                        markdown_value(row["query_id"]),
                        *(markdown_text(group_cell(row[g], overall=False)) for g in group_by),
                        _plain(row[sides[0]], digits),
                        _plain(row[sides[1]], digits),
                        _signed(row["delta"], digits),
                    ]
                )
    return [*lines, *_table(header, rows, numeric)]
