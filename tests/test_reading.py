"""Hostile inputs through the real CLI: partitioned layouts, hidden and uncommitted files,
Spark output folders, schema drift, CSV and config encodings, special files, and TREC runs and
qrels given in each other's place. Each case asserts the exit code, a message naming the
problem, and that ``--out`` is untouched (or, for inputs that must be read, the numbers)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import CONFORMANCE, ROOT, run_cli, run_cli_process

pytestmark = pytest.mark.local_engines("the command line in a subprocess; CSV and TREC files")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"

# Two queries written out by hand; NDCG@2 under the defaults (linear gain, log2 discount):
#   q1: d1 (rel 1) at rank 1, d2 (rel 2) at rank 2: DCG = 1 + 2/log2(3), IDCG = 2 + 1/log2(3)
#   q2: e1 (rel 0) at rank 1, e2 (rel 1) at rank 2: DCG = 1/log2(3),     IDCG = 1
LOG2_3 = 1.584962500721156
Q1 = (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3)
Q2 = 1 / LOG2_3
SMALL_RUN = pl.DataFrame(
    {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["d1", "d2", "e1", "e2"], "score": [0.9, 0.8, 0.7, 0.6]}
)
SMALL_QRELS = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "e2"], "relevance": [1, 2, 1]})


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An output folder holding an earlier evaluation, which a refused run must leave as it is."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "per_query.parquet").write_bytes(b"earlier output")
    (folder / "_SUCCESS").write_text("")
    return folder


def untouched(out: Path) -> bool:
    return (
        sorted(p.name for p in out.iterdir()) == ["_SUCCESS", "per_query.parquet"]
        and (out / "per_query.parquet").read_bytes() == b"earlier output"
    )


def refused(engine: str, out: Path, *args: object, code: int = 3, cli: Callable = run_cli) -> str:
    result = cli("evaluate", *args, "--k", "2", "--out", out, "--engine", engine)
    assert result.returncode == code, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert untouched(out)
    return result.stderr


def ndcg_at_2(engine: str, tmp_path: Path, *args: object) -> dict[str, float]:
    out = tmp_path / "fresh"
    result = run_cli("evaluate", *args, "--k", "2", "--out", out, "--engine", engine)
    assert result.returncode == 0, result.stderr
    return read_ndcg_at_2(out)


def read_ndcg_at_2(out: Path) -> dict[str, float]:
    """NDCG@2 by query from every unit under ``out`` (one file, partition folders, or Spark's
    folders of parts)."""
    tables = [
        pl.read_parquet(path / "*.parquet" if path.is_dir() else path).select("query_id", "k", "ndcg")
        for path in sorted(out.rglob("per_query.parquet"))
    ]
    table = pl.concat(tables).filter(pl.col("k") == 2)
    return dict(zip(table["query_id"].to_list(), table["ndcg"].to_list(), strict=True))


def assert_small(values: dict[str, float]) -> None:
    assert values == {"q1": pytest.approx(Q1, abs=1e-12), "q2": pytest.approx(Q2, abs=1e-12)}


def spark_output_folder(folder: Path, frame: pl.DataFrame, *, data_crc: bool = True) -> Path:
    """What Spark leaves: part files, _SUCCESS, Hadoop's .crc files, and a _temporary/ with a
    task attempt's partial file (a job still running or killed). ``data_crc=False`` for
    Spark itself, whose local file system checks a part file against its .crc (these are
    placeholders)."""
    folder.mkdir(parents=True)
    frame.head(2).write_parquet(folder / "part-00000-6f1c-c000.snappy.parquet")
    frame.slice(2).write_parquet(folder / "part-00001-6f1c-c000.snappy.parquet")
    (folder / "_SUCCESS").write_text("")
    if data_crc:
        (folder / ".part-00000-6f1c-c000.snappy.parquet.crc").write_bytes(b"crc")
    (folder / "._SUCCESS.crc").write_bytes(b"crc")
    attempt = folder / "_temporary" / "0" / "_temporary" / "attempt_0001"
    attempt.mkdir(parents=True)
    (attempt / "part-00002-6f1c-c000.snappy.parquet").write_bytes(b"PAR1 half written")
    frame.head(1).write_parquet(folder / "_inprogress.parquet")  # would duplicate q1/d1
    return folder


# --- partitioned inputs --------------------------------------------------------------------------


def days(root: Path, frame: pl.DataFrame, names: tuple[str, ...], file: str = "part-0.parquet") -> Path:
    for day in names:
        (root / f"dt={day}").mkdir(parents=True)
        frame.write_parquet(root / f"dt={day}" / file)
    return root


def test_judgments_missing_the_runs_partition_exit_3_unless_asked(tmp_path: Path, engine: str, out: Path) -> None:
    runs = days(tmp_path / "runs", SMALL_RUN, ("1", "2"))
    # day 2's judgments have not landed; day 1's judge q1/d2 as 0, so the whole qrels would differ
    qrels = days(tmp_path / "qrels", SMALL_QRELS.with_columns(relevance=pl.lit(0)), ("1",))
    stderr = refused(engine, out, "--run", runs, "--qrels", qrels)
    assert f"{qrels}/dt=2: no such folder" in stderr and "--missing-qrels-partition whole" in stderr
    # the loud choice: scored against all the judgments, with a warning naming the folder
    result = run_cli(
        "evaluate", "--run", runs, "--qrels", qrels, "--partition", "dt=2", "--missing-qrels-partition", "whole",
        "--engine", engine, "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{qrels}/dt=2: no such folder" in result.stderr
    # a requested partition whose judgments exist is unaffected
    values = ndcg_at_2(engine, tmp_path, "--run", runs, "--qrels", qrels, "--partition", "dt=1")
    assert values == {"q1": pytest.approx(0.0), "q2": pytest.approx(0.0)}


def test_judgments_partitioned_by_an_outer_key_serve_every_inner_partition(tmp_path: Path, engine: str) -> None:
    for locale in ("de", "fr"):
        folder = tmp_path / "runs" / "dt=1" / f"locale={locale}"
        folder.mkdir(parents=True)
        SMALL_RUN.write_parquet(folder / "part-0.parquet")
    qrels = days(tmp_path / "qrels", SMALL_QRELS, ("1",))
    values = ndcg_at_2(engine, tmp_path, "--run", tmp_path / "runs", "--qrels", qrels, "--partition", "locale=de")
    assert_small(values)


@pytest.mark.parametrize("stray", ["old.parquet", "notes"])
def test_data_beside_partition_folders_is_a_half_migrated_layout(
    tmp_path: Path, engine: str, out: Path, stray: str
) -> None:
    runs = days(tmp_path / "runs", SMALL_RUN, ("1",))
    if stray.endswith(".parquet"):
        SMALL_RUN.write_parquet(runs / stray)
    else:
        (runs / stray).mkdir()
        SMALL_RUN.write_parquet(runs / stray / "part-0.parquet")
    stderr = refused(engine, out, "--run", runs, "--qrels", QRELS)
    assert f"{runs}/{stray}: beside the partition folders" in stderr and "half-migrated" in stderr
    # the same layout in the judgments, read whole for an unpartitioned run
    qrels = days(tmp_path / "qrels", SMALL_QRELS, ("1",))
    SMALL_QRELS.write_parquet(qrels / "loose.parquet")
    stderr = refused(engine, out, "--run", RUN, "--qrels", qrels)
    assert f"{qrels}/loose.parquet: beside the partition folders" in stderr


# --- hidden and uncommitted files -------------------------------------------------------------------


def test_spark_output_folder_is_read_as_its_dataset(tmp_path: Path, engine: str) -> None:
    run = spark_output_folder(tmp_path / "run.parquet", SMALL_RUN)
    qrels = spark_output_folder(tmp_path / "qrels", SMALL_QRELS)
    assert_small(ndcg_at_2(engine, tmp_path, "--run", run, "--qrels", qrels))


def test_hidden_files_and_folders_are_skipped_in_partitions_too(tmp_path: Path, engine: str) -> None:
    runs = days(tmp_path / "runs", SMALL_RUN, ("1",))
    SMALL_RUN.write_parquet(runs / "dt=1" / ".part-1.parquet")
    SMALL_RUN.write_parquet(runs / "dt=1" / "part-1.parquet._COPYING_")
    (runs / "_temporary" / "dt=9").mkdir(parents=True)  # not a partition: inside a hidden folder
    (runs / "_SUCCESS").write_text("")
    (runs / ".staging").mkdir()
    values = ndcg_at_2(engine, tmp_path, "--run", runs, "--qrels", small_qrels_file(tmp_path))
    assert_small(values)


def test_folder_of_only_hidden_files_says_so(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "run.parquet"
    (folder / "_temporary" / "0").mkdir(parents=True)
    SMALL_RUN.write_parquet(folder / "_temporary" / "0" / "part-0.parquet")
    (folder / "_SUCCESS").write_text("")
    stderr = refused(engine, out, "--run", folder, "--qrels", QRELS)
    assert f"{folder}: directory holds no Parquet files" in stderr and "_SUCCESS" in stderr


def test_stray_non_parquet_file_in_a_parquet_folder_is_named(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    SMALL_RUN.write_parquet(folder / "part-0.parquet")
    (folder / "README.md").write_text("the run of model B")
    stderr = refused(engine, out, "--run", folder, "--qrels", QRELS)
    assert f"{folder}/README.md: not a Parquet data file name" in stderr


def test_a_directory_named_like_a_file_is_a_folder_of_parts(tmp_path: Path, engine: str) -> None:
    folder = tmp_path / "runs" / "x.parquet"
    folder.mkdir(parents=True)
    SMALL_RUN.write_parquet(folder / "part-0.parquet")
    assert_small(ndcg_at_2(engine, tmp_path, "--run", tmp_path / "runs", "--qrels", small_qrels_file(tmp_path)))


# --- clear messages ------------------------------------------------------------------------------------


def test_schema_drift_names_the_file_and_both_types(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    SMALL_RUN.head(2).write_parquet(folder / "a.parquet")
    SMALL_RUN.slice(2).with_columns(pl.col("score").cast(pl.String)).write_parquet(folder / "b.parquet")
    stderr = refused(engine, out, "--run", folder, "--qrels", QRELS)
    assert f"{folder}/b.parquet: column 'score' is String here but Float64 in {folder}/a.parquet" in stderr


def test_mixed_integer_widths_name_the_file(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "qrels"
    folder.mkdir()
    SMALL_QRELS.head(1).with_columns(pl.col("relevance").cast(pl.Int32)).write_parquet(folder / "a.parquet")
    SMALL_QRELS.slice(1).write_parquet(folder / "b.parquet")
    stderr = refused(engine, out, "--run", RUN, "--qrels", folder)
    assert f"{folder}/b.parquet: column 'relevance' is Int64 here but Int32" in stderr


def test_missing_column_in_one_file_names_it(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    SMALL_RUN.head(2).with_columns(locale=pl.lit("de")).write_parquet(folder / "a.parquet")
    SMALL_RUN.slice(2).write_parquet(folder / "b.parquet")
    stderr = refused(engine, out, "--run", folder, "--qrels", QRELS)
    assert f"{folder}/b.parquet: no column 'locale'" in stderr


def test_zero_row_file_with_null_columns_is_named(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    SMALL_RUN.write_parquet(folder / "a.parquet")
    pl.DataFrame({"query_id": [], "doc_id": [], "score": []}).write_parquet(folder / "b.parquet")
    stderr = refused(engine, out, "--run", folder, "--qrels", QRELS)
    assert f"{folder}/b.parquet: zero rows and column(s) 'query_id', 'doc_id', 'score' of type null" in stderr


def test_an_interval_column_is_named_without_a_panic(tmp_path: Path, engine: str, out: Path) -> None:
    """DuckDB writes INTERVAL columns to Parquet, which Polars cannot read: it panicked, printing
    its message on stderr before the error (a Rust backtrace under RUST_BACKTRACE=1), for a column
    not even read."""
    import duckdb

    run = tmp_path / "run.parquet"
    SMALL_RUN.write_parquet(plain := tmp_path / "plain.parquet")
    duckdb.execute(f"copy (select *, interval 1 day as waited from '{plain}') to '{run}' (format parquet)")
    stderr = refused(engine, out, "--run", run, "--qrels", QRELS, cli=run_cli_process)  # its own stderr (fd 2)
    assert f"{run}: column(s) 'waited' of type INTERVAL, which Polars cannot read" in stderr
    assert "panicked" not in stderr and "RUST_BACKTRACE" not in stderr


def csv_text(frame: pl.DataFrame) -> str:
    return frame.write_csv()


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_csv_with_byte_order_mark_is_read(tmp_path: Path, engine: str, newline: str) -> None:
    run, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run.write_bytes(b"\xef\xbb\xbf" + csv_text(SMALL_RUN).replace("\n", newline).encode())
    # the label is the last field: a CR left on it would not parse as a number
    qrels.write_bytes(b"\xef\xbb\xbf" + csv_text(SMALL_QRELS).replace("\n", newline).encode())
    assert_small(ndcg_at_2(engine, tmp_path, "--run", run, "--qrels", qrels))


def test_config_with_byte_order_mark_is_read(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    run, qrels = small_files(tmp_path)
    config.write_bytes(b"\xef\xbb\xbf" + f'run = "{run}"\nqrels = "{qrels}"\nk = [2]\n'.encode())
    result = run_cli("evaluate", "--config", config, "--out", tmp_path / "fresh")
    assert result.returncode == 0, result.stderr
    table = pl.read_parquet(tmp_path / "fresh" / "per_query.parquet").filter(pl.col("k") == 2).sort("query_id")
    assert table["ndcg"].to_list() == [pytest.approx(Q1), pytest.approx(Q2)]


def test_config_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_bytes("k = [2]\n".encode("utf-16"))
    result = run_cli("evaluate", "--config", config, "--run", RUN, "--qrels", QRELS)
    assert result.returncode == 2 and str(config) in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "query_id,doc_id,score\nq1,d1,0.9\nq1,d2,0.8,x\n",
            "run.csv:3: 4 fields where the header has 3 (a field too many",
        ),
        ("query_id,doc_id,score\nq1,d1,0.9\nq1,d2\n", "run.csv:3: 2 fields where the header has 3 (a field missing"),
        ('query_id,doc_id,score\nq1,"d,1",0.9\nq1,d,2,0.8\n', "run.csv:3: 4 fields"),
        ("query_id,doc_id,score,score\nq1,d1,0.9,1\n", "run.csv: the header names column 'score' more than once"),
        ("query_id,doc_id,score\n", "run.csv: no rows (a header only)"),
        ("", "run.csv: empty file (no header)"),
    ],
    ids=["field too many", "field missing", "unquoted separator", "column twice", "header only", "empty"],
)
def test_malformed_csv_names_the_line_or_header(
    tmp_path: Path, engine: str, out: Path, text: str, message: str
) -> None:
    (tmp_path / "run.csv").write_text(text)
    assert message in refused(engine, out, "--run", tmp_path / "run.csv", "--qrels", QRELS)


def test_utf16_csv_says_so(tmp_path: Path, engine: str, out: Path) -> None:
    (tmp_path / "run.csv").write_bytes(csv_text(SMALL_RUN).encode("utf-16"))
    assert "run.csv: the file is UTF-16 (byte-order mark); save it as UTF-8" in refused(
        engine, out, "--run", tmp_path / "run.csv", "--qrels", QRELS
    )


def test_csv_files_of_one_dataset_with_different_headers_are_refused(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.csv").write_text("query_id,doc_id,score\nq1,d1,0.9\n")
    (folder / "b.csv").write_text("doc_id,query_id,score\nd2,q1,0.8\n")  # columns swapped
    stderr = refused(engine, out, "--run", folder, "--run-format", "csv", "--qrels", QRELS)
    assert f"{folder}/b.csv: header 'doc_id,query_id,score' differs" in stderr


def test_dangling_symlinks_are_named(tmp_path: Path, engine: str, out: Path) -> None:
    link = tmp_path / "run.parquet"
    link.symlink_to(tmp_path / "gone.parquet")
    assert f"{link}: a dangling symbolic link" in refused(engine, out, "--run", link, "--qrels", QRELS)
    folder = tmp_path / "runs"
    folder.mkdir()
    SMALL_RUN.write_parquet(folder / "a.parquet")
    (folder / "b.parquet").symlink_to(tmp_path / "gone.parquet")
    assert f"{folder}/b.parquet: a dangling symbolic link" in refused(engine, out, "--run", folder, "--qrels", QRELS)


def test_fifo_is_named_and_never_opened(tmp_path: Path, engine: str, out: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    SMALL_RUN.write_parquet(folder / "a.parquet")
    os.mkfifo(folder / "b.parquet")  # opening it would block the job forever
    stderr = refused(engine, out, "--run", folder, "--qrels", QRELS)
    assert f"{folder}/b.parquet: not a regular file or directory (a FIFO)" in stderr


# --- runs and qrels in each other's place ------------------------------------------------------------


def trec_files(tmp_path: Path) -> tuple[Path, Path]:
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 0.9 tag\nq1 Q0 d2 2 0.8 tag\nq2 Q0 e1 1 0.7 tag\nq2 Q0 e2 2 0.6 tag\n")
    qrels.write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 e2 1\n")
    return run, qrels


def test_run_given_as_qrels_is_refused(tmp_path: Path, engine: str, out: Path) -> None:
    run, _ = trec_files(tmp_path)
    stderr = refused(engine, out, "--run", run, "--qrels", run)
    assert f"{run}:1: 6 fields where qrels lines have 4" in stderr and "looks like a TREC run" in stderr


def test_qrels_given_as_run_is_refused(tmp_path: Path, engine: str, out: Path) -> None:
    _, qrels = trec_files(tmp_path)
    stderr = refused(engine, out, "--run", qrels, "--qrels", qrels)
    assert f"{qrels}:1: 4 fields where run lines have 6" in stderr and "looks like TREC qrels" in stderr


def test_run_lines_later_in_qrels_name_the_line(tmp_path: Path, engine: str, out: Path) -> None:
    run, qrels = trec_files(tmp_path)
    qrels.write_text(qrels.read_text() + "q2 Q0 e1 1 0.7 tag\n")
    stderr = refused(engine, out, "--run", run, "--qrels", qrels)
    assert f"{qrels}:4: cannot read line" in stderr


def test_trec_files_with_byte_order_mark_keep_their_first_query(tmp_path: Path, engine: str) -> None:
    run, qrels = trec_files(tmp_path)
    for path in (run, qrels):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert_small(ndcg_at_2(engine, tmp_path, "--run", run, "--qrels", qrels))


# --- helpers over the small example -------------------------------------------------------------------


def small_files(tmp_path: Path) -> tuple[Path, Path]:
    run, qrels = tmp_path / "small_run.parquet", tmp_path / "small_qrels.parquet"
    SMALL_RUN.write_parquet(run)
    SMALL_QRELS.write_parquet(qrels)
    return run, qrels


def small_qrels_file(tmp_path: Path) -> Path:
    return small_files(tmp_path)[1]


# --- Spark: the same files read ------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_reads_hidden_files_and_output_folders_as_the_other_engines(tmp_path: Path, spark_cli: Callable) -> None:
    """One JVM: a Spark output folder (with _temporary/, .crc, _SUCCESS and an
    _inprogress.parquet) as the run, partitioned judgments with hidden files, one partition."""
    runs = tmp_path / "runs"
    spark_output_folder(runs / "dt=1", SMALL_RUN, data_crc=False)
    (runs / "_SUCCESS").write_text("")
    qrels = days(tmp_path / "qrels", SMALL_QRELS, ("1",))
    SMALL_QRELS.with_columns(relevance=pl.lit(0)).write_parquet(qrels / "dt=1" / "_inprogress.parquet")
    out = tmp_path / "out"
    result = spark_cli("evaluate", "--engine", "spark", "--run", runs, "--qrels", qrels, "--k", "2", "--out", out)
    assert result.returncode == 0, result.stderr
    assert_small(read_ndcg_at_2(out))


@pytest.mark.spark
def test_spark_refuses_what_the_other_engines_refuse(tmp_path: Path, out: Path, spark_cli: Callable) -> None:
    """A judgments partition missing, then (after it is given) a stray file beside the run's
    partition folders and a schema drift, each exit 3 naming the path."""
    runs = days(tmp_path / "runs", SMALL_RUN, ("1", "2"))
    qrels = days(tmp_path / "qrels", SMALL_QRELS, ("1",))
    stderr = refused("spark", out, "--run", runs, "--qrels", qrels, cli=spark_cli)
    assert f"{qrels}/dt=2: no such folder" in stderr
    SMALL_RUN.write_parquet(runs / "loose.parquet")
    stderr = refused("spark", out, "--run", runs, "--qrels", qrels, cli=spark_cli)
    assert f"{runs}/loose.parquet: beside the partition folders" in stderr


# Base data of the adversarial pass, with NDCG@2 written out (linear gain, log2 discount):
#   q1 ranks a (rel 2), b (0): DCG = 2, IDCG = 2 + 1/log2(3) (a, then c or d at rel 1)
#   q2 ranks x (rel 1) first: 1.  Mean = (2/(2 + 1/log2 3) + 1)/2 = 0.8801
BASE_RUN = pl.DataFrame({"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "b", "c", "x"], "score": [3.0, 2, 1, 1]})
BASE_QRELS = pl.DataFrame(
    {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "c", "d", "x"], "relevance": [2, 1, 1, 1]}
)


@pytest.mark.parametrize(
    ("folder", "column"), [("score=9", "score"), ("doc_id=z", "doc_id"), ("query_id=q9", "query_id")]
)
def test_partition_folder_named_like_a_data_column_is_refused(
    tmp_path: Path, engine: str, out: Path, folder: str, column: str
) -> None:
    (tmp_path / "runs" / folder).mkdir(parents=True)
    BASE_RUN.write_parquet(tmp_path / "runs" / folder / "part.parquet")
    BASE_QRELS.write_parquet(tmp_path / "qrels.parquet")
    args = ("--run", tmp_path / "runs", "--qrels", tmp_path / "qrels.parquet")
    stderr = refused(engine, out, *args)
    assert f"runs/{folder}" in stderr and f"names column {column!r}" in stderr
    result = run_cli("validate", *args)
    assert result.returncode == 3 and f"names column {column!r}" in result.stdout + result.stderr


def test_partition_key_colliding_with_a_data_column_is_refused(tmp_path: Path, engine: str, out: Path) -> None:
    (tmp_path / "runs" / "locale=de").mkdir(parents=True)
    BASE_RUN.with_columns(locale=pl.lit("fr")).write_parquet(tmp_path / "runs" / "locale=de" / "part.parquet")
    BASE_QRELS.write_parquet(tmp_path / "qrels.parquet")
    stderr = refused(engine, out, "--run", tmp_path / "runs", "--qrels", tmp_path / "qrels.parquet")
    assert "runs/locale=de" in stderr and "names column 'locale'" in stderr and "column of the data files" in stderr


def test_plain_partition_folder_is_read_by_each_engine_alike(tmp_path: Path, engine: str) -> None:
    (tmp_path / "runs" / "dt=1").mkdir(parents=True)
    BASE_RUN.write_parquet(tmp_path / "runs" / "dt=1" / "part.parquet")
    BASE_QRELS.write_parquet(tmp_path / "qrels.parquet")
    values = ndcg_at_2(engine, tmp_path, "--run", tmp_path / "runs", "--qrels", tmp_path / "qrels.parquet")
    assert values == {"q1": pytest.approx(2 / (2 + 1 / LOG2_3), abs=1e-12), "q2": pytest.approx(1.0)}


def base_files(tmp_path: Path) -> tuple[Path, Path]:
    BASE_RUN.write_parquet(tmp_path / "run.parquet")
    BASE_QRELS.write_parquet(tmp_path / "qrels.parquet")
    return tmp_path / "run.parquet", tmp_path / "qrels.parquet"


def test_config_key_given_in_both_spellings_is_a_usage_error(tmp_path: Path, engine: str, out: Path) -> None:
    run, qrels = base_files(tmp_path)
    config = tmp_path / "ndcg.toml"
    config.write_text("max-results = 1\nmax_results = 5\n")
    stderr = refused(engine, out, "--config", config, "--run", run, "--qrels", qrels, code=2)
    assert "key 'max-results' given twice (max-results, max_results)" in stderr


def test_config_path_with_nul_character_is_a_usage_error(tmp_path: Path, engine: str, out: Path) -> None:
    _, qrels = base_files(tmp_path)
    config = tmp_path / "ndcg.toml"
    config.write_text('run = "run\\u0000.parquet"\n')
    stderr = refused(engine, out, "--config", config, "--qrels", qrels, code=2)
    assert "key 'run'" in stderr and "NUL character" in stderr


@pytest.mark.parametrize("value", ["9223372036854775808", "99999999999999999999999"])
def test_max_results_beyond_int64_is_a_usage_error(tmp_path: Path, engine: str, out: Path, value: str) -> None:
    run, qrels = base_files(tmp_path)
    stderr = refused(engine, out, "--run", run, "--qrels", qrels, "--max-results", value, code=2)
    assert "--max-results: must be at most 9223372036854775807" in stderr
    result = run_cli("sql", "--dialect", engine if engine != "polars" else "duckdb", "--k", "2", "--max-results", value)
    assert result.returncode == 2 and "must be at most" in result.stderr and not result.stdout
    config = tmp_path / "ndcg.toml"
    config.write_text(f"max-results = {value}\n" if len(value) < 20 else f'max-results = "{value}"\n')
    stderr = refused(engine, out, "--config", config, "--run", run, "--qrels", qrels, code=2)
    assert "must be at most 9223372036854775807" in stderr


def test_max_results_at_int64_max_keeps_everything(tmp_path: Path, engine: str) -> None:
    run, qrels = base_files(tmp_path)
    values = ndcg_at_2(engine, tmp_path, "--run", run, "--qrels", qrels, "--max-results", str(2**63 - 1))
    assert values == {"q1": pytest.approx(2 / (2 + 1 / LOG2_3), abs=1e-12), "q2": pytest.approx(1.0)}


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_null_input_rank_under_input_order_is_refused(tmp_path: Path, engine: str, fmt: str) -> None:
    run = BASE_RUN.with_columns(rank=pl.Series([1, None, 3, 1], dtype=pl.Int64))
    path = tmp_path / f"ranked.{fmt}"
    run.write_parquet(path) if fmt == "parquet" else run.write_csv(path)
    _, qrels = base_files(tmp_path)
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", path, "--qrels", qrels, "--ties", "input-order", "--k", "2",
                     "--out", out, "--engine", engine)  # fmt: skip
    assert result.returncode == 3 and not out.exists(), result.stderr
    assert f"{path}: column 'rank' has 1 null value(s)" in result.stderr and "'doc_id': 'b'" in result.stderr
    # the rank column is only read under input-order
    values = ndcg_at_2(engine, tmp_path, "--run", path, "--qrels", qrels)
    assert values == {"q1": pytest.approx(2 / (2 + 1 / LOG2_3), abs=1e-12), "q2": pytest.approx(1.0)}


@pytest.mark.parametrize(
    ("text", "fmt", "found", "hint"),
    [
        ("query_id;doc_id;score\nq1;a;3\n", "csv", "'query_id;doc_id;score'", "separated by semicolons"),
        ("a,b\n1,2\n", "csv", "'a', 'b'", ""),
        ("query_id,doc_id,score\nq1,a,3\n", "tsv", "'query_id,doc_id,score'", "--run-format/--qrels-format csv"),
    ],
)
def test_csv_without_the_expected_columns_names_them(
    tmp_path: Path, engine: str, out: Path, text: str, fmt: str, found: str, hint: str
) -> None:
    run = tmp_path / "run.txt"
    run.write_text(text)
    _, qrels = base_files(tmp_path)
    stderr = refused(engine, out, "--run", run, "--run-format", fmt, "--qrels", qrels)
    assert f"missing column(s) 'query_id'; 'doc_id'; 'score'; columns found: {found}" in stderr
    assert hint in stderr and "out of bounds" not in stderr


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("attrs.csv", "query_id,g\nq1,x\nq2,y,extra\n", "attrs.csv:3: 3 fields where the header has 2"),
        ("attrs.csv", "", "attrs.csv: empty file (no header)"),
        ("attrs.csv", "query_id,g,g\nq1,x,y\n", "the header names column 'g' more than once"),
        ("attrs.parquet", "not parquet", "attrs.parquet: cannot read as parquet"),
    ],
)
def test_bad_query_attributes_follow_the_runs_reading_rules(
    tmp_path: Path, engine: str, out: Path, name: str, content: str, message: str
) -> None:
    run, qrels = base_files(tmp_path)
    attributes = tmp_path / name
    attributes.write_text(content)
    stderr = refused(engine, out, "--run", run, "--qrels", qrels, "--group-by", "g", "--query-attributes", attributes)
    assert message in stderr


@pytest.mark.parametrize(
    ("name", "content", "line", "column"),
    [
        ("run.csv", b"query_id,doc_id,score\nq1,a,3\nq1,b\xff,2\n", 3, 5),
        # far past the header, beyond what the header check reads
        ("run.csv", b"query_id,doc_id,score\n" + b"q1,d,1\n" * 20000 + b"q1,b\xff,2\n", 20002, 5),
        ("run.trec", b"q1 Q0 a 1 3 t\nq1 Q0 b\xff 2 2 t\n", 2, 8),
    ],
)
def test_non_utf8_text_names_the_line_of_the_bad_byte(
    tmp_path: Path, engine: str, out: Path, name: str, content: bytes, line: int, column: int
) -> None:
    run = tmp_path / name
    run.write_bytes(content)
    _, qrels = base_files(tmp_path)
    stderr = refused(engine, out, "--run", run, "--qrels", qrels)
    assert f"{run}:{line}: byte 0xff at column {column} is not UTF-8" in stderr


def test_a_key_value_folder_above_the_input_is_the_users_path_not_a_partition(tmp_path: Path, engine: str) -> None:
    """Only folders below the dataset's root are partitions: a file in a folder called k=5
    (an output column's name) is read as given."""
    folder = tmp_path / "k=5"
    folder.mkdir()
    SMALL_RUN.write_parquet(folder / "run.parquet")
    SMALL_QRELS.write_parquet(tmp_path / "qrels.parquet")
    assert_small(ndcg_at_2(engine, tmp_path, "--run", folder / "run.parquet", "--qrels", tmp_path / "qrels.parquet"))


# Unreadable inputs are invalid input: exit 3, naming the path; bad flags stay exit 2.


def unreadable_inputs(tmp_path: Path) -> dict[str, tuple[str, list[str]]]:
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "not.parquet").write_text("query_id,doc_id,score\nq,d,1\n")
    good = pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    good.write_parquet(tmp_path / "good.parquet")
    data = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "truncated.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "bad.csv").write_text('query_id,doc_id,score\nq,d,"unterminated\n')
    (tmp_path / "bad_score.csv").write_text("query_id,doc_id,score\nq,d,high\n")
    (tmp_path / "bad.trec").write_text("q Q0 d 1 0.5 tag\nthis line is short\n")
    (tmp_path / "bad_score.trec").write_text("q Q0 d 1 high tag\n")
    return {
        "missing path": (str(tmp_path / "nope.parquet"), ["no such file"]),
        "directory without parquet": (str(tmp_path / "empty_dir"), ["directory holds no Parquet files"]),
        "glob matching nothing": (str(tmp_path / "*.nothing.parquet"), ["nothing matches this pattern"]),
        "not parquet": (str(tmp_path / "not.parquet"), ["cannot read"]),
        "truncated parquet": (str(tmp_path / "truncated.parquet"), ["cannot read"]),
        "csv that does not parse": (str(tmp_path / "bad.csv"), ["bad.csv"]),
        "csv score that is text": (str(tmp_path / "bad_score.csv"), ["score"]),
        "trec line that does not parse": (str(tmp_path / "bad.trec"), [":2:", "this line is short"]),
        "trec score that is text": (str(tmp_path / "bad_score.trec"), [":1:", "high"]),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing path",
        "directory without parquet",
        "glob matching nothing",
        "not parquet",
        "truncated parquet",
        "csv that does not parse",
        "csv score that is text",
        "trec line that does not parse",
        "trec score that is text",
    ],
)
def test_unreadable_run_exits_3(tmp_path: Path, engine: str, case: str) -> None:
    path, words = unreadable_inputs(tmp_path)[case]
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", path, "--qrels", CONFORMANCE / "qrels.test", "--engine", engine, "--out", out)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    message = result.stderr
    assert str(Path(path).name.replace("*", "")) in message or path in message
    for word in words:
        assert word in message, message
    assert not out.exists()


