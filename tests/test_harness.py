"""The test harness itself: a failure stays in the test where it happened.

A Spark test that times out inside a py4j call leaves the JVM's answer to the interrupted
command on the connection; before tests/helpers/spark.py every later Spark test of the same
pytest worker read it (``KeyError: 'm'``) and failed too. Here an inner pytest session, in a
subprocess so that its JVMs are not this process's, runs that timeout and then Spark work and a
doctest on the active session, with the project's own fixtures and hook: one failure, the
rest pass. The S3 server fixture's process is replaced the same way when it dies.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers.s3 import S3Server
from tests.helpers.spark import CODEGEN_MODE, SHARED_SPARK, generated_code, quick_jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

INNER_CONFTEST = """
from tests.helpers.spark import SHARED_SPARK, local_spark, pytest_runtest_makereport, shared_spark
"""

INNER_TESTS = """
import pytest

from tests.helpers.spark import SHARED_SPARK


def test_0_starts_the_jvm(local_spark):
    assert local_spark.range(3).count() == 3
    assert SHARED_SPARK.starts == 1


@pytest.mark.timeout(2, func_only=True)
def test_1_times_out_inside_a_py4j_call(local_spark):
    # the JVM sleeps 6 s in the call; pytest-timeout's alarm goes off 2 s into the test's own
    # code (not the fixture's health check, slow on a busy machine), and Python acts on it when
    # the call returns (the alarm may reach a thread other than the one waiting)
    local_spark.sql("select reflect('java.lang.Thread', 'sleep', cast(6000 as bigint))").collect()


def test_2_spark_after_the_timeout(local_spark):
    assert SHARED_SPARK.starts == 2  # a new JVM, not the one whose connection is out of step
    rows = local_spark.sql("select id, id * 2 as twice from range(4)").collect()
    assert [(row["id"], row["twice"]) for row in rows] == [(0, 0), (1, 2), (2, 4), (3, 6)]


def test_3_more_spark(local_spark):
    assert local_spark.createDataFrame([("q", 1.5)], ["query_id", "score"]).first()["score"] == 1.5
    assert SHARED_SPARK.starts == 2
"""

# a doctest that merely shares the worker: it finds the session by itself, as the library's
# docstrings do, without asking for the fixture
INNER_DOCTEST = '''
def active_rows():
    """
    >>> from pyspark.sql import SparkSession
    >>> SparkSession.getActiveSession().range(5).count()
    5
    """
'''


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_py4j_timeout_fails_only_its_own_test(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner session imports tests.helpers
    quick_jvm(monkeypatch)  # the inner session's two JVMs each run a few tiny queries
    pytester.makeini(
        """
        [pytest]
        timeout = 900
        timeout_method = signal
        markers =
            spark: tests that start a local SparkSession
        """
    )
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS, doc_module=textwrap.dedent(INNER_DOCTEST))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--doctest-modules", "test_inner.py", "doc_module.py", "-v"
    )
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*test_1_times_out_inside_a_py4j_call FAILED*", "*Timeout*"])
    result.stdout.no_fnmatch_line("*KeyError*")
    result.stdout.no_fnmatch_line("*does not exist in the JVM*")


def test_a_dead_s3_server_is_started_again(tmp_path: Path) -> None:
    server = S3Server(tmp_path)
    try:
        first = server.environment()
        assert server.environment() == first and server.starts == 1  # alive: the same server
        crashed = server._process
        assert crashed is not None
        crashed.kill()
        crashed.wait()
        second = server.environment()
        assert server.starts == 2 and server._process is not crashed
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=second["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id=second["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=second["AWS_SECRET_ACCESS_KEY"],
        )
        client.create_bucket(Bucket="after-the-restart")
        assert [bucket["Name"] for bucket in client.list_buckets()["Buckets"]] == ["after-the-restart"]
    finally:
        server.stop()


GROUPED_TESTS = """
import pytest


@pytest.fixture
def local_spark():  # stands in for the shared SparkSession: no JVM here
    return None


@pytest.mark.parametrize("case", range(4))
def test_shares_the_session(local_spark, case):
    pass


@pytest.mark.parametrize("case", range(4))
def test_without_spark(case):
    pass
"""


def test_make_test_runs_the_tests_that_share_the_spark_session_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make test` (-n 2 --dist loadgroup): the tests that share the SparkSession all run on one
    worker, so one JVM starts, not one per worker; the other tests go to either."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner session imports tests.conftest
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    pytester.makepyfile(test_grouped=GROUPED_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v")
    result.assert_outcomes(passed=8)
    shared = [line for line in result.outlines if "PASSED" in line and "test_shares_the_session" in line]
    assert len(shared) == 4 and all("@shared-spark" in line for line in shared), result.outlines
    assert len({line.split()[0] for line in shared}) == 1, shared  # "[gw0] ...": one worker


@pytest.mark.spark
def test_the_parity_proofs_run_spark_s_generated_code_and_the_rest_interpreted(local_spark: SparkSession) -> None:
    """The tests' session interprets Spark's expressions (tests/helpers/spark.py); the proofs
    that Spark's numbers are Polars' ask for ``compiled_spark``, which runs generated code as the
    engine's own session does, and gives the session back interpreted. The catalog listing is
    the witness: Spark's interpreted evaluation cannot decode its rows."""
    from pyspark.errors import PySparkException

    local_spark.sql("create or replace temp view ndcg_harness_witness as select 1 as x")
    try:
        with generated_code(local_spark, SHARED_SPARK) as spark:
            assert "ndcg_harness_witness" in [table.name for table in spark.catalog.listTables()]
        assert local_spark.conf.get(CODEGEN_MODE) == "NO_CODEGEN"
        with pytest.raises(PySparkException, match="EXPRESSION_DECODING_FAILED"):
            local_spark.catalog.listTables()
    finally:
        local_spark.catalog.dropTempView("ndcg_harness_witness")
