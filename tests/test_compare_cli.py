"""`ndcg compare` as users run it: from evaluation outputs, and from runs evaluated in one go;
and `ndcg compare|report --measure`, any measure of the per-query tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline import evaluate
from pipeline.cli import main
from pipeline.compare import Options, compare_systems
from pipeline.registry import PROFILES
from tests.helpers import run_cli
from tests.helpers.outputs import QRELS, RUN, perturbed_run

FAST = ("--permutations", "500", "--bootstrap", "500")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    run_b = perturbed_run(root / "run_b.parquet")
    paths = {"run_b": run_b}
    for name, run in (("model_a", RUN), ("model_b", run_b)):
        result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--k", "5,10", "--out", root / name)
        assert result.returncode == 0, result.stderr
        paths[name] = root / name
    return paths


def test_compare_outputs_writes_tables_and_prints(outputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = run_cli(
        "compare", "--baseline", outputs["model_a"], "--candidate", outputs["model_b"], "--k", "10", "--out", out, *FAST
    )
    assert result.returncode == 0, result.stderr
    comparison = pl.read_parquet(out / "comparison.parquet")
    deltas = pl.read_parquet(out / "deltas.parquet")
    assert comparison.select("baseline", "candidate", "k").rows() == [("model_a", "model_b", 10)]
    assert comparison["queries"][0] == 40 and deltas.height == 40
    a = pl.read_parquet(outputs["model_a"] / "per_query.parquet").filter(k=10)
    b = pl.read_parquet(outputs["model_b"] / "per_query.parquet").filter(k=10)
    assert comparison["mean_baseline"][0] == pytest.approx(a["ndcg"].mean(), abs=1e-12)
    assert comparison["mean_difference"][0] == pytest.approx(b["ndcg"].mean() - a["ndcg"].mean(), abs=1e-12)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["permutations"] == 500 and manifest["systems"] == ["model_a", "model_b"]
    # each system's conventions come from the manifest.json that `ndcg evaluate` wrote
    assert {name: c["gain"] for name, c in manifest["conventions"].items()} == {
        "model_a": "linear",
        "model_b": "linear",
    }
    assert f"{comparison['mean_difference'][0]:+.4f}" in result.stdout
    assert "holm" in result.stdout and "W/T/L" in result.stdout
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_compare_runs_in_one_go_with_groups_and_json(outputs: dict[str, Path], tmp_path: Path) -> None:
    result = run_cli(
        "compare",
        "--run",
        RUN,
        "--run",
        outputs["run_b"],
        "--qrels",
        QRELS,
        "--k",
        "10",
        "--group-by",
        "locale",
        "--names",
        "a,b",
        "--json",
        "--out",
        tmp_path / "cmp",
        *FAST,
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["conventions"]["a"]["gain"] == "linear"
    rows = payload["comparison"]
    assert {row["locale"] for row in rows} == {None, "en-US", "de-DE", "ja-JP"}
    # the same numbers as the library on the same evaluations
    locales = pl.read_parquet(RUN).select("query_id", "locale").unique()
    tables = {
        name: evaluate(run, QRELS, k=[10]).per_query.join(locales, on="query_id")
        for name, run in (("a", RUN), ("b", outputs["run_b"]))
    }
    expected = compare_systems(
        tables, Options(cutoffs=(10,), group_by=("locale",), permutations=500, bootstrap_samples=500)
    ).comparison
    written = pl.read_parquet(tmp_path / "cmp" / "comparison.parquet")
    for column in ("queries", "mean_difference", "p_value_t", "p_value_permutation", "ci_low", "ci_high"):
        assert written[column].to_list() == pytest.approx(expected[column].to_list(), abs=1e-12)
    assert [row["mean_difference"] for row in rows] == pytest.approx(expected["mean_difference"].to_list())


def test_three_runs_are_compared_pairwise(outputs: dict[str, Path], tmp_path: Path) -> None:
    run_c = tmp_path / "run_c.parquet"
    pl.read_parquet(RUN).with_columns(-pl.col("score")).write_parquet(run_c)  # the ranking upside down
    result = run_cli(
        "compare", "--run", RUN, "--run", outputs["run_b"], "--run", run_c, "--qrels", QRELS, "--k", "10",
        "--correction", "bonferroni", "--json", *FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["comparison"]
    assert [(row["baseline"], row["candidate"]) for row in rows] == [
        ("run", "run_b"),
        ("run", "run_c"),
        ("run_b", "run_c"),
    ]
    for row in rows:
        assert row["correction"] == "bonferroni"
        assert row["p_adjusted_t"] == pytest.approx(min(1.0, 3 * row["p_value_t"]))
    assert rows[1]["mean_difference"] < 0  # reversing the ranking hurts


def test_usage_errors(outputs: dict[str, Path]) -> None:
    one = run_cli("compare", "--run", RUN, "--qrels", QRELS)
    assert one.returncode == 2 and "at least two --run" in one.stderr
    mixed = run_cli("compare", "--run", RUN, "--baseline", outputs["model_a"], "--candidate", outputs["model_b"])
    assert mixed.returncode == 2 and "either --run" in mixed.stderr
    absent = run_cli("compare", "--baseline", outputs["model_a"], "--candidate", outputs["model_b"], "--k", "20")
    assert absent.returncode == 2 and "no rows for k=20" in absent.stderr
    missing = run_cli("compare", "--baseline", outputs["model_a"], "--candidate", "nowhere")
    assert missing.returncode == 3 and "nowhere" in missing.stderr


def test_queries_on_one_side_are_reported(outputs: dict[str, Path], tmp_path: Path) -> None:
    fewer = tmp_path / "fewer.parquet"
    pl.read_parquet(outputs["model_b"] / "per_query.parquet").filter(pl.col("query_id") != "q007").write_parquet(fewer)
    common = run_cli("compare", "--baseline", outputs["model_a"], "--candidate", fewer, "--k", "10", "--json", *FAST)
    assert common.returncode == 0, common.stderr
    payload = json.loads(common.stdout)
    assert payload["comparison"][0]["queries"] == 39 and payload["comparison"][0]["only_baseline"] == 1
    assert payload["unpaired"] == [
        {"baseline": "model_a", "candidate": "fewer", "side": "baseline", "queries": ["q007"]}
    ]
    scored = run_cli("compare", "--baseline", outputs["model_a"], "--candidate", fewer, "--k", "10", "--all-queries",
                     *FAST)  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert "1 query only in model_a (model_a vs fewer), scored 0 for the other side: q007" in scored.stdout
    assert " 40 " in scored.stdout  # q007 counted, with 0 for the candidate


# --- compare --run scores runs as `ndcg evaluate` does --------------------------------------


def evaluated(*flags: object) -> dict[str, object]:
    """``ndcg evaluate --json`` of the sample run: its conventions and summary rows."""
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--json", *flags)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def compared(run_b: Path, *flags: object) -> tuple[dict[str, object], str]:
    """``ndcg compare --run --json`` of the sample run (baseline) and ``run_b``, and its stderr."""
    result = run_cli("compare", "--run", RUN, "--run", run_b, "--qrels", QRELS, "--names", "a,b", "--json",
                     *FAST, *flags)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


@pytest.mark.parametrize("profile", list(PROFILES))
def test_compare_runs_with_a_profile_gives_the_means_of_evaluate(outputs: dict[str, Path], profile: str) -> None:
    flags = ("--profile", profile, "--k", "10")
    expected = evaluated(*flags)
    payload, _ = compared(outputs["run_b"], *flags)
    # the baseline was scored with the very conventions evaluate resolved for the profile
    assert payload["conventions"]["a"] == expected["conventions"]
    row = next(r for r in expected["summary"] if r["k"] == 10)
    [comparison] = payload["comparison"]
    assert comparison["queries"] == row["queries"]
    assert comparison["mean_baseline"] == pytest.approx(row["ndcg"], abs=1e-9)


@pytest.mark.parametrize(
    ("flags", "measure", "k", "engine"),
    [
        (("--measures", "P@5", "--ties", "average", "--gain", "exponential"), "P", 5, "duckdb"),
        (("--empty-ideal", "skip", "--discount", "jk", "--log-base", "3", "--max-results", "8"), "ndcg", 10, "polars"),
    ],
)
def test_compare_runs_takes_the_measure_flags_of_evaluate(
    outputs: dict[str, Path], flags: tuple[str, ...], measure: str, k: int, engine: str
) -> None:
    common = (*flags, "--engine", engine)  # the default cutoffs (and P@5's)
    expected = evaluated(*common)
    payload, _ = compared(outputs["run_b"], *common, "--measure", measure)
    assert payload["conventions"]["a"] == expected["conventions"]
    row = next(r for r in expected["summary"] if r["k"] == k)
    [comparison] = [r for r in payload["comparison"] if r["k"] == k]
    # --empty-ideal skip leaves the queries without a relevant document out of both means
    assert comparison["queries"] == row["queries"]
    assert comparison["mean_baseline"] == pytest.approx(row[measure], abs=1e-9)


@pytest.mark.parametrize("source", ["run", "attributes"])
def test_compare_runs_groups_as_evaluate_does(outputs: dict[str, Path], tmp_path: Path, source: str) -> None:
    """--group-by locale --all-queries: the queries only the judgments have (q041-q043) have no
    locale in the run; evaluate and compare both warn and keep them as the null group. From
    --query-attributes without q001-q005, those join the null group too."""
    flags: tuple[object, ...] = ("--group-by", "locale", "--all-queries", "--k", "10")
    if source == "attributes":
        attributes = tmp_path / "attributes.parquet"
        locales = pl.read_parquet(RUN).select("query_id", "locale").unique()
        locales.filter(~pl.col("query_id").is_in(["q001", "q002", "q003", "q004", "q005"])).write_parquet(attributes)
        flags = (*flags, "--query-attributes", attributes)
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--json", "--verbose", *flags)
    assert result.returncode == 0, result.stderr
    assert "summarised in the group whose locale is null" in result.stderr
    expected = {(row["locale"], row["overall"]): row for row in json.loads(result.stdout)["summary"] if row["k"] == 10}
    payload, stderr = compared(outputs["run_b"], "--verbose", *flags)
    assert "summarised in the group whose locale is null" in stderr
    rows = {(row["locale"], row["overall"]): row for row in payload["comparison"]}
    assert set(rows) == set(expected)
    assert rows[None, False]["queries"] == (3 if source == "run" else 8)
    for key, row in rows.items():
        assert row["queries"] == expected[key]["queries"], key
        assert row["mean_baseline"] == pytest.approx(expected[key]["ndcg"], abs=1e-9), key


def test_measure_flags_are_refused_for_outputs(outputs: dict[str, Path]) -> None:
    result = run_cli("compare", "--baseline", outputs["model_a"], "--candidate", outputs["model_b"],
                     "--profile", "sklearn", "--gain", "exponential")  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "--gain, --profile score runs here (--run)" in result.stderr


# ``ndcg compare --measure`` and ``ndcg report --measure``: any measure of the per-query
# tables, not only NDCG; the means compared are the evaluation's own.


@pytest.fixture(scope="module")
def measure_outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two evaluation outputs with the companion measures: the sample run and its reverse."""
    folder = tmp_path_factory.mktemp("measures-compare")
    reversed_run = folder / "reversed.parquet"
    pl.read_parquet(RUN).with_columns(-pl.col("score")).write_parquet(reversed_run)
    outs = folder / "a", folder / "b"
    for run, out in zip((RUN, reversed_run), outs, strict=True):
        argv = ["evaluate", "--run", str(run), "--qrels", str(QRELS), "--k", "1,10"]
        assert main([*argv, "--measures", "ndcg,P,recip_rank", "--out", str(out), "--json"]) == 0
    return outs


