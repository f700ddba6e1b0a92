"""Column names per input: ``--run-query-col``, ``--run-doc-col``, ``--qrels-query-col``,
``--qrels-doc-col`` and ``--qrels-label-col`` (the API's ``run_query_col=``, ...,
``Columns(run_query=...)``) name a column in one input only, over ``--query-col``, ``--doc-col``
and ``--label-col``, which name it in both. A run with ``qid, docno, sim`` is read beside
judgments with the canonical names, with one meaning on every engine.

The expected numbers are the same inputs under the canonical names: renaming a column changes
no number."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from pipeline import evaluate, per_query
from pipeline.engines import duckdb as duckdb_engine
from pipeline.errors import InvalidInput, UsageError
from pipeline.io.read import Columns, column_flags
from tests.helpers import ROOT, as_table, assert_tables_close, run_cli

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
RUN_NAMES = {"query_id": "qid", "doc_id": "docno", "score": "sim"}
QRELS_NAMES = {"query_id": "topic", "doc_id": "docid", "relevance": "judgment"}
RUN_FLAGS = ("--run-query-col", "qid", "--run-doc-col", "docno", "--score-col", "sim")
QRELS_FLAGS = ("--qrels-query-col", "topic", "--qrels-doc-col", "docid", "--qrels-label-col", "judgment")


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample run as ``qid, docno, sim`` (Parquet and CSV) and the judgments as ``topic,
    docid, judgment``; the run with inline labels as ``qid, docno, sim, grade``."""
    folder = tmp_path_factory.mktemp("renamed")
    run = pl.read_parquet(RUN).rename(RUN_NAMES)
    run.write_parquet(folder / "run.parquet")
    run.write_csv(folder / "run.csv")
    pl.read_parquet(QRELS).rename(QRELS_NAMES).write_parquet(folder / "qrels.parquet")
    inline = pl.read_parquet(RUN).join(pl.read_parquet(QRELS), on=["query_id", "doc_id"], how="inner")
    inline.rename({**RUN_NAMES, "relevance": "grade"}).write_parquet(folder / "inline.parquet")
    inline.write_parquet(folder / "inline_canonical.parquet")
    return {
        "run": folder / "run.parquet",
        "run_csv": folder / "run.csv",
        "qrels": folder / "qrels.parquet",
        "inline": folder / "inline.parquet",
        "inline_canonical": folder / "inline_canonical.parquet",
    }