def test_unreadable_qrels_exits_3(tmp_path: Path, engine: str) -> None:
    result = run_cli(
        "evaluate", "--run", CONFORMANCE / "results.test", "--qrels", tmp_path / "missing.txt", "--engine", engine
    )
    assert result.returncode == 3
    assert "missing.txt" in result.stderr and "no such file" in result.stderr


@pytest.mark.parametrize(
    "flags",
    [
        ["--k", "0"],
        ["--k", "five"],
        ["--k", "5,-1"],
        ["--gain", "1:3"],
        ["--gain", "squared"],
        ["--max-results", "0"],
        ["--engine", "spark2"],
        ["--log-base", "1", "--discount", "jk"],
    ],
)
def test_bad_flags_exit_2(flags: list[str]) -> None:
    result = run_cli("evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", *flags)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "error" in result.stderr


# the texts a CSV column may hold, as Polars' inference tells them apart
INFERENCE_VALUES = (
    *("0", "7", "-12", "007", "9223372036854775807", "9223372036854775808", "-99999999999999999999"),
    *("2.5", ".5", "-.5", "+.5", "5.", "1e5", "1E+5", "-1e-5", "+1e5", "inf", "-inf", "NaN", "-NaN"),
    *("true", "FALSE", "True", "+5", "nan", "Inf", "Infinity", " 5", "1_000", "0x10", "1e", "abc", '""', ""),
)


