"""``ndcg compare --query-weights``: the means, the randomization test, the bootstrap and the gate
on weighted means (pipeline/compare.py, pipeline/stats.py, pipeline/gate.py, compare_job.py).
Expected values are written out here: the weighted means by their formula, the exact sign-flip
p-value by enumerating every sign vector with numpy, one bootstrap resample drawn and averaged by
hand; weights all equal give the unweighted comparison to the last digit."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.api_compare import compare_runs
from pipeline.compare import Options, compare_systems
from pipeline.compare_job import Systems, compare_job
from pipeline.errors import InvalidInput, UsageError
from pipeline.gate import Gate, Margin, check_gate
from pipeline.stats import smallest_sign_flip_p
from tests.helpers import run_cli

TOLERANCE = 1e-12
WEIGHTS = {"path": "w.csv", "weight_column": "weight", "missing_query_weight": None}

# six queries, k=10: baseline, candidate, weight (one of weight 0, whose delta moves nothing)
BASE = [0.5, 0.6, 0.7, 0.4, 0.9, 0.3]
CAND = [0.6, 0.5, 0.9, 0.1, 0.95, 0.2]
W = [2.0, 1.0, 0.5, 3.0, 1.5, 0.0]


def _tables(base: list[float], cand: list[float]) -> dict[str, pl.DataFrame]:
    ids = [f"q{i}" for i in range(len(base))]
    return {
        name: pl.DataFrame({"query_id": ids, "k": [10] * len(ids), "ndcg": values})
        for name, values in (("base", base), ("cand", cand))
    }


def _weights(weights: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"query_id": [f"q{i}" for i in range(len(weights))], "weight": weights})


def _exact_weighted_p(deltas: np.ndarray, weights: np.ndarray) -> float:
    """Every one of the 2^n sign vectors (the weight-0 query's too), the statistic the weighted
    mean difference sum(s*w*d)/sum(w); a hit is as far from 0 as the observed one."""
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=deltas.size)))
    flipped = np.abs(signs @ (weights * deltas)) / weights.sum()
    observed = abs(float((weights * deltas).sum() / weights.sum()))
    return float(np.mean(flipped >= observed - 1e-12))


def test_weighted_mean_difference_exact_sign_flip_p_and_a_bootstrap_resample() -> None:
    deltas, weights = np.array(CAND) - np.array(BASE), np.array(W)
    options = Options(permutations=10_000, bootstrap_samples=1, seed=7, query_weights=WEIGHTS)
    row = compare_systems(_tables(BASE, CAND), options, weights=_weights(W)).comparison.row(0, named=True)
    total = sum(W)  # 8.0
    assert row["sum_of_weights"] == pytest.approx(total) and row["weighed_queries"] == 5 and row["queries"] == 6
    # (2*0.6 + 0.5 + 0.5*0.9 + 3*0.1 + 1.5*0.95) / 8 and (2*0.5 + 0.6 + 0.5*0.7 + 3*0.4 + 1.5*0.9) / 8
    assert row["mean_candidate"] == pytest.approx((1.2 + 0.5 + 0.45 + 0.3 + 1.425) / total, abs=TOLERANCE)
    assert row["mean_baseline"] == pytest.approx((1.0 + 0.6 + 0.35 + 1.2 + 1.35) / total, abs=TOLERANCE)
    # 2*0.1 - 0.1 + 0.5*0.2 - 3*0.3 + 1.5*0.05 = -0.625, over 8
    assert row["mean_difference"] == pytest.approx(-0.625 / total, abs=TOLERANCE)
    assert row["relative_change"] == pytest.approx((-0.625 / total) / (4.5 / total), abs=TOLERANCE)
    assert row["p_value_permutation"] == pytest.approx(_exact_weighted_p(deltas, weights), abs=TOLERANCE)
    assert row["p_value_t"] is None and row["t_statistic"] is None  # no t-test on weighted means
    # one resample (bootstrap_samples=1): the interval is its weighted mean. The queries of
    # weight above 0 are drawn with replacement, each with its weight
    kept = weights > 0
    drawn = np.random.default_rng(7).integers(0, int(kept.sum()), size=(1, int(kept.sum())))[0]
    d, w = deltas[kept][drawn], weights[kept][drawn]
    resample_mean = float((w * d).sum() / w.sum())
    assert row["ci_low"] == pytest.approx(resample_mean, abs=TOLERANCE)
    assert row["ci_high"] == pytest.approx(resample_mean, abs=TOLERANCE)


def test_weights_all_equal_give_the_unweighted_comparison_and_verdict() -> None:
    rng = np.random.default_rng(3)
    for n in (9, 40):  # exact enumeration (2^9 <= 10000), then random sign flips
        base = rng.uniform(0.3, 0.9, n).round(4).tolist()
        cand = (np.array(base) - rng.uniform(-0.05, 0.15, n)).round(4).tolist()
        tables = _tables(base, cand)
        plain = compare_systems(tables, Options(bootstrap_samples=2_000)).comparison.row(0, named=True)
        equal = compare_systems(
            tables, Options(bootstrap_samples=2_000, query_weights=WEIGHTS), weights=_weights([2.5] * n)
        ).comparison.row(0, named=True)
        for column in ("mean_baseline", "mean_candidate", "mean_difference", "p_value_permutation", "ci_low"):
            assert equal[column] == pytest.approx(plain[column], rel=1e-12, abs=1e-15), column
        assert (equal["p_value_permutation"], equal["ci_low"], equal["ci_high"]) == (
            plain["p_value_permutation"],
            plain["ci_low"],
            plain["ci_high"],
        )
        gate = Gate(Margin.parse("1%"), alpha=0.05)
        plain_verdict = check_gate(compare_systems(tables, Options()).comparison, gate)
        equal_verdict = check_gate(
            compare_systems(tables, Options(query_weights=WEIGHTS), weights=_weights([2.5] * n)).comparison, gate
        )
        assert plain_verdict.failed == equal_verdict.failed
        assert [c["p_gate"] for c in plain_verdict.checks] == [c["p_gate"] for c in equal_verdict.checks]


def _gate(base: list[float], cand: list[float], weights: list[float] | None) -> object:
    given = {} if weights is None else {"weights": _weights(weights)}
    options = Options(query_weights=None if weights is None else WEIGHTS)
    return check_gate(compare_systems(_tables(base, cand), options, **given).comparison, Gate(Margin.parse("2%")))


def test_the_gate_fails_on_weights_where_unweighted_it_passes() -> None:
    # 7 queries 0.5 -> 0.3 of weight 10, 12 queries 0.5 -> 0.65 of weight 1. Unweighted the mean
    # rises, (7*-0.2 + 12*0.15)/19 = +0.021: passed. Weighted it drops, (-14 + 1.8)/82 = -0.149:
    # only the sign vectors giving the 7 heavy queries one sign reach |sum(s*w*d)| >= 12.2 (six
    # against one reach 10 + 1.8), so p is about 2/2^7 = 0.016 < 0.05 (random flips: 2^19 > 10000)
    base, cand, weights = [0.5] * 19, [0.3] * 7 + [0.65] * 12, [10.0] * 7 + [1.0] * 12
    assert not _gate(base, cand, None).failed
    weighted = _gate(base, cand, weights)
    assert weighted.failed, weighted.lines()
    check = weighted.checks[0]
    assert check["mean_difference"] == pytest.approx(-12.2 / 82) and abs(check["p_value_permutation"] - 2 / 128) < 0.01
    assert "randomization p-values of the weighted mean differences" in weighted.lines()[0]
    assert "weighted mean 0.5000 -> " in weighted.failure_texts()[0]


def test_the_gate_passes_on_weights_where_unweighted_it_fails() -> None:
    # 16 queries, all worse: 8 by 0.1 (weight 1), 8 by 0.001 (weight 100). Unweighted the mean
    # drops 0.0505 (10.1% of 0.5, beyond 2%) and every delta has one sign: p = 1/10001, failed.
    # Weighted it drops (0.8 + 0.8)/808 = 0.00198, 0.4% of 0.5: within the margin, passed.
    base, cand, weights = [0.5] * 16, [0.4] * 8 + [0.499] * 8, [1.0] * 8 + [100.0] * 8
    assert _gate(base, cand, None).failed
    weighted = _gate(base, cand, weights)
    assert not weighted.failed and weighted.checks[0]["mean_difference"] == pytest.approx(-1.6 / 808)


def test_queries_of_weight_0_cannot_make_a_gate_fail() -> None:
    # 12 paired queries, 10 of weight 0: the test runs on 2, whose p is at least 2/4 = 0.5
    assert smallest_sign_flip_p(2, 10_000) == 0.5
    with pytest.raises(Exception, match="2 paired queries of weight above 0 at best"):
        _gate([0.5] * 12, [0.1] * 12, [1.0, 1.0] + [0.0] * 10)
    with pytest.raises(InvalidInput, match=r"w.csv: all 12 paired queries at k=10 weigh 0"):
        _gate([0.5] * 12, [0.1] * 12, [0.0] * 12)
    # weights whose sum overflows: inf/inf, a NaN mean difference
    overflown = r"w.csv: the 12 paired queries at k=10 weigh more together than Float64 holds \(their sum overflows\)"
    with pytest.raises(InvalidInput, match=overflown):
        _gate([0.5] * 12, [0.1] * 12, [1e308] * 12)


def _runs(tmp_path: Path) -> tuple[str, str, str, str]:
    """Two runs of four queries over one qrels: run b ranks the relevant document last in q1, q2."""
    qrels = pl.DataFrame({"query_id": ["q1", "q2", "q3", "q4"], "doc_id": ["d1"] * 4, "relevance": [1] * 4})
    docs = {"query_id": [q for q in ("q1", "q2", "q3", "q4") for _ in range(2)], "doc_id": ["d1", "d2"] * 4}
    paths = []
    for name, scores in (("a", [2.0, 1.0] * 4), ("b", [1.0, 2.0, 1.0, 2.0, 2.0, 1.0, 2.0, 1.0])):
        path = tmp_path / f"{name}.parquet"
        pl.DataFrame({**docs, "score": scores}).write_parquet(path)
        paths.append(str(path))
    qrels.write_parquet(tmp_path / "qrels.parquet")
    (tmp_path / "w.csv").write_text("query_id,weight\nq1,1\nq2,1\nq3,3\nq4,5\n")
    return paths[0], paths[1], str(tmp_path / "qrels.parquet"), str(tmp_path / "w.csv")


def test_every_front_says_the_comparison_is_weighted_and_by_which_file(tmp_path: Path) -> None:
    run_a, run_b, qrels, weights = _runs(tmp_path)
    # q1, q2 drop from 1 to 1/log2(3) = 0.6309 (weights 1, 1); q3, q4 unchanged (3, 5): the weighted
    # mean difference is 2 * (0.6309 - 1) / 10, the unweighted one 2 * (0.6309 - 1) / 4
    drop = 1 / np.log2(3) - 1
    api = compare_runs([run_a, run_b], qrels, k=2, query_weights=Path(weights))
    row = api.result.comparison.row(0, named=True)
    assert row["mean_difference"] == pytest.approx(2 * drop / 10) and row["p_value_t"] is None
    assert api.options.describe()["query_weights"]["path"] == weights
    assert "query_weight" in api.result.deltas.columns
    plain = compare_runs([run_a, run_b], qrels, k=2).result.comparison.row(0, named=True)
    assert plain["mean_difference"] == pytest.approx(2 * drop / 4) and "sum_of_weights" not in plain
    flags = ("compare", "--run", run_a, "--run", run_b, "--qrels", qrels, "--k", "2", "--query-weights", weights)
    table = run_cli(*flags)
    assert table.returncode == 0, table.stderr
    assert f"# query weights: {weights} (column weight): means are sum(w*x)/sum(w)" in table.stdout
    markdown = run_cli(*flags, "--output-format", "markdown")
    assert "**Weighted**: query weights: " in markdown.stdout and "w.csv (column weight)" in markdown.stdout
    payload = json.loads(run_cli(*flags, "--json", "--out", tmp_path / "cmp").stdout)
    assert payload["options"]["query_weights"]["path"] == weights
    manifest = json.loads((tmp_path / "cmp" / "manifest.json").read_text())
    assert manifest["query_weights"]["path"] == weights and manifest["query_weights"]["identity"]["files"]
    # the report's figures count queries alike: a weighted comparison is refused, not drawn unweighted
    report = run_cli("report", tmp_path / "cmp", "--html", tmp_path / "report.html")
    assert report.returncode == 2 and "compared with --query-weights" in report.stderr
    assert not (tmp_path / "report.html").exists()
    missing = run_cli(*flags[:-1], str(tmp_path / "none.csv"))
    assert missing.returncode == 3 and "none.csv" in missing.stderr
    with pytest.raises(UsageError, match="missing_query_weight: expected a finite number >= 0"):
        compare_runs([run_a, run_b], qrels, query_weights=weights, missing_query_weight=-1)


def test_outputs_compare_with_the_weights_they_were_evaluated_with(tmp_path: Path) -> None:
    run_a, run_b, qrels, weights = _runs(tmp_path)
    for name, run, extra in (("a", run_a, ("--query-weights", weights)), ("b", run_b, ("--query-weights", weights))):
        made = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "2", "--out", tmp_path / name, *extra)
        assert made.returncode == 0, made.stderr
    made = run_cli("evaluate", "--run", run_b, "--qrels", qrels, "--k", "2", "--out", tmp_path / "plain")
    assert made.returncode == 0, made.stderr
    compared = compare_job(Systems(baseline=str(tmp_path / "a"), candidates=[str(tmp_path / "b")]), k="2")
    assert compared.options.query_weights == {"path": weights, "weight_column": "weight", "missing_query_weight": None}
    assert compared.result.comparison["mean_difference"][0] == pytest.approx(2 * (1 / np.log2(3) - 1) / 10)
    different = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "plain")
    assert different.returncode == 2 and "evaluated with different query weights" in different.stderr
    assert "plain: no query weights" in different.stderr
    (tmp_path / "other.csv").write_text("query_id,weight\nq1,1\nq2,1\nq3,1\nq4,1\n")
    other = run_cli(
        "compare",
        "--baseline",
        tmp_path / "a",
        "--candidate",
        tmp_path / "b",
        "--query-weights",
        tmp_path / "other.csv",
    )
    assert other.returncode == 2 and "--query-weights: " in other.stderr
    # unweighted outputs compared weighted, by a file given: the per-query tables are weighed here
    both_plain = compare_job(
        Systems(
            baseline=str(tmp_path / "plain"),
            candidates=[str(tmp_path / "plain") + "/per_query.parquet"],
            names="x,y",
            query_weights=weights,
        ),
        k="2",
    )
    assert both_plain.options.query_weights is not None and both_plain.result.comparison["mean_difference"][0] == 0
    # the weights file changed since the outputs were evaluated: their weights are not the file's now
    Path(weights).write_text("query_id,weight\nq1,1\nq2,1\nq3,3\nq4,6\n")
    changed = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b")
    assert changed.returncode == 2 and "w.csv changed since" in changed.stderr and "evaluated with it" in changed.stderr


def test_outputs_evaluated_with_query_col_read_their_weights_by_it(tmp_path: Path) -> None:
    run_a, run_b, qrels, _ = _runs(tmp_path)
    renamed = {}
    for path in (run_a, run_b, qrels):
        renamed[path] = str(Path(path).with_name("qid_" + Path(path).name))
        pl.read_parquet(path).rename({"query_id": "qid"}).write_parquet(renamed[path])
    weights = tmp_path / "qid_weights.csv"
    weights.write_text("qid,weight\nq1,1\nq2,1\nq3,3\nq4,5\n")
    for name, run in (("a", run_a), ("b", run_b)):
        flags = ("--run", renamed[run], "--qrels", renamed[qrels], "--query-col", "qid", "--k", "2")
        made = run_cli("evaluate", *flags, "--query-weights", weights, "--out", tmp_path / name)
        assert made.returncode == 0, made.stderr
    compared = compare_job(Systems(baseline=str(tmp_path / "a"), candidates=[str(tmp_path / "b")]), k="2")
    assert compared.result.comparison["mean_difference"][0] == pytest.approx(2 * (1 / np.log2(3) - 1) / 10)


def test_weights_near_float64_s_largest_give_the_written_out_means() -> None:
    """Weights of 1e307 to 3e307 (their sum 8e307 held by Float64) on scores up to 9.5 (cg's):
    w x score and its sum overflowed, a mean of inf; the means are those of the first test x 10."""
    base, cand = [10 * x for x in BASE], [10 * x for x in CAND]
    options = Options(permutations=100, bootstrap_samples=1, seed=7, query_weights=WEIGHTS)
    weights = _weights([w * 1e307 for w in W])
    row = compare_systems(_tables(base, cand), options, weights=weights).comparison.row(0, named=True)
    total = sum(W)  # the weights / 1e307: 8.0
    assert row["mean_candidate"] == pytest.approx(10 * (1.2 + 0.5 + 0.45 + 0.3 + 1.425) / total, abs=1e-9)
    assert row["mean_baseline"] == pytest.approx(10 * (1.0 + 0.6 + 0.35 + 1.2 + 1.35) / total, abs=1e-9)
    assert row["mean_difference"] == pytest.approx(10 * -0.625 / total, abs=1e-9)


def _document_weighted_runs(tmp_path: Path) -> tuple[str, str, str]:
    """Two runs listing the same documents with the same weights (column w), in other orders:
    q1 (a relevant, weights 2 and 1), q2 (c of label 2, weights 0.5 and 3), q3 (e alone, 1)."""
    pl.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2", "q3"], "doc_id": list("abcde"), "relevance": [1, 0, 2, 0, 1]}
    ).write_csv(tmp_path / "qrels.csv")
    weights = [2.0, 1.0, 0.5, 3.0, 1.0]
    for name, scores in (("a", [2, 1, 2, 1, 1]), ("b", [1, 2, 1, 2, 1])):
        pl.DataFrame(
            {"query_id": ["q1", "q1", "q2", "q2", "q3"], "doc_id": list("abcde"), "score": scores, "w": weights}
        ).write_csv(tmp_path / f"{name}.csv")
    return str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), str(tmp_path / "qrels.csv")


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_runs_scored_with_document_weights_compare_by_their_list_weights(tmp_path: Path, engine: str) -> None:
    """TF-Ranking's list weights (sum(w*gain)/sum(gain) for NDCG, sum(w*rel)/sum(rel) for P) weigh
    the comparison as query weights do. a ranks every relevant document first (NDCG 1); b ranks it
    second in q1 and q2: DCG w*g/log2(3) against the ideal w*g, so NDCG 1/log2(3); q3 is unchanged.
    List weights: q1 2*1/1 = 2, q2 0.5*2/2 = 0.5, q3 1 (3.5 in all)."""
    run_a, run_b, qrels = _document_weighted_runs(tmp_path)
    second = 1 / np.log2(3)
    flags = ("compare", "--run", run_a, "--run", run_b, "--qrels", qrels, "--doc-weight-col", "w", "--engine", engine)
    done = run_cli(*flags, "--k", "5", "--json", "--out", tmp_path / "cmp")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["comparison"]
    assert row["mean_baseline"] == pytest.approx(1.0, abs=TOLERANCE)
    assert row["mean_candidate"] == pytest.approx((2 * second + 0.5 * second + 1) / 3.5, abs=TOLERANCE)
    assert row["sum_of_weights"] == pytest.approx(3.5) and row["weighed_queries"] == 3 and row["p_value_t"] is None
    # every sign vector: |2 s1 + 0.5 s2| (1 - 1/log2(3)) reaches the observed 2.5 (1 - 1/log2(3)) when s1 = s2
    assert row["p_value_permutation"] == pytest.approx(0.5, abs=TOLERANCE)
    # the outputs of ndcg evaluate --doc-weight-col --out compare alike, by the list weights beside them
    for name, run in (("a", run_a), ("b", run_b)):
        made = run_cli("evaluate", "--run", run, "--qrels", qrels, "--doc-weight-col", "w", "--engine", engine,
                       "--k", "5", "--out", tmp_path / name)  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert pl.read_parquet(tmp_path / name / "list_weights.parquet")["weight"].to_list() == [2.0, 0.5, 1.0]
    done = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", "--k", "5", "--json")
    assert done.returncode == 0, done.stderr
    (again,) = json.loads(done.stdout)["comparison"]
    assert all(again[key] == pytest.approx(row[key], abs=TOLERANCE) for key in ("mean_baseline", "mean_candidate"))
    assert again["sum_of_weights"] == pytest.approx(3.5) and again["p_value_t"] is None
    # the Python API, the same
    api = compare_runs([run_a, run_b], qrels, doc_weight_col="w", engine=engine, k=5).result.comparison
    assert api["mean_candidate"][0] == pytest.approx(row["mean_candidate"], abs=TOLERANCE)
    assert api["p_value_permutation"][0] == pytest.approx(0.5, abs=TOLERANCE)
    manifest = json.loads((tmp_path / "cmp" / "manifest.json").read_text())
    assert manifest["document_weights"] == {
        "doc_weight_col": "w",
        "measure": "ndcg",
        "list_weight": "sum(w*gain)/sum(gain)",
    }
    # P@1: a 1 everywhere; b 0 in q1 and q2, 1 in q3; the same list weights (one relevant result each)
    done = run_cli(*flags, "--k", "1", "--measure", "P")
    assert done.returncode == 0, done.stderr
    said = "# list weights (TF-Ranking's) of --doc-weight-col 'w' for P: sum(w*relevant)/sum(relevant) over each"
    assert said in done.stdout and "0.2857" in done.stdout  # 1 / 3.5
    # the weights a gate reads are said too, and so is the weighted mean it failed
    done = run_cli(*flags, "--k", "5", "--fail-if-drop-over", "0.1")
    assert done.returncode == 6 and "weighted mean 1.0000 -> 0.7364" in done.stderr, done.stderr  # exit 6: gate failed


def test_document_weights_a_comparison_cannot_take_are_refused(tmp_path: Path) -> None:
    run_a, run_b, qrels = _document_weighted_runs(tmp_path)
    heavier = tmp_path / "c.csv"
    pl.read_csv(run_b).with_columns(
        pl.when(pl.col("doc_id") == "a").then(3.0).otherwise(pl.col("w")).alias("w")
    ).write_csv(heavier)
    flags = ("compare", "--run", run_a, "--run", heavier, "--qrels", qrels, "--doc-weight-col", "w")
    done = run_cli(*flags)
    assert done.returncode == 2, done.stderr
    assert (
        "the runs' list weights of --doc-weight-col 'w' differ for ndcg in 1 query(ies), first 'q1': 2.0 in a, 3.0 in c"
        in done.stderr
    )
    done = run_cli(*flags, "--query-weights", qrels)
    assert done.returncode == 2 and "--query-weights and --doc-weight-col both weigh the means" in done.stderr
    # outputs bring their list weights (list_weights.parquet); without that file, or some weighted and
    # others not, or with --query-weights, they are refused
    for name, run, extra in (("a", run_a, ("--doc-weight-col", "w")), ("c", heavier, ("--doc-weight-col", "w"))):
        made = run_cli("evaluate", "--run", run, "--qrels", qrels, *extra, "--k", "5", "--out", tmp_path / name)
        assert made.returncode == 0, made.stderr
    made = run_cli("evaluate", "--run", run_b, "--qrels", qrels, "--k", "5", "--out", tmp_path / "plain")
    assert made.returncode == 0, made.stderr
    done = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "c")
    assert done.returncode == 2 and "first 'q1': 2.0 in a, 3.0 in c" in done.stderr, done.stderr
    assert "the outputs' list weights (their list_weights.parquet, of --doc-weight-col 'w') differ" in done.stderr
    assert "or evaluate the runs without --doc-weight-col" in done.stderr
    done = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "c", "--query-weights", qrels)
    assert done.returncode == 2, done.stderr
    assert (
        "a, c evaluated with --doc-weight-col, whose list weights weigh this comparison: --query-weights" in done.stderr
    )
    done = run_cli(
        "compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "plain", "--allow-different-conventions"
    )
    assert done.returncode == 2 and "a evaluated with --doc-weight-col and plain without" in done.stderr, done.stderr
    done = run_cli(
        "compare", "--run", run_a, "--run", run_b, "--qrels", qrels, "--doc-weight-col", "w", "--min-judged", "0.5"
    )
    assert (
        done.returncode == 2 and "--min-judged gates on Judged@k, which --doc-weight-col does not weigh" in done.stderr
    )
    shutil.copytree(tmp_path / "a", tmp_path / "short")
    weights = pl.read_parquet(tmp_path / "a" / "list_weights.parquet")
    weights.filter(pl.col("query_id") != "q2").write_parquet(tmp_path / "short" / "list_weights.parquet")
    done = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "short")
    assert done.returncode == 3, done.stderr
    assert "short: its list weights (--doc-weight-col) lack 1 of its evaluated queries, first 'q2'" in done.stderr
    # a list weights file edited by hand: a weight that is no finite number >= 0, a query twice, a column gone
    edits = {
        "nan": (lambda t: t.with_columns(weight=pl.lit(float("nan"))), "first in column 'weight', query 'q1': nan"),
        "none": (lambda t: t.with_columns(weight_P=pl.lit(None, pl.Float64)), "column 'weight_P', query 'q1': None"),
        "negative": (lambda t: t.with_columns(weight=-pl.col("weight")), "3 list weight(s) that are not a finite"),
        "twice": (lambda t: pl.concat([t, t.head(1)]), "query 'q1' has 2 rows; one per query"),
        "no_p": (lambda t: t.drop("weight_P"), "expected the columns query_id and weight, weight_P, weight_recall"),
    }
    for name, (edit, said) in edits.items():
        shutil.copytree(tmp_path / "a", tmp_path / name)
        edit(pl.read_parquet(tmp_path / "a" / "list_weights.parquet")).write_parquet(
            tmp_path / name / "list_weights.parquet"
        )
        done = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / name)
        assert done.returncode == 3 and said in done.stderr, (name, done.stderr)
    shutil.copytree(tmp_path / "a", tmp_path / "old")
    (tmp_path / "old" / "list_weights.parquet").unlink()
    done = run_cli("compare", "--baseline", tmp_path / "old", "--candidate", tmp_path / "a")
    assert done.returncode == 3 and "no list_weights.parquet beside its per-query table" in done.stderr, done.stderr


def test_list_weights_of_runs_whose_ids_differ_in_type_are_shared_by_text() -> None:
    from pipeline.weights import shared_list_weights

    numbers = pl.DataFrame({"query_id": [1, 2], "weight": [1.0, 2.0], "weight_P": [3.0, 4.0]})
    texts = pl.DataFrame({"query_id": ["1", "2"], "weight": [1.0, 2.0], "weight_P": [3.0, 4.0 + 1e-15]})
    shared = shared_list_weights({"a": numbers, "b": texts}, "P", "w")
    assert shared.schema["query_id"] == pl.String and shared["weight"].to_list() == pytest.approx([3.0, 4.0])
    with pytest.raises(UsageError, match=r"differ for ndcg in 1 query\(ies\), first '2': 2\.0 in a, 2\.5 in b"):
        shared_list_weights({"a": numbers, "b": texts.with_columns(weight=pl.Series([1.0, 2.5]))}, "ndcg", "w")


def test_partitioned_runs_and_outputs_weigh_each_partition_by_its_own_list_weights(tmp_path: Path) -> None:
    """dt=1 holds the runs above (list weights 2, 0.5, 1); dt=2 the same with a's weight 4 (q1
    weighs 4). Pooled, each partition's queries keep their own weights: the candidate's mean is
    (2 + 0.5 + 4 + 0.5) / log2(3) + 1 + 1, over 9; each partition's as in the first test."""
    run_a, run_b, qrels = _document_weighted_runs(tmp_path)
    for name, run in (("a", run_a), ("b", run_b)):
        for dt, weight in (("1", 2.0), ("2", 4.0)):
            (tmp_path / f"p{name}" / f"dt={dt}").mkdir(parents=True)
            table = pl.read_csv(run).with_columns(
                pl.when(pl.col("doc_id") == "a").then(weight).otherwise("w").alias("w")
            )
            table.write_parquet(tmp_path / f"p{name}" / f"dt={dt}" / "part.parquet")
    second = 1 / np.log2(3)
    expected = {
        None: (7 * second + 2) / 9,
        "dt=1": (2.5 * second + 1) / 3.5,
        "dt=2": (4.5 * second + 1) / 5.5,
    }
    runs = ("--run", tmp_path / "pa", "--run", tmp_path / "pb", "--qrels", qrels, "--doc-weight-col", "w", "--k", "5")
    for name in ("a", "b"):
        flags = ("--qrels", qrels, "--doc-weight-col", "w", "--k", "5", "--out", tmp_path / f"o{name}")
        made = run_cli("evaluate", "--run", tmp_path / f"p{name}", *flags)
        assert made.returncode == 0, made.stderr
    outputs = ("--baseline", tmp_path / "oa", "--candidate", tmp_path / "ob", "--k", "5")
    for flags in (runs, outputs):
        done = run_cli("compare", *flags, "--json")
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)["comparison"]
        assert len(rows) == 3
        for row in rows:
            partition = None if row["dt"] is None else f"dt={row['dt']}"
            assert row["mean_baseline"] == pytest.approx(1.0, abs=TOLERANCE)
            assert row["mean_candidate"] == pytest.approx(expected[partition], abs=TOLERANCE), row
        # every sign vector of the four weighed differences: the observed sum only with all four alike
        assert rows[0]["p_value_permutation"] == pytest.approx(2 / 16, abs=TOLERANCE)
    (tmp_path / "ob" / "dt=2" / "list_weights.parquet").unlink()
    done = run_cli("compare", *outputs)
    assert done.returncode == 3 and "dt=2: no list_weights.parquet beside its per-query table" in done.stderr
