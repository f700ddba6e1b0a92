"""The files of sql/ keep the shape and the interface the README promises: sqlfluff passes (as
`make lint` checks), each step of the per-query table is a headed file of at most 100 lines in
the folder of its stage, whose header lists, as pasteable `SET VARIABLE` lines, exactly the
variables it reads; no hand-written file is longer or numbers its step; sql/ndcg.sql reads the
steps in the order of the one list of them; the generated files are apart and current; and the
variables are a public interface (stable names, documented lines that run in the duckdb CLI,
its numbers Polars')."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import Evaluation, Gain, per_query
from pipeline.counter_steps import counters_sql, running_sums_sql, signals_sql
from pipeline.derived import derived_variables_sql
from pipeline.engines import duckdb as duckdb_engine
from pipeline.sql_files import (
    DERIVED_VARIABLES,
    GENERATED,
    GENERATED_STEPS,
    PER_QUERY_COMPOSED,
    PER_QUERY_STEPS,
    REFUSALS,
    STAGES,
    VARIABLE_TYPES_CHECK,
    VARIABLES,
    per_query_steps,
    step_name,
)
from pipeline.transpile import composed_per_query_sql
from tests.helpers import ROOT, TOLERANCE, as_table, assert_tables_close, compute, frames
from tests.helpers.batch import Batch, Case
from tests.helpers.cases import CASES, random_case, run_frame

SQL = ROOT / "sql"
READ_VARIABLE = re.compile(r"getvariable\('(\w+)'\)", re.IGNORECASE)
SET_LINE = re.compile(r"^--   (SET VARIABLE (\w+) = .*?;)", re.MULTILINE)


def _code(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))


@pytest.mark.parametrize("name", PER_QUERY_STEPS)
def test_each_step_is_headed_short_and_lists_what_it_reads(name: str) -> None:
    text = (SQL / name).read_text(encoding="utf-8")
    assert text.startswith(f"-- {step_name(name)}.sql: "), "the header opens with the file's name and what it computes"
    assert len(text.splitlines()) <= 100
    for section in ("Variables:", "Creates:"):
        assert section in text
    read = set(READ_VARIABLE.findall(_code(text)))
    listed = {match.group(2) for match in SET_LINE.finditer(text)}
    assert read == listed, f"header lists {sorted(listed)}, the SQL reads {sorted(read)}"
    assert read <= set(VARIABLES)
    # each listed line runs when pasted into DuckDB
    connection = duckdb.connect()
    for match in SET_LINE.finditer(text):
        connection.execute(match.group(1))


def test_every_step_creates_one_view_and_the_last_the_table() -> None:
    created = [
        re.findall(
            r"^create or replace temp(?:orary)? (view|table) (\w+) as$",
            _code((SQL / name).read_text()).lower(),
            re.MULTILINE,
        )
        for name in PER_QUERY_STEPS
    ]
    assert created == [[("view", step_name(name))] for name in PER_QUERY_STEPS[:-1]] + [[("table", "per_query")]]


def test_ndcg_sql_reads_the_steps_in_order() -> None:
    reads = re.findall(r"^\.read sql/(\S+)$", (SQL / "ndcg.sql").read_text(), re.MULTILINE)
    # after the summary, the query weights (read, checked) and the summary they weigh
    weighted = ["query_weights.sql", "query_weight_rules.sql", "list_weights.sql", "list_weight_range.sql"]
    weighted += ["list_weighted_summary.sql", "weighted_summary.sql"]
    steps = [DERIVED_VARIABLES, REFUSALS, *PER_QUERY_STEPS]
    inputs = [VARIABLE_TYPES_CHECK, "input_columns.sql", "inputs.sql", "aligned_inputs.sql"]
    assert reads == [*inputs, *steps, "summary.sql", *weighted]


HAND_WRITTEN = sorted(
    path
    for path in SQL.rglob("*.sql")
    if GENERATED not in path.relative_to(SQL).parts and path.relative_to(SQL).as_posix() not in GENERATED_STEPS
)


def test_the_steps_are_grouped_by_stage_and_every_file_is_listed() -> None:
    """Each folder of sql/ but generated/ is a stage of the one list of steps, in its order, and
    every file in a stage's folder is a step of the list (a file left out would run nowhere)."""
    assert STAGES == ("ranking", "counters", "curves", "measures")
    in_folders = {path.relative_to(SQL).as_posix() for path in HAND_WRITTEN if path.parent != SQL}
    assert in_folders | set(GENERATED_STEPS) == set(PER_QUERY_STEPS)
    assert {path.name for path in SQL.iterdir() if path.is_dir() and path.name != "__pycache__"} == {*STAGES, GENERATED}


