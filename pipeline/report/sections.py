"""The report's sections over evaluation and comparison outputs (all but the trend, see
:mod:`pipeline.report.trend`): the summary tables, the measure by cutoff, the per-query
distributions and differences, the groups, the conventions and the tie bounds (the judgment
coverage beside them is :mod:`pipeline.report.coverage`'s). Each returns its HTML fragment and
its figures; nothing is recomputed but means of the per-query tables."""

from __future__ import annotations

import polars as pl
from markupsafe import Markup

from pipeline import compare
from pipeline.compare import cutoff_label, pair
from pipeline.groups import OVERALL_LABEL
from pipeline.io.format import text_value
from pipeline.registry import MEASURE_NAMES
from pipeline.report import figures
from pipeline.report.html import Figure, at_cutoff, cell, fragment, k_text
from pipeline.report.load import ComparisonOutput, ReportInputs, System

SUMMARY_COLUMNS = ("queries", *MEASURE_NAMES)
# The comparison's own columns, less the pair's names (shown apart) and the test settings
# (the same on every row), in the comparison's order.
COMPARISON_COLUMNS = tuple(
    column
    for column in compare.COMPARISON_COLUMNS
    if column not in ("baseline", "candidate", "t_statistic", "permutations", "bootstrap_samples", "confidence", "seed")
)
_TESTS = (
    "p_value_t",
    "p_value_permutation",
    "ci_low",
    "ci_high",
    "correction",
    "p_adjusted_t",
    "p_adjusted_permutation",
)
TEST_COLUMNS = tuple(c for c in COMPARISON_COLUMNS if c in _TESTS)
MEANS_COLUMNS = tuple(c for c in COMPARISON_COLUMNS if c not in _TESTS and c != "k")


def _system_scores(inputs: ReportInputs, k: int | None) -> dict[str, pl.Series]:
    """Per-query NDCG at k per system: from per_query.parquet, or from a comparison's deltas
    for systems only a comparison names."""
    scores = {s.name: s.per_query.filter(at_cutoff(k))["ndcg"] for s in inputs.systems}
    for comparison in inputs.comparisons:
        for side in ("baseline", "candidate"):
            rows = comparison.deltas.filter(at_cutoff(k), pl.col(f"in_{side}"))
            for name in rows[side].unique(maintain_order=True).to_list():
                if name not in scores:
                    part = rows.filter(pl.col(side) == name).unique("query_id", keep="first", maintain_order=True)
                    scores[name] = part[f"ndcg_{side}"].alias("ndcg")
    return scores


# --- sections ------------------------------------------------------------------------------
# Every fragment is rendered by Jinja2 with autoescape: a value read from an output (a system
# name, a query id, a group, a k from a hand-edited table) reaches the page as text, never as markup.


def _evaluations_summary(inputs: ReportInputs) -> Markup:
    # the measures some output has (the companion measures only when evaluated)
    shown = [c for c in SUMMARY_COLUMNS if c == "queries" or any(c in s.summary.columns for s in inputs.systems)]
    # the group columns of any grouped summary: "overall" on the overall rows, "(null)" for the null group
    groups = list(
        dict.fromkeys(
            g for s in inputs.systems if s.group_summary is not None for g in s.group_columns if g in s.group_summary
        )
    )
    rows = []
    for system in inputs.systems:
        grouped = system.group_summary if system.group_summary is not None else pl.DataFrame()
        for row, overall in [(r, True) for r in system.summary.iter_rows(named=True)] + [
            (r, False) for r in grouped.iter_rows(named=True)
        ]:
            group_cells = [_summary_group_cell(row, g, overall) for g in groups]
            rows.append(
                {
                    "system": system.name,
                    "overall": "true" if overall else "false",
                    "groups": group_cells,
                    "k": k_text(row["k"]),
                    "cells": [cell(column, row.get(column)) for column in shown],
                }
            )
    return fragment(
        "<h3>Evaluations</h3><p>Means over the evaluated queries, from each <code>summary.parquet</code>"
        "{% if groups %}: the rows over all queries (group <em>all</em>), then each group's{% endif %}.</p>"
        '<table id="summary-table"><thead><tr>{% for c in header %}<th>{{ c }}</th>{% endfor %}</tr></thead>'
        '<tbody>{% for r in rows %}<tr data-system="{{ r.system }}" data-k="{{ r.k }}"'
        '{% if groups %} data-overall="{{ r.overall }}"{% endif %}><td>{{ r.system }}</td>'
        "{% for g in r.groups %}<td>{{ g }}</td>{% endfor %}"
        "<td>{{ r.k }}</td>{% for c in r.cells %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table>",
        header=("system", *groups, "k", *shown),
        groups=groups,
        rows=rows,
    )


