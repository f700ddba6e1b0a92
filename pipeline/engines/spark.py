"""The Spark engine: the files of ``sql/`` transpiled from DuckDB to Spark SQL
(:mod:`pipeline.transpile`), run over the validated inputs as private temp views.

There is no second implementation here: the per-query table is ``sql/measures/per_query.sql`` (its steps
composed into one statement), the summary ``sql/summary.sql``, their variables bound as literals.
The input views get names private to one evaluation, so a user's own views are never touched.

pyspark is an optional extra (``pip install -e '.[spark]'`` from a checkout); it is imported only
when a Spark function runs. Spark needs Java, which is checked before the JVM is started.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlglot

from pipeline import rules
from pipeline.engines.spark_inputs import UNSIGNED, SparkChecked, SparkInput, quoted, validated
from pipeline.errors import UsageError, install_hint
from pipeline.expressions import DOC_WEIGHT, TIE_BOUNDS_PER_QUERY, TIE_BOUNDS_SUMMARY
from pipeline.io import hadoop
from pipeline.io.read import Columns, Source
from pipeline.registry import Evaluation, InputChecks, summary_variables
from pipeline.sql_files import (
    PER_QUERY_STEPS,
    evaluation_variables,
    per_query_columns,
    summary_columns,
)
from pipeline.transpile import check_supported, transpile

# pyspark warns on every Arrow hand-over that pandas 3 is newer than it tests with; our
# frames reach Spark through Arrow, not pandas, so the warning says nothing to the user.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import Column, DataFrame, SparkSession

    from pipeline.inputs import Inputs

# the local session's heap (a JVM starts with 1 GB): room to plan the per-query statement
SPARK_DRIVER_MEMORY = "3g"


# A session the engine starts on one machine lives for one evaluation, or a job's few: the JVM's
# first-tier compiler alone (C1) has Spark's planner compiled sooner than the full tiers, whose
# optimising compiler spends the cores on code that runs a few times. Only for a JVM it starts.
# C1 alone reserves 48 MB for compiled code, which two evaluations of every measure filled: the
# JVM then stopped compiling (interpreting all after it, an evaluation 1.5x slower) and said so
# on its standard output.
QUICK_COMPILER = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m"


# --- session --------------------------------------------------------------------------------


def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError(f"the spark engine needs pyspark, which is not installed: {install_hint('spark')}") from None


def java_available(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a ``java`` Spark can start: ``$JAVA_HOME/bin/java`` or ``java`` on the PATH."""
    environ = os.environ if environ is None else environ
    java_home = environ.get("JAVA_HOME")
    if java_home:
        return (Path(java_home) / "bin" / "java").is_file()
    return shutil.which("java", path=environ.get("PATH")) is not None


# pyspark records the Python call site of each DataFrame-API call for Spark's error context,
# five py4j round trips a call: validating two 3-row inputs took 2,585 round trips with it, 762
# without (0.8-1.3 s against 0.5-0.9 s). In a session the engine starts, every call site would
# name the engine's code, not the user's; a session the user gives is left as it is.
WITHOUT_CALL_SITES = ("spark.python.sql.dataFrameDebugging.enabled", "false")


def session(master: str | None = None) -> SparkSession:
    """The active SparkSession (as under spark-submit), or a new local one on all cores."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM for us
    if not submitted and not java_available():
        raise UsageError(
            "the spark engine needs Java (17 or newer), which was not found: install a JDK and put "
            "`java` on the PATH or set JAVA_HOME"
        )
    builder = SparkSession.builder.appName("ndcg")
    if not submitted:
        # Spark's progress bars only where a person watches stderr, as on every engine (a
        # scheduler's log would fill with them, on a cluster master too)
        builder = builder.config("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
        builder = builder.config(*WITHOUT_CALL_SITES)
    if master is not None:
        builder = builder.master(master)
    elif not submitted:
        # one machine's cores, not a cluster's 200 shuffle partitions (a task each, per shuffle)
        partitions = str(2 * (os.cpu_count() or 1))
        builder = builder.master("local[*]").config("spark.ui.enabled", "false")
        builder = builder.config("spark.sql.shuffle.partitions", partitions)
        # planning the per-query statement (every measure's steps, inlined where read) needs more
        # than the JVM's default heap of 1 GB: it ran out there while analysing the plan
        builder = builder.config("spark.driver.memory", SPARK_DRIVER_MEMORY)
        builder = builder.config("spark.driver.extraJavaOptions", QUICK_COMPILER)
    spark = builder.getOrCreate() if submitted else _started_with_stderr_as_its_stdout(builder)
    if not submitted:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _started_with_stderr_as_its_stdout(builder: SparkSession.Builder) -> SparkSession:
    """The session, a JVM it starts given this process's stderr as its stdout: the JVM writes its
    own warnings there ("CodeCache is full", ...), which must not mix into results printed on
    our stdout (``ndcg evaluate --output-format trec > results.txt``)."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        our_stdout = os.dup(1)
    except (OSError, ValueError):  # no stdout to keep apart
        return builder.getOrCreate()
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: the JVM keeps the stdout it would have had
        os.close(our_stdout)
        return builder.getOrCreate()
    try:
        return builder.getOrCreate()
    finally:
        os.dup2(our_stdout, 1)
        os.close(our_stdout)