@pytest.mark.parametrize("path", HAND_WRITTEN, ids=lambda path: path.relative_to(SQL).as_posix())
def test_no_hand_written_file_is_over_100_lines_or_numbers_its_step(path: Path) -> None:
    """Every hand-written file, not a sample: at most 100 lines, and no "Step N" (the order of
    the steps is written once, in pipeline/sql_files.py; a number in a header goes stale)."""
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 100
    assert not re.search(r"\bstep \d", text, re.IGNORECASE), "a hand-numbered step"


def test_the_generated_files_are_apart_and_marked() -> None:
    """The generated files live in sql/generated/ (and the steps that name the registry's signals
    and counters at their stage's address), each opens with a few lines saying it is generated
    (and how to make it anew), and .gitattributes marks each generated."""
    generated = sorted((SQL / GENERATED).glob("*.sql"))
    assert {path.name for path in generated} == {
        "per_query_composed.sql",
        "macros.sql",
        "derived_variables.sql",
        "refusals.sql",
        "variable_types.sql",
    }
    for path in [*generated, *(SQL / step for step in GENERATED_STEPS)]:
        assert "Generated by" in "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:4])
        assert "make generate" in path.read_text(encoding="utf-8")[:600]
    attributes = (ROOT / ".gitattributes").read_text(encoding="utf-8")
    assert "sql/generated/** linguist-generated=true -diff" in attributes
    for step in GENERATED_STEPS:
        assert f"sql/{step} linguist-generated=true -diff" in attributes


@pytest.mark.parametrize(
    ("step", "make"),
    [
        ("counters/signals.sql", signals_sql),
        ("counters/running_sums.sql", running_sums_sql),
        ("counters/counters.sql", counters_sql),
    ],
)
def test_the_generated_steps_are_what_the_generator_prints(step: str, make: Callable[[], str]) -> None:
    assert step in GENERATED_STEPS
    assert (SQL / step).read_text(encoding="utf-8") == make(), "run make generate"


def test_make_generate_finds_every_generated_file_current() -> None:
    """What CI's clean clone has: `make generate` (its --check) would change nothing."""
    from pipeline.generate import main

    assert main(["--check"]) == 0


def test_the_derived_variables_file_is_what_the_generator_prints() -> None:
    assert (SQL / DERIVED_VARIABLES).read_text(encoding="utf-8") == derived_variables_sql(), "run make generate"


@pytest.mark.slow
def test_sql_passes_sqlfluff() -> None:
    sqlfluff = shutil.which("sqlfluff", path=str(Path(sys.executable).parent))
    if sqlfluff is None:
        pytest.skip("sqlfluff is not installed (pip install -e '.[dev]')")
    # 28 s for sql/'s 40-odd linted files on a quiet 2-core machine; past 120 s beside the rest of
    # the suite on a busy one: the subprocess gets all but a little of the test's 300 s
    result = subprocess.run(
        [sqlfluff, "lint", "sql", "--nocolor"], cwd=ROOT, capture_output=True, text=True, timeout=280
    )
    assert result.returncode == 0, result.stdout + result.stderr


# The SQL files' variables are a public interface: stable names, documented in each header
#    with SET VARIABLE lines that run when pasted into the duckdb CLI from the repository root.

SQL_FILES = HAND_WRITTEN


def header(path: Path) -> str:
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("--"))])


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.relative_to(SQL).as_posix())
def test_sql_variables_are_the_public_ones_and_documented(path: Path) -> None:
    used = set(re.findall(r"getvariable\('([a-z_]+)'\)", path.read_text()))
    assert used <= set(VARIABLES), f"{path.name} uses undeclared variables {used - set(VARIABLES)}"
    text = header(path)
    for name in used:
        assert name in text, f"{path.name}: variable {name} is not documented in the header"


