"""The command line as users run it: inputs in every format, outputs, inline labels."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, per_query
from tests.helpers import ROOT, as_table, assert_tables_close, run_cli

pytestmark = pytest.mark.local_engines(
    "the command line in a subprocess (Spark's own: tests/test_spark.py, in-process)"
)

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


def test_evaluate_writes_outputs_and_prints_a_summary(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "5,10,20", "--out", out, "--engine", engine)
    assert result.returncode == 0, result.stderr
    assert "ndcg" in result.stdout and result.stdout.startswith("# conventions: trec_eval defaults\n")
    # nothing but our own messages: e.g. no "nanobind: leaked instances" report at exit,
    # which handing DuckDB's relation object itself to Polars caused
    assert all(line.startswith("ndcg: ") for line in result.stderr.splitlines()), result.stderr
    per_query_table = pl.read_parquet(out / "per_query.parquet")
    assert per_query_table.schema == pl.Schema(
        {
            "query_id": pl.String,
            "k": pl.Int64,
            "cg": pl.Float64,
            "dcg": pl.Float64,
            "idcg": pl.Float64,
            "ndcg": pl.Float64,
        }
    )
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.columns == ["k", "queries", "cg", "dcg", "idcg", "ndcg"]
    assert summary["k"].to_list() == [None, 5, 10, 20]
    # queries only in the qrels (q041..q043) are skipped without --all-queries
    assert summary["queries"].to_list() == [40] * 4
    means = per_query_table.group_by("k").agg(pl.col("ndcg").mean()).sort("k", nulls_last=False)
    assert (summary["ndcg"] - means["ndcg"]).abs().max() < 1e-12
    assert not [p for p in out.iterdir() if p.name.startswith(".staging")]


def test_all_queries_counts_missing_queries_as_zero(engine: str) -> None:
    result = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--all-queries", "--output-format", "json", "--engine", engine
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert {row["queries"] for row in summary} == {43}


def test_csv_and_renamed_columns(tmp_path: Path, engine: str) -> None:
    run = pl.read_parquet(RUN).rename({"query_id": "qid", "doc_id": "docno", "score": "model score"})
    qrels = pl.read_parquet(QRELS).rename({"query_id": "qid", "doc_id": "docno", "relevance": "grade"})
    run.write_csv(tmp_path / "run.csv")
    qrels.write_csv(tmp_path / "qrels.csv")
    out = tmp_path / "out"
    result = run_cli(
        "evaluate",
        "--run",
        tmp_path / "run.csv",
        "--qrels",
        tmp_path / "qrels.csv",
        "--k",
        "10",
        "--out",
        out,
        "--query-col",
        "qid",
        "--doc-col",
        "docno",
        "--score-col",
        "model score",
        "--label-col",
        "grade",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    expected = per_query(RUN, QRELS, evaluation=Evaluation(cutoffs=(10,))).collect()
    assert_tables_close(as_table(pl.read_parquet(out / "per_query.parquet")), as_table(expected))


def test_renamed_parquet_columns(tmp_path: Path, engine: str) -> None:
    pl.read_parquet(RUN).rename({"score": "select", "query_id": "q; drop"}).write_parquet(tmp_path / "run.parquet")
    pl.read_parquet(QRELS).rename({"relevance": "rel'", "query_id": "q; drop"}).write_parquet(
        tmp_path / "qrels.parquet"
    )
    result = run_cli(
        "evaluate",
        "--run",
        tmp_path / "run.parquet",
        "--qrels",
        tmp_path / "qrels.parquet",
        "--k",
        "10",
        "--query-col",
        "q; drop",
        "--score-col",
        "select",
        "--label-col",
        "rel'",
        "--output-format",
        "json",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    expected = per_query(RUN, QRELS, evaluation=Evaluation(cutoffs=(10,))).collect()
    ours = {row["k"]: row["ndcg"] for row in json.loads(result.stdout)["summary"]}
    assert ours[10] == pytest.approx(expected.filter(pl.col("k") == 10)["ndcg"].mean(), abs=1e-12)


def test_inline_labels(tmp_path: Path, engine: str) -> None:
    run = pl.read_parquet(RUN).join(pl.read_parquet(QRELS), on=["query_id", "doc_id"], how="left")
    run = run.with_columns(pl.col("relevance").fill_null(0))
    run.write_parquet(tmp_path / "labelled.parquet")
    out = tmp_path / "out"
    result = run_cli(
        "evaluate",
        "--run",
        tmp_path / "labelled.parquet",
        "--label-col",
        "relevance",
        "--k",
        "5",
        "--out",
        out,
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    table = pl.read_parquet(out / "per_query.parquet")
    # the ideal comes from the run's own labels: judged documents the run missed do not count
    only_retrieved = run.select("query_id", "doc_id", "relevance")
    expected = per_query(RUN, only_retrieved, evaluation=Evaluation(cutoffs=(5,))).collect()
    assert_tables_close(as_table(table), as_table(expected))


def test_hive_partitioned_directory_and_glob(tmp_path: Path, engine: str) -> None:
    run = pl.read_parquet(RUN).with_columns(
        dt=pl.when(pl.col("query_id") < "q020").then(pl.lit("2026-11-20")).otherwise(pl.lit("2026-11-21"))
    )
    for (dt,), part in run.group_by("dt"):
        folder = tmp_path / "runs" / f"dt={dt}"
        folder.mkdir(parents=True)
        part.drop("dt").write_parquet(folder / "part-0.parquet")
    expected = as_table(per_query(RUN, QRELS, evaluation=Evaluation(cutoffs=(10,))).collect())
    # a hive directory is evaluated partition by partition, each written to its own folder
    out = tmp_path / "by-partition"
    result = run_cli(
        "evaluate", "--run", tmp_path / "runs", "--qrels", QRELS, "--k", "10", "--out", out, "--engine", engine
    )
    assert result.returncode == 0, result.stderr
    parts = pl.read_parquet(out / "*" / "per_query.parquet")
    assert sorted(parts["dt"].unique().to_list()) == ["2026-11-20", "2026-11-21"]
    assert_tables_close(as_table(parts.drop("dt")), expected)
    # a glob is one dataset
    out = tmp_path / "glob"
    result = run_cli(
        "evaluate",
        "--run",
        tmp_path / "runs" / "*" / "*.parquet",
        "--qrels",
        QRELS,
        "--k",
        "10",
        "--out",
        out,
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    assert_tables_close(as_table(pl.read_parquet(out / "per_query.parquet")), expected)


def test_duplicates_are_refused(tmp_path: Path, engine: str) -> None:
    run = pl.read_parquet(RUN)
    pl.concat([run, run.head(1)]).write_parquet(tmp_path / "dup.parquet")
    result = run_cli("evaluate", "--run", tmp_path / "dup.parquet", "--qrels", QRELS, "--engine", engine)
    assert result.returncode == 3
    first = run.row(0, named=True)
    assert first["query_id"] in result.stderr and first["doc_id"] in result.stderr and "2 times" in result.stderr


def test_nothing_to_evaluate_exits_5(tmp_path: Path) -> None:
    pl.DataFrame({"query_id": ["elsewhere"], "doc_id": ["d"], "relevance": [1]}).write_parquet(tmp_path / "q.parquet")
    result = run_cli("evaluate", "--run", RUN, "--qrels", tmp_path / "q.parquet")
    assert result.returncode == 5
    assert "no query" in result.stderr


def test_help_lists_exit_codes_and_flags() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "exit codes" in result.stdout
    evaluate_help = run_cli("evaluate", "--help").stdout
    for flag in (
        "--run",
        "--qrels",
        "--k",
        "--gain",
        "--discount",
        "--all-queries",
        "--max-results",
        "--engine",
        "--out",
    ):
        assert flag in evaluate_help