@contextmanager
def _private_views(frames: Mapping[str, DataFrame]) -> Iterator[dict[str, str]]:
    """Register frames as temp views with names no user view has; drop them afterwards.

    A DataFrame made from a query over a temp view keeps its resolved plan, so the views can
    go as soon as the query is analysed."""
    token = uuid.uuid4().hex[:12]
    names = {name: f"ndcg_{name}_{token}" for name in frames}
    for name, frame in frames.items():
        frame.createOrReplaceTempView(names[name])
    try:
        yield names
    finally:
        catalog = next(iter(frames.values())).sparkSession.catalog
        for private in names.values():
            catalog.dropTempView(private)


def _run_query(
    spark: SparkSession,
    file_name: str,
    variables: Mapping[str, Any],
    tables: Mapping[str, str],
    *,
    keep: Sequence[str] | None = None,
) -> DataFrame:
    """The file's one statement as a DataFrame, of the columns ``keep`` (in that order; None: all).

    The other columns are left out of the SQL, with everything only they read (see
    :func:`pipeline.pruning.narrowed`), not by ``DataFrame.drop`` or ``select``: each DataFrame
    made over a plan has Spark check the whole plan again, and Spark plans every column it is
    given."""
    columns = {name: spark.table(private).columns for name, private in tables.items()}
    (statement,) = transpile(file_name, variables, tables=tables, columns=columns, keep=keep)
    try:
        query = statement.query_sql()
    except sqlglot.errors.UnsupportedError as error:
        raise UsageError(f"sql/{file_name} does not transpile to Spark: {error}") from None
    return spark.sql(query)


# --- the engine -----------------------------------------------------------------------------


def per_query(run: DataFrame, qrels: DataFrame, evaluation: Evaluation) -> DataFrame:
    """The per-query table ``query_id, k, cg, dcg, idcg, ndcg`` as a Spark DataFrame.

    ``run`` has ``query_id, doc_id, score``; ``qrels`` has ``query_id, doc_id, relevance``
    (validated already: see :func:`check_inputs`). Computed by ``sql/measures/per_query.sql``; the
    user's own temp views are never touched.
    """
    from pyspark.sql import functions

    spark = run.sparkSession
    inputs = {
        # Spark rows have no arrival order: the input-order options are refused (UNSUPPORTED),
        # so these columns only complete the shape sql/measures/per_query.sql reads.
        "run": run.select(
            "query_id",
            "doc_id",
            "score",
            functions.lit(None).cast("bigint").alias("arrival"),
            functions.lit(None).cast("double").alias("input_rank"),
            # the weights checked as read (spark_inputs._document_weights); 1 without --doc-weight-col
            functions.col(DOC_WEIGHT)
            if evaluation.doc_weight_col is not None
            else functions.lit(1.0).cast("double").alias(DOC_WEIGHT),
        ),
        "qrels": qrels.select(
            "query_id",
            "doc_id",
            "relevance",
            # null where the judgments are not per subtopic (sql/aligned_inputs.sql's column)
            functions.col("subtopic")
            if "subtopic" in qrels.columns
            else functions.lit(None).cast("string").alias("subtopic"),
        ),
    }
    with _private_views(inputs) as tables:
        variables = evaluation_variables(evaluation)
        # the measures asked, in the registry's order (the SQL gives them in its steps' order)
        return _run_query(spark, PER_QUERY_STEPS[-1], variables, tables, keep=per_query_columns(evaluation))