def duckdb_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(__import__("sys").executable).parent / "duckdb"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def evaluate_in_duckdb_cli(out: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """sql/ndcg.sql and sql/export.sql in the duckdb CLI over the sample in data/, with
    ``SET VARIABLE <setting>`` for each of ``settings``, writing to ``out``."""
    variables = ["run_path = 'data/run.parquet'", "qrels_path = 'data/qrels.parquet'", *settings, f"out_path = '{out}'"]
    commands = [argument for setting in variables for argument in ("-cmd", f"SET VARIABLE {setting}")]
    return duckdb_cli(*commands, "-cmd", ".read sql/ndcg.sql", "-c", ".read sql/export.sql")


# A variable set to a value of another type, as one slips: each refused before any step reads it,
# in words naming it, the value and its type, and the line that sets it right (not DuckDB's binder)
WRONG_TYPES = {
    "ks = 5": "ks must be a list of whole numbers, got 5 of type INTEGER (SET VARIABLE ks = [5, 10, 20])",
    "measures = 'ndcg,P'": (
        "measures must be a list of names in quotes, got 'ndcg,P' of type VARCHAR (SET VARIABLE measures = ['ndcg'])"
    ),
    "relevance_threshold = '2'": (
        "relevance_threshold must be a number, got '2' of type VARCHAR (SET VARIABLE relevance_threshold = 1.0)"
    ),
    "max_results = '10'": (
        "max_results must be a whole number, got '10' of type VARCHAR (SET VARIABLE max_results = 100)"
    ),
    "gain = 2": "gain must be text in quotes, got 2 of type INTEGER (SET VARIABLE gain = 'linear')",
    "tie_bounds = 'on'": "tie_bounds must be true or false, got 'on' of type VARCHAR (SET VARIABLE tie_bounds = false)",
    "gain_map = [3]": (
        "gain_map must be a map of labels to gains, got [3] of type INTEGER[] "
        "(SET VARIABLE gain_map = MAP {1: 3.0, 2: 9.0})"
    ),
    "score_col = 3": "score_col must be text in quotes, got 3 of type INTEGER (SET VARIABLE score_col = 'score')",
}


def test_a_variable_of_another_type_is_refused_in_words(tmp_path: Path) -> None:
    for setting, words in WRONG_TYPES.items():
        done = evaluate_in_duckdb_cli(tmp_path, "ks = [5]", setting)
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        assert done.returncode != 0 and errors, (setting, done.stderr)
        assert errors[0] == f"Invalid Input Error: {words}", setting
        assert "Binder Error" not in done.stderr and not (tmp_path / "summary.parquet").exists()
    # a value of the type's other forms is not refused here: a decimal cutoff is refused by the
    # cutoffs' own rule, in the registry's words; a null stands for the variable unset
    done = evaluate_in_duckdb_cli(tmp_path, "ks = [5.5]")
    assert "cutoff k must be a positive integer, got Decimal('5.5')" in done.stderr
    done = evaluate_in_duckdb_cli(tmp_path, "ks = [5]", "doc_weight_col = NULL", "relevance_threshold = 2")
    assert done.returncode == 0, done.stderr
    # what DuckDB casts to a truth value, as the steps always took it (1, 'yes'), and a map of integers
    settings = ("ks = [5]", "tie_bounds = 1", "all_queries = 'yes'", "gain_map = MAP {1: 3}")
    done = evaluate_in_duckdb_cli(tmp_path, *settings)
    assert done.returncode == 0, done.stderr


def test_a_measure_s_number_left_unset_or_written_as_a_decimal_is_read_as_the_engines_double(tmp_path: Path) -> None:
    """The steps read rbp_persistence, compat_persistence and the C/W/L bounds as doubles, as the
    engines bind them: unset, its default 0.9 was DuckDB's DECIMAL, and 1 - 0.9 exact in decimals
    gave rbp 1 ulp off the engines' (0.019683000000000003 against 0.019683), as did a user's
    `SET VARIABLE rbp_persistence = 0.9`. The same bits as the DuckDB engine, which runs the same
    steps with the variables bound as doubles."""
    measures = ["ndcg", "rbp", "Compat", "INST", "BPM"]
    want = per_query(
        "data/run.parquet", "data/qrels.parquet", k=[5], measures=",".join(measures), engine="duckdb"
    ).collect()
    columns = ["rbp", "rbp_resid", "Compat", "INST", "BPM"]

    def bits(table: pl.DataFrame) -> list[tuple[object, ...]]:
        rows = table.with_columns(pl.col("query_id").cast(pl.String)).sort("query_id", "k", nulls_last=True)
        return [tuple(v.hex() if isinstance(v, float) else v for v in row) for row in rows.select(columns).rows()]

    as_written = ("rbp_persistence = 0.9", "compat_persistence = 0.95", "cwl_target = 1.0", "cwl_max_rel = 4.0")
    for settings in ((), as_written):
        done = evaluate_in_duckdb_cli(tmp_path, "ks = [5]", f"measures = {measures}", *settings)
        assert done.returncode == 0, done.stderr
        assert bits(pl.read_parquet(tmp_path / "per_query.parquet")) == bits(want), settings


def test_either_path_a_list_and_the_other_not_reads_the_same_files(tmp_path: Path) -> None:
    """run_path and qrels_path each take a path or a list of them, and neither need be of the
    other's form (before: DuckDB's "Conversion Error ... can't be cast to VARCHAR[]" when one was
    a list and the other text); inline labels with the run as a list too."""
    shapes = {
        "text": ("run_path = 'data/run.parquet'", "qrels_path = 'data/qrels.parquet'"),
        "run list": ("run_path = ['data/run.parquet']", "qrels_path = 'data/qrels.parquet'"),
        "qrels list": ("run_path = 'data/run.parquet'", "qrels_path = ['data/qrels.parquet']"),
        "lists": ("run_path = ['data/run.parquet']", "qrels_path = ['data/qrels.parquet']"),
    }
    summaries = {}
    for shape, settings in shapes.items():
        out = tmp_path / shape.replace(" ", "_")
        out.mkdir()
        done = evaluate_in_duckdb_cli(out, "ks = [5, 10]", *settings)
        assert done.returncode == 0, (shape, done.stderr)
        summaries[shape] = (out / "summary.parquet").read_bytes()
    assert len(set(summaries.values())) == 1, "the summaries differ by the paths' form"
    inline = {}
    for shape, run_path in {"text": "'data/labelled.parquet'", "list": "['data/labelled.parquet']"}.items():
        out = tmp_path / f"inline_{shape}"
        out.mkdir()
        done = evaluate_in_duckdb_cli(out, "ks = [5]", f"run_path = {run_path}", "qrels_path = NULL")
        assert done.returncode == 0, (shape, done.stderr)
        inline[shape] = (out / "summary.parquet").read_bytes()
    assert inline["text"] == inline["list"]


def test_documented_set_variable_lines_run_in_the_duckdb_cli(tmp_path: Path) -> None:
    """Paste every SET VARIABLE line of every header into the CLI, then read the files."""
    lines = []
    for path in SQL_FILES:
        for line in header(path).splitlines():
            match = re.search(r"(SET VARIABLE .*?;)", line)
            if match:
                lines.append(match.group(1))
    names = {re.match(r"SET VARIABLE (\w+)", line).group(1) for line in lines}  # type: ignore[union-attr]
    assert {
        "run_path",
        "qrels_path",
        "ks",
        "gain",
        "gain_map",
        "discount",
        "log_base",
        "all_queries",
        "max_results",
        "out_path",
    } <= names
    out = tmp_path / "sql"
    out.mkdir()
    script = tmp_path / "script.sql"
    pasted = [line for line in lines if not line.startswith("SET VARIABLE out_path")]
    script.write_text(
        "\n".join([*pasted, f"SET VARIABLE out_path = '{out}';", ".read sql/ndcg.sql", ".read sql/export.sql", ""])
    )
    result = duckdb_cli("-bail", "-c", f".read {script}")
    assert result.returncode == 0 and "Error" not in result.stderr + result.stdout, result.stderr + result.stdout
    assert (out / "per_query.parquet").exists() and (out / "summary.parquet").exists()


def test_duckdb_cli_matches_the_polars_engine(tmp_path: Path) -> None:
    out = tmp_path / "sql"
    out.mkdir()
    result = evaluate_in_duckdb_cli(
        out,
        "ks = [1, 5, 10]",
        "gain_map = MAP {1: 3, 2: 9};",
        "all_queries = true",
        "max_results = 12",
    )
    assert result.returncode == 0, result.stderr
    by_cli = pl.read_parquet(out / "per_query.parquet")
    by_polars = per_query(
        ROOT / "data/run.parquet",
        ROOT / "data/qrels.parquet",
        evaluation=Evaluation(cutoffs=(1, 5, 10), gain=Gain.parse("1=3,2=9"), all_queries=True, max_results=12),
    ).collect()
    assert_tables_close(as_table(by_cli), as_table(by_polars))


@pytest.mark.parametrize("measures", [["P"], ["map"], ["ndcg", "P"]])
def test_duckdb_cli_companions_without_ndcg_in_measures(tmp_path: Path, measures: list[str]) -> None:
    """In the CLI, `SET VARIABLE measures = ['P']` (NDCG not named: it is always computed)
    gives the companion the Polars engine gives, not a count of relevant documents of 0."""
    out = tmp_path / "sql"
    out.mkdir()
    result = evaluate_in_duckdb_cli(out, "ks = [5, 10]", f"measures = {measures!r}")
    assert result.returncode == 0, result.stderr
    by_cli = pl.read_parquet(out / "per_query.parquet").sort("query_id", "k", nulls_last=False)
    by_polars = (
        per_query(
            ROOT / "data/run.parquet",
            ROOT / "data/qrels.parquet",
            evaluation=Evaluation(cutoffs=(5, 10), measures=("ndcg", "P", "map")),
        )
        .collect()
        .sort("query_id", "k", nulls_last=False)
    )
    (name,) = [measure for measure in measures if measure != "ndcg"]
    assert by_cli[name].sum() > 0
    for got, want in zip(by_cli[name], by_polars[name], strict=True):
        assert got == pytest.approx(want, abs=1e-9) if want is not None else got is None


def test_the_composed_statement_is_what_the_generator_prints() -> None:
    """sql/generated/per_query_composed.sql, which the DuckDB engine runs, is the steps as they are."""
    assert (SQL / PER_QUERY_COMPOSED).read_text(encoding="utf-8") == composed_per_query_sql(), "run make generate"


def the_step_views(connection: duckdb.DuckDBPyConnection) -> Callable[..., pl.DataFrame]:
    """Scoring as sql/ndcg.sql does in the duckdb CLI: a view per step, then per_query.sql (the
    engine runs the same steps as one statement). The views are made once, over the first
    inputs: they read the inputs and the variables again when per_query.sql runs."""
    made: list[bool] = []

    def score(run: pl.LazyFrame, qrels: pl.LazyFrame | None, evaluation: Evaluation) -> pl.DataFrame:
        assert qrels is not None
        duckdb_engine.register_inputs(connection, run, qrels)
        duckdb_engine.set_variables(connection, duckdb_engine.evaluation_variables(evaluation))
        for name, text in per_query_steps():
            if name == PER_QUERY_STEPS[-1] or not made:
                connection.execute(text)
        made.append(True)
        return connection.sql("from per_query").pl()

    return score


def test_the_step_views_give_the_engines_numbers() -> None:
    """What users run in the duckdb CLI (the step views) and what the engine runs (the steps as
    one statement) agree on every column, the companions and every trec_eval measure among
    them: on the edge-case matrix and on random data under random conventions."""
    cases = {}
    for name, (run_rows, qrels_rows, options, id_type) in CASES.items():
        cases[name] = Case(run_frame(run_rows, id_type), frames([], qrels_rows, id_type)[1], Evaluation(**options))
    for seed in range(6):
        run_rows, qrels_rows, evaluation = random_case(3000 + seed, conventions=True)
        cases[f"random {seed}"] = Case(
            run_frame(run_rows), frames([], qrels_rows)[1], dataclasses.replace(evaluation, measures=("all_trec",))
        )
    connection = duckdb.connect()
    try:
        by_views = Batch(cases, the_step_views(connection))
        by_engine = Batch(cases, lambda *case: compute("duckdb", *case))
        for name in cases:
            engine = by_engine[name].sort("query_id", "k", nulls_last=False)
            # the engine leaves out the companions not asked for, and the tie bounds when off
            views = by_views[name].select(engine.columns).sort("query_id", "k", nulls_last=False)
            try:
                assert_frame_equal(engine, views, rel_tol=0, abs_tol=TOLERANCE)
            except AssertionError as difference:
                raise AssertionError(f"{name}: {difference}") from None
    finally:
        connection.close()


def test_the_composed_statement_means_the_same_under_another_null_order() -> None:
    """The composed statement spells out every ordering's nulls (the steps write `nulls last`
    where it matters, which sqlglot would leave out as DuckDB's default): in a session whose
    default_null_order is nulls_first, where a user may run the file, it gives the engine's
    numbers. Here input-order ties over a rank column with gaps, which sort last."""
    run = pl.LazyFrame(
        {
            "query_id": ["q", "q", "q", "q", "r"],
            "doc_id": ["a", "b", "c", "d", "x"],
            "score": [1.0, 1.0, 5.0, 0.5, 1.0],
            "rank": [3, 1, None, 2, None],
        }
    )
    qrels = pl.LazyFrame({"query_id": ["q", "q", "q", "r"], "doc_id": ["a", "c", "d", "x"], "relevance": [2, 3, 1, 1]})
    evaluation = Evaluation(cutoffs=(1, 2), ties="input-order", measures=("all_trec",))
    by_engine = compute("duckdb", run, qrels, evaluation).sort("query_id", "k", nulls_last=False)
    connection = duckdb.connect()
    try:
        connection.execute("SET default_null_order = 'nulls_first'")
        duckdb_engine.register_inputs(connection, run, qrels)
        duckdb_engine.set_variables(connection, duckdb_engine.evaluation_variables(evaluation))
        connection.execute((SQL / PER_QUERY_COMPOSED).read_text(encoding="utf-8"))
        other_order = connection.sql("from per_query").pl().select(by_engine.columns)
    finally:
        connection.close()
    assert_frame_equal(other_order.sort("query_id", "k", nulls_last=False), by_engine, rel_tol=0, abs_tol=TOLERANCE)


def test_the_reference_lists_the_steps_in_their_order() -> None:
    """docs/sql.md's table of files names every step, in the order of the one list of them."""
    table = (ROOT / "docs" / "sql.md").read_text(encoding="utf-8")
    listed = re.findall(rf"^\| `sql/((?:{'|'.join(STAGES)})/\w+\.sql)` \|", table, re.MULTILINE)
    assert listed == list(PER_QUERY_STEPS)


def test_ndcg_sql_refuses_text_files_by_name_before_reading_them(tmp_path: Path) -> None:
    """sql/ndcg.sql reads Parquet; a TREC, CSV or TSV file (told by its ending, as ndcg evaluate
    tells it) is refused in words, not by read_parquet's "No magic bytes found"."""
    (tmp_path / "run.csv").write_text("query_id,doc_id,score\nq1,d1,1\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "more.tsv").write_text("query_id\tdoc_id\tscore\nq1\td2\t2\n")
    cases = {
        (
            f"'{tmp_path / 'run.csv'}'",
            "'data/qrels.parquet'",
        ): f"{tmp_path / 'run.csv'}: sql/ndcg.sql reads Parquet only, not csv",
        (
            "'data/run.parquet'",
            f"'{tmp_path / 'qrels.txt'}'",
        ): f"{tmp_path / 'qrels.txt'}: sql/ndcg.sql reads Parquet only, not trec",
        (f"['data/run.parquet', '{tmp_path / 'more.tsv'}']", "'data/qrels.parquet'"): (
            f"{tmp_path / 'more.tsv'}: sql/ndcg.sql reads Parquet only, not tsv"
        ),
    }
    for (run, qrels), said in cases.items():
        done = duckdb_cli(
            "-cmd",
            f"SET VARIABLE run_path = {run}",
            "-cmd",
            f"SET VARIABLE qrels_path = {qrels}",
            "-c",
            ".read sql/ndcg.sql",
        )
        first = done.stderr.splitlines()[0]
        assert first == (
            f"Invalid Input Error: {said}; read it with the table macros (ndcg_per_query) or ndcg evaluate, or "
            "convert it to Parquet"
        ), done.stderr


def test_ndcg_sql_refuses_a_rank_column_under_input_order_ties(tmp_path: Path) -> None:
    """The command line orders input-order ties by a run's rank column; sql/ndcg.sql reads none, so
    its ties followed the rows' arrival: NDCG@1 0.5 for the command line's 1.0, unsaid."""
    run = pl.DataFrame({"query_id": ["q1"] * 2, "doc_id": ["a", "b"], "score": [1.0, 1.0], "rank": [2, 1]})
    run.write_parquet(run_path := tmp_path / "run.parquet")
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "relevance": [1]}).write_parquet(qrels := tmp_path / "q.parquet")
    by_rank = per_query(str(run_path), str(qrels), evaluation=Evaluation(cutoffs=(1,), ties="input-order")).collect()
    assert by_rank.filter(pl.col("k") == 1)["ndcg"].to_list() == [1.0]  # b, ranked 1, is the relevant one
    variables = [f"SET VARIABLE {name} = {value}" for name, value in (("run_path", f"'{run_path}'"), ("ks", "[1]"))]
    variables += [f"SET VARIABLE qrels_path = '{qrels}'", "SET VARIABLE ties = 'input-order'"]
    done = duckdb_cli(*(arg for setting in variables for arg in ("-cmd", setting)), "-c", ".read sql/ndcg.sql")
    assert done.stderr.splitlines()[0] == (
        f"Invalid Input Error: {run_path}: column 'rank' orders input-order ties on the command line, and "
        "sql/ndcg.sql reads no rank column (its ties would follow the rows as they arrive): rename or drop the "
        "column to order them so, or define the view run yourself with input_rank (sql/aligned_inputs.sql)"
    )
