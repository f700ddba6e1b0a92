"""``ndcg compare --measure`` and ``ndcg report --measure``: any measure of the per-query
tables, not only NDCG; the means compared are the evaluation's own."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from tests.helpers import ROOT

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two evaluation outputs with the companion measures: the sample run and its reverse."""
    folder = tmp_path_factory.mktemp("measures-compare")
    reversed_run = folder / "reversed.parquet"
    pl.read_parquet(RUN).with_columns(-pl.col("score")).write_parquet(reversed_run)
    outs = folder / "a", folder / "b"
    for run, out in zip((RUN, reversed_run), outs, strict=True):
        argv = ["evaluate", "--run", str(run), "--qrels", str(QRELS), "--k", "1,10"]
        assert main([*argv, "--measures", "ndcg,P,recip_rank", "--out", str(out), "--json"]) == 0
    return outs


def test_compare_by_reciprocal_rank(outputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = outputs
    capsys.readouterr()
    argv = ["compare", "--baseline", str(a), "--candidate", str(b), "--measure", "recip_rank", "--json"]
    assert main([*argv, "--permutations", "100", "--bootstrap", "100"]) == 0
    compared = json.loads(capsys.readouterr().out)
    rows = {row["k"]: row for row in compared["comparison"]}
    for out, side in ((a, "baseline"), (b, "candidate")):
        summary = {row["k"]: row for row in pl.read_parquet(out / "summary.parquet").iter_rows(named=True)}
        for k in (1, 10, None):
            assert rows[k][f"mean_{side}"] == pytest.approx(summary[k]["recip_rank"], abs=1e-12)
    assert rows[10]["mean_baseline"] != pytest.approx(rows[10]["mean_candidate"])


def test_compare_by_precision_leaves_out_the_whole_ranking(
    outputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = outputs
    out = tmp_path / "compared"
    argv = ["compare", "--baseline", str(a), "--candidate", str(b), "--measure", "P", "--out", str(out)]
    assert main([*argv, "--permutations", "100", "--bootstrap", "100"]) == 0
    comparison = pl.read_parquet(out / "comparison.parquet")
    assert sorted(comparison["k"].to_list()) == [1, 10]  # P is undefined over the whole ranking
    assert {"P_baseline", "P_candidate"} <= set(pl.read_parquet(out / "deltas.parquet").columns)
    assert json.loads((out / "manifest.json").read_text())["measure"] == "P"


def test_compare_refuses_a_measure_the_outputs_lack(
    outputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = outputs
    capsys.readouterr()
    assert main(["compare", "--baseline", str(a), "--candidate", str(b), "--measure", "map"]) == 2
    assert "no 'map' column" in capsys.readouterr().err


def test_compare_runs_scores_them_with_the_measure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reversed_run = tmp_path / "reversed.parquet"
    pl.read_parquet(RUN).with_columns(-pl.col("score")).write_parquet(reversed_run)
    argv = ["compare", "--run", str(RUN), "--run", str(reversed_run), "--qrels", str(QRELS), "--k", "5"]
    assert main([*argv, "--measure", "success", "--json", "--permutations", "100", "--bootstrap", "100"]) == 0
    rows = json.loads(capsys.readouterr().out)["comparison"]
    assert [row["k"] for row in rows] == [5]
    assert 0 <= rows[0]["mean_baseline"] <= 1


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_report_shows_a_measure(outputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = outputs
    html = tmp_path / "report.html"
    assert main(["report", str(a), str(b), "--measure", "recip_rank", "--html", str(html)]) == 0
    page = html.read_text()
    assert "recip_rank report" in page
    capsys.readouterr()
    assert main(["report", str(a), "--measure", "map", "--html", str(tmp_path / "other.html")]) == 2
    assert "no 'map' column" in capsys.readouterr().err


def test_report_names_the_measure_everywhere(outputs: tuple[Path, Path], tmp_path: Path) -> None:
    """A report of reciprocal rank says RR in its sections, figure captions and tables, never
    NDCG (which it does not show)."""
    a, b = outputs
    html = tmp_path / "rr.html"
    assert main(["report", str(a), str(b), "--measure", "recip_rank", "--k", "10", "--html", str(html)]) == 0
    page = html.read_text()
    for label in ("RR@k by k", "Distribution of per-query RR", "Per-query RR@10", "Mean RR@k per cutoff"):
        assert label in page, label
    assert "NDCG@" not in page and "per-query NDCG" not in page
