"""Hostile uses of groups, `ndcg compare` and the execution flags, through the real command line.

Each refusal is checked for its exit code, a message naming the problem, and that neither
`--out` (which holds a file of the user's) nor any input was touched. Expected numbers come
from arithmetic over the per-query tables or from evaluating a subset alone, never from the
row under test.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest

from pipeline import evaluate
from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.local_engines("the command line in a subprocess, with groups (refused on Spark)")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
FAST = ("--permutations", "200", "--bootstrap", "200")
NULL_LOCALE = ("q001", "q002", "q003", "q004", "q005")  # the queries whose locale is null below
INT64_MAX = 2**63 - 1


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under the given files or folders, with its bytes."""
    files: dict[str, bytes] = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        files.update({str(p): p.read_bytes() for p in paths})
    return files


def user_out(tmp_path: Path) -> Path:
    """An --out folder that already holds a file of the user's."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("not the tool's\n")
    return out


def assert_refused(result, code: int, *fragments: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def evaluate_out(out: Path, run: Path = RUN, qrels: Path = QRELS, *flags: str) -> Path:
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "5,10", "--out", out, *flags)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Variants of the sample: null locales, a perturbed copy, integer ids, and outputs."""
    root = tmp_path_factory.mktemp("hostile_compare")
    run = pl.read_parquet(RUN)
    qrels = pl.read_parquet(QRELS)
    nulls = run.with_columns(
        pl.when(pl.col("query_id").is_in(NULL_LOCALE)).then(None).otherwise(pl.col("locale")).alias("locale")
    )
    paths = {"root": root, "nulls": root / "nulls.parquet", "nulls_b": root / "nulls_b.parquet"}
    nulls.write_parquet(paths["nulls"])
    nulls.with_columns(pl.col("score") + pl.col("doc_id").str.slice(-3).cast(pl.Int64) % 7 * 0.8).write_parquet(
        paths["nulls_b"]
    )
    number = pl.col("query_id").str.slice(1).cast(pl.Int64)
    for name, frame in (("run", run), ("qrels", qrels)):
        frame.with_columns(number).write_parquet(root / f"{name}_int.parquet")
        frame.with_columns(number.cast(pl.String)).write_parquet(root / f"{name}_text.parquet")
        paths[f"{name}_int"], paths[f"{name}_text"] = root / f"{name}_int.parquet", root / f"{name}_text.parquet"
    for name, flags in (("linear", ()), ("exponential", ("--gain", "exponential"))):
        paths[name] = evaluate_out(root / name, RUN, QRELS, *flags)
    for name, run_path in (("grouped_a", paths["nulls"]), ("grouped_b", paths["nulls_b"])):
        paths[name] = evaluate_out(root / name, run_path, QRELS, "--group-by", "locale")
    return paths


# --- groups --------------------------------------------------------------------------------