def test_csv_columns_are_typed_as_polars_infers_them_from_every_row(tmp_path: Path) -> None:
    """The command line types each CSV column from every row in one streaming pass
    (pipeline.io.csv_text.column_types), by Polars' rules written out: the peer here is Polars' own
    inference over every row (``infer_schema_length=None``) of one file, on random columns of
    the texts that tell its types apart, the telling value often past row 100 (a quoted empty
    field is no value, as an empty one). Split over two files, the dataset is typed as one
    (Polars' own would type a column with no value in one file as text, whatever the other holds)."""
    import random

    from pipeline.io.csv_text import column_types

    generator = random.Random(48)
    columns = []
    for number in range(400):
        kinds = generator.sample(INFERENCE_VALUES, generator.choice((1, 1, 2, 3)))
        values = [generator.choice(kinds) for _ in range(generator.choice((1, 5, 150)))]
        columns.append((f"c{number}", values))
    rows = max(len(values) for _, values in columns)
    lines = [",".join(values[i] if i < len(values) else "" for _, values in columns) for i in range(rows)]
    header = ",".join(name for name, _ in columns)
    (tmp_path / "all.csv").write_text(header + "\n" + "\n".join(lines) + "\n")
    (tmp_path / "a.csv").write_text(header + "\n" + "\n".join(lines[:60]) + "\n")
    (tmp_path / "b.csv").write_text(header + "\n" + "\n".join(lines[60:]) + "\n")
    names = [name for name, _ in columns]

    def ours(*files: str) -> pl.Schema:
        texts = pl.scan_csv([str(tmp_path / f) for f in files], glob=False, infer_schema_length=0)
        return column_types(texts, names, {})

    # a quoted empty field ("") is no value here, as an empty one (Polars reads it as the text ""):
    # the peer reads the same rows with an empty field in its place
    (tmp_path / "peer.csv").write_text(header + "\n" + "\n".join(lines).replace('""', "") + "\n")
    polars = dict(pl.scan_csv(tmp_path / "peer.csv", infer_schema_length=None).collect_schema())
    # Polars reads integers within Int64, beyond it and floats together as text (three kinds of
    # number: its rule keeps two at most); they are all numbers, read as doubles here and by the
    # SQL front
    for name, values in columns:
        integers = [int(value) for value in values if value.lstrip("-").isdigit()]
        both = any(abs(i) < 2**63 for i in integers) and any(abs(i) >= 2**63 for i in integers)
        numbers = all(value in (*INFERENCE_VALUES[:20], "") for value in values)
        if both and numbers and polars[name] == pl.String:
            polars[name] = pl.Float64
    one_file = ours("all.csv")
    differ = {name: (one_file[name], polars[name]) for name in names if one_file[name] != polars[name]}
    assert not differ, differ
    assert len(set(polars.values())) == 5  # every type told apart: Int64, Int128, Float64, Boolean, String
    assert ours("a.csv", "b.csv") == one_file


