"""Delta Lake tables as inputs: read at their current version (or --run-version/--qrels-version)
through the log, never by listing the folder, whose superseded files would be scored silently;
partition columns behave as hive partitions. Tables are written by the ``deltalake`` writer and
overwritten to make a version 1 whose numbers differ from version 0's."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

import pipeline
from pipeline.errors import InvalidInput
from pipeline.io.read import Source
from pipeline.job import Job, run_job
from pipeline.registry import Evaluation
from tests.helpers import S3Bucket, run_cli

deltalake = pytest.importorskip("deltalake", reason="the Delta tests need the deltalake package (make dev installs it)")

QRELS = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "relevance": [1, 0, 2]})
# version 0: the relevant documents ranked last; version 1 (an overwrite): ranked first
V0 = pl.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q2"],
        "doc_id": ["a", "b", "x", "c", "y"],
        "score": [1.0, 2.0, 3.0, 1.0, 2.0],
    }
)
V1 = V0.with_columns(score=-pl.col("score"))
# NDCG of the whole ranking (k null): version 1 ranks every relevant document first, so 1 for
# both queries; version 0 puts q1's at rank 3 (1/log2(4) = 0.5) and q2's at rank 2 (1/log2(3))
NDCG_V1 = {"q1": 1.0, "q2": 1.0}
NDCG_V0 = {"q1": 0.5, "q2": 1 / 1.584962500721156}


def _write(path: Path, frame: pl.DataFrame, mode: str = "error", partition_by: list[str] | None = None) -> None:
    deltalake.write_deltalake(str(path), frame.to_arrow(), mode=mode, partition_by=partition_by)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A run table at version 1 whose folder still holds version 0's files."""
    path = tmp_path / "run_table"
    _write(path, V0)
    _write(path, V1, mode="overwrite")
    assert len(list(path.glob("*.parquet"))) == 2  # both versions' files are in the folder
    return path


@pytest.fixture
def qrels(tmp_path: Path) -> Path:
    path = tmp_path / "qrels.parquet"
    QRELS.write_parquet(path)
    return path


