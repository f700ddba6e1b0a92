"""The DuckDB table macros of `ndcg sql --macros` (sql/macros.sql) in the real duckdb CLI, from a
folder outside the repository: trec_eval's own numbers on its test data, options, views as the
run, and errors that name the argument."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.macros import macros_sql
from pipeline.sql_files import sql_file

REPO = Path(__file__).resolve().parent.parent
TREC_EVAL = REPO / "tests" / "data" / "trec_eval"
DUCKDB_CLI = Path(sys.executable).parent / "duckdb"
# trec_eval prints 4 decimals
PRINTED = 5e-5


def test_the_shipped_file_is_what_the_generator_prints() -> None:
    assert sql_file("macros.sql") == macros_sql(), "regenerate: python -m pipeline.macros --write sql/macros.sql"


def trec_eval_expected(measure: str) -> dict[str, float]:
    rows = (line.split() for line in (TREC_EVAL / "expected.aq").read_text().splitlines())
    return {query: float(value) for name, query, value in rows if name == measure}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty folder outside the repository with trec_eval's test data as Parquet and the
    macros that `ndcg sql --macros` prints there."""
    folder = tmp_path_factory.mktemp("outside")
    run = pl.read_csv(
        TREC_EVAL / "results.test", separator="\t", has_header=False, new_columns=["q", "iter", "doc", "rank", "s", "t"]
    )
    pl.DataFrame(
        {
            "query_id": run["q"].cast(pl.String).str.strip_chars(),
            "doc_id": run["doc"].str.strip_chars(),
            "score": run["s"].str.strip_chars().cast(pl.Float64),
        }
    ).write_parquet(folder / "run.parquet")
    qrels = [line.split() for line in (TREC_EVAL / "qrels.test").read_text().splitlines() if line.strip()]
    pl.DataFrame(
        {"query_id": [r[0] for r in qrels], "doc_id": [r[2] for r in qrels], "relevance": [float(r[3]) for r in qrels]}
    ).write_parquet(folder / "qrels.parquet")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    printed = subprocess.run(
        [sys.executable, "-m", "pipeline", "sql", "--macros"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    (folder / "ndcg_macros.sql").write_text(printed.stdout)
    return folder


def duckdb_csv(folder: Path, *statements: str) -> tuple[list[list[dict[str, str]]], str]:
    """Each statement's rows (as text) after `.read ndcg_macros.sql`, in one CLI call; and stderr."""
    arguments = [str(DUCKDB_CLI), "-csv", "-c", ".read ndcg_macros.sql"]
    for statement in statements:
        arguments += ["-c", statement, "-c", "select '--end--' as marker"]
    done = subprocess.run(arguments, cwd=folder, capture_output=True, text=True, timeout=120)
    tables = [block for block in done.stdout.split("marker\n--end--\n")][:-1]
    return [list(csv.DictReader(io.StringIO(block))) for block in tables], done.stderr


@pytest.mark.timeout(300)
def test_trec_eval_numbers_from_a_folder_outside_the_repository(folder: Path) -> None:
    (per_query, summary, exponential, with_p, from_view), stderr = duckdb_csv(
        folder,
        "select * from ndcg_per_query('run.parquet', 'qrels.parquet', ks := [5, 10, 20, 100])",
        "select * from ndcg_summary('run.parquet', 'qrels.parquet', ks := [5, 10, 20, 100])",
        "select * from ndcg_per_query('run.parquet', 'qrels.parquet', gain := 'exponential')",
        "select * from ndcg_per_query('run.parquet', 'qrels.parquet', measures := ['ndcg', 'P'])",
        "create view my_run as select * from 'run.parquet'; "
        "select * from ndcg_per_query('my_run', 'qrels.parquet', ks := [10])",
    )
    assert stderr == ""
    for k in (5, 10, 20, 100):
        expected = trec_eval_expected(f"ndcg_cut_{k}")
        got = {row["query_id"]: float(row["ndcg"]) for row in per_query if row["k"] == str(k)}
        assert set(got) == set(expected) - {"all"}
        for query, value in got.items():
            assert value == pytest.approx(expected[query], abs=PRINTED), (k, query)
        (overall,) = [row for row in summary if row["k"] == str(k)]
        assert float(overall["ndcg"]) == pytest.approx(expected["all"], abs=PRINTED)
    assert list(per_query[0]) == ["query_id", "k", "cg", "dcg", "idcg", "ndcg"]  # only what was asked for
    assert list(with_p[0]) == ["query_id", "k", "cg", "dcg", "idcg", "ndcg", "P"]
    assert all(row["P"] for row in with_p if row["k"] == "10")
    linear = {row["query_id"]: row["ndcg"] for row in from_view if row["k"] == "10"}
    assert linear == {row["query_id"]: row["ndcg"] for row in per_query if row["k"] == "10"}  # a view as the run
    # the labels are 0 and 1, whose exponential gain 2^label - 1 is the label itself
    assert {row["query_id"]: row["ndcg"] for row in exponential if row["k"] == "10"} == linear


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("ndcg_per_query('run.parquet')", "ndcg_per_query: qrels is missing"),
        ("ndcg_summary('run.parquet')", "ndcg_summary: qrels is missing"),
        ("ndcg_per_query('run.parquet', 'qrels.parquet', gain := 'expo')", "gain must be one of linear, exponential"),
        ("ndcg_per_query('run.parquet', 'qrels.parquet', measures := ['Px'])", "got unknown [Px]"),
        ("ndcg_per_query('run.parquet', 'qrels.parquet', ks := [0])", "ks must be positive integers"),
        ("ndcg_per_query('run.parquet', 'run.parquet')", '"qrels_rows" does not have a column named "relevance"'),
        ("ndcg_per_query('run.parquet', 'qrels.parquet', duplicates := 'first')", "reads the order rows arrive in"),
        ("ndcg_per_query('twice', 'qrels.parquet')", "more than once in query 301"),
    ],
)
def test_errors_name_the_argument(folder: Path, call: str, message: str) -> None:
    twice = (
        "create or replace view twice as (select * from 'run.parquet' union all select * from 'run.parquet' limit 2000)"
    )
    done = subprocess.run(
        [str(DUCKDB_CLI), "-c", ".read ndcg_macros.sql", "-c", twice, "-c", f"select * from {call}"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert message in done.stderr + done.stdout


def test_through_the_python_api(folder: Path) -> None:
    connection = duckdb.connect()
    connection.execute(macros_sql())
    expected = trec_eval_expected("ndcg_cut_10")
    rows = connection.execute(
        "select query_id, ndcg from ndcg_per_query($run, $qrels) where k = 10",
        {"run": str(folder / "run.parquet"), "qrels": str(folder / "qrels.parquet")},
    ).fetchall()
    assert {query: pytest.approx(expected[query], abs=PRINTED) for query, _ in rows} == dict(rows)
