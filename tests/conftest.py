from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, per_query
from pipeline.engines import duckdb as duckdb_engine
from pipeline.engines import polars as polars_engine

# The shared SparkSession and S3 server live in tests/helpers (so that the inner pytest sessions
# of tests/test_harness.py use the same code); importing their fixtures and hook here is what
# makes pytest use them.
from tests.helpers.s3 import S3Bucket, s3_bucket, s3_server, s3_server_process
from tests.helpers.spark import local_spark, pytest_runtest_makereport, shared_spark, spark_cli

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
    "local_spark",
    "pytest_runtest_makereport",
    "run_cli",
    "s3_bucket",
    "s3_server",
    "s3_server_process",
    "shared_spark",
    "spark_cli",
]

ROOT = Path(__file__).resolve().parent.parent
# trec_eval's own test data, copied into the repository with its provenance and licence
CONFORMANCE = ROOT / "tests" / "data" / "trec_eval"
# The engines on one machine. The `engine` fixture adds Spark (marked `spark`) except where a
# test or module is marked `local_engines("why")`: the command line in a subprocess (a JVM per
# run), or inputs and options Spark refuses by design (TREC and CSV files, input order, groups).
ENGINES = ("polars", "duckdb")
ALL_ENGINES = (*ENGINES, "spark")
TOLERANCE = 1e-9


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


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess, as a user or a scheduler runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.fixture(params=[*ENGINES, pytest.param("spark", marks=pytest.mark.spark)])
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "spark":
        request.getfixturevalue("local_spark")  # the session's one SparkSession, started once
    return str(request.param)


SPARK_FIXTURES = frozenset({"local_spark", "spark_cli"})


def starts_processes(function: object, namespace: dict, seen: set[int] | None = None) -> bool:
    """Whether ``function``, or a function of its module it calls (however deep), runs
    :func:`run_cli` or uses the subprocess module: read from the code, not by running it."""
    code = getattr(function, "__code__", None)
    seen = set() if seen is None else seen
    if code is None or id(code) in seen:
        return False
    seen.add(id(code))
    codes = [code]
    while codes:  # the function's own code and the lambdas, comprehensions and nested functions in it
        current = codes.pop()
        codes += [const for const in current.co_consts if hasattr(const, "co_names")]
        for name in current.co_names:
            value = namespace.get(name)
            if value is run_cli or value is subprocess:
                return True
            if getattr(value, "__module__", None) == namespace.get("__name__") and starts_processes(
                value, namespace, seen
            ):
                return True
    return False


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spark's cases of the `engine` fixture leave the tests marked `local_engines`. Marked by
    rule, for `make test-fast`: `spark`, every test that asks for the shared SparkSession;
    `subprocess`, every test whose code, or its module's fixtures and helpers, start processes
    (the command line in a subprocess costs a second or more of imports each time)."""
    kept, deselected = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        on_spark = params is not None and params.params.get("engine") == "spark"
        fixtures = set(getattr(item, "fixturenames", ()))
        if SPARK_FIXTURES & fixtures and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
        if isinstance(item, pytest.Function) and item.get_closest_marker("subprocess") is None:
            namespace = vars(item.module)
            definitions = item._fixtureinfo.name2fixturedefs
            own = [
                d.func
                for name in fixtures
                for d in definitions.get(name, ())
                if d.func.__module__ == namespace["__name__"]
            ]
            if any(starts_processes(function, namespace) for function in (item.function, *own)):
                item.add_marker(pytest.mark.subprocess)
        (deselected if on_spark and item.get_closest_marker("local_engines") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
