"""Out of core: with ``--memory-limit`` below what the run needs, the queries are split by a
hash of their id into buckets evaluated one after the other. Every check and number is per
query, so the result must be the one pass's: per-query rows, summary and warnings."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, units
from pipeline.api import evaluate, make_evaluation
from pipeline.engines import ENGINES as ENGINE_CLASSES
from pipeline.engines import Execution
from pipeline.errors import InvalidInput, UsageError
from pipeline.inputs import prepare
from pipeline.io.read import Columns
from pipeline.units import BYTES_PER_RUN_ROW, merge_warnings
from pipeline.validate import ValidationWarning
from tests.helpers import ROOT, TOLERANCE, as_table, assert_tables_close, run_cli

pytestmark = pytest.mark.local_engines("--memory-limit buckets (Spark sizes itself with its own configuration)")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
RUN_ROWS = 710  # data/run.parquet
SMALL_LIMIT = f"{RUN_ROWS * BYTES_PER_RUN_ROW // 7}B"  # about 7 buckets
DUCKDB_LIMIT = "64MB"  # DuckDB enforces its limit, so its buckets come from a larger row size
# DuckDB's buckets cost seconds each (a connection with its memory limit per bucket): make test
# runs them, make test-fast keeps Polars' cases of the same tests
ENGINES = pytest.mark.parametrize("engine", ["polars", pytest.param("duckdb", marks=pytest.mark.slow)])


@pytest.fixture
def limit(engine: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A memory limit that splits the sample run into about 7 buckets on either engine."""
    if engine == "polars":
        return SMALL_LIMIT
    monkeypatch.setattr(units, "BYTES_PER_RUN_ROW", 64_000_000 * 7 // RUN_ROWS)
    return DUCKDB_LIMIT


@pytest.mark.parametrize(
    "options",
    [{}, {"all_queries": True, "tie_bounds": True}, {"empty_ideal": "skip"}, {"ties": "input-order"}],
)
@ENGINES
def test_buckets_give_the_one_pass_result(engine: str, limit: str, options: dict) -> None:
    one_pass = evaluate(RUN, QRELS, k=[3, 10], engine=engine, **options)
    assert units.bucket_count(prepare(RUN, QRELS, Columns(), None, None, one_pass.evaluation), limit) >= 5
    in_buckets = evaluate(RUN, QRELS, k=[3, 10], engine=engine, memory_limit=limit, **options)
    assert_tables_close(as_table(in_buckets.per_query), as_table(one_pass.per_query))
    assert in_buckets.per_query.columns == one_pass.per_query.columns
    assert in_buckets.per_query.select("query_id", "k").equals(one_pass.per_query.select("query_id", "k"))
    for got, want in zip(in_buckets.summary.iter_rows(), one_pass.summary.iter_rows(), strict=True):
        for a, b in zip(got, want, strict=True):
            if isinstance(b, float):
                assert a == pytest.approx(b, abs=TOLERANCE, nan_ok=True)
            else:
                assert a == b
    assert in_buckets.warnings == one_pass.warnings


@pytest.mark.parametrize("options", [{}, {"tie_bounds": True}, {"empty_ideal": "nan"}])
@ENGINES
def test_buckets_give_identical_bits(engine: str, limit: str, options: dict) -> None:
    # the summary of the buckets is taken by the engine's own summary, as in one pass
    one_pass = evaluate(RUN, QRELS, k=[3, 10], engine=engine, **options)
    in_buckets = evaluate(RUN, QRELS, k=[3, 10], engine=engine, memory_limit=limit, **options)
    assert in_buckets.per_query.equals(one_pass.per_query)
    assert in_buckets.summary.equals(one_pass.summary)


@ENGINES
def test_more_buckets_than_queries(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # most buckets are empty; an empty bucket is not an empty input
    monkeypatch.setattr(units, "BYTES_PER_RUN_ROW", 64_000_000 * 100 // RUN_ROWS)  # 100 buckets, 43 queries
    result = evaluate(RUN, QRELS, k=[5], engine=engine, memory_limit="64MB")
    assert result.per_query["query_id"].n_unique() == evaluate(RUN, QRELS, k=[5]).per_query["query_id"].n_unique()


def test_errors_are_found_in_whichever_bucket(tmp_path: Path) -> None:
    run = pl.read_parquet(RUN)
    duplicated = pl.concat([run, run.slice(400, 1)])
    duplicated.write_parquet(tmp_path / "run.parquet")
    done = run_cli(
        "evaluate", "--run", tmp_path / "run.parquet", "--qrels", QRELS, "--memory-limit", SMALL_LIMIT, "--k", "5"
    )
    assert done.returncode == 3, done.stderr
    row = run.row(400, named=True)
    assert "duplicate" in done.stderr and str(row["query_id"]) in done.stderr and str(row["doc_id"]) in done.stderr
    assert "Traceback" not in done.stderr


def test_an_empty_run_is_still_an_error(tmp_path: Path) -> None:
    pl.read_parquet(RUN).head(0).write_parquet(tmp_path / "run.parquet")
    done = run_cli("evaluate", "--run", tmp_path / "run.parquet", "--qrels", QRELS, "--memory-limit", SMALL_LIMIT)
    assert done.returncode == 3
    assert "no rows to evaluate" in done.stderr


def test_cli_logs_the_buckets_and_writes_the_same_files(tmp_path: Path) -> None:
    common = ["evaluate", "--run", RUN, "--qrels", QRELS, "--k", "5,10"]
    assert run_cli(*common, "--out", tmp_path / "one").returncode == 0
    done = run_cli(*common, "--out", tmp_path / "buckets", "--memory-limit", SMALL_LIMIT, "--log-level", "info")
    assert done.returncode == 0, done.stderr
    assert "buckets of queries" in done.stderr
    for name in ("per_query.parquet", "summary.parquet"):
        assert pl.read_parquet(tmp_path / "buckets" / name).equals(pl.read_parquet(tmp_path / "one" / name))
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("one", "buckets")]
    assert manifests[0]["warnings"] == manifests[1]["warnings"]


def test_merged_warnings_add_counts_and_keep_the_first_ids() -> None:
    def warning(count: int, *examples: str) -> ValidationWarning:
        return ValidationWarning("negative_labels", "judgments with a negative label", count, examples)

    merged = merge_warnings([(warning(2, "q2/a", "q9/b"),), (), (warning(5, "q1/a", "q3/c", "q4/d", "q5/e", "q6/f"),)])
    assert merged == (warning(7, "q1/a", "q2/a", "q3/c", "q4/d", "q5/e"),)


def test_the_split_inputs_are_removed_after_success_and_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each input is written once as one file per bucket, in a folder of the system's temp
    folder (TMPDIR), removed whatever happens."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    evaluate(RUN, QRELS, k=[5], memory_limit=SMALL_LIMIT)
    assert list(scratch.iterdir()) == []
    run = pl.read_parquet(RUN)
    pl.concat([run, run.slice(7, 1)]).write_parquet(tmp_path / "run.parquet")
    with pytest.raises(InvalidInput, match="listed 2 times"):
        evaluate(tmp_path / "run.parquet", QRELS, k=[5], memory_limit=SMALL_LIMIT)
    assert list(scratch.iterdir()) == []


def test_text_inputs_in_buckets_name_the_file_and_line(tmp_path: Path) -> None:
    """The split keeps each row's file and line, so an error found in a bucket still points
    at the line of the user's file."""
    lines = [f"q{q} Q0 d{d} {d + 1} {10 - d}.5 tag" for q in range(20) for d in range(5)]
    lines[57] = "q11 Q0 d2 3 NaN tag"
    (tmp_path / "run.trec").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.trec").write_text("".join(f"q{q} 0 d1 1\n" for q in range(20)))
    done = run_cli(
        "evaluate", "--run", tmp_path / "run.trec", "--qrels", tmp_path / "qrels.trec", "--memory-limit", "3000B"
    )
    assert done.returncode == 3, done.stderr
    assert f"{tmp_path / 'run.trec'}:58" in done.stderr and "NaN" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_limit_below_one_row_gives_one_bucket_per_row_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    """--memory-limit 1B asks for more buckets than the run has rows: the count stops at the
    rows, and only the buckets holding rows are checked and evaluated (here the 43 queries'
    buckets of 710), with the one pass's bits."""
    prepared = prepare(RUN, QRELS, Columns(), None, None, Evaluation())
    assert units.bucket_count(prepared, "1B") == RUN_ROWS
    checked: list[object] = []
    original = units.check_prepared

    def counted(*args: object, **kwargs: object) -> object:
        checked.append(args[0])
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(units, "check_prepared", counted)
    in_buckets = evaluate(RUN, QRELS, k=[5], memory_limit="1B")
    assert len(checked) <= pl.read_parquet(RUN)["query_id"].n_unique() + pl.read_parquet(QRELS)["query_id"].n_unique()
    assert in_buckets.per_query.equals(evaluate(RUN, QRELS, k=[5]).per_query)


def test_a_limit_of_zero_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="leaves no memory"):
        evaluate(RUN, QRELS, k=[5], memory_limit="0GB")


def _tied_run(folder: Path, queries: int, documents: int) -> tuple[Path, Path]:
    """A run of ``queries`` x ``documents`` rows with tied scores, a fifth of it judged with
    labels -1 to 3 (the shape of the benchmarks' runs), as Parquet."""
    rows = queries * documents
    position = pl.int_range(rows, eager=True)
    run = pl.DataFrame(
        {
            "query_id": (position // documents).cast(pl.String),
            "doc_id": (position % documents).cast(pl.String),
            "score": ((position * 7919) % 13).cast(pl.Float64),
        }
    )
    qrels = run.filter(position % 5 == 0).select(
        "query_id", "doc_id", relevance=(pl.int_range(pl.len()) % 5 - 1).cast(pl.Int64)
    )
    run.write_parquet(folder / "run.parquet")
    qrels.write_parquet(folder / "qrels.parquet")
    return folder / "run.parquet", folder / "qrels.parquet"


@ENGINES
def test_a_small_limit_holds_with_every_measure(engine: str, tmp_path: Path) -> None:
    """8 MiB beyond what the engine takes whatever the rows (DuckDB: its statement's hash
    joins, about 50 MiB with every measure; Polars: nothing of its own), on a run the estimate
    splits into buckets: every bucket fits, and the result is the one pass's. Counting no
    floor, DuckDB's 200,000 rows went in one bucket of about 63 MB, and ran out of memory."""
    measures = "all_trec"
    evaluation = make_evaluation(measures=measures)
    floor = ENGINE_CLASSES[engine].memory_floor(evaluation, Execution())
    limit = f"{floor + 8 * 2**20}B"
    queries = 2000 if engine == "duckdb" else 1000
    run, qrels = _tied_run(tmp_path, queries, 100)
    buckets = units.bucket_count(prepare(run, qrels, Columns(), None, None, evaluation), limit, floor=floor)
    assert buckets >= 3
    one_pass = evaluate(run, qrels, measures=measures, engine=engine)
    in_buckets = evaluate(run, qrels, measures=measures, engine=engine, memory_limit=limit)
    assert in_buckets.per_query.columns == one_pass.per_query.columns
    assert in_buckets.per_query.select("query_id", "k").equals(one_pass.per_query.select("query_id", "k"))
    for got, want in ((in_buckets.per_query, one_pass.per_query), (in_buckets.summary, one_pass.summary)):
        for column, dtype in want.schema.items():
            if dtype.is_float():
                assert got[column].to_list() == pytest.approx(want[column].to_list(), abs=TOLERANCE, nan_ok=True)
            else:
                assert got[column].equals(want[column]), column


@pytest.mark.slow
def test_a_limit_below_what_duckdb_takes_whatever_the_rows_is_a_clear_error(tmp_path: Path) -> None:
    """8MB is below the DuckDB engine's floor with every measure: refused before anything is
    split, exit 1, in the tool's words (not DuckDB's "Out of Memory Error" from a bucket)."""
    done = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--engine", "duckdb", "--measures", "all_trec",
        "--memory-limit", "8MB", "--out", tmp_path / "out",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "out of memory in the DuckDB engine (memory limit 8MB" in done.stderr
    assert "whatever the run's size" in done.stderr and "Give it more room with --memory-limit" in done.stderr
    assert "Out of Memory Error" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