def summary_of(result: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["summary"]


def assert_summaries_close(actual: list[dict[str, object]], expected: list[dict[str, object]]) -> None:
    assert [row["k"] for row in actual] == [row["k"] for row in expected]
    for got, want in zip(actual, expected, strict=True):
        assert got["queries"] == want["queries"]
        assert got["ndcg"] == pytest.approx(want["ndcg"], abs=1e-9)


@pytest.mark.local_engines("the command line in a subprocess; Spark's case runs in-process below")
@pytest.mark.parametrize("run_key", ["run", "run_csv"])
def test_a_renamed_run_beside_canonical_judgments(renamed: dict[str, Path], engine: str, run_key: str) -> None:
    expected = summary_of(run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--json", "--engine", engine))
    given = run_cli("evaluate", "--run", renamed[run_key], "--qrels", QRELS, *RUN_FLAGS, "--json", "--engine", engine)
    assert_summaries_close(summary_of(given), expected)


@pytest.mark.local_engines("the command line in a subprocess")
def test_renamed_judgments_and_a_renamed_run_each_by_its_own_flags(renamed: dict[str, Path], engine: str) -> None:
    expected = summary_of(run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--json", "--engine", engine))
    both = run_cli(
        "evaluate", "--run", renamed["run"], "--qrels", renamed["qrels"], *RUN_FLAGS, *QRELS_FLAGS, "--json",
        "--engine", engine,
    )  # fmt: skip
    assert_summaries_close(summary_of(both), expected)
    # the shared flag names the column in both inputs; an input's own flag wins over it
    shared = run_cli(
        "evaluate", "--run", renamed["run"], "--qrels", renamed["qrels"], "--query-col", "qid",
        "--qrels-query-col", "topic", "--run-doc-col", "docno", "--doc-col", "docid", "--score-col", "sim",
        "--label-col", "judgment", "--json", "--engine", engine,
    )  # fmt: skip
    assert_summaries_close(summary_of(shared), expected)


@pytest.mark.local_engines("the command line in a subprocess")
def test_inline_labels_are_named_by_the_run_s_flags(renamed: dict[str, Path], engine: str) -> None:
    expected = summary_of(run_cli("evaluate", "--run", renamed["inline_canonical"], "--json", "--engine", engine))
    given = run_cli(
        "evaluate", "--run", renamed["inline"], *RUN_FLAGS, "--label-col", "grade", "--json", "--engine", engine
    )
    assert_summaries_close(summary_of(given), expected)
    # a judgments' name without judgments is a mistake, said as such (exit 2)
    refused = run_cli("evaluate", "--run", renamed["inline"], *RUN_FLAGS, "--qrels-label-col", "grade")
    assert refused.returncode == 2 and "--qrels-label-col" in refused.stderr and "give --qrels" in refused.stderr


@pytest.mark.local_engines("Polars frames and paths through the API; Spark's case below")
def test_the_api_takes_per_input_names_as_keywords_and_as_columns(renamed: dict[str, Path], engine: str) -> None:
    expected = as_table(per_query(str(RUN), str(QRELS), engine=engine).collect())
    by_keywords = per_query(
        str(renamed["run"]), str(QRELS), engine=engine, run_query_col="qid", run_doc_col="docno", score_col="sim"
    )
    assert_tables_close(as_table(by_keywords.collect()), expected)
    columns = Columns(score="sim", run_query="qid", run_doc="docno", qrels_query="topic", qrels_doc="docid")
    frames = (pl.read_parquet(renamed["run"]), pl.read_parquet(renamed["qrels"]))
    by_columns = evaluate(*frames, engine=engine, columns=Columns(**{**vars(columns), "qrels_label": "judgment"}))
    assert_tables_close(as_table(by_columns.per_query), expected)
    with pytest.raises(UsageError, match="got columns= and run_query_col"):
        evaluate(*frames, engine=engine, columns=columns, run_query_col="qid")


def test_a_missing_column_is_hinted_with_the_flag_of_its_input(tmp_path: Path) -> None:
    run = pl.read_parquet(RUN).rename({"query_id": "query"})
    run.write_parquet(tmp_path / "run.parquet")
    with pytest.raises(
        InvalidInput,
        match=r"to read 'query' as query_id: --run-query-col query \(API: columns=Columns\(run_query='query'\)\)",
    ):
        evaluate(str(tmp_path / "run.parquet"), str(QRELS))
    pl.read_parquet(QRELS).rename({"relevance": "relevant"}).write_parquet(tmp_path / "qrels.parquet")
    with pytest.raises(
        InvalidInput,
        match=r"to read 'relevant' as relevance: --qrels-label-col relevant "
        r"\(API: columns=Columns\(qrels_label='relevant'\)\)",
    ):
        evaluate(str(RUN), str(tmp_path / "qrels.parquet"))
    assert column_flags() == {
        "query_id": "--query-col",
        "doc_id": "--doc-col",
        "score": "--score-col",
        "relevance": "--label-col",
    }
    assert column_flags("qrels")["doc_id"] == "--qrels-doc-col" and column_flags("run")["relevance"] == "--label-col"


def test_sql_inputs_reads_each_file_under_its_own_names(renamed: dict[str, Path]) -> None:
    """sql/inputs.sql as the duckdb CLI runs it: the per-input variables over the shared ones."""
    connection = duckdb_engine.connect()
    try:
        duckdb_engine.read_parquet_inputs(
            connection,
            [str(renamed["run"])],
            [str(renamed["qrels"])],
            {"run_query_col": "qid", "run_doc_col": "docno", "score_col": "sim", "query_col": "topic",
             "qrels_doc_col": "docid", "label_col": "judgment"},
        )  # fmt: skip
        run = connection.sql("select query_id, doc_id, score from run order by all").pl()
        qrels = connection.sql("select query_id, doc_id, relevance from qrels order by all").pl()
    finally:
        connection.close()
    assert run.equals(pl.read_parquet(RUN).select("query_id", "doc_id", "score").sort(pl.all()))
    assert qrels.equals(pl.read_parquet(QRELS).select("query_id", "doc_id", "relevance").sort(pl.all()))


@pytest.mark.subprocess
def test_ndcg_sql_names_a_missing_column_and_the_variable_to_set(tmp_path: Path) -> None:
    """sql/ndcg.sql in the duckdb CLI refuses a column the variables name and a file lacks as the
    command line does (the names looked for, the columns found), with the variable to set, not
    with DuckDB's binder error; four cases in one CLI process, each error printed once."""
    import sys

    renamed = tmp_path / "renamed.parquet"
    pl.read_parquet(RUN).select(qid="query_id", docno="doc_id", sim="score").write_parquet(renamed)
    points = tmp_path / "points.parquet"
    pl.read_parquet(RUN).select("query_id", "doc_id", points="score").write_parquet(points)
    graded = tmp_path / "graded.parquet"
    pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0], "Grade": [1]}).write_parquet(graded)
    cases = [  # (variables, the command line's columns, the script's fix)
        ({"run_path": renamed, "qrels_path": QRELS}, Columns(), (
            "; to read them so: SET VARIABLE run_query_col = 'qid'; SET VARIABLE run_doc_col = 'docno'; "
            "SET VARIABLE score_col = 'sim'"
        )),
        ({"run_path": RUN, "qrels_path": QRELS, "qrels_label_col": "grade"}, Columns(qrels_label="grade"), (
            "; to read them so: SET VARIABLE qrels_label_col = 'relevance'"
        )),
        ({"run_path": points, "qrels_path": QRELS}, Columns(), (
            "; name the run's columns with SET VARIABLE (run_query_col, run_doc_col, score_col; query_col and "
            "doc_col: both inputs')"
        )),
        ({"run_path": graded}, Columns(), "; to read them so: SET VARIABLE label_col = 'Grade'"),
    ]  # fmt: skip
    commands = ["SET VARIABLE ks = [5];"]
    expected = []
    for variables, columns, fix in cases:
        commands += ["RESET VARIABLE qrels_path;", "RESET VARIABLE qrels_label_col;"]
        commands += [f"SET VARIABLE {key} = '{value}';" for key, value in variables.items()]
        commands += [".read sql/ndcg.sql"]
        with pytest.raises(InvalidInput) as refused:
            evaluate(str(variables["run_path"]), variables.get("qrels_path"), columns=columns)
        # the command line's words up to its fix, which is its flags: the script's is its variables
        problem = str(refused.value).split("; columns found: ")[0]
        found = ", ".join(map(repr, pl.read_parquet_schema(problem.split(": missing column")[0])))
        expected.append(f"Invalid Input Error: {problem}; columns found: {found}{fix}")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "duckdb"), "-csv"],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    errors = [line for line in done.stderr.splitlines() if "Error" in line]
    assert errors == expected, done.stderr