def summarize(per_query_table: DataFrame) -> DataFrame:
    """The summary ``k, queries, cg, dcg, idcg, ndcg`` computed by ``sql/summary.sql``."""
    from pyspark.sql import functions

    missing = [column for column in TIE_BOUNDS_PER_QUERY if column not in per_query_table.columns]
    types = {"ndcg_min": "double", "ndcg_max": "double", "ties_straddle_k": "boolean"}
    complete = per_query_table.withColumns({column: functions.lit(None).cast(types[column]) for column in missing})
    with _private_views({"per_query": complete}) as tables:
        summary = _run_query(per_query_table.sparkSession, "summary.sql", summary_variables(), tables)
    # summary.sql gives the measures grouped by aggregate: back in the per-query table's order
    summary = summary.select(*summary_columns(complete.columns))
    return summary.drop(*TIE_BOUNDS_SUMMARY) if missing else summary


# --- inputs and results -------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkResult:
    """Spark's per-query table and summary (lazy DataFrames), with the spec that made them."""

    per_query: DataFrame
    summary: DataFrame
    evaluation: Evaluation
    warnings: tuple[rules.ValidationWarning, ...] = ()


def evaluate(
    run: str | Sequence[str] | DataFrame,
    qrels: str | Sequence[str] | DataFrame | None = None,
    *,
    evaluation: Evaluation,
    columns: Columns | None = None,
    spark: SparkSession | None = None,
    run_format: str | None = None,
    qrels_format: str | None = None,
    checks: InputChecks | None = None,
) -> SparkResult:
    """Validate and evaluate Parquet paths (files, directories, globs, hive datasets) or
    Spark DataFrames; ``qrels=None`` reads inline labels from the run. Validation is the other
    engines' (:func:`pipeline.engines.spark_inputs.check_inputs`); its warnings are in the
    result. The tables stay in Spark, lazy; the per-query table is checkpointed
    locally (planned now, computed once by the first action on either table, kept in the
    executors' storage, so a lost executor fails the job rather than recomputing it). With
    ``evaluation.doc_weight_col``, the summary's means are weighted by TF-Ranking's list weights
    (:func:`list_weighted_summary`)."""
    from pipeline.inputs import Inputs

    inputs = Inputs(run, qrels, columns or Columns(), run_format, qrels_format, checks or InputChecks())
    checked = load(inputs, evaluation, spark=spark)
    # checkpointed lazily: planned here, computed by the first action on either table and kept
    # for the second, and the summary is planned over the table's rows, not over
    # sql/measures/per_query.sql again (which took Spark 90 s to analyse and optimise on a 3-row input)
    table = per_query(checked.run, checked.qrels, evaluation).localCheckpoint(eager=False)
    summary = (
        summarize(table)
        if evaluation.doc_weight_col is None
        else list_weighted_summary(table, _list_weight_sums(checked, evaluation), checked.run_name, evaluation)
    )
    return SparkResult(per_query=table, summary=summary, evaluation=evaluation, warnings=checked.warnings)


