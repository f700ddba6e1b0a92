"""One self-contained HTML report (figures inlined as base64 PNG, no scripts, no network)
from evaluation and comparison outputs.

The page is rendered by Jinja2 with autoescape, so every value read from the outputs is text
on the page. It carries ``<meta name="generator" content="ndcg-pipeline ...">`` and each PNG a
``Software`` text chunk saying the same: an existing file is replaced only when it is one of
ours (never an input of the report, never a file of the user's), through the staging helper of
:mod:`pipeline.io.write`.
"""

from __future__ import annotations

import base64
import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path

import jinja2
import polars as pl
from markupsafe import Markup

from pipeline import compare
from pipeline.compare import cutoff_label, pair, select_cutoffs
from pipeline.compare_job import check_conventions
from pipeline.errors import InvalidInput
from pipeline.io.write import GENERATOR, OutputError, check_file_target, write_files
from pipeline.report import figures
from pipeline.report.load import ComparisonOutput, ReportInputs, System, load, measure_inputs
from pipeline.spec import MEASURE_NAMES, PRIMARY_MEASURE

SECTIONS = (
    ("summary", "Summary"),
    ("trend", "Trend by partition"),
    ("cutoffs", "{measure}@k by k"),
    ("distribution", "Distribution of per-query {measure}"),
    ("differences", "Per-query differences"),
    ("groups", "Per group"),
    ("conventions", "Conventions"),
    ("ties", "Tie diagnostics"),
)
SUMMARY_COLUMNS = ("queries", *MEASURE_NAMES)
# The comparison's own columns, less the pair's names (shown apart) and the test settings
# (the same on every row), in the comparison's order.
COMPARISON_COLUMNS = tuple(
    column
    for column in compare.COMPARISON_COLUMNS
    if column not in ("baseline", "candidate", "t_statistic", "permutations", "bootstrap_samples", "confidence", "seed")
)
DIGITS = 4
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


@dataclass(frozen=True)
class Figure:
    slug: str
    caption: str
    png: bytes


def build_report(
    paths: list[str],
    *,
    html_path: str | Path,
    png_dir: str | Path | None = None,
    cutoff: int | None = None,
    cutoff_given: bool = False,
    title: str = "NDCG report",
    allow_different_conventions: bool = False,
    names: list[str] | None = None,
    measure: str = PRIMARY_MEASURE,
) -> list[Path]:
    """Write the report (and, with ``png_dir``, each figure as a PNG); return the files written.
    Where they would replace an input or a file that is not one of ours, nothing is written.
    Outputs evaluated with different conventions are refused as ``ndcg compare`` refuses them,
    and a ``cutoff`` an output lacks as well (exit 2). ``measure`` is the per-query column
    reported (default ndcg; the page's NDCG figures then show it)."""
    target = Path(html_path)
    _check_not_an_input(target, paths)
    check_file_target(target, is_our_report, "--html")
    inputs = measure_inputs(load(paths, names), measure)
    if not inputs.systems and not inputs.comparisons:
        raise InvalidInput("nothing to report: give at least one output directory")
    check_conventions(_recorded_conventions(inputs), allow_different_conventions)
    if cutoff_given:
        tables = {s.name: s.per_query for s in inputs.systems}
        tables.update({str(c.path): c.deltas for c in inputs.comparisons})
        select_cutoffs(tables, (cutoff,))
    k = cutoff if cutoff_given else _default_cutoff(inputs)
    why = "chosen with --k" if cutoff_given else _default_cutoff_reason(inputs, k)
    sections: dict[str, tuple[Markup, list[Figure]]] = {
        "summary": (_summary(inputs), []),
        "trend": _trend(inputs, k),
        "cutoffs": _cutoffs(inputs),
        "distribution": _distribution(inputs, k),
        "differences": _differences(inputs, k),
        "groups": _groups(inputs, k),
        "conventions": (_conventions(inputs), []),
        "ties": (_ties(inputs), []),
    }
    page = _page(title, inputs, k, sections, why)
    pngs = {}
    if png_dir is not None:
        directory = Path(png_dir)
        if directory.exists() and not directory.is_dir():
            raise OutputError(f"--png {directory} is a file, not a folder: give a folder for the figures")
        pngs = {directory / f"{f.slug}.png": f.png for _, section_figures in sections.values() for f in section_figures}
        for path in pngs:  # every file checked before any is written
            _check_not_an_input(path, paths)
            check_file_target(path, is_our_png, "--png")
    # one unit: a failure writing any figure leaves no page (nor figure) behind
    return write_files(
        [(target, page.encode("utf-8"), is_our_report, "--html")]
        + [(path, png, is_our_png, "--png") for path, png in pngs.items()]
    )


