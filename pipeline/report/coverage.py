"""The report's judgment coverage, beside the tie bounds: how much of each score is unknown.

Each evaluation output's mean Judged@k (:mod:`pipeline.coverage`) at the page's cutoff, over all
queries and per group, read from its per-query ``judged`` column (nothing recomputed but means);
an output without that column is named with the flag that records it. Systems known only from a
comparison show what its gate recorded (``compare --min-judged``), or how to get it.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from markupsafe import Markup

from pipeline.coverage import JUDGED, JUDGED_FLAG
from pipeline.groups import OVERALL_LABEL
from pipeline.registry import MEASURE, PRIMARY_MEASURE
from pipeline.report.html import at_cutoff, cell, fragment, k_text
from pipeline.report.load import ComparisonOutput, ReportInputs, System

_COLUMNS = ("queries", "judged", "fully_judged", "lowest_judged")
_HEADER = ("queries", "mean Judged@k", "queries with every top-k result judged", "lowest Judged@k")


def coverage_section(inputs: ReportInputs, k: int | None) -> Markup:
    """The coverage table of the evaluation outputs that hold Judged@k, a line naming those that
    do not, and the coverage a comparison's gate recorded."""
    # with --measure judged the report shows Judged@k in NDCG's place: it is that column then
    column = PRIMARY_MEASURE if inputs.measure == MEASURE[JUDGED].title.split("@")[0] else JUDGED
    with_judged = [s for s in inputs.systems if column in s.per_query.columns]
    lacking = [s.name for s in inputs.systems if column not in s.per_query.columns]
    groups = list(dict.fromkeys(g for s in with_judged for g in s.group_columns))
    found = {system.name: _system_rows(system, column, k, groups) for system in with_judged}
    rows = [row for system_rows in found.values() for row in system_rows]
    # an output evaluated at other cutoffs than the page's has the column, but no value here
    elsewhere = [name for name, system_rows in found.items() if not system_rows]
    parts = [
        fragment(
            "<h3>Judgment coverage</h3><p>Judged@k: the share of a system's top k results that were judged "
            "(a label of 0 or more; the ranks past the results retrieved count as unjudged, as ir_measures' "
            "Judged@k), the mean over its evaluated queries{% if whole %} at every cutoff (Judged@k has no value "
            "over the whole ranking){% else %} at k = {{ k }}{% endif %}. An unjudged result gains nothing, so "
            "the lower the coverage, the more of the score is unknown rather than low.</p>",
            whole=k is None,
            k=k_text(k),
        )
    ]
    if rows:
        parts.append(
            fragment(
                '<table id="coverage-table"><thead><tr><th>system</th>{% for g in groups %}<th>{{ g }}</th>'
                "{% endfor %}<th>k</th>{% for c in header %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>"
                '{% for r in rows %}<tr data-system="{{ r.system }}" data-k="{{ r.k }}" data-overall="{{ r.overall }}">'
                "<td>{{ r.system }}</td>{% for g in r.groups %}<td>{{ g }}</td>{% endfor %}<td>{{ r.k }}</td>"
                "{% for c in r.cells %}{{ c }}{% endfor %}</tr>{% endfor %}</tbody></table>",
                groups=groups,
                header=_HEADER,
                rows=rows,
            )
        )
    if elsewhere:
        parts.append(
            fragment(
                '<p class="not-recorded">No Judged@k at k = {{ k }} for {{ names }} (evaluated at other cutoffs).</p>',
                k=k_text(k),
                names=", ".join(elsewhere),
            )
        )
    if lacking:
        parts.append(
            fragment(
                '<p class="not-recorded" id="coverage-not-recorded">Judgment coverage not recorded for '
                "{{ names }}: the per-query table has no <code>judged</code> column; evaluate with "
                "<code>{{ flag }}</code> (<code>ndcg evaluate ... {{ flag }}</code>) to record Judged@k at each "
                "cutoff.</p>",
                names=", ".join(lacking),
                flag=JUDGED_FLAG,
            )
        )
    known = {s.name for s in inputs.systems}
    for comparison in inputs.comparisons:
        parts.append(_comparison_coverage(comparison, known))
    return Markup("").join(parts)