def summary_section(inputs: ReportInputs) -> Markup:
    parts = [_evaluations_summary(inputs)] if inputs.systems else []
    for index, comparison in enumerate(inputs.comparisons):
        groups = comparison.group_columns
        # two tables of the same rows, each with the pair, the groups and k, so that each fits a
        # 1280-pixel window: the means and counts, then the tests
        tables = []
        for table_id, part in (
            (f"comparison-table-{index}", MEANS_COLUMNS),
            (f"comparison-tests-{index}", TEST_COLUMNS),
        ):
            columns = ["baseline", "candidate", *groups, "k", *part]
            cells = [
                [_comparison_cell(c, row.get(c), groups, row.get("overall", True)) for c in columns]
                for row in comparison.comparison.iter_rows(named=True)
            ]
            tables.append(
                fragment(
                    '<div class="wide"><table class="comparison-table" id="{{ table_id }}"><thead><tr>'
                    "{% for c in columns %}<th>{{ c.replace('_', ' ') }}</th>{% endfor %}</tr></thead><tbody>"
                    "{% for r in rows %}<tr>{% for c in r %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table></div>",
                    table_id=table_id,
                    columns=columns,
                    rows=cells,
                )
            )
        parts.append(
            fragment(
                "<h3>Comparison ({{ path }})</h3><p>Paired by {{ paired_by }}; difference = candidate − baseline; "
                "rows with group <em>overall</em> hold every query. p-values are two-sided; adjusted p-values use the "
                "correction named in each row, over the pairs of one cutoff and group.</p><h4>Means and counts</h4>"
                "{{ means }}"
                "<h4>Tests</h4>{{ tests }}{{ unpaired }}",
                path=str(comparison.path),
                paired_by=_paired_by(comparison),
                means=tables[0],
                tests=tables[1],
                unpaired=_unpaired(comparison),
            )
        )
    return Markup("").join(parts)


def _paired_by(comparison: ComparisonOutput) -> str:
    """``query``, or for partitioned systems ``partition (dt) and query, the rows pooled over every
    paired partition`` (the per-partition rows are in comparison.parquet)."""
    options = comparison.manifest.get("options")
    keys = options.get("partition_by") if isinstance(options, dict) else None
    if not isinstance(keys, list) or not keys:
        return "query"
    return (
        f"partition ({', '.join(map(str, keys))}) and query; shown: the rows pooled over every paired partition "
        "(each partition's rows are in comparison.parquet)"
    )


def _summary_group_cell(row: dict[str, object], group: str, overall: bool) -> str:
    """``overall`` on the overall rows, ``(null)`` for the null group, ``-`` where a system has no
    such group column."""
    if overall:
        return OVERALL_LABEL
    if group not in row:
        return "-"
    return "(null)" if row[group] is None else str(row[group])


def _comparison_cell(column: str, value: object, groups: list[str], overall: bool = True) -> Markup:
    if column in ("baseline", "candidate", "correction"):
        return fragment("<td>{{ v }}</td>", v=value)
    if column in groups:  # "overall" on the overall rows; a null group value is a group of its own
        return fragment("<td>{{ v }}</td>", v=(OVERALL_LABEL if overall else "(null)") if value is None else value)
    if column == "k":
        return fragment('<td data-column="k">{{ v }}</td>', v=k_text(value))
    return cell(column, value)