def list_weighted_summary(
    per_query_table: DataFrame, sums: DataFrame, run_name: str, evaluation: Evaluation
) -> DataFrame:
    """The summary's means weighted by TF-Ranking's list weights, planned in Spark: those of
    :func:`pipeline.weights.list_weights` from the run's ``sums`` (:func:`_list_weight_sums`),
    each mean ``sum(w * x) / sum(w)`` over the queries averaged, as :func:`pipeline.aggregate.summarize`
    takes it (each weight over the cutoff's largest; summed in query order: the same bits on every
    run). Queries that all weigh 0 at a cutoff fail the first action on the summary, in the words of
    :func:`pipeline.weights.check_weight_totals`."""
    from pyspark.sql import Window, functions

    from pipeline.registry.evaluation import DOCUMENT_WEIGHTED_MEASURES, RELEVANCE_WEIGHTED_MEASURES
    from pipeline.weights import list_weights_source

    def in_query_order(value: Column) -> Column:
        """A sum over the rows in query order, whatever order Spark's partitions finish in."""
        ordered = functions.array_sort(
            functions.collect_list(functions.struct(functions.col("query_id"), value.alias("value")))
        )
        return functions.aggregate(ordered, functions.lit(0.0), lambda total, item: total + item["value"])

    evaluated = per_query_table.select("query_id").distinct()
    sums = evaluated.join(sums, "query_id", "left").na.fill(0)
    relevance_of = {"weight": ("weighted_gain", "gain"), "weight_relevant": ("weighted_relevant", "relevant")}
    averages = sums.agg(
        *(
            functions.coalesce(
                in_query_order(
                    functions.when(
                        functions.col(relevance) > 0, functions.col(weighted) / functions.col(relevance)
                    ).otherwise(0.0)
                )
                / functions.nullif(functions.count_if(functions.col(relevance) > 0), functions.lit(0)),
                functions.lit(1.0),
            ).alias(f"{name}_average")
            for name, (weighted, relevance) in relevance_of.items()
        )
    )
    listed = functions.col("results") > 0
    weights = sums.crossJoin(averages).select(
        "query_id",
        *(
            functions.when(~listed, 0.0)
            .when(functions.col(relevance) > 0, functions.col(weighted) / functions.col(relevance))
            .otherwise(functions.col(f"{name}_average"))
            .alias(name)
            for name, (weighted, relevance) in relevance_of.items()
        ),
        functions.when(listed, 1.0).otherwise(0.0).alias("weight_listed"),
    )
    weight_of = {
        **dict.fromkeys(RELEVANCE_WEIGHTED_MEASURES, "weight_relevant"),
        "average_precision_score": "weight_listed",
    }
    # the measures --doc-weight-col allows, each a mean (pipeline.registry refuses the others)
    measures = [m for m in per_query_table.columns if m in DOCUMENT_WEIGHTED_MEASURES]
    counted = per_query_table.filter(functions.col("ndcg").isNotNull()).join(weights, "query_id", "left")
    cutoff = Window.partitionBy("k")
    scaled = counted.select(
        "k",
        "query_id",
        *measures,
        *(
            # (all 0 at a cutoff: null, and the queries' count below says why)
            functions.try_divide(functions.col(name), functions.max(name).over(cutoff)).alias(f"{name}_scaled")
            for name in ("weight", "weight_relevant", "weight_listed")
        ),
        functions.sum("weight").over(cutoff).alias("total_weight"),
    )
    source = list_weights_source(run_name, evaluation)
    zero = functions.raise_error(
        functions.concat(
            functions.lit(f"{source}: all "),
            functions.count(functions.lit(1)).cast("string"),
            functions.lit(
                " evaluated queries weigh 0, so their weighted mean is 0/0; give one of them a weight above 0"
            ),
        )
    )

    def mean(name: str) -> Column:
        weight = functions.col(f"{weight_of.get(name, 'weight')}_scaled")
        return functions.try_divide(in_query_order(functions.col(name) * weight), in_query_order(weight)).alias(name)

    problem = _unrepresentable_weights(per_query_table, weights, run_name, str(evaluation.doc_weight_col))
    summary = (
        scaled.groupBy("k")
        .agg(
            functions.when(functions.max("total_weight") > 0, functions.count(functions.lit(1)))
            .otherwise(zero.cast("long"))
            .alias("queries"),
            *(mean(name) for name in measures),
        )
        .crossJoin(problem)
        .withColumn(
            "queries",
            functions.when(functions.col("problem").isNull(), functions.col("queries")).otherwise(
                functions.raise_error(functions.col("problem")).cast("long")
            ),
        )
    )
    # every cutoff, also one no query was averaged at (0 queries, null means), as summary.sql gives
    cutoffs = per_query_table.select(functions.col("k").alias("cutoff")).distinct()
    return (
        cutoffs.join(summary, cutoffs["cutoff"].eqNullSafe(summary["k"]), "left")
        .select(
            functions.col("cutoff").alias("k"),
            functions.coalesce(functions.col("queries"), functions.lit(0)).alias("queries"),
            *measures,
        )
        .orderBy(functions.col("k").asc_nulls_first())
    )


