from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest

from pipeline import Evaluation, per_query
from pipeline.engines import duckdb as duckdb_engine
from pipeline.engines import polars as polars_engine

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spark's cases of the `engine` fixture leave the tests marked `local_engines`."""
    kept, deselected = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        on_spark = params is not None and params.params.get("engine") == "spark"
        (deselected if on_spark and item.get_closest_marker("local_engines") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def local_spark() -> Iterator[SparkSession]:
    """One small local SparkSession for the whole test session (1 core, no UI), stopped at its
    end: starting the JVM costs seconds, so every module that needs Spark shares it."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("ndcg-peer-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        # Planning, not data, is what a test's tiny inputs cost: adaptive re-planning at every
        # stage and compiling whole-stage Java code took 15% of the Spark tests' time (200 s
        # against 171 s for tests/test_measures.py and tests/test_seeds.py). Neither changes a
        # result; the engine's own session keeps both on, and the tests that start it (the CLI
        # in a subprocess, --spark-master, the standalone cluster) run it as users do.
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.codegen.wholeStage", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def spark_cli(
    local_spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The command line run in this process on the session's Spark, with its exit code and
    output as :func:`run_cli` gives them: a subprocess would start a JVM of its own (20-60 s)."""
    from pipeline.cli import main

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        argv = [str(arg) for arg in args]
        code = main(argv)
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, captured.out, captured.err)

    return run


class S3Bucket:
    """A bucket of the tests' S3 server, with the environment set to reach it (credentials and
    endpoint through AWS_* variables, as a user sets them; no flags)."""

    def __init__(self, client: object, name: str) -> None:
        self.client = client
        self.name = name

    def url(self, key: str = "") -> str:
        return f"s3://{self.name}/{key}" if key else f"s3://{self.name}"

    def put(self, key: str, source: Path | bytes) -> None:
        body = source if isinstance(source, bytes) else Path(source).read_bytes()
        self.client.put_object(Bucket=self.name, Key=key, Body=body)  # type: ignore[attr-defined]

    def put_tree(self, prefix: str, folder: Path) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                self.put(f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}", path)

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)  # type: ignore[attr-defined]
        # without the empty folder markers (``prefix/``) pyarrow leaves, as S3 consoles and Hadoop do
        return sorted(
            item["Key"] for page in pages for item in page.get("Contents", []) if not item["Key"].endswith("/")
        )

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real S3-compatible HTTP server on 127.0.0.1 (moto's server, a dev dependency), started once
    per test session, with authentication on: an IAM user and its access key are made in the first
    requests (INITIAL_NO_AUTH_ACTION_COUNT), and every later request must be signed with that key,
    so wrong credentials are refused as on a real store. Skipped, with why, when it cannot start."""
    import json
    import os
    import socket
    import time

    try:
        import boto3
        import moto.server  # noqa: F401
    except ImportError as error:
        pytest.skip(f"the tests' S3 server needs moto[server] and boto3 (make dev installs them): {error}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("s3-server") / "server.log"
    environment = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.skip(f"the tests' S3 server did not start: {log.read_text(errors='replace')[-500:]}")
                time.sleep(0.1)
        anonymous = {"endpoint_url": endpoint, "region_name": "us-east-1"}
        iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **anonymous)
        iam.create_user(UserName="ndcg")
        allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="ndcg", PolicyName="all", PolicyDocument=json.dumps(allow_all))
        key = iam.create_access_key(UserName="ndcg")["AccessKey"]
        yield {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
            "AWS_REGION": "us-east-1",
        }
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture
def s3_bucket(s3_server: dict[str, str], monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> S3Bucket:
    """A new, empty bucket of the S3 server, the environment (inherited by the CLI's subprocesses)
    set to reach it, and the user's own AWS configuration files out of the way."""
    import re
    import uuid

    import boto3

    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/ndcg-tests-aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/ndcg-tests-aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in s3_server.items():
        monkeypatch.setenv(name, value)
    client = boto3.client(
        "s3",
        endpoint_url=s3_server["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=s3_server["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=s3_server["AWS_SECRET_ACCESS_KEY"],
    )
    stem = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"{stem}-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=name)
    return S3Bucket(client, name)