def test_compare_by_reciprocal_rank(measure_outputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = measure_outputs
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
    measure_outputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = measure_outputs
    out = tmp_path / "compared"
    argv = ["compare", "--baseline", str(a), "--candidate", str(b), "--measure", "P", "--out", str(out)]
    assert main([*argv, "--permutations", "100", "--bootstrap", "100"]) == 0
    comparison = pl.read_parquet(out / "comparison.parquet")
    assert sorted(comparison["k"].to_list()) == [1, 10]  # P is undefined over the whole ranking
    assert {"P_baseline", "P_candidate"} <= set(pl.read_parquet(out / "deltas.parquet").columns)
    assert json.loads((out / "manifest.json").read_text())["measure"] == "P"


def test_compare_refuses_a_measure_the_outputs_lack(
    measure_outputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = measure_outputs
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
def test_report_shows_a_measure(
    measure_outputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = measure_outputs
    html = tmp_path / "report.html"
    assert main(["report", str(a), str(b), "--measure", "recip_rank", "--html", str(html)]) == 0
    page = html.read_text()
    assert "recip_rank report" in page
    capsys.readouterr()
    assert main(["report", str(a), "--measure", "map", "--html", str(tmp_path / "other.html")]) == 2
    assert "no 'map' column" in capsys.readouterr().err


def test_report_names_the_measure_everywhere(measure_outputs: tuple[Path, Path], tmp_path: Path) -> None:
    """A report of reciprocal rank says RR in its sections, figure captions and tables, never
    NDCG (which it does not show)."""
    a, b = measure_outputs
    html = tmp_path / "rr.html"
    assert main(["report", str(a), str(b), "--measure", "recip_rank", "--k", "10", "--html", str(html)]) == 0
    page = html.read_text()
    for label in ("RR@k by k", "Distribution of per-query RR", "Per-query RR@10", "Mean RR@k per cutoff"):
        assert label in page, label
    assert "NDCG@" not in page and "per-query NDCG" not in page


def test_compare_and_validate_take_the_log_level(outputs: dict[str, Path]) -> None:
    """``--log-level error`` quiets the warnings of compare (it was refused: "did you mean
    --log-base?") and of validate, as of evaluate; the comparison is printed all the same."""
    # runs scored here: the sample's judgments carry warnings (queries only in the qrels, ...)
    flags = ("--run", RUN, "--run", outputs["run_b"], "--qrels", QRELS, "--k", "10", *FAST)
    loud = run_cli("compare", *flags)
    quiet = run_cli("compare", *flags, "--log-level", "error")
    assert loud.returncode == quiet.returncode == 0, quiet.stderr
    assert "ndcg: warning:" in loud.stderr and "ndcg: warning:" not in quiet.stderr
    assert quiet.stdout == loud.stdout
    checked = run_cli("validate", "--run", RUN, "--qrels", QRELS, "--log-level", "error", "--log-format", "json")
    assert checked.returncode == 0, checked.stderr
