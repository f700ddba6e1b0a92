"""The tests' shared SparkSession: one JVM per pytest process while it is healthy, thrown away
and started again for the next test after any test that used it failed.

Why a failure must not outlive its test: pytest-timeout (the signal method) interrupts a py4j
call in the middle of a command. The JVM still answers that command, on the same connection, so
the next call of the process reads the answer meant for the interrupted one (py4j's
``KeyError: 'm'`` or ``'c'``, or ``SparkSession does not exist in the JVM``), and so does every
later Spark test of that pytest worker: two slow tests once became 129 red lines. A failed
test may also leave a half-finished job, a cached frame or a stopped context behind. So after
any failure of a test that used the session, the next test gets a new JVM.

The old one is not asked to stop: a call over a connection that reads other calls' answers may
hang or misread, and a JVM stuck in the timed-out job may never answer. It is killed, and
pyspark's class-level references to it are cleared from the Python side only.

The fixtures and hooks here are used through tests/conftest.py, which imports them (and by the
inner pytest sessions of tests/test_harness.py, which test this module).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest

from pipeline.engines.spark import SPARK_DRIVER_MEMORY, WITHOUT_CALL_SITES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipeline.registry import Evaluation

# A small local session (1 core, no UI). Planning, not data, is what a test's tiny inputs
# cost: adaptive re-planning at every stage and compiling whole-stage Java code took 15% of
# the Spark tests' time (200 s against 171 s for tests/test_companion_measures.py and tests/test_seeds.py).
# Nor is Java code generated per expression (Spark's interpreted evaluation, which its own
# tests hold to the generated code's results): every new plan's code is compiled anew, and the
# Spark tests took 361 s with it, 277 s without (`pytest -m spark`, one process). None of the
# three changes a result; the engine's own session keeps all on. The proofs that Spark's
# numbers, and its verdicts on bad input, are Polars' run with generated code as users do
# (:func:`compiled_spark`), and so do the tests that start the engine's session (the CLI in a
# subprocess, --spark-master, the standalone cluster).
CODEGEN_MODE = "spark.sql.codegen.factoryMode"
SESSION_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    CODEGEN_MODE: "NO_CODEGEN",
    # as the engine's own local session: the per-query statement's plan outgrew the default 1 GB
    "spark.driver.memory": SPARK_DRIVER_MEMORY,
    # and, as there, no Python call site recorded per DataFrame-API call
    WITHOUT_CALL_SITES[0]: WITHOUT_CALL_SITES[1],
}


# For a JVM a test starts in a subprocess, to run a few tiny queries: the first-tier compiler
# alone and a serial collector, where the optimising compiler's and the parallel collector's
# threads on the other core cost more than they save (tests/test_harness.py's inner session:
# 131 s, then 65 s with them, on a busy machine). They change how fast the JVM runs, not what
# it does. Not for the shared session, which runs for minutes (slower there when tried).
QUICK_JVM = "'-XX:TieredStopAtLevel=1 -XX:+UseSerialGC'"


def quick_jvm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JVM pyspark starts in this test's subprocesses starts with :data:`QUICK_JVM`."""
    submit = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--driver-java-options {QUICK_JVM} {submit}")


def build_session() -> SparkSession:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("ndcg-peer-tests")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def discard_spark() -> None:
    """Kill the JVM pyspark started in this process and forget it, without one call into it.

    pyspark 4 keeps the gateway (with the ``Popen`` of the JVM as ``proc``) and the JVM view on
    ``SparkContext`` and the sessions on ``SparkSession`` and ``SQLContext``, all as class
    attributes; with them cleared, the next builder starts a new JVM. The JVM's own default
    session dies with the JVM."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    gateway = SparkContext._gateway
    context = SparkContext._active_spark_context
    process = getattr(gateway, "proc", None)
    if process is not None and process.poll() is None:
        process.kill()
        # if it outlives the wait, the operating system reaps it; nothing here talks to it any more
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
    accumulators = getattr(context, "_accumulatorServer", None)
    if accumulators is not None:
        accumulators.shutdown()  # a Python socket server of this process, not the JVM
    if gateway is not None:
        # sockets of this process only (the JVM end is gone; closing them may fail, and nothing
        # depends on it), then the thread that sends the JVM the ids of garbage-collected objects
        with contextlib.suppress(Exception):
            gateway.close()
        finalizers = getattr(gateway._gateway_client, "finalizer_deque", None)
        if finalizers is not None:
            from py4j.clientserver import SHUTDOWN_FINALIZER_WORKER

            finalizers.appendleft(SHUTDOWN_FINALIZER_WORKER)
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SQLContext._instantiatedContext = None


class SharedSpark:
    """The process's one SparkSession: built on first use, handed out again while it is
    healthy, replaced after :meth:`poison` or when its JVM has gone."""

    def __init__(self, build: Callable[[], SparkSession] = build_session) -> None:
        self._build = build
        self._session: SparkSession | None = None
        self.poisoned = False
        self.starts = 0  # how many JVMs this process has started (the harness test reads it)

    def get(self) -> SparkSession:
        if self.poisoned or (self._session is not None and not self.alive()):
            self.discard()
        if self._session is None:
            self.poisoned = False
            self._session = self._build()
            self.starts += 1
        return self._session

    def poison(self) -> None:
        """A test that used the session failed (or timed out while starting it): the next
        :meth:`get` starts a new JVM."""
        self.poisoned = True

    def alive(self) -> bool:
        """The JVM process runs and answers one cheap call, and the session is pyspark's
        current one (a test may have stopped it)."""
        from pyspark import SparkContext

        session = self._session
        if session is None or SparkContext._active_spark_context is not session.sparkContext:
            return False
        process = getattr(SparkContext._gateway, "proc", None)
        if process is not None and process.poll() is not None:
            return False
        try:
            return not session.sparkContext._jsc.sc().isStopped()
        except Exception:  # any failure to answer means the JVM is not usable
            return False

    def discard(self) -> None:
        self._session = None
        self.poisoned = False
        discard_spark()

    def close(self) -> None:
        """At the end of the test session: stopped politely when healthy, killed otherwise."""
        if self._session is None and not self.poisoned:
            return
        if self._session is not None and not self.poisoned and self.alive():
            self._session.stop()
            self._session = None
        else:
            self.discard()


SHARED_SPARK = SharedSpark()
USED_SPARK = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def shared_spark() -> Iterator[SharedSpark]:
    """The process's :class:`SharedSpark`, closed at the end of the test session."""
    yield SHARED_SPARK
    SHARED_SPARK.close()


