"""What test modules share: the paths, engines and tolerance of the suite, the small frames and
tables most tests build, and the command line (in this process, or in a subprocess). The modules
here hold the rest by subject (the edge-case matrix, the peers, the outputs, trec_eval's files,
the SparkSession, the S3 server, the batching of Spark cases). Test modules import from here, never from each other
or from conftest.py, which keeps only fixtures and hooks."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import polars as pl
import pytest

from pipeline import Evaluation, per_query
from pipeline.engines import ENGINES as ENGINE_CLASSES
from pipeline.engines import Execution
from pipeline.engines import duckdb as duckdb_engine
from pipeline.engines import polars as polars_engine
from tests.helpers.s3 import S3Bucket

__all__ = [
    "ALL_ENGINES",
    "CONFORMANCE",
    "ENGINES",
    "ROOT",
    "TOLERANCE",
    "S3Bucket",
    "as_table",
    "assert_tables_close",
    "compute",
    "frames",
    "limit_beyond_floor",
    "run_cli",
    "run_cli_process",
    "selected",
    "settle",
]

ROOT = Path(__file__).resolve().parents[2]  # tests/helpers/__init__.py -> the repository
# trec_eval's own test data, copied into the repository with its provenance and licence
CONFORMANCE = ROOT / "tests" / "data" / "trec_eval"
# The engines on one machine. The `engine` fixture adds Spark (marked `spark`) except where a
# test or module is marked `local_engines("why")`: the command line in a subprocess (a JVM per
# run), or inputs and options Spark refuses by design (TREC and CSV files, input order, groups).
ENGINES = ("polars", "duckdb")
ALL_ENGINES = (*ENGINES, "spark")
TOLERANCE = 1e-9


def selected(connection: Any, query: str) -> pl.DataFrame:
    """The rows of ``query`` on a DuckDB ``connection``, the statement bound once:
    ``connection.sql(query).pl()`` binds it to make a relation and again to run it, which costs
    0.3 s a call of the macros (most of a call on a few rows is binding their statement)."""
    result = connection.execute(query)
    with warnings.catch_warnings():  # DuckDB's note that a DB-API result is copied: a few rows
        warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning)
        return pl.from_arrow(result.to_arrow_table())  # type: ignore[return-value]


def limit_beyond_floor(engine: str, room: int, evaluation: Evaluation | None = None) -> str:
    """A --memory-limit leaving ``room`` bytes for the run's rows beyond what ``engine`` takes
    for ``evaluation`` (default: the defaults') whatever the rows: DuckDB's statement floor,
    nothing on Polars (:meth:`pipeline.engines.Engine.memory_floor`)."""
    floor = ENGINE_CLASSES[engine].memory_floor(evaluation or Evaluation(), Execution())
    return f"{floor + room}B"


def frames(
    run_rows: list[tuple], qrels_rows: list[tuple], id_type: type = pl.String
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    run = pl.LazyFrame(run_rows, schema={"query_id": id_type, "doc_id": id_type, "score": pl.Float64}, orient="row")
    qrels = pl.LazyFrame(
        qrels_rows, schema={"query_id": id_type, "doc_id": id_type, "relevance": pl.Float64}, orient="row"
    )
    return run, qrels


def compute(engine: str, run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.DataFrame:
    if engine == "spark":  # through the API, which hands Polars frames to Spark through Arrow
        return per_query(run, qrels, evaluation=evaluation, engine="spark").collect()
    module = polars_engine if engine == "polars" else duckdb_engine
    return module.per_query(run, qrels, evaluation).collect()


def as_table(per_query: pl.DataFrame) -> dict[tuple, tuple[float, float, float, float]]:
    return {(r["query_id"], r["k"]): (r["cg"], r["dcg"], r["idcg"], r["ndcg"]) for r in per_query.iter_rows(named=True)}


def assert_tables_close(actual: dict, expected: dict, tolerance: float = TOLERANCE) -> None:
    assert set(actual) == set(expected), f"rows differ: {set(actual) ^ set(expected)}"
    for key, values in expected.items():
        for name, got, want in zip(("cg", "dcg", "idcg", "ndcg"), actual[key], values, strict=True):
            assert got == pytest.approx(want, abs=tolerance), f"{name} of {key}: {got} != {want}"


def run_cli_process(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess, as a user or a scheduler runs it: for what only a
    process shows (its exit, its signals, its environment, what reaches its descriptors)."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def run_cli(*args: str, cwd: Path = ROOT) -> CompletedProcess[str]:
    """The command line's ``main`` in this process, in ``cwd``, with its exit code and output as
    :func:`run_cli_process` gives them: the same code from the parsing of the arguments to the
    exit code, without a second of imports per call. What the command changes of the process
    (the working directory, stdout and stderr, the root logger) is put back."""
    from pipeline.cli import main

    argv = [str(arg) for arg in args]
    out, err = _captured_stream(), _captured_stream()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    streams, directory = (sys.stdout, sys.stderr), os.getcwd()
    try:
        os.chdir(cwd)
        sys.stdout, sys.stderr = out, err
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse's usage errors and --help, as the process would exit
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
    finally:
        sys.stdout, sys.stderr = streams
        os.chdir(directory)
        root.handlers[:] = handlers
        root.setLevel(level)
    # CompletedProcess imported by name: tests/conftest.py marks `subprocess` on code that reads the module
    return CompletedProcess(argv, code, _text_of(out), _text_of(err))


def _captured_stream() -> io.TextIOWrapper:
    # UTF-8 and not a terminal, as a subprocess's pipe under the suite's environment
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)


def _text_of(stream: io.TextIOWrapper) -> str:
    stream.flush()
    data = stream.buffer.getvalue()  # type: ignore[attr-defined]
    # decoded as subprocess.run(text=True) decodes: universal newlines
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def settle(*paths: Path) -> None:
    """Wait until every file under ``paths`` is settled (changed over 100 ms ago): a file changed
    just before the CLI identifies it is recorded unsettled, and its unit recomputed on the next
    run. The tests must not count on the CLI taking any time to start (in this process it takes none)."""
    from pipeline.io.identity import _settled

    files = [file for path in paths for file in (path.rglob("*") if path.is_dir() else [path]) if file.is_file()]
    while not all(_settled(s.st_ctime_ns, s.st_mtime_ns, time.time_ns()) for s in (f.stat() for f in files)):
        time.sleep(0.01)
