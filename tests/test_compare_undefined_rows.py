"""Every documented output of `ndcg evaluate` is a valid input of `ndcg compare` and `ndcg report`:
the queries `--empty-ideal skip` leaves out (NDCG null) are left out of the comparison as they
are of evaluate's means, the NaN of `--empty-ideal nan` too (with a warning: evaluate's means over
them are NaN), `--measure P --k all` is said to be undefined rather than found missing, and a
measure of the whole ranking only (bpref, Rprec, infAP) compares at k=all."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ROOT, run_cli

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
FAST = ("--permutations", "200", "--bootstrap", "200")
# the sample's queries without a relevant document (data/README.md)
EMPTY_IDEAL = ["q013", "q026", "q039"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("undefined")
    run_b = root / "run_b.parquet"
    pl.read_parquet(RUN).with_columns(
        pl.col("score") + pl.col("doc_id").str.slice(-3).cast(pl.Int64) % 7 * 0.8
    ).write_parquet(run_b)
    paths = {}
    for mode in ("skip", "nan"):
        for name, run in (("a", RUN), ("b", run_b)):
            out = root / f"{name}_{mode}"
            result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--k", "5,10", "--empty-ideal", mode,
                             "--measures", "P", "--out", out)  # fmt: skip
            assert result.returncode == 0, result.stderr
            paths[f"{name}_{mode}"] = out
    return paths


def _summary_means(output: Path, k: int) -> tuple[int, float]:
    """(queries, mean NDCG@k) over the queries with a value, from the per-query table: the mean
    `--empty-ideal skip` gives (for `nan`, what skip would give)."""
    table = pl.read_parquet(output / "per_query.parquet").filter(pl.col("k") == k)
    defined = table.filter(pl.col("ndcg").is_not_null() & pl.col("ndcg").is_not_nan())
    return defined.height, float(defined["ndcg"].mean())  # type: ignore[arg-type]


def test_skip_outputs_compare_as_evaluate_averaged_them(outputs: dict[str, Path]) -> None:
    a, b = outputs["a_skip"], outputs["b_skip"]
    assert pl.read_parquet(a / "per_query.parquet")["ndcg"].null_count() > 0  # the skipped queries are null
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--k", "10", "--json", *FAST)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)["comparison"]
    summary = pl.read_parquet(a / "summary.parquet").filter(pl.col("k") == 10).row(0, named=True)
    assert row["queries"] == summary["queries"] == 40 - len(EMPTY_IDEAL)
    assert row["mean_baseline"] == pytest.approx(summary["ndcg"], abs=1e-12)
    assert row["mean_candidate"] == pytest.approx(_summary_means(b, 10)[1], abs=1e-12)
    assert "different query sets" not in result.stderr  # both left the same queries out


def test_nan_outputs_compare_on_the_defined_queries_with_a_warning(outputs: dict[str, Path]) -> None:
    a, b = outputs["a_nan"], outputs["b_nan"]
    assert pl.read_parquet(a / "summary.parquet").filter(pl.col("k") == 10)["ndcg"].is_nan().all()
    out = a.parent / "cmp_nan"
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--k", "10", "--json", "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    assert (
        "a_nan: 3 queries score NaN by ndcg (evaluated with --empty-ideal nan: no relevant document to rank), which "
        "makes its means NaN; compared without them, as --empty-ideal skip leaves them out: q013, q026, q039"
    ) in result.stderr
    [row] = json.loads(result.stdout)["comparison"]
    skip_flags = ("--baseline", outputs["a_skip"], "--candidate", outputs["b_skip"], "--k", "10", "--json", *FAST)
    skipped = json.loads(run_cli("compare", *skip_flags).stdout)["comparison"][0]
    for column in ("queries", "mean_baseline", "mean_candidate", "mean_difference", "p_value_permutation"):
        assert row[column] == pytest.approx(skipped[column], abs=1e-12), column
    # and the report takes both outputs and the comparison
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    for inputs in ((a, b, out), (outputs["a_skip"], outputs["b_skip"])):
        report = run_cli("report", *inputs, "--html", a.parent / "r.html", "--k", "10")
        assert report.returncode == 0, report.stderr


def test_precision_over_the_whole_ranking_is_said_undefined(outputs: dict[str, Path]) -> None:
    a, b = outputs["a_skip"], outputs["b_skip"]
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--measure", "P", "--k", "all", *FAST)
    assert result.returncode == 2, result.stderr
    assert "P has no value over the whole ranking (k=all), by its definition: choose a cutoff" in result.stderr
    gated = run_cli("compare", "--baseline", a, "--candidate", b, "--measure", "P", "--k", "5",
                    "--fail-if-worse", "0.01", "--gate-k", "all", *FAST)  # fmt: skip
    assert gated.returncode == 2 and "(--gate-k 10, for instance)" in gated.stderr, gated.stderr
    fine = run_cli("compare", "--baseline", a, "--candidate", b, "--measure", "P", "--k", "5", *FAST)
    assert fine.returncode == 0, fine.stderr


@pytest.fixture(scope="module")
def whole_only(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("whole_only")
    paths = {}
    for name, run in (("a", RUN), ("b", ROOT / "data/run_b.parquet")):
        out = root / name
        result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--measures", "bpref,Rprec,infAP", "--out", out)
        assert result.returncode == 0, result.stderr
        paths[name] = out
    return paths


@pytest.mark.parametrize("measure", ["bpref", "rprec", "infap"])
def test_a_measure_of_the_whole_ranking_only_compares_at_k_all(whole_only: dict[str, Path], measure: str) -> None:
    """bpref, Rprec and infAP have a value over the whole ranking only (null at every cutoff):
    compared there, from our own outputs (with --k all or without --k) and from --run; a cutoff
    asked is said to be undefined. The compared means are the per-query tables' means over the
    whole ranking, computed here from the tables."""
    a, b = whole_only["a"], whole_only["b"]
    tables = [pl.read_parquet(path / "per_query.parquet").filter(pl.col("k").is_null()) for path in (a, b)]
    means = [table.get_column(measure).mean() for table in tables]
    for flags in ((), ("--k", "all")):
        result = run_cli("compare", "--baseline", a, "--candidate", b, "--measure", measure, "--json", *FAST, *flags)
        assert result.returncode == 0, result.stderr
        [row] = json.loads(result.stdout)["comparison"]
        assert row["k"] is None and row["queries"] == tables[0].height
        assert row["mean_baseline"] == pytest.approx(means[0], abs=1e-12)
        assert row["mean_candidate"] == pytest.approx(means[1], abs=1e-12)
    scored = run_cli("compare", "--run", RUN, "--run", ROOT / "data/run_b.parquet", "--qrels", QRELS,
                     "--measure", measure, "--k", "all", "--json", *FAST)  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    [row] = json.loads(scored.stdout)["comparison"]
    assert row["mean_baseline"] == pytest.approx(means[0], abs=1e-12)
    cut = run_cli("compare", "--baseline", a, "--candidate", b, "--measure", measure, "--k", "10", *FAST)
    assert cut.returncode == 2, cut.stderr
    assert f"{measure} has a value over the whole ranking only (k=all), by its definition, not at k=10" in cut.stderr