def _check_not_an_input(path: Path, inputs: list[str]) -> None:
    read = {"per_query.parquet", "summary.parquet", "comparison.parquet", "deltas.parquet", "manifest.json"}
    resolved = os.path.realpath(path)
    for given in inputs:
        source = Path(given)
        files = [source / name for name in read] if source.is_dir() else [source]
        if any(os.path.realpath(file) == resolved for file in files):
            raise OutputError(f"{path} is an input of this report ({given}); it is left as it is: write elsewhere")


def is_our_report(path: Path) -> bool:
    """A page this tool wrote: its head names ndcg-pipeline as the generator."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError:
        return False
    return b'<meta name="generator" content="ndcg-pipeline' in head


def is_our_png(path: Path) -> bool:
    """A figure this tool wrote: a PNG whose ``Software`` text chunk names ndcg-pipeline."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return data.startswith(b"\x89PNG\r\n\x1a\n") and figures.software(data).startswith("ndcg-pipeline")


# --- choosing what to show -----------------------------------------------------------------


def _cutoffs_present(inputs: ReportInputs) -> list[set[int | None]]:
    present = [set(s.per_query["k"].unique().to_list()) for s in inputs.systems]
    return present + [set(c.deltas["k"].unique().to_list()) for c in inputs.comparisons]


def _default_cutoff(inputs: ReportInputs) -> int | None:
    """The cutoff most tables have (10 among equals, else the smallest of them); the whole
    ranking when no table has a cutoff."""
    present = _cutoffs_present(inputs)
    counts: dict[int, int] = {}
    for ks in present:
        for k in ks:
            if k is not None:
                counts[k] = counts.get(k, 0) + 1
    if not counts:
        return None
    most = max(counts.values())
    best = sorted(k for k, count in counts.items() if count == most)
    return 10 if 10 in best else best[0]


def _default_cutoff_reason(inputs: ReportInputs, k: int | None) -> str:
    present = _cutoffs_present(inputs)
    having = sum(k in ks for ks in present)
    if k is None:
        return "no table has a cutoff, so the whole ranking"
    return (
        f"the cutoff most tables have ({having} of {len(present)}; 10 preferred among equals); choose another with --k"
    )


def _at(k: int | None) -> pl.Expr:
    return pl.col("k").is_null() if k is None else pl.col("k") == k


