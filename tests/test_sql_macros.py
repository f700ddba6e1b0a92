"""The DuckDB table macros of `ndcg sql --macros` (sql/generated/macros.sql) in the real duckdb CLI, from a
folder outside the repository: trec_eval's own numbers on its test data, options, views as the
run, and errors that name the argument."""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.engines import polars as polars_engine
from pipeline.macros import macros_sql
from pipeline.macros import parameters as macro_parameters
from pipeline.registry import MEASURES, SQL_VARIABLES, Evaluation
from pipeline.sql_files import MACROS, sql_file
from pipeline.transpile import literal
from tests.helpers import frames, run_cli
from tests.helpers.batch import SEPARATOR
from tests.helpers.cases import CASES, OPTION_CASES, OPTION_VALUES

REPO = Path(__file__).resolve().parent.parent
TREC_EVAL = REPO / "tests" / "data" / "trec_eval"
DUCKDB_CLI = Path(sys.executable).parent / "duckdb"
# trec_eval prints 4 decimals
PRINTED = 5e-5


def test_the_shipped_file_is_what_the_generator_prints() -> None:
    assert sql_file(MACROS) == macros_sql(), "run make generate"


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
    # the command line's main in this process, in the folder: its output is what the script prints
    printed = run_cli("sql", "--macros", cwd=folder)
    assert printed.returncode == 0, printed.stderr
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


ERROR_CASES = [
    ("ndcg_per_query('run.parquet')", "ndcg_per_query: qrels is missing"),
    ("ndcg_summary('run.parquet')", "ndcg_summary: qrels is missing"),
    (
        "ndcg_per_query('run.parquet', 'qrels.parquet', gain := 'expo')",
        "unknown gain 'expo'; expected one of linear",
    ),
    (
        "ndcg_per_query('run.parquet', 'qrels.parquet', measures := ['Px'])",
        "unknown measure 'Px'; expected ndcg, P",
    ),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', ks := [0])", "cutoff k must be a positive integer, got 0"),
    (
        "ndcg_per_query('run.parquet', 'run.parquet')",
        "ndcg_per_query: run.parquet: missing column(s) 'relevance'; columns found: 'query_id', 'doc_id', 'score'",
    ),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', duplicates := 'first')", "reads the order rows arrive in"),
    ("ndcg_per_query('twice', 'qrels.parquet')", "is listed 2 times for query '301'"),
    # the parameters the command line and the API refuse, in their words (issue 51)
    (
        "ndcg_per_query('run.parquet', 'qrels.parquet', discount := 'jk', log_base := 1)",
        "ndcg_per_query: log base must be a finite number greater than 1, got 1.0",
    ),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', ks := [2.5])", "cutoff k must be a positive integer"),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', ks := [])", "at least one cutoff k is needed"),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', ks := NULL)", "ks must be a list of positive integers"),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', ks := [3, 3])", "cutoffs repeat a value"),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', measures := NULL)", "measures must be a list"),
    ("ndcg_per_query('run.parquet', 'qrels.parquet', max_results := 1.5)", "max_results must be a positive"),
    (
        "ndcg_per_query('run.parquet', 'qrels.parquet', gain_map := map {1: 1e308})",
        "gain map value 1e+308 (level 1) is beyond the largest gain 1e+300",
    ),
]
TWICE = "create or replace view twice as (select * from 'run.parquet' union all select * from 'run.parquet' limit 2000)"