def _unpaired(comparison: ComparisonOutput) -> Markup:
    one_sided = comparison.deltas.filter(pl.col("in_baseline") != pl.col("in_candidate"))
    if one_sided.height == 0:
        return Markup("<p>Every query is in both systems of each pair.</p>")
    listed = (
        one_sided.with_columns(
            pl.when(pl.col("in_baseline")).then(pl.col("baseline")).otherwise(pl.col("candidate")).alias("only_in")
        )
        .group_by("baseline", "candidate", "only_in", maintain_order=True)
        .agg(pl.col("query_id").cast(pl.String).unique().sort())
    )
    return fragment(
        '<ul class="unpaired">{% for r in rows %}<li>{{ r.query_id|length }} only in {{ r.only_in }} '
        "({{ r.baseline }} vs {{ r.candidate }}): {{ r.query_id[:20]|join(', ') }}"
        "{% if r.query_id|length > 20 %} …{% endif %}</li>{% endfor %}</ul>",
        rows=list(listed.iter_rows(named=True)),
    )


def cutoffs_section(inputs: ReportInputs) -> tuple[Markup, list[Figure]]:
    curves = {}
    for system in inputs.systems:
        ordered = system.summary.sort("k", nulls_last=True)
        curves[system.name] = ordered.select(
            pl.col("k").cast(pl.String).fill_null("all").alias("label"), pl.col("ndcg")
        )
    for comparison in inputs.comparisons:
        overall = comparison.overall().sort("k", nulls_last=True)
        for side in ("baseline", "candidate"):
            for name in overall[side].unique(maintain_order=True).to_list():
                if name in curves:
                    continue
                first_pair = overall.filter(pl.col(side) == name)
                first_pair = first_pair.filter(
                    pl.col("baseline") == first_pair["baseline"][0], pl.col("candidate") == first_pair["candidate"][0]
                )
                curves[name] = first_pair.select(
                    pl.col("k").cast(pl.String).fill_null("all").alias("label"), pl.col(f"mean_{side}").alias("ndcg")
                )
    figure = Figure(
        "ndcg_by_k", f"Mean {inputs.measure}@k per cutoff and system", figures.ndcg_by_cutoff(curves, inputs.measure)
    )
    note = Markup(
        "<p>From <code>summary.parquet</code>; systems known only from a comparison show the means over the "
        "queries that comparison paired.</p>"
    )
    return note, [figure]