def _system_scores(inputs: ReportInputs, k: int | None) -> dict[str, pl.Series]:
    """Per-query NDCG at k per system: from per_query.parquet, or from a comparison's deltas
    for systems only a comparison names."""
    scores = {s.name: s.per_query.filter(_at(k))["ndcg"] for s in inputs.systems}
    for comparison in inputs.comparisons:
        for side in ("baseline", "candidate"):
            rows = comparison.deltas.filter(_at(k), pl.col(f"in_{side}"))
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
    # the group columns of any grouped summary: "all" on the overall rows, "(null)" for the null group
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
                    "k": _label(row["k"]),
                    "cells": [_cell(column, row.get(column)) for column in shown],
                }
            )
    return _html(
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


def _summary(inputs: ReportInputs) -> Markup:
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
                _html(
                    '<div class="wide"><table class="comparison-table" id="{{ table_id }}"><thead><tr>'
                    "{% for c in columns %}<th>{{ c.replace('_', ' ') }}</th>{% endfor %}</tr></thead><tbody>"
                    "{% for r in rows %}<tr>{% for c in r %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table></div>",
                    table_id=table_id,
                    columns=columns,
                    rows=cells,
                )
            )
        parts.append(
            _html(
                "<h3>Comparison ({{ path }})</h3><p>Paired by {{ paired_by }}; difference = candidate − baseline; "
                "rows with group <em>all</em> hold every query. p-values are two-sided; adjusted p-values use the "
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
    """``all`` on the overall rows, ``(null)`` for the null group, ``-`` where a system has no
    such group column."""
    if overall:
        return "all"
    if group not in row:
        return "-"
    return "(null)" if row[group] is None else str(row[group])


def _comparison_cell(column: str, value: object, groups: list[str], overall: bool = True) -> Markup:
    if column in ("baseline", "candidate", "correction"):
        return _html("<td>{{ v }}</td>", v=value)
    if column in groups:  # "all" on the overall rows; a null group value is a group of its own
        return _html("<td>{{ v }}</td>", v=("all" if overall else "(null)") if value is None else value)
    if column == "k":
        return _html('<td data-column="k">{{ v }}</td>', v=_label(value))
    return _cell(column, value)


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
    return _html(
        '<ul class="unpaired">{% for r in rows %}<li>{{ r.query_id|length }} only in {{ r.only_in }} '
        "({{ r.baseline }} vs {{ r.candidate }}): {{ r.query_id[:20]|join(', ') }}"
        "{% if r.query_id|length > 20 %} …{% endif %}</li>{% endfor %}</ul>",
        rows=list(listed.iter_rows(named=True)),
    )


def _cutoffs(inputs: ReportInputs) -> tuple[Markup, list[Figure]]:
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


def _distribution(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
    scores = _system_scores(inputs, k)
    label = cutoff_label(k)
    figure = Figure(
        "distribution", f"Per-query {inputs.measure}@{label}", figures.distribution(scores, label, inputs.measure)
    )
    rows = [
        {"name": name, "cells": [_cell("queries", values.len())] + [_cell(s, v) for s, v in _quantiles(values)]}
        for name, values in scores.items()
    ]
    return (
        _html(
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
        at_k = comparison.deltas.filter(_at(k), pl.col("delta").is_not_null())
        for (baseline, candidate), part in at_k.group_by("baseline", "candidate", maintain_order=True):
            found.append((str(baseline), str(candidate), part))
    if not found and any(s.partition for s in inputs.systems):
        return _partition_pairs(inputs, k)
    if not found and len(inputs.systems) > 1:
        first = inputs.systems[0]
        for other in inputs.systems[1:]:
            paired = pair(first.per_query.filter(_at(k)), other.per_query.filter(_at(k)))
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
        paired = pair(first.per_query.filter(_at(k)), second.per_query.filter(_at(k)))
        found.append((first.name, second.name, paired.filter(pl.col("delta").is_not_null())))
    return [(b, c, part.sort("delta", "query_id")) for b, c, part in found]


_DELTA_COLUMNS = frozenset(
    {"baseline", "candidate", "query_id", "k", "delta", "in_baseline", "in_candidate"}
    | {"ndcg_baseline", "ndcg_candidate"}
)


def _differences(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
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
            [_html("<td>{{ v }}</td>", v=row["query_id"])]
            + [_html("<td>{{ v }}</td>", v="(null)" if row[g] is None else row[g]) for g in groups]
            + [_cell(c, row[c]) for c in ("ndcg_baseline", "ndcg_candidate", "delta")]
            for row in extremes.iter_rows(named=True)
        ]
        shown.append(
            _html(
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


def _groups(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
    label = cutoff_label(k)
    for comparison in inputs.comparisons:
        groups = comparison.group_columns
        if not groups:
            continue
        # a null group value is a group of its own (the overall rows are marked apart)
        group_label = pl.concat_str([pl.col(g).cast(pl.String).fill_null("(null)") for g in groups], separator=" / ")
        table = (
            comparison.by_group()
            .filter(_at(k))
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
            _html("<p>Per {{ g }}: rows with a group value in the comparison table above.</p>", g=" / ".join(groups)),
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
            s.per_query.filter(_at(k))
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
            "cells": [_cell("queries", row["queries"]), _cell("ndcg", row["ndcg"])],
        }
        for row in means.iter_rows(named=True)
    ]
    return (
        _html(
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


def _recorded_conventions(inputs: ReportInputs) -> dict[str, dict[str, object] | None]:
    recorded: dict[str, dict[str, object] | None] = {s.name: s.conventions for s in inputs.systems}
    for comparison in inputs.comparisons:
        for name, conventions in comparison.conventions().items():
            recorded.setdefault(name, conventions)
    return recorded


def _conventions(inputs: ReportInputs) -> Markup:
    recorded = _recorded_conventions(inputs)
    parts = []
    for name, conventions in recorded.items():
        if conventions is None:
            parts.append(_html('<h3>{{ name }}</h3><p class="not-recorded">conventions not recorded</p>', name=name))
            continue
        parts.append(_html("<h3>{{ name }}</h3>" + _KEY_VALUES, name=name, items=list(conventions.items())))
    distinct = {repr(c) for c in recorded.values() if c is not None}
    if len(distinct) > 1:
        parts.insert(0, Markup('<p class="warning">The systems were evaluated with different conventions.</p>'))
    for comparison in inputs.comparisons:
        options = comparison.manifest.get("options")
        if isinstance(options, dict):
            parts.append(_html("<h3>Comparison options</h3>" + _KEY_VALUES, items=list(options.items())))
    return Markup("").join(parts)


def _ties(inputs: ReportInputs) -> Markup:
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
            {"system": system.name, "k": _label(row["k"]), "cells": [_cell(c, row[c]) for c in columns]}
            for row in table.iter_rows(named=True)
        ]
    return _html(
        "<p>Mean NDCG if tied scores were ordered least and most favourably, beside the reported value.</p>"
        '<table id="ties-table"><thead><tr>{% for c in header %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>'
        '{% for r in rows %}<tr data-system="{{ r.system }}"><td>{{ r.system }}</td><td>{{ r.k }}</td>'
        "{% for c in r.cells %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table>",
        header=("system", "k", "queries", "queries whose NDCG depends on tie order", "min", "reported", "max"),
        rows=rows,
    )


# --- HTML ----------------------------------------------------------------------------------

_ENVIRONMENT = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


@functools.cache
def _template(text: str) -> jinja2.Template:
    return _ENVIRONMENT.from_string(text)


def _html(text: str, **values: object) -> Markup:
    """A fragment rendered with every value escaped (fragments passed in are already Markup)."""
    return Markup(_template(text).render(**values))


def _label(k: object) -> str:
    """``all`` for the whole ranking; anything else as text (a hand-edited table may hold anything)."""
    return "all" if k is None else str(k)


def _cell(column: str, value: object) -> Markup:
    """A table cell whose text is rounded for people and whose ``data-value`` keeps every digit,
    so that tests (and curious readers) can compare it with the Parquet outputs."""
    cell = '<td data-column="{{ column }}"{% if data is not none %} data-value="{{ data }}"{% endif %}>{{ shown }}</td>'
    if value is None:
        return _html(cell, column=column, data=None, shown="-")
    if isinstance(value, float):
        if math.isnan(value):
            return _html(cell, column=column, data="nan", shown="NaN")
        shown = f"{value:+.1%}" if column == "relative_change" else f"{value:.{DIGITS}f}"
        if column.startswith("p_") and 0 < value < 10**-DIGITS:
            shown = f"{value:.1e}"
        return _html(cell, column=column, data=repr(value), shown=shown)
    return _html(cell, column=column, data=value, shown=value)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="{{ generator }}">
<title>{{ title }}</title><style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; padding: 0 1rem; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 1px solid #ccc; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.85rem; }
th, td { border: 1px solid #ddd; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.not-recorded, .warning { color: #b2182b; } .wide { overflow-x: auto; } nav a { margin-right: 0.8rem; }
figure { margin: 1rem 0; } figcaption { font-size: 0.85rem; color: #555; }
</style></head><body><h1>{{ title }}</h1><p id="default-cutoff">Cutoff k = <strong>{{ k }}</strong> in every
plot and per-k table unless stated: {{ why }}.</p><p>Inputs:</p><ul>
{%- for s in systems %}<li>{{ s.name }}: <code>{{ s.path }}</code></li>{% endfor -%}
{%- for c in comparisons %}<li>comparison: <code>{{ c.path }}</code></li>{% endfor -%}
</ul><nav>{% for slug, name in sections %}<a href="#{{ slug }}">{{ name }}</a>{% endfor %}</nav>
{%- for slug, name, text, images in body %}<section id="{{ slug }}"><h2>{{ name }}</h2>{{ text }}
{%- for f in images %}<figure><img id="figure-{{ f.slug }}" alt="{{ f.caption }}"
 src="data:image/png;base64,{{ f.data }}"><figcaption>{{ f.caption }}</figcaption></figure>{% endfor %}</section>
{%- endfor %}</body></html>
"""


def _page(
    title: str, inputs: ReportInputs, k: int | None, sections: dict[str, tuple[Markup, list[Figure]]], why: str = ""
) -> str:
    sections_named = [(slug, name.format(measure=inputs.measure)) for slug, name in SECTIONS]
    body = [
        (
            slug,
            name,
            sections[slug][0],
            [
                {"slug": f.slug, "caption": f.caption, "data": base64.b64encode(f.png).decode("ascii")}
                for f in sections[slug][1]
            ],
        )
        for slug, name in sections_named
    ]
    return _template(PAGE).render(
        generator=GENERATOR,
        title=title,
        k=cutoff_label(k),
        why=why,
        systems=[{"name": s.name, "path": str(s.path)} for s in inputs.systems],
        comparisons=[{"path": str(c.path)} for c in inputs.comparisons],
        sections=sections_named,
        body=body,
    )


# --- trend over partitions -----------------------------------------------------------------


def _partition_x(values: list[str]) -> tuple[list[object], bool]:
    """Partition values as dates when every one is an ISO date (a time axis), else as text."""
    import datetime

    try:
        return [datetime.date.fromisoformat(v) for v in values], True
    except ValueError:
        return list(values), False


def _trend(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
    """NDCG@k by partition value for partitioned evaluation outputs: one line per output (and per
    group when the tables carry group columns), gate failures of a comparison marked."""
    partitioned = [s for s in inputs.systems if s.partition]
    if not partitioned:
        return (
            Markup(
                "<p>No partitioned evaluation output (<code>OUT/dt=.../</code>) among the inputs: nothing to draw "
                "over time.</p>"
            ),
            [],
        )
    label = cutoff_label(k)
    keys = sorted({"/".join(s.partition or {}) for s in partitioned})
    key = keys[0] if len(keys) == 1 else "partition"
    texts = [_partition_text(s.partition or {}, key) for s in partitioned]
    xs, dated = _partition_x(texts)
    x_of = dict(zip(texts, xs, strict=True))
    lines: dict[str, list[tuple[object, float]]] = {}
    rows = []
    for system, text in zip(partitioned, texts, strict=True):
        at_k = system.per_query.filter(_at(k))
        family = system.family or system.name
        if at_k.height == 0:
            continue
        mean = at_k["ndcg"].mean()
        lines.setdefault(family, []).append((x_of[text], float(mean)))  # type: ignore[arg-type]
        rows.append({"system": family, "group": "all", "partition": text, "queries": at_k.height, "ndcg": mean})
        groups = system.group_columns
        if groups:
            means = (
                at_k.group_by(groups, maintain_order=True)
                .agg(pl.col("ndcg").mean(), pl.len().alias("queries"))
                .sort(groups, nulls_last=True)
            )
            for row in means.iter_rows(named=True):
                group = ", ".join(f"{g}={'(null)' if row[g] is None else row[g]}" for g in groups)
                lines.setdefault(f"{family} ({group})", []).append((x_of[text], float(row["ndcg"])))
                rows.append(
                    {
                        "system": family,
                        "group": group,
                        "partition": text,
                        "queries": row["queries"],
                        "ndcg": row["ndcg"],
                    }
                )
    for points in lines.values():
        points.sort(key=lambda point: point[0])  # type: ignore[arg-type,return-value]
    marks, notes = _gate_marks(inputs, k, key, x_of)
    figure = Figure(
        "trend",
        f"Mean {inputs.measure}@{label} by {key} per system and group"
        + (" (red crosses: regression gate failed)" if marks else ""),
        figures.trend(lines, marks, label, key + (" (date)" if dated else ""), inputs.measure),
    )
    table = _html(
        "<p>Mean {{ measure }}@{{ label }} of each partition of each output, from its <code>per_query.parquet</code>"
        "{% if dated %}; partition values are dates, drawn on a time axis{% endif %}.</p>{{ notes }}"
        '<table id="trend-table"><thead><tr><th>system</th><th>group</th><th>{{ key }}</th><th>queries</th>'
        "<th>mean {{ measure }}@{{ label }}</th></tr></thead><tbody>{% for r in rows %}<tr><td>{{ r.system }}</td>"
        "<td>{{ r.group }}</td><td>{{ r.partition }}</td>{{ r.queries }}{{ r.ndcg }}</tr>{% endfor %}</tbody></table>",
        label=label,
        measure=inputs.measure,
        dated=dated,
        key=key,
        notes=notes,
        rows=[{**r, "queries": _cell("queries", r["queries"]), "ndcg": _cell("ndcg", r["ndcg"])} for r in rows],
    )
    return table, [figure]


def _partition_text(partition: dict[str, str], key: str) -> str:
    if key != "partition" and len(partition) == 1:
        return next(iter(partition.values()))
    return "/".join(f"{k}={v}" for k, v in partition.items())


def _gate_marks(
    inputs: ReportInputs, k: int | None, key: str, x_of: dict[str, object]
) -> tuple[list[tuple[object, float, str]], Markup]:
    """The gate failures recorded in the comparisons' manifests: a cross on the trend where a
    partition failed (at the candidate's mean), a line of text for every failure."""
    marks: list[tuple[object, float, str]] = []
    failures = []
    for comparison in inputs.comparisons:
        gate = comparison.manifest.get("gate")
        if not isinstance(gate, dict):
            continue
        options = comparison.manifest.get("options")
        keys = options.get("partition_by") if isinstance(options, dict) else None
        for failure in gate.get("failures") or []:
            if not isinstance(failure, dict):
                continue
            where = failure.get("partition")
            failures.append(
                {
                    "pair": f"{failure.get('candidate')} vs {failure.get('baseline')}",
                    "k": failure.get("k_label"),
                    "group": failure.get("group") or "all",
                    "partition": where or "pooled",
                }
            )
            if not where or not isinstance(keys, list) or failure.get("k") != k:
                continue
            text = "/".join(str(where).split("/")) if key == "partition" else str(failure.get(keys[0]))
            if text in x_of and isinstance(failure.get("mean_candidate"), int | float):
                marks.append((x_of[text], float(failure["mean_candidate"]), f"gate: {failure.get('candidate')}"))
    if not failures:
        return marks, Markup("")
    return marks, _html(
        '<p class="warning">Regression gate failures recorded by the comparisons:</p><ul id="gate-failures">'
        "{% for f in failures %}<li>{{ f.pair }} at k={{ f.k }}, group {{ f.group }}, partition {{ f.partition }}"
        "</li>{% endfor %}</ul>",
        failures=failures,
    )