@functools.cache
def said_in_one_session(folder: Path) -> tuple[str, ...]:
    """What the duckdb CLI says on stderr to each call of ERROR_CASES, all in one session (the
    script on its standard input, where an error ends the statement, not the CLI): reading the
    macros costs as much as a refused call, once here, not once per call. A refused call leaves
    the session as it was. Each call follows a marker error of its own, which splits stderr."""
    script = [".read ndcg_macros.sql", f"{TWICE};"]
    for number, (call, _) in enumerate(ERROR_CASES):
        script += [f"select error('-- call {number} --');", f"select * from {call};"]
    done = subprocess.run(
        [str(DUCKDB_CLI)], input="\n".join(script) + "\n", cwd=folder, capture_output=True, text=True, timeout=120
    )
    parts = re.split(r"^Invalid Input Error: -- call (\d+) --$", done.stderr, flags=re.MULTILINE)
    said = dict(zip(map(int, parts[1::2]), parts[2::2], strict=True))
    assert sorted(said) == list(range(len(ERROR_CASES))), done.stderr
    return tuple(said[number] for number in range(len(ERROR_CASES)))


@pytest.mark.parametrize(
    ("number", "message"),
    [(n, message) for n, (_, message) in enumerate(ERROR_CASES)],
    ids=[f"{call}-{message}" for call, message in ERROR_CASES],
)
def test_errors_name_the_argument(folder: Path, number: int, message: str) -> None:
    assert message in said_in_one_session(folder)[number], ERROR_CASES[number][0]


def test_through_the_python_api(folder: Path) -> None:
    connection = duckdb.connect()
    connection.execute(sql_file(MACROS))
    expected = trec_eval_expected("ndcg_cut_10")
    rows = connection.execute(
        "select query_id, ndcg from ndcg_per_query($run, $qrels) where k = 10",
        {"run": str(folder / "run.parquet"), "qrels": str(folder / "qrels.parquet")},
    ).fetchall()
    assert {query: pytest.approx(expected[query], abs=PRINTED) for query, _ in rows} == dict(rows)


# --- the edge-case matrix through the macros ------------------------------------------------------

# What the macros refuse by design: query_table() gives no order of arrival, which these read.
NEEDS_ARRIVAL = ({"ties": "input-order"}, {"duplicates": "first"}, {"duplicates": "max-score"})


def _matrix() -> list[tuple[str, list[tuple], list[tuple], Evaluation, type]]:
    """Every case of the engines' edge-case matrix with every measure family asked for: as it is,
    and, where it shares its conventions with the others (text ids, no option but its cutoffs),
    under each convention option the macros take.

    A case with options of its own is one macro call per choice, with nothing to share it (0.9 s
    each, 94 of the 111 calls when it was crossed with every choice). The macros run the
    engine's own SQL steps, which tests/test_engines_agree.py crosses with every option on the
    DuckDB engine; what this matrix adds is each option passed through the macro's parameters
    into them, which the shared calls prove for every option."""
    families = list(dict.fromkeys(m.selected_by for m in MEASURES))
    matrix = []
    for case, (run_rows, qrels_rows, options, id_type) in {**CASES, **OPTION_CASES}.items():
        has_duplicates = len({(row[0], row[1]) for row in run_rows}) < len(run_rows)
        shares_conventions = id_type is pl.String and set(options) <= {"cutoffs"}
        choices = [{}, *(choice for group in OPTION_VALUES.values() for choice in group if shares_conventions)]
        for choice in choices:
            if choice in NEEDS_ARRIVAL or has_duplicates:
                continue
            label = ",".join(f"{name}={value}" for name, value in choice.items()) or "defaults"
            evaluation = Evaluation(**{**options, **choice, "measures": tuple(families)})
            matrix.append((f"{case} [{label}]", run_rows, qrels_rows, evaluation, id_type))
    return matrix


def _macro_call(run: str, qrels: str, evaluation: Evaluation) -> str:
    """``ndcg_per_query('run', 'qrels', name := value, ...)`` with every parameter of the macro set
    from ``evaluation``, each value the registry's variable of the same name as a SQL literal."""
    named = {name for name, _ in macro_parameters()}
    arguments = [
        f"{variable.name} := {literal(variable.value(evaluation), variable.spark_type).sql('duckdb')}"
        for variable in SQL_VARIABLES
        if variable.name in named
    ]
    # the matrix holds fractional labels, which the engines score when allowed
    arguments.append("allow_fractional_labels := true")
    return f"ndcg_per_query('{run}', '{qrels}', {', '.join(arguments)})"