def test_null_group_is_a_group_and_overall_rows_are_marked(data: dict[str, Path], tmp_path: Path, engine: str) -> None:
    out = tmp_path / "out"
    result = run_cli(
        "evaluate", "--run", data["nulls"], "--qrels", QRELS, "--k", "5", "--group-by", "locale",
        "--engine", engine, "--out", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.columns[:3] == ["locale", "overall", "k"]
    overall = summary.filter(pl.col("overall"))
    null_group = summary.filter(~pl.col("overall") & pl.col("locale").is_null())
    # two kinds of rows with a null locale, told apart by `overall` alone
    assert overall["queries"].to_list() == [40, 40] and overall["locale"].null_count() == 2
    assert null_group["queries"].to_list() == [len(NULL_LOCALE)] * 2
    # the null group's means are those of its five queries evaluated alone
    alone = evaluate(
        pl.read_parquet(RUN).filter(pl.col("query_id").is_in(NULL_LOCALE)).lazy(), QRELS, k=[5], engine=engine
    ).per_query
    for k in (5, None):
        expected = alone.filter(pl.col("k") == k if k else pl.col("k").is_null())["ndcg"].mean()
        got = null_group.filter(pl.col("k") == k if k else pl.col("k").is_null())["ndcg"][0]
        assert got == pytest.approx(expected, abs=1e-12)
    # the groups partition the queries: their counts add up to the overall count
    assert summary.filter(~pl.col("overall"), k=5)["queries"].sum() == 40
    # stdout tells the two apart too
    assert "(null)" in result.stdout and "\noverall " in result.stdout


def test_grouped_trec_summary_holds_the_overall_lines(data: dict[str, Path], tmp_path: Path) -> None:
    grouped, plain = tmp_path / "grouped", tmp_path / "plain"
    for out, flags in ((grouped, ("--group-by", "locale")), (plain, ())):
        result = run_cli(
            "evaluate", "--run", data["nulls"], "--qrels", QRELS, "--k", "5", "--out-format", "trec", "--out", out,
            *flags,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    lines = (grouped / "summary.trec").read_text().splitlines()
    # the `all` lines of trec_eval: over every query, whatever the groups (and the null group)
    assert [line.split("\t")[:2] for line in lines] == [["ndcg".ljust(22), "all"], ["ndcg_cut_5".ljust(22), "all"]]
    assert lines == (plain / "summary.trec").read_text().splitlines()


def test_compare_keeps_the_null_group_and_marks_overall_rows(data: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = run_cli(
        "compare", "--baseline", data["grouped_a"], "--candidate", data["grouped_b"], "--group-by", "locale",
        "--k", "10", "--out", out, *FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    comparison = pl.read_parquet(out / "comparison.parquet")
    assert comparison.columns[:5] == ["baseline", "candidate", "locale", "overall", "k"]
    a = pl.read_parquet(data["grouped_a"] / "per_query.parquet").filter(k=10)
    b = pl.read_parquet(data["grouped_b"] / "per_query.parquet").filter(k=10)
    deltas = a.join(b, on="query_id", suffix="_b").select("query_id", (pl.col("ndcg_b") - pl.col("ndcg")).alias("d"))
    overall = comparison.filter(pl.col("overall"))
    null_group = comparison.filter(~pl.col("overall") & pl.col("locale").is_null())
    assert overall.height == 1 and overall["queries"][0] == 40
    assert overall["mean_difference"][0] == pytest.approx(deltas["d"].mean(), abs=1e-12)
    assert null_group.height == 1 and null_group["queries"][0] == len(NULL_LOCALE)
    expected = deltas.filter(pl.col("query_id").is_in(NULL_LOCALE))["d"].mean()
    assert null_group["mean_difference"][0] == pytest.approx(expected, abs=1e-12)
    # the overall row is not adjusted together with the null group: each is a family of one pair
    assert overall["p_adjusted_t"][0] == pytest.approx(overall["p_value_t"][0])
    assert "(null)" in result.stdout and "all" in result.stdout


def test_compare_runs_with_a_null_group(data: dict[str, Path]) -> None:
    result = run_cli(
        "compare", "--run", data["nulls"], "--run", data["nulls_b"], "--qrels", QRELS, "--group-by", "locale",
        "--k", "10", "--json", *FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["comparison"]
    assert [(row["locale"], row["overall"], row["queries"]) for row in rows] == [
        (None, True, 40),
        (None, False, 5),
        ("de-DE", False, 17),
        ("en-US", False, 7),
        ("ja-JP", False, 11),
    ]


def test_report_reads_the_overall_rows(data: dict[str, Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    cmp = tmp_path / "cmp"
    made = run_cli(
        "compare", "--baseline", data["grouped_a"], "--candidate", data["grouped_b"], "--group-by", "locale",
        "--out", cmp, *FAST,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    html = tmp_path / "report.html"
    result = run_cli("report", data["grouped_a"], data["grouped_b"], cmp, "--html", html)
    assert result.returncode == 0, result.stderr
    page = html.read_text()
    # the summary's overall rows: one per system and cutoff (5, 10, all), each of 40 queries; then each group's
    pattern = (
        r'<tr data-system="grouped_a" data-k="([^"]+)" data-overall="true">.*?data-column="queries" data-value="(\d+)"'
    )
    rows = re.findall(pattern, page)
    assert sorted(rows) == [("10", "40"), ("5", "40"), ("all", "40")]
    assert len(re.findall(r'<tr data-system="grouped_a" data-k="[^"]+" data-overall="false">', page)) == 3 * 4
    assert "(null)" in page


@pytest.mark.parametrize("column", ["k", "ndcg", "overall", "query_id"])
def test_group_column_named_like_an_output_column_is_refused(tmp_path: Path, column: str) -> None:
    run = tmp_path / "run.parquet"
    pl.read_parquet(RUN).with_columns(pl.col("locale").alias(column) if column != "query_id" else []).write_parquet(run)
    out = user_out(tmp_path)
    before = snapshot(out, run)
    result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--group-by", column, "--out", out)
    assert_refused(result, 2, f"cannot group by '{column}'")
    assert snapshot(out, run) == before


def test_compare_group_column_named_overall_is_refused(data: dict[str, Path], tmp_path: Path) -> None:
    out = user_out(tmp_path)
    before = snapshot(out, data["linear"], data["exponential"])
    result = run_cli(
        "compare", "--baseline", data["linear"], "--candidate", data["linear"] / "per_query.parquet", "--names",
        "a,b", "--group-by", "overall", "--out", out,
    )  # fmt: skip
    assert_refused(result, 2, "cannot group by 'overall'")
    assert snapshot(out, data["linear"], data["exponential"]) == before


def test_query_attributes_with_integer_ids_join_text_ids(data: dict[str, Path], tmp_path: Path, engine: str) -> None:
    attributes = tmp_path / "attributes.parquet"
    pl.read_parquet(RUN).select(pl.col("query_id").str.slice(1).cast(pl.Int64), "locale").unique().write_parquet(
        attributes
    )
    out = tmp_path / "out"
    result = run_cli(
        "evaluate", "--run", data["run_text"], "--qrels", data["qrels_text"], "--k", "5", "--group-by", "locale",
        "--query-attributes", attributes, "--engine", engine, "--out", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = pl.read_parquet(out / "summary.parquet").filter(~pl.col("overall"), k=5)
    locales = pl.read_parquet(RUN).select("query_id", "locale").unique()
    expected = dict(locales.group_by("locale").len().iter_rows())
    assert dict(summary.select("locale", "queries").iter_rows()) == expected  # every group kept, none null
    assert pl.read_parquet(out / "per_query.parquet")["query_id"].dtype == pl.String  # the run's type kept


def test_query_attributes_whose_ids_match_none_are_refused(data: dict[str, Path], tmp_path: Path) -> None:
    attributes = tmp_path / "attributes.parquet"
    pl.read_parquet(RUN).select(pl.col("query_id").str.slice(1).cast(pl.Int64), "locale").unique().write_parquet(
        attributes
    )
    out = user_out(tmp_path)
    before = snapshot(out, attributes)
    result = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--group-by", "locale", "--query-attributes", attributes,
        "--out", out,
    )  # fmt: skip
    assert_refused(result, 3, str(attributes), "none of the 40 evaluated queries", "String", "Int64", "'q001'")
    assert snapshot(out, attributes) == before


def test_query_attributes_with_float_ids_are_refused(tmp_path: Path) -> None:
    attributes = tmp_path / "attributes.parquet"
    pl.DataFrame({"query_id": [1.0, 2.0], "locale": ["a", "b"]}).write_parquet(attributes)
    out = user_out(tmp_path)
    before = snapshot(out, attributes)
    result = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--group-by", "locale", "--query-attributes", attributes,
        "--out", out,
    )  # fmt: skip
    assert_refused(result, 3, str(attributes), "Float64", "cannot be joined")
    assert snapshot(out, attributes) == before


def test_queries_missing_from_the_attributes_are_warned_and_grouped_as_null(tmp_path: Path) -> None:
    attributes = tmp_path / "attributes.csv"
    known = pl.read_parquet(RUN).select("query_id", "locale").unique().filter(pl.col("query_id") > "q003")
    known.write_csv(attributes)
    out = tmp_path / "out"
    result = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--k", "5", "--group-by", "locale",
        "--query-attributes", attributes, "--out", out, "--verbose",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "without a row in" in result.stderr and "q001, q002, q003" in result.stderr
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.filter(~pl.col("overall") & pl.col("locale").is_null(), k=5)["queries"].to_list() == [3]
    assert summary.filter(pl.col("overall"), k=5)["queries"].to_list() == [40]
    warnings = json.loads((out / "manifest.json").read_text())["warnings"]
    assert [w["count"] for w in warnings if w["code"] == "queries_without_group"] == [3]


# --- comparisons of incomparable things ----------------------------------------------------


def test_different_gains_are_refused(data: dict[str, Path], tmp_path: Path) -> None:
    out = user_out(tmp_path)
    before = snapshot(out, data["linear"], data["exponential"])
    result = run_cli("compare", "--baseline", data["linear"], "--candidate", data["exponential"], "--out", out, *FAST)
    assert_refused(result, 2, "different conventions", "gain: linear=linear, exponential=exponential",
                   "--allow-different-conventions")  # fmt: skip
    assert result.stdout == ""
    assert snapshot(out, data["linear"], data["exponential"]) == before


def test_different_conventions_compared_when_allowed(data: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = run_cli(
        "compare", "--baseline", data["linear"], "--candidate", data["exponential"], "--k", "10",
        "--allow-different-conventions", "--out", out, *FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "warning: comparing systems evaluated with different conventions: gain" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["convention_differences"] == {"gain": {"linear": "linear", "exponential": "exponential"}}


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--ties", "input-order"), "ties: "),
        (("--ideal", "retrieved"), "ideal: "),
        (("--max-results", "5"), "max_results: a=None, b=5"),
        (("--discount", "jk", "--log-base", "3"), "discount: "),
        (("--empty-ideal", "one"), "empty_ideal: a=zero, b=one"),
    ],
)
def test_other_convention_differences_are_refused(tmp_path: Path, flags: tuple[str, ...], named: str) -> None:
    a, b = evaluate_out(tmp_path / "a"), evaluate_out(tmp_path / "b", RUN, QRELS, *flags)
    out = user_out(tmp_path)
    before = snapshot(out, a, b)
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--out", out, *FAST)
    assert_refused(result, 2, "different conventions", named)
    assert snapshot(out, a, b) == before


def test_different_cutoff_lists_alone_are_comparable(tmp_path: Path) -> None:
    a = evaluate_out(tmp_path / "a")  # k 5,10
    b = tmp_path / "b"
    made = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "10,20", "--tie-bounds", "--out", b)
    assert made.returncode == 0, made.stderr
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--json", *FAST)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["comparison"]
    assert sorted(row["k"] or 0 for row in rows) == [0, 10]  # the cutoffs both have: 10 and the whole ranking
    assert all(row["mean_difference"] == pytest.approx(0.0, abs=1e-15) for row in rows)


def test_conventions_not_recorded_are_warned(data: dict[str, Path], tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "per_query.parquet").write_bytes((data["linear"] / "per_query.parquet").read_bytes())
    result = run_cli("compare", "--baseline", data["linear"], "--candidate", bare, "--k", "10", *FAST)
    assert result.returncode == 0, result.stderr
    assert "conventions not recorded for bare" in result.stderr


def test_integer_and_text_query_ids_pair(data: dict[str, Path], tmp_path: Path, engine: str) -> None:
    numbers = evaluate_out(tmp_path / "numbers", data["run_int"], data["qrels_int"], "--engine", engine)
    texts = evaluate_out(tmp_path / "texts", data["run_text"], data["qrels_text"], "--engine", engine)
    assert pl.read_parquet(numbers / "per_query.parquet")["query_id"].dtype == pl.Int64
    # two judgments files (integer ids, text ids): other judgments to compare, allowed here
    result = run_cli(
        "compare", "--baseline", numbers, "--candidate", texts, "--k", "10", "--json", "--allow-different-judgments",
        *FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)["comparison"][0]
    # the same rankings under other ids: every query pairs, and ties with itself
    assert (row["queries"], row["only_baseline"], row["only_candidate"], row["ties"]) == (40, 0, 0, 40)


def test_ids_that_cannot_pair_are_refused(data: dict[str, Path], tmp_path: Path) -> None:
    numbers = evaluate_out(tmp_path / "numbers", data["run_int"], data["qrels_int"])
    out = user_out(tmp_path)
    before = snapshot(out, numbers, data["linear"])
    flags = ("--allow-different-judgments", *FAST)  # judged in another file, under integer ids
    result = run_cli("compare", "--baseline", data["linear"], "--candidate", numbers, "--out", out, *flags)
    assert_refused(result, 5, "share no query", "String ids, e.g. 'q001'", "Int64 ids")
    assert snapshot(out, numbers, data["linear"]) == before


@pytest.mark.parametrize(
    ("column", "cast", "named"),
    [
        ("ndcg", pl.String, "column 'ndcg' holds String"),
        ("k", pl.String, "column 'k' holds String"),
        ("query_id", pl.Float64, "column 'query_id' holds Float64"),
    ],
)
def test_per_query_columns_of_the_wrong_type_are_refused(
    data: dict[str, Path], tmp_path: Path, column: str, cast: pl.DataType, named: str
) -> None:
    bad = tmp_path / "bad.parquet"
    table = pl.read_parquet(data["linear"] / "per_query.parquet")
    if column == "query_id":
        table = table.with_columns(pl.col("query_id").str.slice(1).cast(pl.Float64))
    table.with_columns(pl.col(column).cast(cast)).write_parquet(bad)
    out = user_out(tmp_path)
    before = snapshot(out, bad)
    result = run_cli("compare", "--baseline", data["linear"], "--candidate", bad, "--out", out, *FAST)
    assert_refused(result, 3, str(bad), named)
    assert snapshot(out, bad) == before


# --- usage errors that are not internal ----------------------------------------------------


@pytest.mark.parametrize("k", [str(INT64_MAX + 1), "99999999999999999999", f"5,{10**30}"])
def test_k_beyond_int64_is_a_usage_error(tmp_path: Path, engine: str, k: str) -> None:
    out = user_out(tmp_path)
    before = snapshot(out)
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", k, "--engine", engine, "--out", out)
    assert_refused(result, 2, "at most 9223372036854775807")
    assert snapshot(out) == before


def test_largest_k_is_the_whole_ranking(engine: str) -> None:
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", str(INT64_MAX), "--engine", engine, "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["k"]: row for row in json.loads(result.stdout)["summary"]}
    # no query has 2**63 - 1 results, so that cutoff cuts nothing
    for measure in ("cg", "dcg", "idcg", "ndcg"):
        assert rows[INT64_MAX][measure] == pytest.approx(rows[None][measure], abs=1e-12)


def test_compare_k_beyond_int64_is_a_usage_error(data: dict[str, Path], tmp_path: Path) -> None:
    out = user_out(tmp_path)
    result = run_cli(
        "compare", "--baseline", data["linear"], "--candidate", data["grouped_a"], "--k", str(2**64), "--out", out
    )
    assert_refused(result, 2, "at most 9223372036854775807")
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_threads_beyond_the_machine_are_a_usage_error(tmp_path: Path) -> None:
    limit = 4 * (os.cpu_count() or 1)
    out = user_out(tmp_path)
    before = snapshot(out)
    for threads in (str(limit + 1), "100000", "99999999999"):
        result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--engine", "duckdb", "--threads", threads,
                         "--out", out)  # fmt: skip
        assert_refused(result, 2, "--threads", f"at most {limit} threads")
    config = tmp_path / "eval.toml"
    config.write_text(f'run = "{RUN}"\nqrels = "{QRELS}"\nengine = "duckdb"\nthreads = 100000\n')
    from_file = run_cli("evaluate", "--config", config, "--out", out)
    assert_refused(from_file, 2, "threads", f"at most {limit} threads")
    assert snapshot(out) == before
    at_limit = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--engine", "duckdb", "--threads", str(limit))
    assert at_limit.returncode == 0, at_limit.stderr


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--permutations", "1000000000000", "at most 1,000,000"),
        ("--bootstrap", "1000000001", "at most 1,000,000"),
        ("--seed", str(2**70), "seed must be an integer from 0 to 9223372036854775807"),
        ("--seed", "-1", "seed must be an integer from 0"),
    ],
)
def test_compare_resampling_bounds(data: dict[str, Path], tmp_path: Path, flag: str, value: str, named: str) -> None:
    out = user_out(tmp_path)
    before = snapshot(out, data["linear"], data["grouped_a"])
    result = run_cli(
        "compare", "--baseline", data["linear"], "--candidate", data["grouped_a"], flag, value, "--out", out
    )
    assert_refused(result, 2, named)
    assert snapshot(out, data["linear"], data["grouped_a"]) == before
