"""`ndcg compare` over hive-partitioned systems: outputs of `ndcg evaluate --out` over
partitioned logs (OUT/dt=DAY/per_query.parquet), and partitioned runs scored here. Partitions
pair by value; queries pair by (partition, query); one row per partition plus a pooled row."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ROOT, run_cli

FAST = ("--permutations", "500", "--bootstrap", "500")
RUNS, QRELS = ROOT / "data/runs", ROOT / "data/qrels.parquet"


def partitioned(root: Path, days: dict[str, list[float]], *, with_column: bool = True) -> Path:
    """An output with one folder per day; query q<i> of a day scores values[i] at k=10."""
    for day, values in days.items():
        folder = root / f"dt={day}"
        folder.mkdir(parents=True)
        table = pl.DataFrame(
            {"query_id": [f"q{i}" for i in range(len(values))], "k": [10] * len(values), "ndcg": values},
            schema={"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64},
        )
        if with_column:
            table = table.select(pl.lit(day).alias("dt"), pl.all())
        table.write_parquet(folder / "per_query.parquet")
    return root


def test_partitions_pair_by_value_with_a_pooled_row(tmp_path: Path) -> None:
    # day 20: q0..q3 0.5 -> 0.7 (+0.2 each); day 21: the same ids q0..q3 0.6 -> 0.4 (-0.2 each);
    # day 22 only in the candidate. Pooled: 8 units (q0 of day 20 and q0 of day 21 are two), mean
    # difference (4 * 0.2 - 4 * 0.2) / 8 = 0; baseline mean (4 * 0.5 + 4 * 0.6) / 8 = 0.55.
    a = partitioned(tmp_path / "model_a", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.6] * 4})
    b = partitioned(tmp_path / "model_b", {"2026-11-20": [0.7] * 4, "2026-11-21": [0.4] * 4, "2026-11-22": [0.9] * 4})
    out = tmp_path / "cmp"
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    assert "partitions not compared (not in every system): model_a has no dt=2026-11-22" in result.stderr
    comparison = pl.read_parquet(out / "comparison.parquet")
    assert comparison.select("dt", "queries").rows() == [(None, 8), ("2026-11-20", 4), ("2026-11-21", 4)]
    pooled, day20, day21 = comparison.iter_rows(named=True)
    assert pooled["mean_baseline"] == pytest.approx(0.55) and pooled["mean_difference"] == pytest.approx(0.0)
    assert day20["mean_difference"] == pytest.approx(0.2) and day21["mean_difference"] == pytest.approx(-0.2)
    deltas = pl.read_parquet(out / "deltas.parquet")
    assert deltas.height == 8 and deltas.select("dt", "query_id").n_unique() == 8
    assert "pooled" in result.stdout and "dt=2026-11-20" in result.stdout and "dt=2026-11-22" not in result.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["partition_by"] == ["dt"]
    # conventions are looked up per system and partition (none recorded here: null)
    assert set(manifest["conventions"]) == {f"{s}/dt=2026-11-2{d}" for s in ("model_a", "model_b") for d in (0, 1)}


def test_partition_flag_selects(tmp_path: Path) -> None:
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.6] * 4})
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.7] * 4, "2026-11-21": [0.4] * 4})
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--partition", "dt=2026-11-21", "--json", *FAST)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["comparison"]
    assert [(r["dt"], r["queries"]) for r in rows] == [(None, 4), ("2026-11-21", 4)]
    missing = run_cli("compare", "--baseline", a, "--candidate", b, "--partition", "dt=2026-12-01", *FAST)
    assert missing.returncode == 4 and "partition dt=2026-12-01 does not exist" in missing.stderr
    bad = run_cli("compare", "--baseline", a, "--candidate", b, "--partition", "dt", *FAST)
    assert bad.returncode == 2 and "expected key=value" in bad.stderr


def test_partition_columns_added_when_the_tables_lack_them(tmp_path: Path) -> None:
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5] * 4}, with_column=False)
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.7] * 4}, with_column=False)
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--json", *FAST)
    assert result.returncode == 0, result.stderr
    assert [r["dt"] for r in json.loads(result.stdout)["comparison"]] == [None, "2026-11-20"]


def test_hostile_layouts(tmp_path: Path) -> None:
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5] * 4})
    flat = tmp_path / "flat"
    flat.mkdir()
    pl.DataFrame({"query_id": ["q0"], "k": [10], "ndcg": [0.5]}).write_parquet(flat / "per_query.parquet")
    mixed = run_cli("compare", "--baseline", a, "--candidate", flat, *FAST)
    assert mixed.returncode == 3 and "a is partitioned (dt=2026-11-20, ...) but flat is not" in mixed.stderr
    # no partition in common: exit 5, naming each side's
    other = partitioned(tmp_path / "other", {"2026-11-21": [0.5] * 4})
    apart = run_cli("compare", "--baseline", a, "--candidate", other, *FAST)
    assert apart.returncode == 5 and "share no partition" in apart.stderr and "dt=2026-11-21" in apart.stderr
    # keyed differently
    by_locale = partitioned(tmp_path / "loc", {"x": [0.5]})
    (tmp_path / "loc2").mkdir()
    (tmp_path / "loc" / "dt=x").rename(tmp_path / "loc2" / "locale=x")
    keyed = run_cli("compare", "--baseline", a, "--candidate", tmp_path / "loc2", *FAST)
    assert keyed.returncode == 3 and "partitioned by different keys" in keyed.stderr, keyed.stderr
    assert by_locale.exists()
    # a partition's table whose dt column disagrees with its folder
    liar = partitioned(tmp_path / "liar", {"2026-11-20": [0.5] * 4})
    pl.read_parquet(liar / "dt=2026-11-20/per_query.parquet").with_columns(
        pl.lit("2026-11-19").alias("dt")
    ).write_parquet(liar / "dt=2026-11-20/per_query.parquet")
    lying = run_cli("compare", "--baseline", a, "--candidate", liar, *FAST)
    assert lying.returncode == 3 and "must hold its folder's value" in lying.stderr
    # a partition folder without its per-query table (a day whose evaluation never ran)
    hollow = partitioned(tmp_path / "hollow", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.5] * 4})
    (hollow / "dt=2026-11-21/per_query.parquet").unlink()
    a2 = partitioned(tmp_path / "a2", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.5] * 4})
    missing = run_cli("compare", "--baseline", a2, "--candidate", hollow, *FAST)
    assert missing.returncode == 3 and "dt=2026-11-21: no per_query.parquet here" in missing.stderr
    # --partition over unpartitioned outputs: exit 4, as evaluate
    flat2 = tmp_path / "flat2"
    flat2.mkdir()
    pl.DataFrame({"query_id": ["q0"], "k": [10], "ndcg": [0.5]}).write_parquet(flat2 / "per_query.parquet")
    unpartitioned = run_cli("compare", "--baseline", flat, "--candidate", flat2, "--partition", "dt=1", *FAST)
    assert unpartitioned.returncode == 4 and "none is partitioned" in unpartitioned.stderr
    for result in (mixed, apart, keyed, lying, missing, unpartitioned):
        assert "Traceback" not in result.stderr


def test_an_empty_partition_is_left_out_with_a_warning(tmp_path: Path) -> None:
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.5] * 4})
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.7] * 4, "2026-11-21": []})
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--json", *FAST)
    assert result.returncode == 0, result.stderr
    assert "has no rows: partition dt=2026-11-21 is not compared" in result.stderr
    assert "b has no dt=2026-11-21" in result.stderr
    assert [r["dt"] for r in json.loads(result.stdout)["comparison"]] == [None, "2026-11-20"]


def test_gate_on_the_pooled_row_and_per_partition(tmp_path: Path) -> None:
    # day 20: 10 queries 0.8 -> 0.6 (-0.2 each, p = 2/1024); day 21: 10 queries 0.4 -> 0.6 (+0.2).
    # Pooled: 20 units, mean difference 0: the default gate (pooled rows only) passes. With
    # --gate-partitions three rows are checked: the pooled row (family overall) and day 20 and day 21
    # (family partitions, of two): Holm gives day 20 2 * 2/1024 = 0.0039 < 0.05 -> exit 6 naming
    # the partition.
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.8] * 10, "2026-11-21": [0.4] * 10})
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.6] * 10, "2026-11-21": [0.6] * 10})
    pooled = run_cli("compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01")
    assert pooled.returncode == 0, pooled.stderr
    out = tmp_path / "cmp"
    each = run_cli(
        "compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01", "--gate-partitions", "--out", out
    )
    assert each.returncode == 6, each.stderr
    assert "gate FAILED: b vs a at k=10, partition dt=2026-11-20" in each.stdout
    [failure] = json.loads((out / "manifest.json").read_text())["gate"]["failures"]
    assert failure["dt"] == "2026-11-20" and failure["p_gate"] == pytest.approx(2 * 2 / 1024)
    assert failure["family"] == "partitions" and failure["family_checks"] == 2
    # --gate-partitions over unpartitioned systems is a mistake
    flat = tmp_path / "flat"
    flat.mkdir()
    pl.DataFrame({"query_id": ["q0"], "k": [10], "ndcg": [0.5]}).write_parquet(flat / "per_query.parquet")
    refused = run_cli(
        "compare",
        "--baseline",
        flat,
        "--candidate",
        flat,
        "--names",
        "x,y",
        "--fail-if-worse",
        "0.01",
        "--gate-partitions",
    )
    assert refused.returncode == 2 and "--gate-partitions needs partitioned systems" in refused.stderr


@pytest.mark.timeout(600)
def test_runs_and_their_evaluations_compare_alike(tmp_path: Path) -> None:
    """`compare --run` over the sample's hive-partitioned logs evaluates each day on its own (the
    same query ids on both days are no duplicates), and gives the numbers `compare` gives over the
    outputs `ndcg evaluate` writes for the same runs."""
    runs_b = tmp_path / "runs_b"
    for day in ("2026-11-20", "2026-11-21"):
        (runs_b / f"dt={day}").mkdir(parents=True)
        pl.read_parquet(RUNS / f"dt={day}/part-0.parquet").with_columns(
            pl.col("score") + pl.col("doc_id").str.slice(-3).cast(pl.Int64) % 7 * 0.8
        ).write_parquet(runs_b / f"dt={day}/part-0.parquet")
    shared = ("--qrels", QRELS, "--k", "5,10", "--names", "a,b", *FAST)
    direct = run_cli("compare", "--run", RUNS, "--run", runs_b, *shared, "--json")
    assert direct.returncode == 0, direct.stderr
    assert "duplicate" not in direct.stderr
    for name, run in (("a", RUNS), ("b", runs_b)):
        evaluated = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--k", "5,10", "--out", tmp_path / name)
        assert evaluated.returncode == 0, evaluated.stderr
    via_outputs = run_cli(
        "compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", "--k", "5,10", *FAST, "--json"
    )
    assert via_outputs.returncode == 0, via_outputs.stderr
    rows = json.loads(direct.stdout)["comparison"]
    assert rows == json.loads(via_outputs.stdout)["comparison"]
    assert [(r["dt"], r["k"]) for r in rows] == [
        (None, 5),
        (None, 10),
        ("2026-11-20", 5),
        ("2026-11-20", 10),
        ("2026-11-21", 5),
        ("2026-11-21", 10),
    ]
    assert rows[1]["queries"] == rows[3]["queries"] + rows[5]["queries"]
    # the evaluated outputs carry their conventions per partition: recorded and checked
    conventions = json.loads(via_outputs.stdout)["conventions"]
    assert conventions["a/dt=2026-11-20"]["gain"] == "linear"
    one_day = run_cli("compare", "--run", RUNS, "--run", runs_b, *shared, "--partition", "dt=2026-11-21", "--json")
    assert one_day.returncode == 0, one_day.stderr
    assert [r["dt"] for r in json.loads(one_day.stdout)["comparison"]] == [None, None, "2026-11-21", "2026-11-21"]


def test_report_draws_the_pooled_rows_of_a_partitioned_comparison(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.6] * 4})
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.7] * 4, "2026-11-21": [0.4] * 4})
    assert run_cli("compare", "--baseline", a, "--candidate", b, "--out", tmp_path / "cmp", *FAST).returncode == 0
    result = run_cli("report", tmp_path / "cmp", "--html", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    assert "0.5500" in page  # the pooled baseline mean (4 * 0.5 + 4 * 0.6) / 8
    assert "Paired by partition (dt) and query; shown: the rows pooled over every paired partition" in page


def test_gate_partitions_over_one_partition_gates_its_rows_once(tmp_path: Path) -> None:
    # one paired day, 10 queries 0.8 -> 0.6 (-0.2 each; randomization p = 2/1024 at k=10). Its
    # rows are the pooled rows: --gate-partitions must not check them twice (Holm over two
    # identical rows, 2 * 2/1024, would make the gate more lenient than without the flag)
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.8] * 10})
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.6] * 10})
    runs = {}
    for flags in ((), ("--gate-partitions",)):
        out = tmp_path / ("cmp" + "".join(flags))
        runs[flags] = run_cli(
            "compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01", *flags, "--out", out
        )
        assert runs[flags].returncode == 6, runs[flags].stderr
        [failure] = json.loads((out / "manifest.json").read_text())["gate"]["failures"]
        assert failure["p_gate"] == pytest.approx(2 / 1024)
    assert "partition dt=2026-11-20" in runs[("--gate-partitions",)].stdout
