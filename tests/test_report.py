"""`ndcg report`: one self-contained HTML file from evaluation and comparison outputs."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.report.build import SECTIONS
from tests.helpers import ROOT, run_cli
from tests.helpers.outputs import QRELS, RUN, Page, check_numbers, make_outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_outputs(tmp_path_factory.mktemp("report"))


def test_report_holds_every_section_and_the_outputs_numbers(outputs: dict[str, Path], tmp_path: Path) -> None:
    html_path, png_dir = tmp_path / "report.html", tmp_path / "figures"
    result = run_cli("report", outputs["model_a"], outputs["model_b"], outputs["cmp"], "--html", html_path,
                     "--png", png_dir)  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = html_path.read_text()
    page = Page(text)
    assert page.sections == [slug for slug, _ in SECTIONS]
    assert page.images and all(src.startswith("data:image/png;base64,") for src in page.images)
    assert page.external == [] and page.scripts == 0  # opens without a network
    check_numbers(page, outputs)
    assert "conventions not recorded" in text  # model_b has no manifest.json
    assert "every judged document with positive gain" in text  # model_a's manifest
    assert "de-DE" in text and "ties-table" in page.tables
    pngs = sorted(p.name for p in png_dir.iterdir())
    assert pngs == ["differences_1.png", "distribution.png", "groups.png", "ndcg_by_k.png"]
    assert all((png_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in pngs)
    assert all(f"wrote {png_dir / name}" in result.stdout for name in pngs)


def test_report_of_one_evaluation_says_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--out", out).returncode == 0
    result = run_cli("report", out, "--html", tmp_path / "one.html", "--k", "all")
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "one.html").read_text()
    assert "nothing to compare" in text and "No group columns" in text and "Not recorded" in text
    assert "Cutoff k = <strong>all</strong>" in text and "chosen with --k" in text


def test_report_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("report", empty, "--html", tmp_path / "r.html")
    assert result.returncode == 3 and "neither per_query.parquet" in result.stderr
    result = run_cli("report", empty, "--html", tmp_path / "r.html", "--k", "5,10")
    assert result.returncode == 2 and "one cutoff" in result.stderr


def test_report_without_matplotlib_says_how_to_install(tmp_path: Path) -> None:
    hide_matplotlib = (
        "import sys; sys.modules['matplotlib'] = None; from pipeline.cli import main; "
        f"sys.exit(main(['report', {str(tmp_path)!r}, '--html', {str(tmp_path / 'r.html')!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", hide_matplotlib], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2
    assert "pip install 'matplotlib>=3.8'" in result.stderr and "pip install -e '.[report]'" in result.stderr


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=12), st.sampled_from([0.02, 0.05, 0.1]))
def test_the_names_of_lines_are_spread_apart_in_their_order(values: list[float], gap: float) -> None:
    """The NDCG@k-by-k figure names each line at its right end; close lines (systems within a
    few hundredths) printed their names over each other. Spread, the names keep their lines'
    order, stand at least a line of text apart, stay under the top, and move only as needed."""
    from pipeline.report.figures import _spread

    placed = _spread(values, gap)
    order = sorted(range(len(values)), key=lambda i: values[i])
    stacked = [placed[i] for i in order]
    assert all(upper - lower >= gap - 1e-12 for lower, upper in itertools.pairwise(stacked))
    assert all(p <= 1.0 + 1e-12 for p in placed)
    apart = all(abs(a - b) >= gap for i, a in enumerate(values) for b in values[i + 1 :])
    if apart:
        assert placed == pytest.approx(values, abs=1e-12)


def test_a_name_far_from_the_crowd_stays_by_its_line() -> None:
    from pipeline.report.figures import _spread

    # three systems near 0.99 go down from the top, in their order (0.985 lowest); 0.5 and 0.2 stay
    assert _spread([0.5, 0.99, 0.99, 0.2, 0.985], 0.05) == pytest.approx([0.5, 0.95, 1.0, 0.2, 0.9])


def test_lines_ending_in_missing_or_nan_values_are_drawn_and_named_at_their_last_value() -> None:
    """A curve or trend whose last value is None, NaN or infinite (or has no value at all) is
    drawn, named at its last finite point, or not named: never an error (a NaN there stopped
    the naming of line ends with StopIteration, None with a TypeError)."""
    import datetime

    from pipeline.report import figures

    def curve(values: list[float | None]) -> pl.DataFrame:
        return pl.DataFrame(
            {"label": ["1", "5", "all"], "ndcg": values}, schema={"label": pl.String, "ndcg": pl.Float64}
        )

    nan, inf = float("nan"), float("inf")
    curves = {
        "a": curve([0.1, 0.2, nan]),
        "b": curve([0.1, 0.2, None]),
        "c": curve([nan] * 3),
        "d": curve([0.3, inf, 0.4]),
    }
    assert figures.ndcg_by_cutoff(curves).startswith(b"\x89PNG")
    days = [datetime.date(2026, 11, 20) + datetime.timedelta(days=i) for i in range(3)]
    lines: dict[str, list[tuple[object, float]]] = {
        "a": list(zip(days, [0.1, 0.2, nan], strict=True)),
        "b": list(zip(days, [0.1, 0.2, None], strict=True)),  # type: ignore[list-item]
        "c": list(zip(days, [nan] * 3, strict=True)),
        "d": [],
    }
    assert figures.trend(lines, [], "10", "dt").startswith(b"\x89PNG")