def _system_rows(system: System, column: str, k: int | None, groups: Sequence[str]) -> list[dict[str, object]]:
    """The overall row and each group's, at ``k`` (every cutoff for the whole ranking)."""
    table = system.per_query.filter(pl.col("k").is_not_null() if k is None else at_cutoff(k))
    table = table.filter(pl.col(column).is_not_null())
    stats = (
        pl.len().alias("queries"),
        pl.col(column).mean().alias("judged"),
        (pl.col(column) >= 1).sum().alias("fully_judged"),
        pl.col(column).min().alias("lowest_judged"),
    )
    own = [g for g in groups if g in system.group_columns]
    overall = table.group_by("k").agg(*stats).with_columns(pl.lit(True).alias("_overall"))
    frames = [overall.with_columns(*(pl.lit(None, dtype=pl.String).alias(g) for g in own))]
    if own:
        grouped = table.with_columns(pl.col(own).cast(pl.String)).group_by("k", *own).agg(*stats)
        frames.append(grouped.with_columns(pl.lit(False).alias("_overall")))
    stacked = pl.concat([f.select("k", *own, "_overall", *_COLUMNS) for f in frames], how="vertical_relaxed")
    ordered = stacked.sort(["k", pl.col("_overall").not_(), *own], nulls_last=False)
    return [
        {
            "system": system.name,
            "k": k_text(row["k"]),
            "overall": "true" if row["_overall"] else "false",
            "groups": [_group_cell(row, g, own) for g in groups],
            "cells": [cell(c, row[c]) for c in _COLUMNS],
        }
        for row in ordered.iter_rows(named=True)
    ]


def _group_cell(row: dict[str, object], group: str, own: Sequence[str]) -> str:
    """``all`` on the overall rows, ``(null)`` for the null group, ``-`` where a system has no such column."""
    if row["_overall"]:
        return OVERALL_LABEL
    if group not in own:
        return "-"
    return "(null)" if row[group] is None else str(row[group])


def _comparison_coverage(comparison: ComparisonOutput, known: set[str]) -> Markup:
    """What a comparison's gate recorded of the candidates' Judged@k, or, for systems known only
    from it, how to see their coverage."""
    gate = comparison.manifest.get("gate")
    coverage = gate.get("coverage") if isinstance(gate, dict) else None
    if isinstance(coverage, dict) and isinstance(coverage.get("checks"), list):
        checks = [row for row in coverage["checks"] if isinstance(row, dict)]
        rows = [
            {
                "pair": f"{row.get('candidate')} vs {row.get('baseline')}",
                "k": row.get("k_label"),
                "group": row.get("group") or OVERALL_LABEL,
                "partition": row.get("partition") or "pooled",
                "cells": [cell("queries", row.get("judged_queries")), cell("judged", row.get(JUDGED))],
                "verdict": "FAILED" if row.get("failed") else "passed",
            }
            for row in checks
        ]
        return fragment(
            "<p>The candidates' Judged@k as the gate of {{ path }} recorded it (<code>--min-judged {{ floor }}</code>, "
            "over the queries each gated row compares):</p>"
            '<table class="coverage-gate-table"><thead><tr><th>pair</th><th>k</th><th>group</th><th>partition</th>'
            "<th>queries</th><th>mean Judged@k</th><th>verdict</th></tr></thead><tbody>{% for r in rows %}<tr>"
            "<td>{{ r.pair }}</td><td>{{ r.k }}</td><td>{{ r.group }}</td><td>{{ r.partition }}</td>"
            "{% for c in r.cells %}{{ c }}{% endfor %}<td>{{ r.verdict }}</td></tr>{% endfor %}</tbody></table>",
            path=str(comparison.path),
            floor=coverage.get("min_judged"),
            rows=rows,
        )
    unknown = [name for name in comparison.systems() if name not in known]
    if not unknown:
        return Markup("")
    return fragment(
        '<p class="not-recorded">Judgment coverage not recorded for {{ names }} (known only from the comparison '
        "{{ path }}, which keeps the compared measure alone): give their evaluation outputs, evaluated with "
        "<code>{{ flag }}</code>, or gate the comparison with <code>ndcg compare --min-judged F</code>, which "
        "records each candidate's Judged@k.</p>",
        names=", ".join(unknown),
        path=str(comparison.path),
        flag=JUDGED_FLAG,
    )
