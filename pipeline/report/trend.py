"""The report's trend section: the mean by partition value of partitioned evaluation outputs,
one line per output (and per group), with the regression gate's failures marked."""

from __future__ import annotations

import polars as pl
from markupsafe import Markup

from pipeline.compare import cutoff_label
from pipeline.groups import OVERALL_LABEL
from pipeline.judgments import check_judgments, judgment_source
from pipeline.report import figures
from pipeline.report.html import Figure, at_cutoff, cell, fragment
from pipeline.report.load import ReportInputs, System


def _partition_x(values: list[str]) -> tuple[list[object], bool]:
    """Partition values as dates when every one is an ISO date (a time axis), else as text."""
    import datetime

    try:
        return [datetime.date.fromisoformat(v) for v in values], True
    except ValueError:
        return list(values), False


def trend_section(inputs: ReportInputs, k: int | None) -> tuple[Markup, list[Figure]]:
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
        at_k = system.per_query.filter(at_cutoff(k))
        family = system.family or system.name
        if at_k.height == 0:
            continue
        mean = at_k["ndcg"].mean()
        lines.setdefault(family, []).append((x_of[text], float(mean)))  # type: ignore[arg-type]
        rows.append({"system": family, "group": OVERALL_LABEL, "partition": text, "queries": at_k.height, "ndcg": mean})
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
    rejudged, judgment_notes = _judgment_changes(partitioned, texts)
    notes = Markup(notes + judgment_notes)
    for row in rows:
        row["judgments"] = rejudged.get(str(row["partition"]), "")
    figure = Figure(
        "trend",
        f"Mean {inputs.measure}@{label} by {key} per system and group"
        + (" (red crosses: regression gate failed)" if marks else ""),
        figures.trend(lines, marks, label, key + (" (date)" if dated else ""), inputs.measure),
    )
    table = fragment(
        "<p>Mean {{ measure }}@{{ label }} of each partition of each output, from its <code>per_query.parquet</code>"
        "{% if dated %}; partition values are dates, drawn on a time axis{% endif %}.</p>{{ notes }}"
        '<table id="trend-table"><thead><tr><th>system</th><th>group</th><th>{{ key }}</th><th>queries</th>'
        "<th>mean {{ measure }}@{{ label }}</th><th>judgments</th></tr></thead><tbody>{% for r in rows %}<tr>"
        "<td>{{ r.system }}</td><td>{{ r.group }}</td><td>{{ r.partition }}</td>{{ r.queries }}{{ r.ndcg }}"
        "<td>{{ r.judgments }}</td></tr>{% endfor %}</tbody></table>",
        label=label,
        measure=inputs.measure,
        dated=dated,
        key=key,
        notes=notes,
        rows=[{**r, "queries": cell("queries", r["queries"]), "ndcg": cell("ndcg", r["ndcg"])} for r in rows],
    )
    return table, [figure]


def _judgment_changes(systems: list[System], texts: list[str]) -> tuple[dict[str, str], Markup]:
    """The partitions whose outputs were scored against different judgments (another qrels file
    or Delta version, a day judged again: :mod:`pipeline.judgments`), as their manifests record
    them: their lines do not compare there. Each such partition is marked in the trend table,
    and named, with the judgments of each output, in a warning above it."""
    by_partition: dict[str, dict[str, dict[str, object] | None]] = {}
    for system, text in zip(systems, texts, strict=True):
        by_partition.setdefault(text, {})[system.family or system.name] = system.judgments
    found = check_judgments({text: records for text, records in by_partition.items() if len(records) > 1})
    changed = {str(entry["partition"]) for entry in found.different}
    if not changed:
        return {}, Markup("")
    rows = [
        {"partition": text, "sources": "; ".join(f"{name}: {judgment_source(r)}" for name, r in records.items())}
        for text, records in by_partition.items()
        if text in changed
    ]
    marked = dict.fromkeys(changed, "changed")
    return marked, fragment(
        '<p class="warning">Judgments differ between the outputs at these partitions (marked "changed" in the '
        "table): a difference there is partly the judging's, not only the systems'.</p>"
        '<ul id="judgment-changes">{% for r in rows %}<li>{{ r.partition }}: {{ r.sources }}</li>{% endfor %}</ul>',
        rows=rows,
    )


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
        coverage = gate.get("coverage")
        below_floor = (coverage.get("failures") or []) if isinstance(coverage, dict) else []
        drop = gate.get("drop")
        beyond_drop = (drop.get("failures") or []) if isinstance(drop, dict) else []
        for failure in [*(gate.get("failures") or []), *beyond_drop, *below_floor]:
            if not isinstance(failure, dict):
                continue
            where = failure.get("partition")
            failures.append(
                {
                    "pair": f"{failure.get('candidate')} vs {failure.get('baseline')}",
                    "k": failure.get("k_label"),
                    "group": failure.get("group") or OVERALL_LABEL,
                    "partition": where or "pooled",
                    "why": f": Judged@k below --min-judged {failure['min_judged']}"
                    if "min_judged" in failure
                    else f": a drop beyond --fail-if-drop-over {failure['max_drop']}"
                    if "max_drop" in failure
                    else "",
                }
            )
            # a coverage failure has no mean of the measure to mark on the trend: listed only
            if "min_judged" in failure or not where or not isinstance(keys, list) or failure.get("k") != k:
                continue
            text = "/".join(str(where).split("/")) if key == "partition" else str(failure.get(keys[0]))
            if text in x_of and isinstance(failure.get("mean_candidate"), int | float):
                marks.append((x_of[text], float(failure["mean_candidate"]), f"gate: {failure.get('candidate')}"))
    if not failures:
        return marks, Markup("")
    return marks, fragment(
        '<p class="warning">Regression gate failures recorded by the comparisons:</p><ul id="gate-failures">'
        "{% for f in failures %}<li>{{ f.pair }} at k={{ f.k }}, group {{ f.group }}, partition {{ f.partition }}"
        "{{ f.why }}</li>{% endfor %}</ul>",
        failures=failures,
    )