def distribution_section(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
    scores = _system_scores(inputs, k)
    label = cutoff_label(k)
    figure = Figure(
        "distribution", f"Per-query {inputs.measure}@{label}", figures.distribution(scores, label, inputs.measure)
    )
    rows = [
        {"name": name, "cells": [cell("queries", values.len())] + [cell(s, v) for s, v in _quantiles(values)]}
        for name, values in scores.items()
    ]
    return (
        fragment(
            '<p>Cutoff k = {{ label }}.</p><table id="distribution-table"><thead><tr>'
            "{% for c in header %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>{% for r in rows %}"
            '<tr data-system="{{ r.name }}"><td>{{ r.name }}</td>{% for c in r.cells %}{{ c }}{% endfor %}</tr>'
            "{% endfor %}</tbody></table>",
            label=label,
            header=("system", "queries", "min", "25%", "median", "75%", "max"),
            rows=rows,
        ),
        [figure],
    )


def _quantiles(values: pl.Series) -> list[tuple[str, float | None]]:
    if values.len() == 0:
        return [(name, None) for name in ("min", "q25", "median", "q75", "max")]
    quantile = values.quantile
    return [
        ("min", values.min()),  # type: ignore[list-item]
        ("q25", quantile(0.25, "linear")),
        ("median", quantile(0.5, "linear")),
        ("q75", quantile(0.75, "linear")),
        ("max", values.max()),  # type: ignore[list-item]
    ]


def _pairs(inputs: ReportInputs, k: int | None) -> list[tuple[str, str, pl.DataFrame]]:
    """``(baseline, candidate, deltas at k)``: from comparisons, else the first evaluation
    paired with each other one on their common queries."""
    found = []
    for comparison in inputs.comparisons:
        at_k = comparison.deltas.filter(at_cutoff(k), pl.col("delta").is_not_null())
        for (baseline, candidate), part in at_k.group_by("baseline", "candidate", maintain_order=True):
            found.append((str(baseline), str(candidate), part))
    if not found and any(s.partition for s in inputs.systems):
        return _partition_pairs(inputs, k)
    if not found and len(inputs.systems) > 1:
        first = inputs.systems[0]
        for other in inputs.systems[1:]:
            paired = pair(first.per_query.filter(at_cutoff(k)), other.per_query.filter(at_cutoff(k)))
            found.append((first.name, other.name, paired.filter(pl.col("delta").is_not_null())))
    return [(b, c, part.sort("delta", "query_id")) for b, c, part in found]


def _partition_pairs(inputs: ReportInputs, k: int | None) -> list[tuple[str, str, pl.DataFrame]]:
    """Partitioned evaluation outputs without a comparison: the first output against each other
    one on the latest partition both have (two days of one model are not a pair)."""
    families: dict[str, dict[str, System]] = {}
    for system in inputs.systems:
        families.setdefault(system.family or system.name, {})[str(system.partition or "")] = system
    names = list(families)
    found = []
    for other in names[1:]:
        shared = sorted(set(families[names[0]]) & set(families[other]))
        if not shared:
            continue
        first, second = families[names[0]][shared[-1]], families[other][shared[-1]]
        paired = pair(first.per_query.filter(at_cutoff(k)), second.per_query.filter(at_cutoff(k)))
        found.append((first.name, second.name, paired.filter(pl.col("delta").is_not_null())))
    return [(b, c, part.sort("delta", "query_id")) for b, c, part in found]


_DELTA_COLUMNS = frozenset(
    {"baseline", "candidate", "query_id", "k", "delta", "in_baseline", "in_candidate"}
    | {"ndcg_baseline", "ndcg_candidate"}
)


def differences_section(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
    pairs = _pairs(inputs, k)
    if not pairs:
        return Markup("<p>Only one system: nothing to compare. Give two evaluation outputs or a comparison.</p>"), []
    label = cutoff_label(k)
    shown, figures_made = [], []
    for index, (baseline, candidate, deltas) in enumerate(pairs):
        figures_made.append(
            Figure(
                f"differences_{index + 1}",
                f"{candidate} − {baseline}, {inputs.measure}@{label}, per query",
                figures.differences(deltas, baseline, candidate, label, inputs.measure),
            )
        )
        extremes = pl.concat([deltas.head(3), deltas.tail(3)]).unique("query_id", maintain_order=True)
        groups = [c for c in deltas.columns if c not in _DELTA_COLUMNS]  # the --group-by columns, if any
        rows = [
            [fragment("<td>{{ v }}</td>", v=row["query_id"])]
            + [fragment("<td>{{ v }}</td>", v="(null)" if row[g] is None else row[g]) for g in groups]
            + [cell(c, row[c]) for c in ("ndcg_baseline", "ndcg_candidate", "delta")]
            for row in extremes.iter_rows(named=True)
        ]
        shown.append(
            fragment(
                "<h3>{{ candidate }} vs {{ baseline }}</h3><p>Largest losses and gains at k = {{ label }}:</p>"
                '<table class="differences-table"><thead><tr><th>query</th>{% for g in groups %}<th>{{ g }}</th>'
                "{% endfor %}<th>{{ baseline }}</th><th>{{ candidate }}</th><th>difference</th></tr></thead><tbody>"
                "{% for r in rows %}<tr>{% for c in r %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table>",
                baseline=baseline,
                candidate=candidate,
                label=label,
                groups=groups,
                rows=rows,
            )
        )
    return Markup("").join(shown), figures_made


def groups_section(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
    label = cutoff_label(k)
    for comparison in inputs.comparisons:
        groups = comparison.group_columns
        if not groups:
            continue
        # a null group value is a group of its own (the overall rows are marked apart)
        group_label = pl.concat_str([pl.col(g).cast(pl.String).fill_null("(null)") for g in groups], separator=" / ")
        table = (
            comparison.by_group()
            .filter(at_cutoff(k))
            .with_columns(
                group_label.alias("group"),
                pl.concat_str(pl.col("candidate"), pl.lit(" vs "), pl.col("baseline")).alias("pair"),
            )
        )
        png = figures.group_bars(
            table,
            "group",
            "mean_difference",
            "pair",
            f"Mean difference of {inputs.measure}@{label} per {' / '.join(groups)} "
            f"(whiskers: {table['confidence'][0]:.0%} CI)",
            "candidate − baseline",
        )
        return (
            fragment(
                "<p>Per {{ g }}: rows with a group value in the comparison table above.</p>", g=" / ".join(groups)
            ),
            [Figure("groups", f"Mean difference per {' / '.join(groups)}", png)],
        )
    grouped = [s for s in inputs.systems if s.group_columns]
    if grouped:
        return _system_groups(grouped, k, inputs.measure)
    return (
        Markup(
            "<p>No group columns in these outputs (compare with <code>--group-by</code>, or evaluate tables that "
            "carry a group column).</p>"
        ),
        [],
    )


def _system_groups(grouped: list, k: int | None, measure: str) -> tuple[Markup, list[Figure]]:
    label = cutoff_label(k)
    groups = grouped[0].group_columns
    means = pl.concat(
        [
            s.per_query.filter(at_cutoff(k))
            .group_by(groups, maintain_order=True)
            .agg(pl.col("ndcg").mean(), pl.len().alias("queries"))
            .with_columns(pl.lit(s.name).alias("system"))
            for s in grouped
            if s.group_columns == groups
        ]
    ).with_columns(
        # a null group value is a group of its own
        pl.concat_str([pl.col(g).cast(pl.String).fill_null("(null)") for g in groups], separator=" / ").alias("group")
    )
    means = means.sort("group", maintain_order=True)
    png = figures.group_bars(
        means, "group", "ndcg", "system", f"Mean {measure}@{label} per {' / '.join(groups)}", f"mean {measure}"
    )
    rows = [
        {
            "system": row["system"],
            "group": row["group"],
            "cells": [cell("queries", row["queries"]), cell("ndcg", row["ndcg"])],
        }
        for row in means.iter_rows(named=True)
    ]
    return (
        fragment(
            '<table id="groups-table"><thead><tr><th>system</th><th>{{ groups }}</th><th>queries</th>'
            "<th>mean {{ measure }}@{{ label }}</th></tr></thead><tbody>{% for r in rows %}<tr><td>{{ r.system }}</td>"
            "<td>{{ r.group }}</td>{% for c in r.cells %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table>",
            groups=" / ".join(groups),
            label=label,
            measure=measure,
            rows=rows,
        ),
        [Figure("groups", f"Mean {measure} per {' / '.join(groups)}", png)],
    )


_KEY_VALUES = (
    '<table class="conventions-table">{% for key, value in items %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>'
    "{% endfor %}</table>"
)


def recorded_conventions(inputs: ReportInputs) -> dict[str, dict[str, object] | None]:
    recorded: dict[str, dict[str, object] | None] = {s.name: s.conventions for s in inputs.systems}
    for comparison in inputs.comparisons:
        for name, conventions in comparison.conventions().items():
            recorded.setdefault(name, conventions)
    return recorded


def conventions_section(inputs: ReportInputs) -> Markup:
    recorded = recorded_conventions(inputs)
    parts = []
    for name, conventions in recorded.items():
        if conventions is None:
            parts.append(fragment('<h3>{{ name }}</h3><p class="not-recorded">conventions not recorded</p>', name=name))
            continue
        parts.append(fragment("<h3>{{ name }}</h3>" + _KEY_VALUES, name=name, items=list(conventions.items())))
    distinct = {repr(c) for c in recorded.values() if c is not None}
    if len(distinct) > 1:
        parts.insert(0, Markup('<p class="warning">The systems were evaluated with different conventions.</p>'))
    for comparison in inputs.comparisons:
        options = comparison.manifest.get("options")
        if isinstance(options, dict):
            parts.append(fragment("<h3>Comparison options</h3>" + _KEY_VALUES, items=list(options.items())))
    return Markup("").join(parts)


def ties_section(inputs: ReportInputs) -> Markup:
    with_bounds = [s for s in inputs.systems if s.has_tie_bounds]
    if not with_bounds:
        return Markup(
            "<p>Not recorded: the per-query tables carry no <code>ndcg_min</code>/<code>ndcg_max</code> columns "
            "(the range NDCG can take over every order of tied scores).</p>"
        )
    rows = []
    for system in with_bounds:
        table = (
            system.per_query.group_by("k")
            .agg(
                pl.len().alias("queries"),
                ((pl.col("ndcg_max") - pl.col("ndcg_min")) > 1e-12).sum().alias("tie_sensitive"),
                pl.col("ndcg_min").mean().alias("mean_ndcg_min"),
                pl.col("ndcg").mean().alias("mean_ndcg"),
                pl.col("ndcg_max").mean().alias("mean_ndcg_max"),
            )
            .sort("k", nulls_last=True)
        )
        columns = ("queries", "tie_sensitive", "mean_ndcg_min", "mean_ndcg", "mean_ndcg_max")
        rows += [
            {"system": system.name, "k": k_text(row["k"]), "cells": [cell(c, row[c]) for c in columns]}
            for row in table.iter_rows(named=True)
        ]
    return fragment(
        "<p>Mean NDCG if tied scores were ordered least and most favourably, beside the reported value.</p>"
        '<table id="ties-table"><thead><tr>{% for c in header %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>'
        '{% for r in rows %}<tr data-system="{{ r.system }}"><td>{{ r.system }}</td><td>{{ r.k }}</td>'
        "{% for c in r.cells %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table>",
        header=("system", "k", "queries", "queries whose NDCG depends on tie order", "min", "reported", "max"),
        rows=rows,
    )


# --- the verdict: the page's first lines -----------------------------------------------------

# the level a comparison's p-value is read at when no gate recorded one
DEFAULT_ALPHA = 0.05


def verdict_section(inputs: ReportInputs, k: int | None) -> Markup:
    """One sentence per pair of each comparison, over all queries at cutoff ``k``: the candidate's
    difference with its interval and adjusted p-value, and whether it is significant at the
    gate's alpha (0.05 without a gate), then the gate's own verdict when one was recorded, e.g.
    ``b vs a: NDCG@10 +0.0180 (0.3531 against 0.3351, +5.4%), 95% interval [-0.0190, +0.0550],
    p = 0.33 (Holm): not significant at alpha 0.05``."""
    sentences = []
    for comparison in inputs.comparisons:
        gate = comparison.manifest.get("gate")
        gate = gate if isinstance(gate, dict) else {}
        recorded = gate.get("alpha")
        alpha = float(recorded) if isinstance(recorded, int | float) else DEFAULT_ALPHA
        for row in comparison.overall().filter(at_cutoff(k)).iter_rows(named=True):
            sentences.append(_verdict(row, inputs.measure, k, alpha))
        if gate:
            passed = gate.get("passed")
            held = [f"--fail-if-worse {gate.get('margin')}, alpha {alpha}"] if gate.get("margin") is not None else []
            if gate.get("max_drop") is not None:
                held.append(f"--fail-if-drop-over {gate.get('max_drop')}: the drop alone, no test")
            if gate.get("min_judged") is not None:
                held.append(f"--min-judged {gate.get('min_judged')}: the candidate's Judged@k")
            sentences.append(
                f"Regression gate ({'; '.join(held)}): "
                + ("passed" if passed else "FAILED" if passed is False else "not recorded")
            )
    if not sentences:
        return Markup("")
    return fragment(
        '<div id="verdict"><p><strong>Verdict</strong></p><ul>{% for s in sentences %}<li>{{ s }}</li>'
        "{% endfor %}</ul></div>",
        sentences=sentences,
    )


def _verdict(row: dict[str, object], measure: str, k: int | None, alpha: float) -> str:
    name = f"{measure}@{k_text(k)}"
    difference, p = row.get("mean_difference"), row.get("p_adjusted_permutation")
    if not isinstance(difference, float) or not isinstance(p, float):
        return f"{text_value(row['candidate'])} vs {text_value(row['baseline'])}: {name}: no paired query to compare"
    confidence = row.get("confidence") if isinstance(row.get("confidence"), float) else 0.95
    relative = row.get("relative_change")
    low, high = row.get("ci_low"), row.get("ci_high")
    interval = (
        f", {confidence:.0%} interval [{low:+.4f}, {high:+.4f}]"
        if isinstance(low, float) and isinstance(high, float)
        else ""
    )
    significant = "significant" if p < alpha else "not significant"
    return (
        f"{text_value(row['candidate'])} vs {text_value(row['baseline'])}: {name} {difference:+.4f} "
        f"({row['mean_candidate']:.4f} against {row['mean_baseline']:.4f}"
        + (f", {relative:+.1%})" if isinstance(relative, float) else ")")
        + f"{interval}, p = {p:.2g} ({str(row.get('correction') or 'unadjusted').title()}): "
        f"{significant} at alpha {alpha:g}"
    )
