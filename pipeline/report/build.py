"""One self-contained HTML report (figures inlined as base64 PNG, no scripts, no network)
from evaluation and comparison outputs."""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline import compare
from pipeline.compare import cutoff_label, pair
from pipeline.errors import InvalidInput
from pipeline.report import figures
from pipeline.report.load import ComparisonOutput, ReportInputs, load

SECTIONS = (
    ("summary", "Summary"),
    ("cutoffs", "NDCG@k by k"),
    ("distribution", "Distribution of per-query NDCG"),
    ("differences", "Per-query differences"),
    ("groups", "Per group"),
    ("conventions", "Conventions"),
    ("ties", "Tie diagnostics"),
)
SUMMARY_COLUMNS = ("queries", "cg", "dcg", "idcg", "ndcg")
# The comparison's own columns, less the pair's names (shown apart) and the test settings
# (the same on every row), in the comparison's order.
COMPARISON_COLUMNS = tuple(
    column
    for column in compare.COMPARISON_COLUMNS
    if column not in ("baseline", "candidate", "t_statistic", "permutations", "bootstrap_samples", "confidence", "seed")
)
DIGITS = 4


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
) -> list[Path]:
    """Write the report (and, with ``png_dir``, each figure as a PNG); return the files written."""
    inputs = load(paths)
    if not inputs.systems and not inputs.comparisons:
        raise InvalidInput("nothing to report: give at least one output directory")
    k = cutoff if cutoff_given else _default_cutoff(inputs)
    sections: dict[str, tuple[str, list[Figure]]] = {
        "summary": (_summary(inputs), []),
        "cutoffs": _cutoffs(inputs),
        "distribution": _distribution(inputs, k),
        "differences": _differences(inputs, k),
        "groups": _groups(inputs, k),
        "conventions": (_conventions(inputs), []),
        "ties": (_ties(inputs), []),
    }
    page = _page(title, inputs, k, sections)
    target = Path(html_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_name(f".{target.name}.partial")
    staged.write_text(page, encoding="utf-8")
    staged.replace(target)
    written = [target]
    if png_dir is not None:
        directory = Path(png_dir)
        directory.mkdir(parents=True, exist_ok=True)
        for _, section_figures in sections.values():
            for figure in section_figures:
                path = directory / f"{figure.slug}.png"
                path.write_bytes(figure.png)
                written.append(path)
    return written


# --- choosing what to show -----------------------------------------------------------------


def _default_cutoff(inputs: ReportInputs) -> int | None:
    """The smallest cutoff every output has; the whole ranking when they share none."""
    present = [set(s.per_query["k"].unique().to_list()) for s in inputs.systems]
    present += [set(c.deltas["k"].unique().to_list()) for c in inputs.comparisons]
    shared = set.intersection(*present) if present else set()
    finite = sorted(k for k in shared if k is not None)
    return finite[0] if finite else None


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


def _summary(inputs: ReportInputs) -> str:
    parts = []
    if inputs.systems:
        header = "".join(f"<th>{c}</th>" for c in ("system", "k", *SUMMARY_COLUMNS))
        rows = []
        for system in inputs.systems:
            for row in system.summary.iter_rows(named=True):
                cells = "".join(_cell(column, row[column]) for column in SUMMARY_COLUMNS)
                rows.append(
                    f'<tr data-system="{_e(system.name)}" data-k="{cutoff_label(row["k"])}">'
                    f"<td>{_e(system.name)}</td><td>{cutoff_label(row['k'])}</td>{cells}</tr>"
                )
        parts.append(
            "<h3>Evaluations</h3><p>Means over the evaluated queries, from each <code>summary.parquet</code>.</p>"
            f'<table id="summary-table"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        )
    for index, comparison in enumerate(inputs.comparisons):
        groups = comparison.group_columns
        columns = ["baseline", "candidate", *groups, *COMPARISON_COLUMNS]
        header = "".join(f"<th>{_e(c)}</th>" for c in columns)
        rows = []
        for row in comparison.comparison.iter_rows(named=True):
            cells = "".join(
                f"<td>{_e(row[c])}</td>"
                if c in ("baseline", "candidate", "correction")
                else f"<td>{'all' if row[c] is None else _e(row[c])}</td>"
                if c in groups
                else f'<td data-column="k">{cutoff_label(row["k"])}</td>'
                if c == "k"
                else _cell(c, row[c])
                for c in columns
            )
            rows.append(f"<tr>{cells}</tr>")
        parts.append(
            f"<h3>Comparison ({_e(comparison.path)})</h3><p>Paired by query; difference = candidate − baseline; "
            "rows with group <em>all</em> hold every query. p-values are two-sided; adjusted p-values use the "
            "correction named in each row, over the pairs of one cutoff and group.</p>"
            f'<div class="wide"><table class="comparison-table" id="comparison-table-{index}"><thead><tr>{header}'
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{_unpaired(comparison)}"
        )
    return "".join(parts)


def _unpaired(comparison: ComparisonOutput) -> str:
    one_sided = comparison.deltas.filter(pl.col("in_baseline") != pl.col("in_candidate"))
    if one_sided.height == 0:
        return "<p>Every query is in both systems of each pair.</p>"
    listed = (
        one_sided.with_columns(
            pl.when(pl.col("in_baseline")).then(pl.col("baseline")).otherwise(pl.col("candidate")).alias("only_in")
        )
        .group_by("baseline", "candidate", "only_in", maintain_order=True)
        .agg(pl.col("query_id").cast(pl.String).unique().sort())
    )
    items = "".join(
        f"<li>{len(row['query_id'])} only in {_e(row['only_in'])} ({_e(row['baseline'])} vs "
        f"{_e(row['candidate'])}): {_e(', '.join(row['query_id'][:20]))}"
        f"{' …' if len(row['query_id']) > 20 else ''}</li>"
        for row in listed.iter_rows(named=True)
    )
    return f'<ul class="unpaired">{items}</ul>'


def _cutoffs(inputs: ReportInputs) -> tuple[str, list[Figure]]:
    curves = {}
    for system in inputs.systems:
        ordered = system.summary.sort("k", nulls_last=True)
        curves[system.name] = ordered.select(
            pl.col("k").cast(pl.String).fill_null("all").alias("label"), pl.col("ndcg")
        )
    for comparison in inputs.comparisons:
        overall = comparison.comparison.filter(
            pl.all_horizontal([pl.col(g).is_null() for g in comparison.group_columns] or [pl.lit(True)])
        ).sort("k", nulls_last=True)
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
    figure = Figure("ndcg_by_k", "Mean NDCG@k per cutoff and system", figures.ndcg_by_cutoff(curves))
    note = (
        "<p>From <code>summary.parquet</code>; systems known only from a comparison show the means over the "
        "queries that comparison paired.</p>"
    )
    return note, [figure]


def _distribution(inputs: ReportInputs, k: int | None) -> tuple[str, list[Figure]]:
    scores = _system_scores(inputs, k)
    label = cutoff_label(k)
    figure = Figure("distribution", f"Per-query NDCG@{label}", figures.distribution(scores, label))
    rows = "".join(
        f'<tr data-system="{_e(name)}"><td>{_e(name)}</td>{_cell("queries", values.len())}'
        + "".join(_cell(stat, value) for stat, value in _quantiles(values))
        + "</tr>"
        for name, values in scores.items()
    )
    header = "".join(f"<th>{c}</th>" for c in ("system", "queries", "min", "25%", "median", "75%", "max"))
    return (
        f'<p>Cutoff k = {label}.</p><table id="distribution-table"><thead><tr>{header}</tr></thead>'
        f"<tbody>{rows}</tbody></table>",
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
    if not found and len(inputs.systems) > 1:
        first = inputs.systems[0]
        for other in inputs.systems[1:]:
            paired = pair(first.per_query.filter(_at(k)), other.per_query.filter(_at(k)))
            found.append((first.name, other.name, paired.filter(pl.col("delta").is_not_null())))
    return [(b, c, part.sort("delta", "query_id")) for b, c, part in found]


def _differences(inputs: ReportInputs, k: int | None) -> tuple[str, list[Figure]]:
    pairs = _pairs(inputs, k)
    if not pairs:
        return "<p>Only one system: nothing to compare. Give two evaluation outputs or a comparison.</p>", []
    label = cutoff_label(k)
    shown, figures_made = [], []
    for index, (baseline, candidate, deltas) in enumerate(pairs):
        slug = f"differences_{index + 1}"
        figures_made.append(
            Figure(
                slug,
                f"{candidate} − {baseline}, NDCG@{label}, per query",
                figures.differences(deltas, baseline, candidate, label),
            )
        )
        extremes = pl.concat([deltas.head(3), deltas.tail(3)]).unique("query_id", maintain_order=True)
        rows = "".join(
            f"<tr><td>{_e(row['query_id'])}</td>{_cell('ndcg_baseline', row['ndcg_baseline'])}"
            f"{_cell('ndcg_candidate', row['ndcg_candidate'])}{_cell('delta', row['delta'])}</tr>"
            for row in extremes.iter_rows(named=True)
        )
        shown.append(
            f"<h3>{_e(candidate)} vs {_e(baseline)}</h3><p>Largest losses and gains at k = {label}:</p>"
            f'<table class="differences-table"><thead><tr><th>query</th><th>{_e(baseline)}</th>'
            f"<th>{_e(candidate)}</th><th>difference</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(shown), figures_made


def _groups(inputs: ReportInputs, k: int | None) -> tuple[str, list[Figure]]:
    label = cutoff_label(k)
    for comparison in inputs.comparisons:
        groups = comparison.group_columns
        if not groups:
            continue
        table = comparison.comparison.filter(
            _at(k), pl.all_horizontal([pl.col(g).is_not_null() for g in groups])
        ).with_columns(
            pl.concat_str([pl.col(g).cast(pl.String) for g in groups], separator=" / ").alias("group"),
            pl.concat_str(pl.col("candidate"), pl.lit(" vs "), pl.col("baseline")).alias("pair"),
        )
        png = figures.group_bars(
            table,
            "group",
            "mean_difference",
            "pair",
            f"Mean difference of NDCG@{label} per {' / '.join(groups)} (whiskers: {table['confidence'][0]:.0%} CI)",
            "candidate − baseline",
        )
        return (
            f"<p>Per {_e(' / '.join(groups))}: rows with a group value in the comparison table above.</p>",
            [Figure("groups", f"Mean difference per {' / '.join(groups)}", png)],
        )
    grouped = [s for s in inputs.systems if s.group_columns]
    if grouped:
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
        ).with_columns(pl.concat_str([pl.col(g).cast(pl.String) for g in groups], separator=" / ").alias("group"))
        means = means.sort("group", maintain_order=True)
        png = figures.group_bars(
            means, "group", "ndcg", "system", f"Mean NDCG@{label} per {' / '.join(groups)}", "mean NDCG"
        )
        rows = "".join(
            f"<tr><td>{_e(row['system'])}</td><td>{_e(row['group'])}</td>{_cell('queries', row['queries'])}"
            f"{_cell('ndcg', row['ndcg'])}</tr>"
            for row in means.iter_rows(named=True)
        )
        return (
            f'<table id="groups-table"><thead><tr><th>system</th><th>{_e(" / ".join(groups))}</th><th>queries</th>'
            f"<th>mean NDCG@{label}</th></tr></thead><tbody>{rows}</tbody></table>",
            [Figure("groups", f"Mean NDCG per {' / '.join(groups)}", png)],
        )
    return (
        "<p>No group columns in these outputs (compare with <code>--group-by</code>, or evaluate tables that "
        "carry a group column).</p>",
        [],
    )


def _conventions(inputs: ReportInputs) -> str:
    recorded: dict[str, dict[str, object] | None] = {s.name: s.conventions for s in inputs.systems}
    for comparison in inputs.comparisons:
        for name, conventions in comparison.conventions().items():
            recorded.setdefault(name, conventions)
    parts = []
    for name, conventions in recorded.items():
        if conventions is None:
            parts.append(f'<h3>{_e(name)}</h3><p class="not-recorded">conventions not recorded</p>')
            continue
        rows = "".join(f"<tr><th>{_e(key)}</th><td>{_e(value)}</td></tr>" for key, value in conventions.items())
        parts.append(f'<h3>{_e(name)}</h3><table class="conventions-table">{rows}</table>')
    distinct = {repr(c) for c in recorded.values() if c is not None}
    if len(distinct) > 1:
        parts.insert(0, '<p class="warning">The systems were evaluated with different conventions.</p>')
    for comparison in inputs.comparisons:
        options = comparison.manifest.get("options")
        if isinstance(options, dict):
            rows = "".join(f"<tr><th>{_e(key)}</th><td>{_e(value)}</td></tr>" for key, value in options.items())
            parts.append(f'<h3>Comparison options</h3><table class="conventions-table">{rows}</table>')
    return "".join(parts)


def _ties(inputs: ReportInputs) -> str:
    with_bounds = [s for s in inputs.systems if s.has_tie_bounds]
    if not with_bounds:
        return (
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
        for row in table.iter_rows(named=True):
            cells = "".join(
                _cell(c, row[c]) for c in ("queries", "tie_sensitive", "mean_ndcg_min", "mean_ndcg", "mean_ndcg_max")
            )
            rows.append(
                f'<tr data-system="{_e(system.name)}"><td>{_e(system.name)}</td>'
                f"<td>{cutoff_label(row['k'])}</td>{cells}</tr>"
            )
    header = "".join(
        f"<th>{c}</th>"
        for c in ("system", "k", "queries", "queries whose NDCG depends on tie order", "min", "reported", "max")
    )
    return (
        "<p>Mean NDCG if tied scores were ordered least and most favourably, beside the reported value.</p>"
        f'<table id="ties-table"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


# --- HTML ----------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value))


def _cell(column: str, value: object) -> str:
    """A table cell whose text is rounded for people and whose ``data-value`` keeps every digit,
    so that tests (and curious readers) can compare it with the Parquet outputs."""
    if value is None:
        return f'<td data-column="{column}">-</td>'
    if isinstance(value, float):
        if math.isnan(value):
            return f'<td data-column="{column}" data-value="nan">NaN</td>'
        shown = f"{value:+.1%}" if column == "relative_change" else f"{value:.{DIGITS}f}"
        if column.startswith("p_") and 0 < value < 10**-DIGITS:
            shown = f"{value:.1e}"
        return f'<td data-column="{column}" data-value="{value!r}">{shown}</td>'
    return f'<td data-column="{column}" data-value="{_e(value)}">{_e(value)}</td>'


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; padding: 0 1rem; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 1px solid #ccc; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.85rem; }
th, td { border: 1px solid #ddd; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.not-recorded, .warning { color: #b2182b; } .wide { overflow-x: auto; } nav a { margin-right: 0.8rem; }
figure { margin: 1rem 0; } figcaption { font-size: 0.85rem; color: #555; }
"""


def _page(title: str, inputs: ReportInputs, k: int | None, sections: dict[str, tuple[str, list[Figure]]]) -> str:
    sources = "".join(f"<li>{_e(s.name)}: <code>{_e(s.path)}</code></li>" for s in inputs.systems) + "".join(
        f"<li>comparison: <code>{_e(c.path)}</code></li>" for c in inputs.comparisons
    )
    nav = "".join(f'<a href="#{slug}">{_e(name)}</a>' for slug, name in SECTIONS)
    body = []
    for slug, name in SECTIONS:
        text, section_figures = sections[slug]
        images = "".join(
            f'<figure><img id="figure-{f.slug}" alt="{_e(f.caption)}" '
            f'src="data:image/png;base64,{base64.b64encode(f.png).decode("ascii")}">'
            f"<figcaption>{_e(f.caption)}</figcaption></figure>"
            for f in section_figures
        )
        body.append(f'<section id="{slug}"><h2>{_e(name)}</h2>{text}{images}</section>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_e(title)}</h1><p>Plots at k = {cutoff_label(k)} unless stated. Inputs:</p><ul>{sources}</ul>"
        f"<nav>{nav}</nav>{''.join(body)}</body></html>\n"
    )
