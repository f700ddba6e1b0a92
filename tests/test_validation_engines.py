"""One set of validation rules for every engine: the same bad inputs give the same exit code,
the same error message and the same warnings on Polars, on DuckDB (through the CLI; it is
handed the inputs Polars validated) and on Spark (which measures the inputs with its own jobs
and decides with the same pipeline/rules.py).

Each case is written once as Parquet files and read by every engine from the same paths, so
that the messages, which name the files, must be equal character for character. Each case also
states its exit code and words its message must hold, so that agreeing engines are not
agreeing on something wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest

from pipeline import api
from pipeline.errors import NdcgError
from pipeline.io.read import Columns
from tests.helpers import run_cli

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

ID_SCHEMA = {"query_id": pl.String, "doc_id": pl.String}


def run_frame(scores: list | None = None, **columns: list) -> pl.DataFrame:
    """q1 ranks a, b, c; q2 ranks a. ``columns`` replaces whole columns."""
    data = {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "b", "c", "a"], "score": [3.0, 2.0, 1.0, 5.0]}
    if scores is not None:
        data["score"] = scores
    data.update(columns)
    return pl.DataFrame(data, schema_overrides={c: t for c, t in ID_SCHEMA.items() if c not in columns})


def qrels_frame(labels: list | None = None, **columns: list) -> pl.DataFrame:
    data = {"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "c", "a"], "relevance": [1, 2, 1]}
    if labels is not None:
        data["relevance"] = labels
    data.update(columns)
    return pl.DataFrame(data, schema_overrides={c: t for c, t in ID_SCHEMA.items() if c not in columns})


@dataclass(frozen=True)
class Case:
    """Inputs, options, and what must happen: ``code`` 0 with ``warnings`` (codes), or an
    error whose message holds ``words``."""

    run: pl.DataFrame
    qrels: pl.DataFrame | None
    code: int
    words: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    allow_fractional_labels: bool = False
    warn_results_over: int | None = 1000
    options: dict = field(default_factory=dict)
    columns: Columns = field(default_factory=Columns)


NAN, INF = float("nan"), float("inf")
CASES: dict[str, Case] = {
    "clean": Case(run_frame(), qrels_frame(), 0),
    "null query id": Case(
        run_frame(query_id=["q1", None, "q1", "q2"]), qrels_frame(), 3, ("run.parquet", "'query_id'", "1 null", "'b'")
    ),
    "null doc id in qrels": Case(
        run_frame(), qrels_frame(doc_id=["a", None, "a"]), 3, ("qrels.parquet", "'doc_id'", "1 null", "'q1'")
    ),
    "null score": Case(run_frame([3.0, None, 1.0, 5.0]), qrels_frame(), 3, ("'score'", "1 null", "'b'")),
    "null label": Case(run_frame(), qrels_frame([1, None, 1]), 3, ("qrels.parquet", "'relevance'", "1 null")),
    "NaN score": Case(run_frame([3.0, NAN, 1.0, 5.0]), qrels_frame(), 3, ("'score'", "NaN or infinite", "nan")),
    "infinite score": Case(run_frame([INF, 2.0, 1.0, 5.0]), qrels_frame(), 3, ("'score'", "such as inf", "'a'")),
    "minus infinite score": Case(run_frame([3.0, 2.0, 1.0, -INF]), qrels_frame(), 3, ("such as -inf", "'q2'")),
    "NaN label": Case(run_frame(), qrels_frame([1.0, NAN, 1.0]), 3, ("'relevance'", "NaN or infinite", "nan")),
    "infinite label": Case(run_frame(), qrels_frame([1.0, 2.0, INF]), 3, ("'relevance'", "such as inf")),
    "fractional label": Case(
        run_frame(), qrels_frame([1.0, 0.5, 1.0]), 3, ("'relevance'", "fractional", "0.5", "--allow-fractional-labels")
    ),
    "fractional label allowed": Case(run_frame(), qrels_frame([1.0, 0.5, 1.0]), 0, allow_fractional_labels=True),
    "fractional decimal label": Case(
        run_frame(),
        qrels_frame([Decimal("1.00"), Decimal("0.50"), Decimal("1.00")]),
        3,
        ("fractional", "0.50"),
    ),
    # a double tells apart every integer up to 2^53 = 9007199254740992 and every decimal of up
    # to 15 significant digits; beyond both, two scores can become one (nanosecond timestamps):
    # ...001 and ...100 have 17 significant digits, 1700000000000000000 has 2 (exact)
    "integer scores beyond 2^53": Case(
        run_frame([1700000000000000001, 1700000000000000000, 1700000000000000100, 5]),
        qrels_frame(),
        3,
        ("'score'", "2 score(s) a double cannot hold exactly", "such as 1700000000000000001", "'a'"),
    ),
    "integer scores of 2^53 and round big ones": Case(
        run_frame([9007199254740992, -9007199254740992, 10**18, 5]), qrels_frame(), 0
    ),
    "decimal scores of 17 digits": Case(
        run_frame([Decimal("0.12345678901234567"), Decimal("0.12345678901234566"), Decimal("0.5"), Decimal("1")]),
        qrels_frame(),
        3,
        ("2 score(s) a double cannot hold exactly", "such as 0.12345678901234567"),
    ),
    "decimal scores of 15 digits": Case(
        run_frame([Decimal("0.123456789012345"), Decimal("0.123456789012344"), Decimal("0.5"), Decimal("1")]),
        qrels_frame(),
        0,
    ),
    "label beyond the largest gain": Case(
        run_frame(), qrels_frame([1, 2000, 1]), 3, ("2000", "exceeds the largest gain"), options={"gain": "exponential"}
    ),
    # gdeval.pl dies on a judgment above its $MAX_JUDGMENT = 4 (ERR's g_max, 4 by default)
    "label above ERR's g_max": Case(
        run_frame(),
        qrels_frame([1, 7, 5]),
        3,
        (
            "qrels.parquet",
            "'relevance' has 2 label(s) above ERR's largest grade g_max = 4, such as 7",
            "'doc_id': 'c'",
            "the largest label is 7: pass --err-max-grade G",
            "or leave ERR out of --measures",
        ),
        options={"measures": "err"},
    ),
    "label above ERR's g_max, ERR not asked": Case(run_frame(), qrels_frame([1, 7, 5]), 0),
    "duplicate in run": Case(
        run_frame(doc_id=["a", "b", "a", "a"]),
        qrels_frame(),
        3,
        ("'a' is listed 2 times for query 'q1'", "--duplicates"),
    ),
    "duplicate in run, max-score kept": Case(
        run_frame(doc_id=["a", "b", "a", "a"]), qrels_frame(), 0, options={"duplicates": "max-score"}
    ),
    "duplicate in qrels": Case(
        run_frame(), qrels_frame(doc_id=["a", "a", "a"]), 3, ("qrels.parquet", "listed 2 times", "in the qrels")
    ),
    "duplicate in qrels under max-score": Case(
        run_frame(), qrels_frame(doc_id=["a", "a", "a"]), 3, ("listed 2 times",), options={"duplicates": "max-score"}
    ),
    "empty run": Case(run_frame().head(0), qrels_frame(), 3, ("run.parquet", "no rows")),
    "empty qrels": Case(run_frame(), qrels_frame().head(0), 3, ("qrels.parquet", "no rows")),
    "text scores": Case(
        run_frame(["3", "high", "1", "5"]), qrels_frame(), 3, ("'score'", "text such as 'high'", "type String")
    ),
    "numbers stored as text": Case(run_frame(["3", "2", "1", "5"]), qrels_frame(), 3, ("numbers stored as text",)),
    # a column written of nulls alone is typed text: said as it is, not as numbers stored as text
    "text labels null in every row": Case(
        run_frame(),
        qrels_frame(pl.Series([None, None, None], dtype=pl.String)),
        3,
        ("qrels.parquet: column 'relevance' is null in every row (type String); expected numbers",),
    ),
    "float ids": Case(run_frame(doc_id=[1.5, 2.5, 3.5, 1.5]), qrels_frame(), 3, ("'doc_id'", "Float64", "string or")),
    "renamed score column": Case(
        run_frame([3.0, NAN, 1.0, 5.0]).rename({"score": "s"}),
        qrels_frame(),
        3,
        ("'s' (--score-col)", "NaN", "first at row {'query_id': 'q1', 'doc_id': 'b', 's': nan}"),
        columns=Columns(score="s"),
    ),
    # the example row names the columns as the user's file does, not by their canonical names
    "renamed id columns, a null id": Case(
        run_frame(query_id=["q1", None, "q1", "q2"]).rename({"query_id": "qid", "doc_id": "docno"}),
        qrels_frame().rename({"query_id": "qid", "doc_id": "docno"}),
        3,
        ("'qid' (--query-col)", "1 null value(s)", "first at row {'qid': None, 'docno': 'b', 'score': 2.0}"),
        columns=Columns(query="qid", doc="docno"),
    ),
    "other columns shown in the example": Case(
        run_frame([3.0, None, 1.0, 5.0], locale=["en", "de", "en", "ja"]), qrels_frame(), 3, ("'locale': 'de'",)
    ),
    "results over the warn limit": Case(
        run_frame(), qrels_frame(), 0, warnings=("results_over_limit",), warn_results_over=1
    ),
    "warn limit off": Case(run_frame(), qrels_frame(), 0, warn_results_over=None),
    "results scored 0 or below, not retrieved": Case(
        run_frame([3.0, 0.0, -1.0, 5.0]),
        qrels_frame(),
        0,
        warnings=("results_not_retrieved",),
        options={"retrieved_scores": "positive"},
    ),
    "results scored 0 or below, retrieved": Case(run_frame([3.0, 0.0, -1.0, 5.0]), qrels_frame(), 0),
    # under a duplicates policy a result is the copy kept: q1's a at 3 and at -1 is a at 3, retrieved
    "a copy scored 0 or below that max-score drops": Case(
        run_frame([3.0, 2.0, -1.0, 5.0], doc_id=["a", "b", "a", "a"]),
        qrels_frame(),
        0,
        options={"retrieved_scores": "positive", "duplicates": "max-score"},
    ),
    "every copy scored 0 or below, max-score": Case(
        run_frame([0.0, 2.0, -1.0, 5.0], doc_id=["a", "b", "a", "a"]),
        qrels_frame(),
        0,
        warnings=("results_not_retrieved",),
        options={"retrieved_scores": "positive", "duplicates": "max-score"},
    ),
    # q1's three copies of a are one result: not over a limit of 1
    "copies of one result under the warn limit, max-score": Case(
        run_frame(doc_id=["a", "a", "a", "a"]),
        qrels_frame(),
        0,
        warn_results_over=1,
        options={"duplicates": "max-score"},
    ),
    "negative labels": Case(run_frame(), qrels_frame([1, -1, 1]), 0, warnings=("negative_labels",)),
    "queries only on one side": Case(
        run_frame(query_id=["q1", "q1", "q1", "q9"]),
        qrels_frame(query_id=["q1", "q1", "q8"]),
        0,
        warnings=("queries_only_in_run", "queries_only_in_qrels"),
    ),
    "queries without relevant": Case(run_frame(), qrels_frame([0, 0, 1]), 0, warnings=("queries_without_relevant",)),
    "queries without positive gain under a map": Case(
        run_frame(), qrels_frame([1, 2, 2]), 0, warnings=("queries_without_relevant",), options={"gain": "2=0"}
    ),
    "ids integer on one side": Case(
        run_frame(query_id=[1, 1, 1, 2], doc_id=[1, 2, 3, 1]),
        qrels_frame(query_id=["1", "1", "3"], doc_id=["1", "3", "1"]),
        0,
        warnings=("queries_only_in_run", "queries_only_in_qrels"),
    ),
    "inline labels, fractional": Case(run_frame(relevance=[1.0, 0.5, 0.0, 1.0]), None, 3, ("(inline labels)", "0.5")),
}


@dataclass(frozen=True)
class Outcome:
    code: int
    error: str | None
    warnings: tuple[str, ...]


def write_case(case: Case, folder: Path) -> tuple[Path, Path | None]:
    run = folder / "run.parquet"
    case.run.write_parquet(run)
    if case.qrels is None:
        return run, None
    qrels = folder / "qrels.parquet"
    case.qrels.write_parquet(qrels)
    return run, qrels


def outcome(call: Callable[[], tuple]) -> Outcome:
    try:
        warnings = call()
    except NdcgError as error:
        return Outcome(error.exit_code, str(error), ())
    return Outcome(0, None, tuple(str(warning) for warning in warnings))


def by_polars(case: Case, run: Path, qrels: Path | None) -> Outcome:
    return outcome(
        lambda: (
            api.evaluate(
                str(run),
                str(qrels) if qrels else None,
                engine="polars",
                columns=case.columns,
                allow_fractional_labels=case.allow_fractional_labels,
                warn_results_over=case.warn_results_over,
                k=[3],
                **case.options,
            ).warnings
        )
    )


def by_spark(spark: SparkSession, case: Case, run: Path, qrels: Path | None) -> Outcome:
    """Spark's reading and validation (the engine's ``load``), without planning the evaluation:
    analysing the composed SQL costs seconds per case and judges no input."""
    from pipeline.engines import spark as spark_engine
    from pipeline.inputs import Inputs
    from pipeline.registry import InputChecks

    inputs = Inputs(
        str(run),
        str(qrels) if qrels else None,
        case.columns or Columns(),
        None,
        None,
        InputChecks(case.allow_fractional_labels, case.warn_results_over),
    )
    evaluation = api.make_evaluation(k=[3], **case.options)
    return outcome(lambda: spark_engine.load(inputs, evaluation, spark=spark).warnings)


def cli_flags(case: Case, run: Path, qrels: Path | None) -> list[str]:
    flags = ["--run", str(run), "--k", "3", "--warn-results-over", str(case.warn_results_over or 0)]
    flags += ["--qrels", str(qrels)] if qrels else []
    flags += ["--allow-fractional-labels"] if case.allow_fractional_labels else []
    flags += [f"--{name.replace('_', '-')}={value}" for name, value in case.options.items()]
    defaults = Columns()
    for flag, given, default in (
        ("--query-col", case.columns.query, defaults.query),
        ("--doc-col", case.columns.doc, defaults.doc),
        ("--score-col", case.columns.score, defaults.score),
    ):
        flags += [flag, given] if given != default else []
    return flags


def from_stderr(code: int, stderr: str) -> Outcome:
    """An outcome as the CLI prints it: ``ndcg: error: ...`` and ``ndcg: warning: ...``."""
    lines = stderr.splitlines()
    errors = [line.removeprefix("ndcg: error: ") for line in lines if line.startswith("ndcg: error: ")]
    warnings = tuple(line.removeprefix("ndcg: warning: ") for line in lines if line.startswith("ndcg: warning: "))
    assert "Traceback" not in stderr and len(errors) <= 1, stderr
    return Outcome(code, errors[0] if errors else None, warnings)


def assert_expected(case: Case, found: Outcome) -> None:
    """What the case itself says must happen, whatever the engines agree on."""
    assert found.code == case.code, found
    for word in case.words:
        assert found.error is not None and word in found.error, (word, found.error)
    codes = {
        "results_over_limit": "results in",
        "negative_labels": "negative label",
        "queries_only_in_run": "only in the run",
        "queries_only_in_qrels": "only in the qrels",
        "queries_without_relevant": "without any relevant document",
        "results_not_retrieved": "scored 0 or below",
    }
    for code, words in codes.items():
        assert any(words in warning for warning in found.warnings) == (code in case.warnings), (code, found)


@pytest.mark.parametrize("name", list(CASES))
def test_polars_and_duckdb_agree(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    run, qrels = write_case(case, tmp_path)
    polars = by_polars(case, run, qrels)
    assert_expected(case, polars)
    result = run_cli("evaluate", "--engine", "duckdb", "--verbose", *cli_flags(case, run, qrels))
    assert from_stderr(result.returncode, result.stderr) == polars


@pytest.mark.spark
@pytest.mark.parametrize("name", list(CASES))
def test_spark_agrees_with_polars(compiled_spark: SparkSession, tmp_path: Path, name: str) -> None:
    """With Spark's generated code, as a user's session judges the input."""
    case = CASES[name]
    run, qrels = write_case(case, tmp_path)
    polars = by_polars(case, run, qrels)
    assert_expected(case, polars)
    assert by_spark(compiled_spark, case, run, qrels) == polars


@pytest.mark.spark
def test_spark_refuses_first_duplicates_where_polars_keeps_them(local_spark: SparkSession, tmp_path: Path) -> None:
    """The one documented difference: rows have no arrival order on Spark (exit 2, not a guess)."""
    case = Case(run_frame(doc_id=["a", "b", "a", "a"]), qrels_frame(), 0, options={"duplicates": "first"})
    run, qrels = write_case(case, tmp_path)
    assert by_polars(case, run, qrels).code == 0
    spark = by_spark(local_spark, case, run, qrels)
    assert spark.code == 2 and spark.error is not None and "not supported on the spark engine" in spark.error


# The CLI's spark path passes the validation flags and prints the warnings as the others do.


def cli(args: list[str]) -> Outcome:
    done = run_cli("evaluate", "--verbose", *args)
    return from_stderr(done.returncode, done.stderr)


# a refusal and a flag: every case's outcome on Spark is test_spark_agrees_with_polars's, in process
@pytest.mark.spark
@pytest.mark.parametrize("name", ["fractional label", "fractional label allowed"])
def test_cli_spark_errors_and_flags_as_polars(local_spark: SparkSession, tmp_path: Path, name: str) -> None:
    case = CASES[name]
    run, qrels = write_case(case, tmp_path)
    flags = cli_flags(case, run, qrels)
    by_spark_cli, by_polars_cli = (cli(["--engine", engine, *flags]) for engine in ("spark", "polars"))
    assert by_spark_cli == by_polars_cli
    assert_expected(case, by_spark_cli)


@pytest.mark.spark
def test_cli_spark_prints_warnings_and_honours_the_limit(local_spark: SparkSession, tmp_path: Path) -> None:
    case = CASES["queries only on one side"]
    run, qrels = write_case(case, tmp_path)
    for limit in ("1", "0"):
        flags = [*cli_flags(case, run, qrels), "--warn-results-over", limit]
        by_spark_cli, by_polars_cli = (cli(["--engine", engine, *flags]) for engine in ("spark", "polars"))
        assert by_spark_cli == by_polars_cli and by_spark_cli.code == 0
        assert any("more than 1 results" in w for w in by_spark_cli.warnings) == (limit == "1")
        assert any("only in the qrels" in w for w in by_spark_cli.warnings)


# The SQL a user runs in their own DuckDB session refuses what the command line refuses, in its
# words: the table macros name the macro called and their parameters; sql/ndcg.sql its variables
# (pipeline/rules.py's FIXES say how each front spells a fix). Their inputs have the canonical
# columns and only them, and a qrels file (the script's own renaming variables are its own test).
SQL_CASES = [
    name
    for name, case in CASES.items()
    if case.qrels is not None
    and case.columns == Columns()
    and set(case.run.columns) == {"query_id", "doc_id", "score"}
    and "=" not in case.options.get("gain", "")  # a gain map is the macros' gain_map
]


def in_sql_words(message: str, front: str) -> str:
    """The command line's message as ``front`` words it: its fixes spelled its way."""
    from pipeline.rules import FIXES

    for key, text in sorted(FIXES["cli"].items(), key=lambda item: -len(item[1])):
        message = message.replace(text, FIXES[front][key])  # type: ignore[index]
    return message