def _keyed(table: pl.DataFrame) -> dict[tuple[str, int | None], dict[str, float | None]]:
    measures = [c for c in table.columns if c not in ("query_id", "k")]
    return {(str(row["query_id"]), row["k"]): {m: row[m] for m in measures} for row in table.iter_rows(named=True)}


@pytest.mark.timeout(600)
def test_the_edge_case_matrix_through_the_macros_equals_the_polars_engine(tmp_path: Path) -> None:
    """Every case of the engines' matrix (under each convention option the macros take) through
    ndcg_per_query in the real duckdb CLI, in one call, against the Polars engine at 1e-9: the
    same rows, and every column the macro returns equal to the Polars engine's.

    The cases that share their conventions are one macro call (each case's query ids prefixed
    with its number, as tests/helpers/batch.py does for Spark), and the Polars engine's reference
    one evaluation of the same inputs: DuckDB binds the macro's whole statement once per call,
    and a Polars evaluation of every measure costs its planning, not its rows (0.12 s a case).
    Each case's rows are still told apart by their prefix in the failure's words."""
    matrix = _matrix()
    groups: dict[tuple, list[int]] = {}
    for number, (_, _, _, evaluation, id_type) in enumerate(matrix):
        alone = ("alone", number) if id_type is not pl.String else ()  # no prefix makes its ids text
        groups.setdefault((dataclasses.replace(evaluation, cutoffs=(1,)), id_type, *alone), []).append(number)
    statements, references = [], []
    for group, numbers in enumerate(groups.values()):
        runs, judgments = [], []
        for number in numbers:
            _, run_rows, qrels_rows, _, id_type = matrix[number]
            run, qrels = frames([row[:3] for row in run_rows], qrels_rows, id_type)
            runs.append(_prefixed(number, run) if len(numbers) > 1 else run)
            judgments.append(_prefixed(number, qrels) if len(numbers) > 1 else qrels)
        run, qrels = pl.concat(runs).collect(), pl.concat(judgments).collect()
        run.write_parquet(tmp_path / f"run{group}.parquet")
        qrels.write_parquet(tmp_path / f"qrels{group}.parquet")
        cutoffs = tuple(sorted({k for number in numbers for k in matrix[number][3].cutoffs}))
        evaluation = dataclasses.replace(matrix[numbers[0]][3], cutoffs=cutoffs)
        references.append(polars_engine.per_query(run.lazy(), qrels.lazy(), evaluation).collect())
        call = _macro_call(f"run{group}.parquet", f"qrels{group}.parquet", evaluation)
        statements.append(f"copy (select * from {call}) to 'out{group}.parquet' (format parquet);")
    (tmp_path / "macros.sql").write_text(sql_file(MACROS), encoding="utf-8")
    (tmp_path / "matrix.sql").write_text("\n".join(statements) + "\n", encoding="utf-8")
    done = subprocess.run(
        [str(DUCKDB_CLI), "-c", ".read macros.sql", "-c", ".read matrix.sql"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr
    for group, numbers in enumerate(groups.values()):
        actual = _keyed(pl.read_parquet(tmp_path / f"out{group}.parquet"))
        expected = _keyed(references[group])
        names = " / ".join(f"{number}{SEPARATOR}: {matrix[number][0]}" for number in numbers)
        assert set(actual) == set(expected), f"{names}: rows differ: {set(actual) ^ set(expected)}"
        for key, values in actual.items():
            for measure, got in values.items():
                want = expected[key][measure]
                both_nan = got is not None and want is not None and math.isnan(got) and math.isnan(want)
                assert both_nan or got == pytest.approx(want, abs=1e-9, nan_ok=False), (
                    f"{names}: {measure} of {key}: macro {got} != polars {want}"
                )


def _prefixed(number: int, frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.with_columns((pl.lit(f"{number}{SEPARATOR}") + pl.col("query_id")).alias("query_id"))