def _unrepresentable_weights(per_query_table: DataFrame, weights: DataFrame, run_name: str, column: str) -> DataFrame:
    """One row: ``problem``, the words of :func:`pipeline.weights.check_weighted_values_representable`
    for the first weight whose products leave Float64's normal numbers (null when none does), in
    its order: overflowed sums, then list weights; then a subnormal ideal, then list weights; by query."""
    from pyspark.sql import functions

    sums: list[str] = [name for name in ("cg", "dcg", "idcg") if name in per_query_table.columns]
    ideal = [name for name in sums if name == "idcg"]
    listed = ["weight", "weight_relevant", "weight_listed"]
    checks: list[tuple[bool, DataFrame, list[str]]] = [
        (True, per_query_table, sums),
        (True, weights, listed),
        (False, per_query_table, ideal),
        (False, weights, listed),
    ]
    found = []
    for index, (large, table, names) in enumerate(checks):
        for position, name in enumerate(names):
            value = functions.col(name)
            bad = functions.abs(value) == float("inf") if large else (value > 0) & (value < sys.float_info.min)
            found.append(
                table.filter(bad).select(
                    functions.struct(
                        functions.lit(index).alias("check"),
                        functions.col("query_id").alias("query"),
                        functions.lit(position).alias("position"),
                        functions.lit(name).alias("name"),
                        value.cast("string").alias("value"),
                        functions.lit(large).alias("large"),
                    ).alias("found")
                )
            )
    first = functions.min("found")
    quote = functions.lit("'" if dict(per_query_table.dtypes)["query_id"] == "string" else "")
    words = functions.concat(
        functions.lit(f"{run_name}: the weights of column {column!r} are "),
        functions.when(first["large"], "too large: weight x gain overflows Float64").otherwise(
            "too small: weight x gain is a subnormal number, which keeps few digits"
        ),
        functions.lit(" in query "),
        quote,
        first["query"].cast("string"),
        quote,
        functions.lit(" ("),
        first["name"],
        functions.lit(" "),
        first["value"],
        functions.lit("); scale them "),
        functions.when(first["large"], "down").otherwise("up"),
        functions.lit(
            " (one factor for every weight changes no value: NDCG, P and AP are ratios, and the list weights "
            "weigh the means relative to each other)"
        ),
    )
    union = found[0]
    for part in found[1:]:
        union = union.unionByName(part)
    return union.agg(functions.when(first.isNotNull(), words).alias("problem"))


def load(
    inputs: Inputs, evaluation: Evaluation, *, master: str | None = None, spark: SparkSession | None = None
) -> SparkChecked:
    """Read (Parquet paths or Spark DataFrames) and validate as the other engines do: the
    Spark engine's :meth:`pipeline.engines.Engine.load`."""

    refuse_before_session(inputs.run, inputs.qrels, inputs.run_format, inputs.qrels_format, evaluation)
    given = (inputs.run, inputs.qrels)
    spark = spark or next((v.sparkSession for v in given if hadoop.is_frame(v)), None) or session(master)  # type: ignore[union-attr]
    run_value, qrels_value = (_as_spark(spark, value) for value in given)
    run = SparkInput.read(spark, run_value, inputs.run_format, "run")
    qrels = None if qrels_value is None else SparkInput.read(spark, qrels_value, inputs.qrels_format, "qrels")
    return validated(run, qrels, evaluation, inputs.columns, inputs.checks)


def refuse_before_session(
    run: Any, qrels: Any, run_format: str | None, qrels_format: str | None, evaluation: Evaluation
) -> None:
    """What the Spark engine refuses by design, decided from the names and the options alone,
    before pyspark is imported and its JVM started (20-60 s): inputs of other formats (by
    ``--run-format``/``--qrels-format`` or the extension), the conventions it cannot compute
    with the same meaning (:func:`pipeline.registry.spark_refusals`), and a local path that does not
    exist (the message of every engine)."""
    for value in (run, qrels):
        if isinstance(value, Source):
            raise UsageError("the spark engine reads Parquet paths or frames, not other formats' sources")
    check_supported(evaluation_variables(evaluation))
    for value, format in ((run, run_format), (qrels, qrels_format)):
        if value is None or not isinstance(value, (str, os.PathLike, list, tuple)):
            continue  # frames: Spark's own, or converted to Spark's through Arrow
        for path in hadoop.check_parquet_only(os.fspath(value) if isinstance(value, os.PathLike) else value, format):
            _refuse_missing_local(path)


def _refuse_missing_local(path: str) -> None:
    """A local path that names nothing is refused as the other engines refuse it (exit 3)."""
    from glob import has_magic

    from pipeline.io import fs
    from pipeline.io.location import Location

    location = Location.of(path)
    if location.is_local and not has_magic(path) and not Path(location.local_path).exists():
        fs.data_files(location.local_path, "parquet")