def sql_arguments(case: Case) -> dict[str, str]:
    given = {"ks": "[3]", "allow_fractional_labels": str(case.allow_fractional_labels).lower()}
    # the measures are a list in SQL (the command line's text 'err' is ['err'])
    return {
        **given,
        **{name: f"['{value}']" if name == "measures" else f"'{value}'" for name, value in case.options.items()},
    }


@cache
def connection_with_the_macros() -> duckdb.DuckDBPyConnection:
    """One connection with sql/macros.sql loaded, for every case: defining the macros costs as
    much as a refused call (0.2 s), and a refused call leaves the connection as it was."""
    import duckdb

    from pipeline.sql_files import MACROS, sql_file

    connection = duckdb.connect()
    connection.execute(sql_file(MACROS))
    return connection


@pytest.mark.parametrize("name", SQL_CASES)
def test_the_macros_refuse_as_the_command_line(tmp_path: Path, name: str) -> None:
    import duckdb

    case = CASES[name]
    run, qrels = write_case(case, tmp_path)
    polars = by_polars(case, run, qrels)
    connection = connection_with_the_macros()
    named = ", ".join(f"{key} := {value}" for key, value in sql_arguments(case).items())
    try:
        rows = connection.execute(f"select * from ndcg_per_query('{run}', '{qrels}', {named})").fetchall()
    except duckdb.Error as error:
        assert polars.error is not None, error
        assert str(error) == f"Invalid Input Error: ndcg_per_query: {in_sql_words(polars.error, 'macro')}"
    else:
        assert polars.error is None and rows


@pytest.mark.subprocess
@pytest.mark.parametrize("name", SQL_CASES)
def test_ndcg_sql_refuses_as_the_command_line(tmp_path: Path, name: str) -> None:
    import subprocess
    import sys

    case = CASES[name]
    run, qrels = write_case(case, tmp_path)
    polars = by_polars(case, run, qrels)
    variables = {"run_path": f"'{run}'", "qrels_path": f"'{qrels}'", **sql_arguments(case)}
    commands = [arg for key, value in variables.items() for arg in ("-cmd", f"SET VARIABLE {key} = {value}")]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "duckdb"), "-csv", *commands, "-c", ".read sql/ndcg.sql"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=120,
    )
    if polars.error is None:
        assert done.returncode == 0 and not done.stderr, done.stderr
        return
    first = done.stderr.splitlines()[0]
    assert first == f"Invalid Input Error: {in_sql_words(polars.error, 'script')}"
    assert "ndcg" not in done.stdout  # no summary printed
