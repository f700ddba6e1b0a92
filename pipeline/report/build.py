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
import os
from pathlib import Path

from markupsafe import Markup

from pipeline.compare import cutoff_label, select_cutoffs
from pipeline.compare_job import (
    check_conventions,
    document_weighted_systems,
    refuse_document_weights,
    weighted_systems,
)
from pipeline.errors import InvalidInput, UsageError
from pipeline.io.outputs import COMPARISON, DELTAS, MANIFEST, PER_QUERY, SUMMARY
from pipeline.io.write import GENERATOR, OutputError, check_file_target, write_files
from pipeline.registry import PRIMARY_MEASURE
from pipeline.report import figures
from pipeline.report.coverage import coverage_section
from pipeline.report.html import Figure, template
from pipeline.report.load import ReportInputs, load, measure_inputs
from pipeline.report.sections import (
    conventions_section,
    cutoffs_section,
    differences_section,
    distribution_section,
    groups_section,
    recorded_conventions,
    summary_section,
    ties_section,
    verdict_section,
)
from pipeline.report.trend import trend_section

SECTIONS = (
    ("summary", "Summary"),
    ("trend", "Trend by partition"),
    ("cutoffs", "{measure}@k by k"),
    ("distribution", "Distribution of per-query {measure}"),
    ("differences", "Per-query differences"),
    ("groups", "Per group"),
    ("conventions", "Conventions"),
    ("ties", "How much of the score is unknown: tie bounds and judgment coverage"),
)


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
    refuse_document_weights(document_weighted_systems(recorded_conventions(inputs)), "ndcg report")
    weighted = weighted_systems(recorded_conventions(inputs))
    # a comparison weighted by compare --query-weights: its rows are weighted means, its figures would not be
    options = [(c.path, c.manifest.get("options")) for c in inputs.comparisons]
    weighted += [str(path) for path, found in options if isinstance(found, dict) and found.get("query_weights")]
    if weighted:
        raise UsageError(
            f"{', '.join(weighted)} evaluated or compared with --query-weights (their manifest.json says so): "
            "ndcg report does not weigh queries yet (the means it takes of the per-query tables, its figures and "
            "comparisons count every query alike), and a report mixing weighted summaries with unweighted figures "
            "is refused; report outputs evaluated and compared without --query-weights"
        )
    check_conventions(recorded_conventions(inputs), allow_different_conventions)
    if cutoff_given:
        tables = {s.name: s.per_query for s in inputs.systems}
        tables.update({str(c.path): c.deltas for c in inputs.comparisons})
        select_cutoffs(tables, (cutoff,))
    k = cutoff if cutoff_given else _default_cutoff(inputs)
    why = "chosen with --k" if cutoff_given else _default_cutoff_reason(inputs, k)
    sections: dict[str, tuple[Markup, list[Figure]]] = {
        "summary": (summary_section(inputs), []),
        "trend": trend_section(inputs, k),
        "cutoffs": cutoffs_section(inputs),
        "distribution": distribution_section(inputs, k),
        "differences": differences_section(inputs, k),
        "groups": groups_section(inputs, k),
        "conventions": (conventions_section(inputs), []),
        "ties": (Markup("<h3>Tie bounds</h3>") + ties_section(inputs) + coverage_section(inputs, k), []),
    }
    page = _page(title, inputs, k, sections, why, verdict_section(inputs, k))
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
    read = {PER_QUERY, SUMMARY, COMPARISON, DELTAS, MANIFEST}
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
</style></head><body><h1>{{ title }}</h1>{{ verdict }}
<p id="default-cutoff">Cutoff k = <strong>{{ k }}</strong> in every plot and per-k table unless stated:
{{ why }}.</p><p>Inputs:</p><ul>
{%- for s in systems %}<li>{{ s.name }}: <code>{{ s.path }}</code></li>{% endfor -%}
{%- for c in comparisons %}<li>comparison: <code>{{ c.path }}</code></li>{% endfor -%}
</ul><nav>{% for slug, name in sections %}<a href="#{{ slug }}">{{ name }}</a>{% endfor %}</nav>
{%- for slug, name, text, images in body %}<section id="{{ slug }}"><h2>{{ name }}</h2>{{ text }}
{%- for f in images %}<figure><img id="figure-{{ f.slug }}" alt="{{ f.caption }}"
 src="data:image/png;base64,{{ f.data }}"><figcaption>{{ f.caption }}</figcaption></figure>{% endfor %}</section>
{%- endfor %}</body></html>
"""


def _page(
    title: str,
    inputs: ReportInputs,
    k: int | None,
    sections: dict[str, tuple[Markup, list[Figure]]],
    why: str = "",
    verdict: Markup | None = None,
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
    return template(PAGE).render(
        generator=GENERATOR,
        verdict=verdict or "",
        title=title,
        k=cutoff_label(k),
        why=why,
        systems=[{"name": s.name, "path": str(s.path)} for s in inputs.systems],
        comparisons=[{"path": str(c.path)} for c in inputs.comparisons],
        sections=sections_named,
        body=body,
    )