@pytest.fixture
def local_spark(shared_spark: SharedSpark, request: pytest.FixtureRequest) -> SparkSession:
    """The process's one small local SparkSession (1 core, no UI): starting a JVM costs
    seconds, so every test that needs Spark shares it, until a test that used it fails."""
    from pyspark.sql import SparkSession

    request.node.stash[USED_SPARK] = True
    spark = shared_spark.get()
    # the active session is the one whose settings Spark reads as it runs (SQLConf.get): a test's own
    # session (newSession(), a notebook's temp views) became it and stayed, and the next test ran under its
    # settings (the harness's generated code switched on in the shared one went unread)
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)  # type: ignore[attr-defined]
    SparkSession._activeSession = spark
    return spark


@contextlib.contextmanager
def generated_code(spark: SparkSession, shared: SharedSpark) -> Iterator[SparkSession]:
    """The session generating Java code for expressions, as the engine's own session does
    (Spark's default, with its interpreted evaluation as the fallback); put back to interpreted
    afterwards, unless a test that used it failed (its session is thrown away then)."""
    spark.conf.set(CODEGEN_MODE, "FALLBACK")
    yield spark
    if not shared.poisoned:
        try:
            spark.conf.set(CODEGEN_MODE, SESSION_CONFIG[CODEGEN_MODE])
        except Exception:  # a session that cannot take the setting is not handed out again
            shared.poison()


@pytest.fixture
def compiled_spark(shared_spark: SharedSpark, local_spark: SparkSession) -> Iterator[SparkSession]:
    """The shared session under :func:`generated_code`: for the tests that prove Spark's
    numbers, and its verdicts on bad input, equal the other engines'."""
    with generated_code(local_spark, shared_spark) as spark:
        yield spark


@pytest.fixture
def spark_cli(local_spark: SparkSession) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The command line run in this process on the shared Spark (``run_cli`` in the current
    directory, the shared session the active one): a subprocess would start a JVM of its own
    (20-60 s)."""
    from tests.helpers import run_cli

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return run_cli(*map(str, args), cwd=Path.cwd())

    return run


def _went_through_spark(item: pytest.Item, call: pytest.CallInfo[None]) -> bool:
    """The test asked for the session, is marked ``spark``, or failed inside py4j or pyspark
    (a doctest or helper that found the active session by itself)."""
    if item.stash.get(USED_SPARK, False) or item.get_closest_marker("spark") is not None:
        return True
    if call.excinfo is None:
        return False
    return any({"py4j", "pyspark"} & set(Path(str(entry.path)).parts) for entry in call.excinfo.traceback)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    if report.failed and _went_through_spark(item, call):
        SHARED_SPARK.poison()
    return report


def per_query_on_spark(spark: SparkSession, run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> tuple:
    """The Spark engine's per-query table of Polars inputs: the Spark DataFrame, checkpointed as
    the engine's ``evaluate`` does (so that a summary is planned over its rows, not over the
    per-query statement again), and the same table as a Polars frame."""
    from pipeline.engines import spark as spark_engine

    table = spark_engine.per_query(
        spark.createDataFrame(run.collect().to_arrow()),
        spark.createDataFrame(qrels.collect().to_arrow()),
        evaluation,
    ).localCheckpoint()
    by_spark = pl.from_arrow(table.toArrow())
    assert isinstance(by_spark, pl.DataFrame)
    return table, by_spark