def test_what_stops_the_csv_reader_is_said_plainly(tmp_path: Path) -> None:
    """A quote inside a field that is not quoted, and lines ending in a carriage return alone,
    stopped Polars with its own words ("CSV malformed: expected 0 rows...", "new_columns does not
    match"); they are named, with the line, and a quoted line break is still read."""
    from pipeline.api import check
    from pipeline.errors import InvalidInput

    qrels = tmp_path / "qrels.csv"
    qrels.write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    cases = {
        "stray.csv": (
            'query_id,doc_id,score\nq1,d0,1\nq1,d"1,3\n',
            ':3: a double quote inside a field that is not quoted; quote the field and double the quote ("a""b")',
        ),
        "stray.tsv": (
            'query_id\tdoc_id\tscore\nq1\td"1\t3\n',
            ':2: a double quote inside a field that is not quoted; quote the field and double the quote ("a""b")',
        ),
        # a space before a field's opening quote is as Polars reads it; the fault is on line 4
        "after_quote.csv": (
            'query_id,doc_id,score,tag\nq1,d1,3, "x"\nq1,d2,2,x\nq2,"d1"z,1,y\n',
            ':4: text after a quoted field\'s closing quote; quote the whole field ("a""b")',
        ),
        "old_mac.csv": (
            "query_id,doc_id,score\rq1,d1,3\r",
            ": its lines end in a carriage return alone (old Mac endings); save it with \\n line endings",
        ),
    }
    for name, (text, said) in cases.items():
        (tmp_path / name).write_bytes(text.encode())
        with pytest.raises(InvalidInput) as refused:
            check(str(tmp_path / name), str(qrels))
        assert str(refused.value) == f"{tmp_path / name}{said}", name
    (tmp_path / "quoted.csv").write_bytes(b'query_id,doc_id,score\nq1,"d\n1",3\nq1,"a""b",2\n')
    check(str(tmp_path / "quoted.csv"), str(qrels))
