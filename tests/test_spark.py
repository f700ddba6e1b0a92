"""The spark engine: the SQL of sql/ transpiled to Spark gives Polars' numbers (1e-9) on the
edge-case matrix and on seeded random data, in one local SparkSession for the whole module.

Expected values come from the Polars engine, which tests/test_engines_agree.py holds to the
independent reference in tests/helpers/reference.py."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pyspark.sql as pyspark_sql
import pytest
from polars.testing import assert_frame_equal

from pipeline import Discount, Evaluation, Gain
from pipeline.cli import main
from pipeline.engines import spark as spark_engine
from pipeline.errors import UsageError
from tests.helpers import TOLERANCE, as_table, assert_tables_close, compute, frames, run_cli_process
from tests.helpers.batch import Batch, Case
from tests.helpers.cases import CASES
from tests.helpers.spark import quick_jvm
from tests.helpers.spark_frames import QRELS, RUN, to_polars, to_spark

pytestmark = pytest.mark.spark


@pytest.fixture
def spark(local_spark: pyspark_sql.SparkSession) -> pyspark_sql.SparkSession:
    """The process's shared local session (see tests/helpers/spark.py)."""
    return local_spark


def by_spark(spark: pyspark_sql.SparkSession, run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> dict:
    return as_table(to_polars(spark_engine.per_query(to_spark(spark, run), to_spark(spark, qrels), evaluation)))


# --- parity with the Polars engine -------------------------------------------------------------


def edge_case(name: str) -> Case:
    run_rows, qrels_rows, options, id_type = CASES[name]
    return Case(*frames(run_rows, qrels_rows, id_type), Evaluation(**options))


@cache
def edge_cases_on_spark(spark: pyspark_sql.SparkSession) -> Batch:
    """Every edge case, scored by the engine in one Spark job per convention (see
    tests/helpers/batch.py); again if the shared session was replaced."""

    def score(run: pl.LazyFrame, qrels: pl.LazyFrame | None, evaluation: Evaluation) -> pl.DataFrame:
        assert qrels is not None
        return to_polars(spark_engine.per_query(to_spark(spark, run), to_spark(spark, qrels), evaluation))

    return Batch({name: edge_case(name) for name in CASES}, score)


@pytest.mark.parametrize("case", list(CASES))
def test_edge_case_matrix(compiled_spark: pyspark_sql.SparkSession, case: str) -> None:
    alone = edge_case(case)
    expected = as_table(compute("polars", alone.run, alone.qrels, alone.evaluation))
    assert_tables_close(as_table(edge_cases_on_spark(compiled_spark)[case]), expected)


def large_random_case(seed: int, queries: int) -> tuple[list[tuple], list[tuple], Evaluation]:
    """Hundreds of queries with many tied scores, graded, negative and unjudged labels, and
    judged documents the run never retrieved."""
    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    for q in range(queries):
        docs = [f"d{d}" for d in range(rng.randint(1, 30))]
        for doc in rng.sample(docs, rng.randint(1, len(docs))):
            run_rows.append((f"q{q}", doc, float(rng.randint(0, 6))))
        for doc in docs:
            if rng.random() < 0.6:
                qrels_rows.append((f"q{q}", doc, rng.choice([-1, 0, 0, 1, 2, 3, 4])))
        if rng.random() < 0.05:  # a query only in the qrels
            qrels_rows.append((f"only-qrels-{q}", "x", rng.randint(1, 3)))
    evaluation = Evaluation(
        cutoffs=tuple(sorted(rng.sample([1, 3, 5, 10, 20], 3))),
        gain=rng.choice([Gain(), Gain("exponential"), Gain.parse("0=0.5,1=3,2=9,4=4.5")]),
        discount=rng.choice([Discount(), Discount("jk", 2.5)]),
        all_queries=rng.random() < 0.5,
        max_results=rng.choice([None, 7]),
    )
    return run_rows, qrels_rows, evaluation


@pytest.mark.parametrize("seed", range(2))
def test_random_data(compiled_spark: pyspark_sql.SparkSession, seed: int) -> None:
    run_rows, qrels_rows, evaluation = large_random_case(seed, queries=300)
    run, qrels = frames(run_rows, qrels_rows)
    expected = as_table(compute("polars", run, qrels, evaluation))
    assert len({query for query, _ in expected}) >= 250
    assert_tables_close(by_spark(compiled_spark, run, qrels, evaluation), expected)


def test_summary_is_the_mean_of_the_per_query_rows(spark: pyspark_sql.SparkSession) -> None:
    run_rows, qrels_rows, evaluation = large_random_case(7, queries=40)
    run, qrels = frames(run_rows, qrels_rows)
    # checkpointed as evaluate does: the summary is planned over the rows, not the statement again
    table = spark_engine.per_query(to_spark(spark, run), to_spark(spark, qrels), evaluation).localCheckpoint()
    summary = to_polars(spark_engine.summarize(table)).sort("k", nulls_last=False)
    rows = to_polars(table)
    means = rows.group_by("k").agg(pl.len().alias("queries"), pl.col("ndcg").mean()).sort("k", nulls_last=False)
    assert summary["queries"].to_list() == means["queries"].to_list()
    assert (summary["ndcg"] - means["ndcg"]).abs().max() < 1e-12


# --- the library and the command line ------------------------------------------------------------


def test_user_views_are_left_alone(spark: pyspark_sql.SparkSession) -> None:
    spark.sql("create or replace temp view run as select 'mine' as what")
    spark.sql("create or replace temp view per_query as select 'mine too' as what")
    # a step's name: the statement reads its own step of that name, and the view stays the user's
    spark.sql("create or replace temp view ranked as select 'a step of mine' as what")
    run, qrels = pl.scan_parquet(RUN), pl.scan_parquet(QRELS)
    result = spark_engine.evaluate(to_spark(spark, run), to_spark(spark, qrels), evaluation=Evaluation(cutoffs=(5,)))
    assert to_polars(result.summary).height == 2
    assert spark.table("run").collect()[0]["what"] == "mine"
    assert spark.table("per_query").collect()[0]["what"] == "mine too"
    assert spark.table("ranked").collect()[0]["what"] == "a step of mine"
    # (SHOW VIEWS, not catalog.listTables(), which fails where Spark interprets its expressions)
    assert not [row for row in spark.sql("show views").collect() if row["viewName"].startswith("ndcg_")]
    spark.catalog.dropTempView("run")
    spark.catalog.dropTempView("per_query")
    spark.catalog.dropTempView("ranked")


def test_cli_writes_as_the_job_does_and_prints_polars_trec_lines(
    spark: pyspark_sql.SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One evaluation of the sample through the CLI on Spark: the files it writes are the job's,
    and the trec_eval lines it prints are Polars's, character for character."""
    out = tmp_path / "out"
    printing = ["--run", str(RUN), "--qrels", str(QRELS), "--k", "5,10", "--output-format", "trec", "--per-query"]
    code = main(["evaluate", "--engine", "spark", *printing, "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    by_spark = capsys.readouterr().out
    assert main(["evaluate", "--engine", "polars", *printing]) == 0
    assert by_spark == capsys.readouterr().out and "ndcg_cut_10" in by_spark
    written = pl.read_parquet(out / "per_query.parquet")  # one file: the job's writer
    expected = compute("polars", pl.scan_parquet(RUN), pl.scan_parquet(QRELS), Evaluation(cutoffs=(5, 10)))
    assert written.schema == expected.schema
    assert_tables_close(as_table(written), as_table(expected))
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.columns == ["k", "queries", "cg", "dcg", "idcg", "ndcg"]
    # the other engines' layout, nothing staged left
    assert sorted(path.name for path in out.iterdir()) == [*UNIT_FILES]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"] == "spark" and manifest["queries"]["evaluated"] == written["query_id"].n_unique()


# --- hive partitions ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``runs/dt=a`` (the sample run), ``runs/dt=b`` (the same query ids ranked the other way
    round) and ``runs/dt=c`` (one corrupt file); ``qrels/dt=a`` and ``qrels/dt=b`` judge the
    same query ids differently, so a partition scored with the wrong judgments shows."""
    root = tmp_path_factory.mktemp("hive")
    run, qrels = pl.read_parquet(RUN), pl.read_parquet(QRELS)
    for folder, frame in (
        ("runs/dt=a", run),
        ("runs/dt=b", run.with_columns(-pl.col("score"))),
        ("qrels/dt=a", qrels),
        ("qrels/dt=b", qrels.with_columns(pl.col("relevance").max() - pl.col("relevance"))),
    ):
        (root / folder).mkdir(parents=True)
        frame.write_parquet(root / folder / "part-0.parquet")
    (root / "runs/dt=c").mkdir()
    (root / "runs/dt=c/part-0.parquet").write_bytes(b"PAR1 this is not a parquet file")
    return root


UNIT_FILES = ("_SUCCESS", "manifest.json", "per_query.parquet", "summary.parquet")


def read_unit(out: Path, partition: str, table: str) -> pl.DataFrame:
    """One table of one unit, as either engine wrote it (a file, or Spark's folder of parts)."""
    path = out / partition / f"{table}.parquet"
    return pl.read_parquet(path / "*.parquet" if path.is_dir() else path)


def test_partitions_are_scored_each_with_its_own_judgments_as_on_polars(
    spark: pyspark_sql.SparkSession, hive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only dt=a and dt=b are read (dt=c is corrupt); each is its own unit, scored with the
    judgments of its own partition, and laid out and scored as the polars engine does it,
    the partition column kept. Then a rerun of one partition replaces only that one."""
    flags = ["--run", str(hive / "runs"), "--qrels", str(hive / "qrels"), "--partition", "dt=a", "--partition", "dt=b"]
    for engine in ("spark", "polars"):
        code = main(["evaluate", "--engine", engine, *flags, "--k", "3,10", "--out", str(tmp_path / engine)])
        assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert printed.count("# partition dt=a") == 2 and printed.count("# partition dt=b") == 2
    for partition in ("dt=a", "dt=b"):
        by_spark, by_polars = (read_unit(tmp_path / engine, partition, "per_query") for engine in ("spark", "polars"))
        assert by_spark.schema == by_polars.schema and by_spark.columns[0] == "dt"
        assert by_spark["dt"].unique().to_list() == [partition.removeprefix("dt=")]
        assert_tables_close(as_table(by_spark), as_table(by_polars))
        summaries = [read_unit(tmp_path / engine, partition, "summary") for engine in ("spark", "polars")]
        assert summaries[0].columns == summaries[1].columns == ["dt", "k", "queries", "cg", "dcg", "idcg", "ndcg"]
        assert summaries[0]["queries"].to_list() == summaries[1]["queries"].to_list()
    # an anchor outside the job code: dt=a holds the sample itself, scored whole
    sample = compute("polars", pl.scan_parquet(RUN), pl.scan_parquet(QRELS), Evaluation(cutoffs=(3, 10)))
    assert_tables_close(as_table(read_unit(tmp_path / "spark", "dt=a", "per_query")), as_table(sample))
    # dt=b, ranked and judged otherwise, scores otherwise: its own judgments were used
    assert as_table(read_unit(tmp_path / "spark", "dt=b", "per_query")) != as_table(sample)

    # A rerun of dt=b alone, with unpartitioned judgments (which then serve every partition),
    # replaces dt=b's outputs whole and leaves dt=a's as they were: the staging and the
    # earlier folders are gone.
    out = tmp_path / "spark"
    reversed_run = pl.scan_parquet(RUN).with_columns(-pl.col("score"))
    rerun = ["--run", str(hive / "runs"), "--qrels", str(QRELS), "--partition", "dt=b", "--k", "2", "--out", str(out)]
    assert main(["evaluate", "--engine", "spark", *rerun]) == 0, capsys.readouterr().err
    expected_b = compute("polars", reversed_run, pl.scan_parquet(QRELS), Evaluation(cutoffs=(2,)))
    assert_tables_close(as_table(read_unit(out, "dt=b", "per_query")), as_table(expected_b))
    assert_tables_close(as_table(read_unit(out, "dt=a", "per_query")), as_table(sample))
    assert sorted(path.name for path in out.iterdir()) == ["dt=a", "dt=b"]
    assert sorted(path.name for path in (out / "dt=b").iterdir()) == [*UNIT_FILES]


@pytest.fixture(scope="module")
def hive_of_two_shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dt=1`` and ``dt=2``: the sample with integer query ids (dt=2 ranked the other way round
    and judged otherwise); ``dt=3``: the sample as it is, with text ids. Runs and judgments
    partitioned alike."""
    root = tmp_path_factory.mktemp("shapes")
    run, qrels = pl.read_parquet(RUN), pl.read_parquet(QRELS)
    as_integers = pl.col("query_id").str.strip_prefix("q").cast(pl.Int64)
    reversed_labels = pl.col("relevance").max() - pl.col("relevance")
    for folder, frame in (
        ("runs/dt=1", run.with_columns(as_integers)),
        ("runs/dt=2", run.with_columns(as_integers, -pl.col("score"))),
        ("runs/dt=3", run),
        ("qrels/dt=1", qrels.with_columns(as_integers)),
        ("qrels/dt=2", qrels.with_columns(as_integers, reversed_labels)),
        ("qrels/dt=3", qrels),
    ):
        (root / folder).mkdir(parents=True)
        frame.write_parquet(root / folder / "part-0.parquet")
    return root


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL files of the statements Spark is given to plan, in order, while a test runs."""
    given: list[str] = []
    run_query = spark_engine._run_query

    def counted(*args: Any, **kwargs: Any) -> Any:
        given.append(args[1])
        return run_query(*args, **kwargs)

    monkeypatch.setattr(spark_engine, "_run_query", counted)
    return given


def test_a_job_s_partitions_of_one_shape_are_planned_in_one_statement(
    spark: pyspark_sql.SparkSession,
    hive_of_two_shapes: Path,
    tmp_path: Path,
    statements: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spark plans the per-query statement once for the partitions whose inputs have one shape
    (dt=1 and dt=2: integer ids), each one's query ids keyed by its partition inside it, and
    once more for dt=3 (text ids). Every partition's every measure is what Polars gives it."""
    root = hive_of_two_shapes
    flags = ["--run", root / "runs", "--qrels", root / "qrels", "--measures", "all_trec,err,rbp,BPM"]
    for engine in ("spark", "polars"):
        code = main(["evaluate", "--engine", engine, *map(str, flags), "--out", str(tmp_path / engine)])
        assert code == 0, capsys.readouterr().err
    assert statements == ["measures/per_query.sql"] * 2
    for partition in ("dt=1", "dt=2", "dt=3"):
        for table in ("per_query", "summary"):
            by_spark, by_polars = (read_unit(tmp_path / engine, partition, table) for engine in ("spark", "polars"))
            assert by_spark.schema == by_polars.schema
            assert_frame_equal(by_spark, by_polars, rel_tol=0, abs_tol=TOLERANCE)
    # the partitions are scored apart: the same queries, ranked and judged otherwise in dt=2
    ndcg = {p: read_unit(tmp_path / "spark", p, "per_query")["ndcg"] for p in ("dt=1", "dt=2", "dt=3")}
    assert ndcg["dt=1"].to_list() == pytest.approx(ndcg["dt=3"].to_list(), abs=TOLERANCE)
    assert ndcg["dt=1"].to_list() != pytest.approx(ndcg["dt=2"].to_list(), abs=TOLERANCE)


def test_units_of_one_shape_beyond_a_statement_s_share_take_more_statements(
    spark: pyspark_sql.SparkSession,
    hive_of_two_shapes: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    statements: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """dt=1 and dt=2 have one shape; with one unit a statement (UNITS_PER_STATEMENT), each is
    planned alone, and each scores what Polars gives it."""
    monkeypatch.setattr(spark_engine, "UNITS_PER_STATEMENT", 1)
    root = hive_of_two_shapes
    flags = ["--run", root / "runs", "--qrels", root / "qrels", "--partition", "dt=1", "--partition", "dt=2"]
    for engine in ("spark", "polars"):
        code = main(["evaluate", "--engine", engine, *map(str, flags), "--k", "3", "--out", str(tmp_path / engine)])
        assert code == 0, capsys.readouterr().err
    assert statements == ["measures/per_query.sql"] * 2
    for partition in ("dt=1", "dt=2"):
        by_spark, by_polars = (read_unit(tmp_path / engine, partition, "per_query") for engine in ("spark", "polars"))
        assert_frame_equal(by_spark, by_polars, rel_tol=0, abs_tol=TOLERANCE)


def test_compare_plans_one_statement_for_the_runs_of_one_shape(
    spark: pyspark_sql.SparkSession,
    hive_of_two_shapes: Path,
    tmp_path: Path,
    statements: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``ndcg compare --run`` scores its runs through one job each, their units evaluated
    together: two flat runs are one statement, and so are two partitioned runs' paired
    partitions (dt=1 and dt=2; dt=3, in one run only, is left out). The means, wins and
    losses are Polars'."""
    root = hive_of_two_shapes
    other = tmp_path / "other"
    for partition, scores in (("dt=1", pl.col("score").rank("ordinal")), ("dt=2", -pl.col("score"))):
        (other / partition).mkdir(parents=True)
        frame = pl.read_parquet(root / "runs" / partition / "part-0.parquet").with_columns(scores.cast(pl.Float64))
        frame.write_parquet(other / partition / "part-0.parquet")
    flat = ["--run", root / "runs/dt=1", "--run", other / "dt=1", "--qrels", root / "qrels/dt=1"]
    partitioned = ["--run", root / "runs", "--run", other, "--qrels", root / "qrels"]
    for flags in (flat, partitioned):
        payloads = {}
        for engine in ("spark", "polars"):
            given = ["compare", *map(str, flags), "--names", "a,b", "--k", "3,10", "--json", "--engine", engine]
            assert main(given) == 0, capsys.readouterr().err
            payloads[engine] = json.loads(capsys.readouterr().out)["comparison"]
        # k = 3, 10; partitioned, also for each paired partition (dt null: all of them)
        assert len(payloads["spark"]) == len(payloads["polars"]) == (2 if flags is flat else 6)
        for by_spark, by_polars in zip(payloads["spark"], payloads["polars"], strict=True):
            assert by_spark.get("dt") == by_polars.get("dt")
            numbers = ("k", "queries", "wins", "ties", "losses", "mean_baseline", "mean_candidate")
            assert {n: by_spark[n] for n in numbers} == pytest.approx({n: by_polars[n] for n in numbers}, abs=TOLERANCE)
        assert any(row["wins"] and row["losses"] for row in payloads["spark"])  # the runs differ
    assert statements == ["measures/per_query.sql"] * 2


def test_the_corrupt_partition_breaks_a_run_that_reads_it(
    spark: pyspark_sql.SparkSession, hive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every partition, dt=c included: the corrupt file is an input error naming it (exit 3),
    which shows that the runs above succeed because dt=c is never opened."""
    assert main(["evaluate", "--engine", "spark", "--run", str(hive / "runs"), "--qrels", str(QRELS)]) == 3
    error = capsys.readouterr().err
    assert "dt=c/part-0.parquet: cannot read as parquet" in error and "Traceback" not in error


@pytest.mark.parametrize(
    ("run", "partition", "message"),
    [
        ("runs", "dt=z", "partition dt=z does not exist; dt has 3 value(s)"),
        ("runs", "region=eu", "no partition key 'region'; keys found: dt"),
        ("sample", "dt=a", "not a hive-partitioned dataset"),
    ],
)
def test_a_missing_partition_exits_4(
    spark: pyspark_sql.SparkSession,
    hive: Path,
    capsys: pytest.CaptureFixture[str],
    run: str,
    partition: str,
    message: str,
) -> None:
    run_path = RUN if run == "sample" else hive / run
    code = main(
        ["evaluate", "--engine", "spark", "--run", str(run_path), "--qrels", str(QRELS), "--partition", partition]
    )
    error = capsys.readouterr().err
    assert code == 4 and message in error, error


def test_bad_input_exits_3_naming_the_problem(
    spark: pyspark_sql.SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line's path for a refused input on Spark: exit 3, the message, no traceback.
    Spark's validation of every other kind of bad input, message for message against Polars, is
    tests/test_validation_engines.py::test_spark_agrees_with_polars (a duplicate, NaN and text
    scores, ...); a missing column through the CLI is
    tests/test_inputs_errors.py::test_spark_names_missing_columns_as_the_other_engines."""
    rows = {"query_id": ["q", "q"], "doc_id": ["a", None], "score": [1.0, 2.0]}
    pl.DataFrame(rows).write_parquet(tmp_path / "run.parquet")
    code = main(["evaluate", "--engine", "spark", "--run", str(tmp_path / "run.parquet"), "--qrels", str(QRELS)])
    error = capsys.readouterr().err
    assert code == 3 and "column 'doc_id' has 1 null value(s)" in error and "Traceback" not in error, error


def test_cli_refuses_what_spark_does_not_read(
    spark: pyspark_sql.SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["evaluate", "--engine", "spark", "--run", str(tmp_path / "missing.parquet"), "--qrels", str(QRELS)]) == 3
    )
    assert "missing.parquet: no such file or directory" in capsys.readouterr().err
    (tmp_path / "run.txt").write_text("q Q0 a 1 1.0 tag\n")
    assert main(["evaluate", "--engine", "spark", "--run", str(tmp_path / "run.txt"), "--qrels", str(QRELS)]) == 2
    assert "reads Parquet only" in capsys.readouterr().err
    assert main(["evaluate", "--engine", "spark", "--run", str(RUN), "--threads", "2"]) == 2


def test_without_pyspark_the_error_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pyspark", None)  # `import pyspark` now fails
    assert main(["evaluate", "--engine", "spark", "--run", str(RUN), "--qrels", str(QRELS)]) == 2
    # the spark extra's packages: pyspark and sqlglot's compiled build
    error = capsys.readouterr().err
    assert "pip install 'pyspark>=4.0' 'sqlglot[c]" in error and "(from a checkout: pip install -e '.[spark]')" in error


def test_without_java_the_error_says_java_is_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not spark_engine.java_available({"PATH": str(tmp_path)})
    assert not spark_engine.java_available({"JAVA_HOME": str(tmp_path), "PATH": ""})
    monkeypatch.setattr(pyspark_sql.SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(spark_engine, "java_available", lambda environ=None: False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    with pytest.raises(UsageError, match=r"needs Java \(17 or newer\)"):
        spark_engine.session()


def test_a_session_the_engine_starts_records_no_python_call_sites_and_compiles_quickly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The options of the session ``ndcg`` starts, read off the builder (no JVM is started)."""
    options: dict[str, str] = {}

    def get_or_create(builder: pyspark_sql.SparkSession.Builder) -> object:
        options.update(builder._options)
        return SimpleNamespace(sparkContext=SimpleNamespace(setLogLevel=lambda level: None))

    monkeypatch.setattr(pyspark_sql.SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(spark_engine, "java_available", lambda environ=None: True)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(pyspark_sql.SparkSession.Builder, "getOrCreate", get_or_create)
    for master in (None, "local[1]"):
        options.clear()
        spark_engine.session(master)
        assert options["spark.python.sql.dataFrameDebugging.enabled"] == "false"
        # the first-tier compiler alone for the local JVM the engine starts; a master URL's
        # driver keeps the JVM options its cluster gives
        # (with room for the code it compiles: C1's own 48 MB filled in two evaluations)
        jvm_options = options.get("spark.driver.extraJavaOptions", "").split()
        assert ("-XX:TieredStopAtLevel=1" in jvm_options) == (master is None)
        assert ("-XX:ReservedCodeCacheSize=512m" in jvm_options) == (master is None)


def test_the_jvm_the_engine_starts_writes_its_stdout_to_our_stderr(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """HotSpot prints its warnings ("CodeCache is full. Compiler has been disabled.") on its
    stdout, which was ours: results printed there had the JVM's lines among them. A child
    process stands in for the JVM (it inherits the descriptors as spark-submit does)."""
    import subprocess
    import sys

    def get_or_create(builder: pyspark_sql.SparkSession.Builder) -> object:
        subprocess.run([sys.executable, "-c", "print('a line of the jvm')"], check=True)
        return SimpleNamespace(sparkContext=SimpleNamespace(setLogLevel=lambda level: None))

    monkeypatch.setattr(pyspark_sql.SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(spark_engine, "java_available", lambda environ=None: True)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(pyspark_sql.SparkSession.Builder, "getOrCreate", get_or_create)
    print("before")
    spark_engine.session()
    print("after")
    captured = capfd.readouterr()
    assert captured.out == "before\nafter\n"
    assert captured.err == "a line of the jvm\n"


def test_ndcg_sql_prints_both_dialects(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "--dialect", "spark", "--k", "5,10", "--gain", "1=3,2=9"]) == 0
    spark_text = capsys.readouterr().out
    assert "CREATE OR REPLACE TEMPORARY VIEW per_query" in spark_text and "EXPLODE" in spark_text
    assert "MAP_FROM_ARRAYS" in spark_text and "getvariable" not in spark_text.lower()
    assert main(["sql", "--dialect", "duckdb", "--k", "5"]) == 0
    assert "UNNEST" in capsys.readouterr().out


def test_library_evaluate_on_spark_returns_polars_frames(spark: pyspark_sql.SparkSession) -> None:
    from pipeline import evaluate

    by_spark = evaluate(str(RUN), str(QRELS), engine="spark", k=[3, 10], gain="exponential")
    by_polars = evaluate(str(RUN), str(QRELS), engine="polars", k=[3, 10], gain="exponential")
    assert by_spark.engine == "spark" and isinstance(by_spark.per_query, pl.DataFrame)
    assert_tables_close(as_table(by_spark.per_query), as_table(by_polars.per_query))
    assert by_spark.summary["queries"].to_list() == by_polars.summary["queries"].to_list()


def test_cli_with_a_master_url_prints_no_progress_bars_when_stderr_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scheduler's log is not a terminal: Spark's console progress bars stay off there, with
    --spark-master too (a new JVM in a subprocess, as a scheduler starts it). Three rows: a
    new JVM's first stages outlast the half second after which Spark draws a bar, on a terminal
    (`script`) even for these (29.7 s for the sample, 23.1 s for them, on a quiet machine)."""
    quick_jvm(monkeypatch)
    pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "score": [2.0, 1.0, 1.0]}).write_parquet(
        run := tmp_path / "run.parquet"
    )
    pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "a"], "relevance": [1, 2]}).write_parquet(
        qrels := tmp_path / "qrels.parquet"
    )
    done = run_cli_process(
        "evaluate", "--engine", "spark", "--spark-master", "local[1]", "--run", run, "--qrels", qrels, "--k", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "[Stage" not in done.stderr and "\r" not in done.stderr, done.stderr
    # at k = 1, q1's top document is unjudged (cg, dcg 0; idcg 1), q2's gains 2 (cg, dcg, idcg 2):
    # queries 2, cg (0 + 2) / 2, dcg (0 + 2) / 2, idcg (1 + 2) / 2, ndcg (0 + 1) / 2
    assert [line.split()[1:] for line in done.stdout.splitlines() if line.split()[:1] == ["1"]] == [
        ["2", "1.0000", "1.0000", "1.5000", "0.5000"]
    ]