def _as_spark(spark: SparkSession, value: Any) -> Any:
    """A Polars frame (the API's frames of every kind arrive as Polars frames) as a Spark
    DataFrame, through Arrow; a path as text; Spark DataFrames and lists of paths as they are.

    Spark has no unsigned integers and its Arrow conversion refuses them: a UInt64 column
    becomes Decimal(20, 0) (as Spark reads a Parquet UINT64) and a narrower one Int64, each
    marked unsigned in its metadata, so that ids align as the other engines align them."""
    import polars as pl
    from pyspark.sql import functions

    if not isinstance(value, (pl.LazyFrame, pl.DataFrame)):
        return os.fspath(value) if isinstance(value, os.PathLike) else value
    frame = value.lazy().collect()
    unsigned = [name for name, dtype in frame.schema.items() if dtype.is_unsigned_integer()]
    frame = frame.with_columns(
        pl.col(name).cast(pl.Decimal(20, 0) if frame.schema[name] == pl.UInt64 else pl.Int64) for name in unsigned
    )
    converted = spark.createDataFrame(frame.to_arrow())
    if not unsigned:
        return converted

    def column(name: str) -> Any:
        return functions.col(quoted(name))

    return converted.select(
        *(
            column(name).alias(name, metadata={UNSIGNED: True}) if name in unsigned else column(name)
            for name in converted.columns
        )
    )


def compute(checked: SparkChecked, evaluation: Evaluation) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The per-query table, computed by Spark in one action, and its summary, as Polars frames.

    The table's rows come back whole anyway, so ``sql/summary.sql`` runs over them here, in
    DuckDB (the DuckDB engine's bits). Summarised in Spark, over the table checkpointed first
    (planned over ``sql/measures/per_query.sql`` a second time otherwise: about 21 s of 50 s on
    the sample), it took a checkpoint and a second action (a warm NDCG evaluation of the sample:
    4.70 s, against 4.17 s)."""
    from pipeline.engines import duckdb as duckdb_engine

    table = per_query_table(checked, evaluation)
    return table, duckdb_engine.summarize(table)


# A unit's query ids inside the one statement of several units: (unit, id) as one struct key
UNIT, UNIT_QUERY = "unit", "id"
# At most this many units share a statement. Spark's analysis of the union grows faster than its
# units (the sample's partition repeated, NDCG, a warm local session: 15 units 7.9 s, 30 units
# 15.2 s, 60 units 37.8 s; one unit planned alone about 3.5 s), so a job of hundreds of
# partitions is planned in statements of this size rather than in one ever larger plan.
UNITS_PER_STATEMENT = 32


def compute_units(checked: Sequence[SparkChecked], evaluation: Evaluation) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """Several units' tables (a job's partitions), each as :func:`compute` makes it alone, from
    one statement per shape of the validated inputs (the columns' types: a partition whose ids
    are text cannot share a union with one whose ids are integers) and per
    :data:`UNITS_PER_STATEMENT` units of it. Spark analyses the statement
    once, not once per unit: computing the sample's second partition took 3.8-4.1 s more planned
    on its own, 0.4-0.8 s in the same statement (docs/benchmarks.md)."""
    shapes: dict[tuple[tuple[Any, ...], ...], list[int]] = {}
    for index, unit in enumerate(checked):
        shapes.setdefault((_shape(unit.run), _shape(unit.qrels)), []).append(index)
    tables: dict[int, tuple[pl.DataFrame, pl.DataFrame]] = {}
    for same_shape in shapes.values():
        for start in range(0, len(same_shape), UNITS_PER_STATEMENT):
            indices = same_shape[start : start + UNITS_PER_STATEMENT]
            together = _compute_together([checked[index] for index in indices], evaluation)
            tables.update(zip(indices, together, strict=True))
    return [tables[index] for index in range(len(checked))]


def _shape(frame: DataFrame) -> tuple[Any, ...]:
    return tuple((field.name, field.dataType) for field in frame.schema)


def _compute_together(
    checked: Sequence[SparkChecked], evaluation: Evaluation
) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """Units of one shape in one statement and one action: each unit's query ids are keyed by
    the unit (a struct of both), so that no step of ``sql/measures/per_query.sql`` meets
    another unit's rows, and split apart in the per-query table that comes back."""
    import polars as pl

    from pipeline.engines import duckdb as duckdb_engine

    if len(checked) == 1:
        return [compute(checked[0], evaluation)]
    run, qrels = _keyed_by_unit([unit.run for unit in checked]), _keyed_by_unit([unit.qrels for unit in checked])
    table = _to_polars(per_query(run, qrels, evaluation))
    units = table["query_id"].struct.field(UNIT)
    table = table.with_columns(pl.col("query_id").struct.field(UNIT_QUERY).alias("query_id"))
    parts = [_ids_as_elsewhere(table.filter(units == index)) for index in range(len(checked))]
    return [(part, duckdb_engine.summarize(part)) for part in parts]