def _ndcg(per_query: pl.DataFrame) -> dict[str, float]:
    rows = per_query.filter(pl.col("k").is_null()).sort("query_id")
    return dict(zip(rows["query_id"].to_list(), rows["ndcg"].to_list(), strict=True))


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_current_version_is_scored_not_superseded_files(table: Path, qrels: Path, engine: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", table, "--qrels", qrels, "--k", "1", "--engine", engine, "--out", out)
    assert result.returncode == 0, result.stderr
    assert _ndcg(pl.read_parquet(out / "per_query.parquet")) == pytest.approx(NDCG_V1)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"]["run"]["format"] == "delta"
    assert manifest["inputs"]["run"]["rows"] == V1.height
    identity = manifest["inputs"]["run"]["identity"]
    assert identity == {"kind": "delta", "table": str(table), "id": identity["id"], "version": 1}
    assert identity["id"] == deltalake.DeltaTable(str(table)).metadata().id


def test_an_earlier_version_by_number_or_time(table: Path, qrels: Path) -> None:
    older = run_cli("evaluate", "--run", table, "--qrels", qrels, "--run-version", "0", "--json")
    assert older.returncode == 0, older.stderr
    (unit,) = run_job(Job(run=str(table), qrels=str(qrels), evaluation=Evaluation(), run_version=0))
    assert _ndcg(unit.per_query) == pytest.approx(NDCG_V0)
    assert unit.manifest["inputs"]["run"]["identity"]["version"] == 0
    assert json.loads(older.stdout)["summary"][0]["ndcg"] == pytest.approx(sum(NDCG_V0.values()) / 2)
    # by time: version 0 was committed before this moment, version 1 after it
    path = table.parent / "timed"
    _write(path, V0)
    time.sleep(1.1)
    between = datetime.now(UTC).isoformat()
    time.sleep(1.1)
    _write(path, V1, mode="overwrite")
    (timed,) = run_job(Job(run=str(path), qrels=str(qrels), evaluation=Evaluation(), run_version=between))
    assert _ndcg(timed.per_query) == pytest.approx(NDCG_V0)


def test_reading_the_tables_files_is_refused_with_how_to_read_it(table: Path, qrels: Path) -> None:
    for given, extra in ((f"{table}/*.parquet", []), (str(table), ["--run-format", "parquet"])):
        result = run_cli("evaluate", "--run", given, "--qrels", qrels, *extra)
        assert result.returncode == 3, result.stderr
        assert f"inside the Delta table {table}" in result.stderr
        assert f"pass the table's folder {table} itself as --run" in result.stderr
        assert "Traceback" not in result.stderr


def test_version_errors(table: Path, qrels: Path) -> None:
    missing = run_cli("evaluate", "--run", table, "--qrels", qrels, "--run-version", "7")
    assert missing.returncode == 3 and "has no version 7; its latest is 1" in missing.stderr
    not_a_table = run_cli("evaluate", "--run", qrels, "--qrels", qrels, "--run-version", "1")
    assert not_a_table.returncode == 2 and "is not a Delta table" in not_a_table.stderr
    garbage = run_cli("evaluate", "--run", table, "--qrels", qrels, "--run-version", "yesterday")
    assert garbage.returncode == 2 and "expected a version number" in garbage.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("version", [10**12, 2**70])
def test_a_huge_version_is_refused_at_once_naming_the_latest(table: Path, qrels: Path, version: int) -> None:
    """deltalake walks every version number up to the one asked for (a Unix time typed as a
    version ran for hours) and fails beyond 64 bits ("int too big to convert"): the latest
    version is read first and a later one refused, on the command line and in the library, by
    the flag or by a source made at that version."""
    started = time.monotonic()
    result = run_cli("evaluate", "--run", table, "--qrels", qrels, "--run-version", str(version))
    assert result.returncode == 3, result.stderr
    assert f"has no version {version}; its latest is 1" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    with pytest.raises(InvalidInput, match=f"has no version {version}; its latest is 1"):
        pipeline.evaluate(table, qrels, run_version=version)
    with pytest.raises(InvalidInput, match=f"has no version {version}; its latest is 1"):
        pipeline.evaluate(Source.of(table, version=version), qrels)
    # a subprocess and two evaluations; walking the versions took 0.2 s per million
    assert time.monotonic() - started < 30


def test_a_time_before_the_first_commit_is_an_error_not_version_0(table: Path, qrels: Path) -> None:
    """deltalake loads version 0 for a time before the table existed: the table had no rows
    then, so scoring version 0's is refused (exit 3), saying when version 0 was committed."""
    result = run_cli("evaluate", "--run", table, "--qrels", qrels, "--run-version", "2020-01-01T00:00:00Z")
    assert result.returncode == 3, result.stderr
    assert "no version of the Delta table at 2020-01-01T00:00:00+00:00" in result.stderr
    assert "its first version, 0, was committed later, at " in result.stderr
    assert result.stdout == ""
    with pytest.raises(InvalidInput, match="committed later"):
        run_job(Job(run=str(table), qrels=str(qrels), evaluation=Evaluation(), run_version="2020-01-01"))


@pytest.fixture
def partitioned(tmp_path: Path) -> tuple[Path, Path]:
    """A run table partitioned by dt (version 0: three days, version 1: an overwrite with two, the
    first day's folder still on disk) and judgments partitioned the same way."""
    run = tmp_path / "runs"
    days = ["2026-11-19", "2026-11-20", "2026-11-21"]
    _write(run, pl.concat([V0.with_columns(dt=pl.lit(day)) for day in days]), partition_by=["dt"])
    newer = pl.concat([V1.with_columns(dt=pl.lit(days[1])), V0.with_columns(dt=pl.lit(days[2]))])
    _write(run, newer, mode="overwrite", partition_by=["dt"])
    judgments = tmp_path / "qrels"
    _write(judgments, pl.concat([QRELS.with_columns(dt=pl.lit(day)) for day in days]), partition_by=["dt"])
    assert (run / f"dt={days[0]}").is_dir()
    return run, judgments


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_partition_columns_are_partitions(partitioned: tuple[Path, Path], engine: str, tmp_path: Path) -> None:
    run, judgments = partitioned
    out = tmp_path / "out"
    every = run_cli("evaluate", "--run", run, "--qrels", judgments, "--engine", engine, "--out", out)
    assert every.returncode == 0, every.stderr
    # the day the overwrite dropped is not a partition any more, though its folder is still there
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["dt=2026-11-20", "dt=2026-11-21"]
    day20 = pl.read_parquet(out / "dt=2026-11-20" / "per_query.parquet")
    assert day20.columns[0] == "dt" and day20["dt"].unique().to_list() == ["2026-11-20"]
    assert _ndcg(day20.drop("dt")) == pytest.approx(NDCG_V1)
    assert _ndcg(pl.read_parquet(out / "dt=2026-11-21" / "per_query.parquet").drop("dt")) == pytest.approx(NDCG_V0)
    one = run_cli("evaluate", "--run", run, "--qrels", judgments, "--partition", "dt=2026-11-21", "--json")
    assert one.returncode == 0, one.stderr
    assert [unit["partition"] for unit in json.loads(one.stdout)["units"]] == [{"dt": "2026-11-21"}]
    gone = run_cli("evaluate", "--run", run, "--qrels", judgments, "--partition", "dt=2026-11-19")
    assert gone.returncode == 4 and "dt=2026-11-19 does not exist" in gone.stderr
    folder = run_cli("evaluate", "--run", run / "dt=2026-11-20", "--qrels", judgments)
    assert folder.returncode == 3 and f"inside the Delta table {run}" in folder.stderr


def test_partition_selection_opens_no_file_of_another_partition(partitioned: tuple[Path, Path]) -> None:
    run, judgments = partitioned
    for uri in Source(str(run), "delta", partition=(("dt", "2026-11-20"),)).files():
        Path(uri.removeprefix("file://")).write_bytes(b"PAR1 corrupt PAR1")
    (unit,) = run_job(
        Job(run=str(run), qrels=str(judgments), evaluation=Evaluation(), partition_filters={"dt": {"2026-11-21"}})
    )
    assert _ndcg(unit.per_query.drop("dt")) == pytest.approx(NDCG_V0)


def test_python_api_reads_tables_and_versions(table: Path, qrels: Path) -> None:
    assert _ndcg(pipeline.evaluate(table, qrels).per_query) == pytest.approx(NDCG_V1)
    assert _ndcg(pipeline.evaluate(str(table), qrels, engine="duckdb").per_query) == pytest.approx(NDCG_V1)
    old = pipeline.evaluate(Source.of(table, version=0), qrels)
    assert _ndcg(old.per_query) == pytest.approx(NDCG_V0)
    with pytest.raises(InvalidInput, match="inside the Delta table"):
        pipeline.evaluate(f"{table}/*.parquet", qrels)


def test_a_table_in_a_bucket(table: Path, qrels: Path, s3_bucket: S3Bucket) -> None:
    s3_bucket.put_tree("tables/run", table)
    s3_bucket.put("qrels.parquet", qrels)
    (unit,) = run_job(
        Job(run=s3_bucket.url("tables/run"), qrels=s3_bucket.url("qrels.parquet"), evaluation=Evaluation())
    )
    assert _ndcg(unit.per_query) == pytest.approx(NDCG_V1)
    assert unit.manifest["inputs"]["run"]["identity"] == {
        "kind": "delta",
        "table": s3_bucket.url("tables/run"),
        "id": deltalake.DeltaTable(str(table)).metadata().id,  # the copy's log is the table's
        "version": 1,
    }
    old = run_cli(
        "evaluate",
        "--run",
        s3_bucket.url("tables/run"),
        "--qrels",
        s3_bucket.url("qrels.parquet"),
        "--run-version",
        "0",
        "--json",
    )
    assert old.returncode == 0, old.stderr
    assert json.loads(old.stdout)["summary"][0]["ndcg"] == pytest.approx(sum(NDCG_V0.values()) / 2)
    refused = run_cli(
        "evaluate", "--run", s3_bucket.url("tables/run/*.parquet"), "--qrels", s3_bucket.url("qrels.parquet")
    )
    assert refused.returncode == 3 and "inside the Delta table" in refused.stderr


def test_spark_engine_refuses_a_table_before_starting(table: Path, qrels: Path) -> None:
    from pipeline.engines import engine_named
    from pipeline.errors import UsageError

    with pytest.raises(UsageError, match="Delta tables are read by the polars and duckdb engines"):
        engine_named("spark").check_job(Job(run=str(table), qrels=str(qrels), evaluation=Evaluation(), engine="spark"))


def test_python_api_takes_versions_by_keyword(table: Path, qrels: Path) -> None:
    assert _ndcg(pipeline.evaluate(table, qrels, run_version=0).per_query) == pytest.approx(NDCG_V0)
    assert _ndcg(pipeline.per_query(table, qrels, run_version="1").collect()) == pytest.approx(NDCG_V1)
    assert pipeline.check(table, qrels, run_version=0) is not None
    from pipeline.errors import UsageError

    with pytest.raises(UsageError, match="not a Delta table"):
        pipeline.evaluate(qrels, qrels, run_version=0)


def test_a_table_partitioned_by_a_column_we_need_is_refused(tmp_path: Path, qrels: Path) -> None:
    path = tmp_path / "by_query"
    _write(path, V1, partition_by=["query_id"])
    result = run_cli("evaluate", "--run", path, "--qrels", qrels)
    assert result.returncode == 3, result.stderr
    assert "partitioned by 'query_id', a column name of the inputs or outputs" in result.stderr


def test_format_delta_names_a_table(table: Path, qrels: Path) -> None:
    named = run_cli("evaluate", "--run", table, "--run-format", "delta", "--qrels", qrels, "--json")
    assert named.returncode == 0, named.stderr
    assert json.loads(named.stdout)["summary"][0]["ndcg"] == pytest.approx(1.0)
    wrong = run_cli("evaluate", "--run", qrels, "--run-format", "delta", "--qrels", qrels)
    assert wrong.returncode == 3 and "is not a Delta table" in wrong.stderr