@pytest.mark.spark
def test_spark_reads_each_input_under_its_own_names(
    renamed: dict[str, Path], spark_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    expected = summary_of(run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--json"))
    given = spark_cli(
        "evaluate", "--engine", "spark", "--run", renamed["run"], "--qrels", renamed["qrels"], *RUN_FLAGS,
        *QRELS_FLAGS, "--json",
    )  # fmt: skip
    assert_summaries_close(summary_of(given), expected)


def test_names_with_dots_spaces_and_backticks_are_read_as_one_column_on_every_engine(engine: str) -> None:
    # Spark reads `a.b` as a field of a struct and a backtick ends a quoted name, unless quoted
    run = pl.DataFrame({"query.id": ["q", "q"], "doc `id`": ["a", "b"], "my score": [2.0, 1.0]})
    qrels = pl.DataFrame({"query.id": ["q"], "doc `id`": ["b"], "grade": [1]})
    columns = Columns(query="query.id", doc="doc `id`", score="my score", label="grade")
    result = evaluate(run, qrels, k=2, columns=columns, engine=engine)
    # a (unjudged) at rank 1, b (label 1) at rank 2: DCG 1/log2(3), ideal 1
    assert result.per_query.filter(pl.col("k") == 2)["ndcg"].item() == pytest.approx(1 / math.log2(3), abs=1e-12)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_columns_that_differ_only_in_case_are_refused(tmp_path: Path, engine: str) -> None:
    """``Score`` beside ``score``: SQL names ignore case, so DuckDB read the other column (the
    macros) or failed to bind it (an internal error); every engine refuses the input alike,
    naming both columns (exit 3)."""
    run = tmp_path / "run.parquet"
    pl.DataFrame(
        {"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "Score": [3.0, 2.0, 1.0], "score": [1.0, 2.0, 3.0]}
    ).write_parquet(run)
    qrels = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "relevance": [3, 0, 1]}).write_parquet(qrels)
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "1", "--engine", engine)
    assert result.returncode == 3, result.stderr
    assert "columns 'score' and 'Score' differ only in case" in result.stderr
    assert "internal error" not in result.stderr