def _keyed_by_unit(frames: Sequence[DataFrame]) -> DataFrame:
    """The frames as one, each one's ``query_id`` the struct (its index, its query id)."""
    from pyspark.sql import functions

    keyed = [
        frame.withColumn(
            "query_id", functions.struct(functions.lit(index).alias(UNIT), functions.col("query_id").alias(UNIT_QUERY))
        )
        for index, frame in enumerate(frames)
    ]
    union = keyed[0]
    for frame in keyed[1:]:
        union = union.unionByName(frame)
    return union


def list_weight_sums(checked: SparkChecked, evaluation: Evaluation) -> pl.DataFrame:
    """:func:`pipeline.weights.list_weight_sums` computed by Spark (one row per query, brought
    back): the sums TF-Ranking's list weights are made of, under ``--doc-weight-col``."""
    return _to_polars(_list_weight_sums(checked, evaluation))


def _list_weight_sums(checked: SparkChecked, evaluation: Evaluation) -> DataFrame:
    """``query_id, results, weighted_gain, gain, weighted_relevant, relevant``, planned in Spark."""
    from pyspark.sql import functions

    from pipeline.engines.spark_stats import gain

    labels = checked.qrels.groupBy("query_id", "doc_id").agg(functions.max("relevance").alias("relevance"))
    # the ids and weights alone: a run's column "relevance" (--doc-weight-col relevance) is no label
    weights = checked.run.select("query_id", "doc_id", DOC_WEIGHT)
    listed = weights.filter(functions.col(DOC_WEIGHT) > 0).join(labels, ["query_id", "doc_id"], "left")
    label, weight = functions.col("relevance"), functions.col(DOC_WEIGHT)
    threshold = evaluation.relevance_threshold
    # a negative label is never relevant, whatever the threshold (pipeline.expressions.relevant)
    relevant = label > 0 if threshold is None else label >= max(threshold, 0.0)
    relevant = functions.coalesce(relevant, functions.lit(False))
    gained, relevance = gain(label, evaluation), relevant.cast("double")
    terms = {"weighted_gain": weight * gained, "gain": gained, "weighted_relevant": weight * relevance}
    terms["relevant"] = relevance
    # each sum in doc_id order, as pipeline.weights sums it: the same bits on every run (Spark's sum()
    # adds its partitions' in whatever order they finish)
    listed = listed.groupBy("query_id").agg(
        functions.count(functions.lit(1)).alias("results"),
        functions.array_sort(
            functions.collect_list(functions.struct(functions.col("doc_id"), *(v.alias(k) for k, v in terms.items())))
        ).alias("terms"),
    )

    def in_order(name: str) -> Column:
        return functions.aggregate("terms", functions.lit(0.0), lambda total, term: total + term[name]).alias(name)

    return listed.select("query_id", "results", *(in_order(name) for name in terms))


def per_query_table(checked: SparkChecked, evaluation: Evaluation) -> pl.DataFrame:
    """The per-query table alone, as a Polars frame (the API's ``per_query``: no summary)."""
    return _to_polars(per_query(checked.run, checked.qrels, evaluation))


def _to_polars(frame: DataFrame) -> pl.DataFrame:
    import polars as pl

    table = pl.from_arrow(frame.toArrow())
    assert isinstance(table, pl.DataFrame)
    return _ids_as_elsewhere(table)


def _ids_as_elsewhere(table: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    if "query_id" in table.columns and isinstance(table.schema["query_id"], pl.Decimal):
        # a UINT64 id, which Spark holds as Decimal(20, 0) (a decimal id is refused): UInt64 in
        # the outputs, as on the other engines
        table = table.with_columns(pl.col("query_id").cast(pl.UInt64))
    return table
