"""The Spark engine: the files of ``sql/`` transpiled from DuckDB to Spark SQL by sqlglot.

There is no second implementation here. ``sql/per_query.sql`` and ``sql/summary.sql`` are
parsed in DuckDB's dialect (per_query.sql with the steps before it as the CTEs of its one
``with`` chain, see :func:`composed_per_query`), every ``getvariable('name')`` node is replaced by a literal built
as a syntax-tree node from the bound value (an unset variable becomes a NULL of the
variable's type), the input views are renamed to names private to one evaluation, and the
tree is written out in Spark's dialect. No SQL text is ever built from values.

Two small rewrites make DuckDB's meaning hold on Spark (both tested):

- decimal literals such as ``1.0`` become DOUBLE: Spark divides decimals in fixed scale
  (``1.0 / 3`` is 0.333333 there), DuckDB's ``/`` divides in double;
- tables ``run``, ``qrels`` and ``per_query`` are renamed to private temp views, aliased by
  their old names so qualified columns (``run.query_id``) still resolve.

pyspark is an optional extra (``pip install -e '.[spark]'`` from a checkout); it is imported only
when a Spark function runs. Spark needs Java, which is checked before the JVM is started.
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import sqlglot
from sqlglot import exp

from pipeline import rules
from pipeline.errors import InvalidInput, UsageError, install_hint
from pipeline.expressions import TIE_BOUNDS_PER_QUERY, TIE_BOUNDS_SUMMARY
from pipeline.io import fs
from pipeline.io.partitions import Partition, judgments_partition, select_partitions
from pipeline.io.partitions import hive_partitions as _hive_partitions
from pipeline.io.read import Columns, detect_format
from pipeline.spec import SQL_VARIABLES, Evaluation, spark_refusals
from pipeline.sql_files import PER_QUERY_STEPS, VARIABLES, evaluation_variables, per_query_steps, sql_file

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The files of sql/ that are plain queries over views, and so portable to Spark.
# (inputs.sql uses DuckDB's read_parquet and COLUMNS(lambda ...); ndcg.sql and export.sql are
# CLI scripts: on Spark, Spark's own readers and writers take their place.)
PORTABLE_FILES = ("per_query.sql", "summary.sql")

# The Spark type of each variable (the registry's), used for its literal and for the NULL of an
# unset variable. A variable missing here takes its type from its value.
VARIABLE_TYPES: dict[str, str] = {variable.name: variable.spark_type for variable in SQL_VARIABLES}

# Options whose meaning Spark cannot honour: variable -> value -> why (the registry's, in
# pipeline/spec.py). Rejected, never ignored. Row arrival order is not defined on Spark (files
# are read in parallel and shuffled), so nothing that depends on the order rows arrive can give
# the same answer as on one machine.
UNSUPPORTED: dict[str, dict[str, str]] = spark_refusals()


# --- transpiling ---------------------------------------------------------------------------


def literal(value: Any, type_name: str | None = None) -> exp.Expr:
    """A SQL literal for one value, as a syntax-tree node; ``type_name`` is its Spark type.

    >>> literal([5, 10], "ARRAY<BIGINT>").sql("spark")
    'ARRAY(CAST(5 AS BIGINT), CAST(10 AS BIGINT))'
    >>> literal(None, "DOUBLE").sql("spark")
    'CAST(NULL AS DOUBLE)'
    >>> literal("it's").sql("spark")
    "'it\\\\'s'"
    """
    data_type = exp.DataType.build(type_name, dialect="spark") if type_name else None
    if value is None:
        return exp.cast(exp.Null(), data_type) if data_type else exp.Null()
    if data_type is not None and data_type.is_type(exp.DataType.Type.ARRAY):
        element = data_type.expressions[0].sql("spark") if data_type.expressions else None
        items = exp.Array(expressions=[literal(item, element) for item in value])
        return items if value else exp.cast(items, data_type)
    if data_type is not None and data_type.is_type(exp.DataType.Type.MAP):
        key_type, value_type = (part.sql("spark") for part in data_type.expressions)
        keys, values = (list(value), list(value.values())) if isinstance(value, Mapping) else value
        return exp.Map(
            keys=literal(list(keys), f"ARRAY<{key_type}>"), values=literal(list(values), f"ARRAY<{value_type}>")
        )
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        number = float(value) if data_type is not None and data_type.is_type(*exp.DataType.REAL_TYPES) else value
        if isinstance(number, float) and not math.isfinite(number):
            text = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
            return exp.cast(exp.Literal.string(text), "DOUBLE")
        node = exp.Literal.number(repr(number))
        target = data_type or exp.DataType.build("DOUBLE" if isinstance(number, float) else "BIGINT")
        return exp.cast(node, target)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(item) for item in value])
    raise UsageError(f"cannot pass a {type(value).__name__} to SQL: {value!r}")


def check_supported(variables: Mapping[str, Any]) -> None:
    """Refuse options that Spark cannot compute with the same meaning."""
    for name, value in variables.items():
        reason = UNSUPPORTED.get(name, {}).get(value) if isinstance(value, str) else None
        if reason:
            raise UsageError(f"{name} = {value!r} is not supported on the spark engine: {reason}")


def _bind_variables(tree: exp.Expr, variables: Mapping[str, Any]) -> exp.Expr:
    def bind(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Anonymous) and node.name.lower() == "getvariable"):
            return node
        arguments = node.expressions
        if len(arguments) != 1 or not (isinstance(arguments[0], exp.Literal) and arguments[0].is_string):
            raise UsageError(f"getvariable takes one quoted name, got {node.sql('duckdb')}")
        name = arguments[0].name
        if name not in VARIABLES:
            raise UsageError(f"SQL reads variable {name!r}, which is not one of {', '.join(VARIABLES)}")
        return literal(variables.get(name), VARIABLE_TYPES.get(name))

    return tree.transform(bind)


def _decimals_as_doubles(tree: exp.Expr) -> exp.Expr:
    def to_double(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Literal) and not node.is_string and not node.is_int:
            return exp.cast(node.copy(), "DOUBLE")
        return node

    return tree.transform(to_double)


def _rename_tables(tree: exp.Expr, tables: Mapping[str, str]) -> exp.Expr:
    cte_names = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.name in tables and node.name not in cte_names and not node.db:
            renamed = exp.table_(tables[node.name])
            renamed.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return renamed
        return node

    return tree.transform(rename)


def _parse(file_name: str, text: str) -> list[exp.Expr]:
    try:
        return [tree for tree in sqlglot.parse(text, read="duckdb") if tree is not None]
    except sqlglot.errors.ParseError as error:
        raise UsageError(f"sql/{file_name} does not parse: {error}") from None


def composed_per_query() -> exp.Expr:
    """The steps of the per-query table (:data:`~pipeline.sql_files.PER_QUERY_STEPS`) as one
    statement: each step's ``create ... view name as <query>`` becomes the CTE ``name as
    (<query>)``, ahead of the last step's own CTEs, in the last step's ``create ... per_query``.

    One query rather than a temp view per step: Spark analyses and optimises the whole plan
    once, and ``ndcg sql`` prints a statement that defines no view but ``per_query``. Built on
    the syntax tree, so no SQL text is ever joined.

    >>> composed_per_query().sql("duckdb", comments=False)[:59]
    'CREATE OR REPLACE TEMPORARY TABLE per_query AS WITH cutoffs'
    """
    ctes: list[exp.CTE] = []
    for file_name, text in per_query_steps():
        (tree,) = _parse(file_name, text)
        if not (isinstance(tree, exp.Create) and tree.kind in ("VIEW", "TABLE")):
            raise UsageError(f"sql/{file_name} is a step, so one `create ... view name as <query>`")
        if file_name != PER_QUERY_STEPS[-1]:
            step = tree.this.name
            alias = exp.TableAlias(this=exp.to_identifier(step))
            ctes.append(exp.CTE(this=_own_ctes_prefixed(tree.expression, step), alias=alias))
    query = tree.expression
    own = query.args["with_"].expressions if query.args.get("with_") else []
    clashes = {cte.alias_or_name for cte in ctes} & {cte.alias_or_name for cte in own}
    if clashes:  # a CTE of per_query.sql would hide a step
        raise UsageError(f"sql/{PER_QUERY_STEPS[-1]} names a CTE as a step: {', '.join(sorted(clashes))}")
    query.set("with_", exp.With(expressions=[*ctes, *own]))
    return tree


def _own_ctes_prefixed(query: exp.Expr, step: str) -> exp.Expr:
    """A step's own CTEs renamed ``<step>__<name>``, each read under its old name as alias.

    sqlglot's Spark dialect lifts nested CTEs to the top of the statement, where the steps'
    ``final`` CTEs would clash (Spark refuses duplicate CTE names)."""
    names = {cte.alias_or_name for cte in query.find_all(exp.CTE)}

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.CTE) and node.alias_or_name in names:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(f"{step}__{node.alias_or_name}")))
        elif isinstance(node, exp.Table) and node.name in names and not node.db:
            renamed = exp.table_(f"{step}__{node.name}")
            renamed.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return renamed
        return node

    return query.transform(rename)


def _strip_comments(tree: exp.Expr) -> exp.Expr:
    for node in tree.walk():
        node.comments = None
    return tree


@dataclass(frozen=True)
class Statement:
    """One transpiled statement: the view it defines (or None) and its query."""

    view: str | None
    query: exp.Expr
    statement: exp.Expr

    def query_sql(self, dialect: str = "spark", *, pretty: bool = False) -> str:
        return self.query.sql(dialect, pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE)

    def sql(self, dialect: str = "spark", *, pretty: bool = True) -> str:
        return self.statement.sql(dialect, pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE)


def transpile(
    file_name: str,
    variables: Mapping[str, Any],
    *,
    dialect: str = "spark",
    tables: Mapping[str, str] | None = None,
) -> list[Statement]:
    """The statements of one file of ``sql/`` with ``variables`` bound, for ``dialect``;
    ``per_query.sql`` is one statement with the steps before it (:func:`composed_per_query`)."""
    if file_name not in PORTABLE_FILES:
        raise UsageError(f"sql/{file_name} is DuckDB-only; portable files: {', '.join(PORTABLE_FILES)}")
    if dialect == "spark":
        check_supported(variables)
    composed = file_name == PER_QUERY_STEPS[-1]
    parsed = [composed_per_query()] if composed else _parse(file_name, sql_file(file_name))
    statements = []
    for tree in parsed:
        tree = _strip_comments(tree)
        if dialect == "spark":
            tree = _decimals_as_doubles(tree)
        tree = _bind_variables(tree, variables)
        tree = _rename_tables(tree, tables or {})
        if isinstance(tree, exp.Create) and tree.kind in ("VIEW", "TABLE"):
            if tree.kind == "TABLE" and dialect == "spark":
                # DuckDB materializes per_query once as a temp table; Spark has temp views only
                tree = tree.copy()
                tree.set("kind", "VIEW")
            statements.append(Statement(view=tree.this.name, query=tree.expression, statement=tree))
        else:
            statements.append(Statement(view=None, query=tree, statement=tree))
    return statements


def sql_text(evaluation: Evaluation, *, dialect: str = "spark") -> str:
    """``per_query.sql`` then ``summary.sql``, values bound, in ``dialect``: pasteable SQL
    over views ``run`` and ``qrels`` that defines the views ``per_query`` and ``summary``."""
    variables = evaluation_variables(evaluation)
    parts = []
    for file_name in PORTABLE_FILES:
        try:
            statements = transpile(file_name, variables, dialect=dialect)
            text = ";\n\n".join(statement.sql(dialect) for statement in statements)
        except sqlglot.errors.UnsupportedError as error:
            raise UsageError(f"sql/{file_name} does not transpile to {dialect}: {error}") from None
        steps = f" (its steps {', '.join(PER_QUERY_STEPS[:-1])} as CTEs)" if file_name == PER_QUERY_STEPS[-1] else ""
        parts.append(f"-- from sql/{file_name}{steps}\n{text};\n")
    return "\n".join(parts)


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
    if master is not None:
        builder = builder.master(master)
    elif not submitted:
        builder = (
            builder.master("local[*]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
        )
    spark = builder.getOrCreate()
    if not submitted:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


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
    spark: SparkSession, file_name: str, variables: Mapping[str, Any], tables: Mapping[str, str]
) -> DataFrame:
    (statement,) = transpile(file_name, variables, tables=tables)
    try:
        query = statement.query_sql()
    except sqlglot.errors.UnsupportedError as error:
        raise UsageError(f"sql/{file_name} does not transpile to Spark: {error}") from None
    return spark.sql(query)


# --- the engine -----------------------------------------------------------------------------


def per_query(run: DataFrame, qrels: DataFrame, evaluation: Evaluation) -> DataFrame:
    """The per-query table ``query_id, k, cg, dcg, idcg, ndcg`` as a Spark DataFrame.

    ``run`` has ``query_id, doc_id, score``; ``qrels`` has ``query_id, doc_id, relevance``
    (validated already: see :func:`check_inputs`). Computed by ``sql/per_query.sql``; the
    user's own temp views are never touched.
    """
    from pyspark.sql import functions

    spark = run.sparkSession
    inputs = {
        # Spark rows have no arrival order: the input-order options are refused (UNSUPPORTED),
        # so these columns only complete the shape sql/per_query.sql reads.
        "run": run.select(
            "query_id",
            "doc_id",
            "score",
            functions.lit(None).cast("bigint").alias("arrival"),
            functions.lit(None).cast("double").alias("input_rank"),
        ),
        "qrels": qrels.select("query_id", "doc_id", "relevance"),
    }
    with _private_views(inputs) as tables:
        table = _run_query(spark, "per_query.sql", evaluation_variables(evaluation), tables)
    # the SQL's columns are fixed; without tie bounds they are all null
    return table if evaluation.tie_bounds else table.drop(*TIE_BOUNDS_PER_QUERY)


def summarize(per_query_table: DataFrame) -> DataFrame:
    """The summary ``k, queries, cg, dcg, idcg, ndcg`` computed by ``sql/summary.sql``."""
    from pyspark.sql import functions

    missing = [column for column in TIE_BOUNDS_PER_QUERY if column not in per_query_table.columns]
    types = {"ndcg_min": "double", "ndcg_max": "double", "ties_straddle_k": "boolean"}
    complete = per_query_table.withColumns({column: functions.lit(None).cast(types[column]) for column in missing})
    with _private_views({"per_query": complete}) as tables:
        summary = _run_query(per_query_table.sparkSession, "summary.sql", {}, tables)
    return summary.drop(*TIE_BOUNDS_SUMMARY) if missing else summary


# --- inputs ---------------------------------------------------------------------------------


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
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = rules.DEFAULT_WARN_RESULTS_OVER,
) -> SparkResult:
    """Validate and evaluate Parquet paths (files, directories, globs, hive datasets) or
    Spark DataFrames; ``qrels=None`` reads inline labels from the run. Validation is the other
    engines' (:func:`check_inputs`); its warnings are in the result."""
    check_supported(evaluation_variables(evaluation))
    columns = columns or Columns()
    if spark is None:
        frame_session = next((value.sparkSession for value in (run, qrels) if _is_frame(value)), None)  # type: ignore[union-attr]
        spark = frame_session or session()
    run_input = _Input.read(spark, run, run_format, "run")
    qrels_input = None if qrels is None else _Input.read(spark, qrels, qrels_format, "qrels")
    return _evaluate_inputs(run_input, qrels_input, evaluation, columns, allow_fractional_labels, warn_results_over)


@dataclass(frozen=True)
class _Input:
    """A run or qrels as Spark read it, with the name its error messages use."""

    frame: DataFrame
    name: str

    @classmethod
    def read(cls, spark: SparkSession, value: str | Sequence[str] | DataFrame, format: str | None, role: str) -> _Input:
        name = _name(value, role)
        return cls(frame=_read(spark, value, format, name), name=name)


def _evaluate_inputs(
    run: _Input,
    qrels: _Input | None,
    evaluation: Evaluation,
    columns: Columns,
    allow_fractional_labels: bool,
    warn_results_over: int | None,
) -> SparkResult:
    inline = qrels is None
    qrels = qrels or _Input(frame=run.frame, name=f"{run.name} (inline labels)")
    # as the other engines read them: inline labels are the run's three columns, and the run
    # keeps its other columns but the label
    run_frame = _canonical(
        run.frame,
        {columns.query: "query_id", columns.doc: "doc_id", columns.score: "score"},
        run.name,
        drop=(columns.label,) if inline else (),
    )
    qrels_frame = _canonical(
        qrels.frame,
        {columns.query: "query_id", columns.doc: "doc_id", columns.label: "relevance"},
        qrels.name,
        others=not inline,
    )
    checked = check_inputs(
        run_frame,
        qrels_frame,
        run_name=run.name,
        qrels_name=qrels.name,
        columns=columns,
        allow_fractional_labels=allow_fractional_labels,
        warn_results_over=warn_results_over,
        evaluation=evaluation,
    )
    table = per_query(checked.run, checked.qrels, evaluation)
    return SparkResult(per_query=table, summary=summarize(table), evaluation=evaluation, warnings=checked.warnings)


def _is_frame(value: object) -> bool:
    return hasattr(value, "sparkSession") and hasattr(value, "createOrReplaceTempView")


def _name(value: object, role: str) -> str:
    if _is_frame(value):
        return f"{role} DataFrame"
    return value if isinstance(value, str) else ", ".join(map(str, value))  # type: ignore[call-overload]


def spark_format(path: str, format: str | None) -> str:
    """The format of a path on Spark: Parquet unless an extension or ``format`` says otherwise.

    Object-store URLs and extension-less paths are Parquet datasets (directories) there.

    >>> spark_format("s3a://logs/runs/", None)
    'parquet'
    >>> spark_format("run.txt", None)
    'trec'
    """
    if format:
        return format
    if urlparse(path).scheme not in ("", "file") or not Path(path.rstrip("/*")).suffix:
        return "parquet"
    return detect_format(path)


def _read(spark: SparkSession, value: str | Sequence[str] | DataFrame, format: str | None, name: str) -> DataFrame:
    """Spark reads the files of :func:`data_files`, never a folder: the other engines' rules
    decide which files are data (Spark's own listing would, e.g., read a folder's stray
    files), and the files of one dataset are checked to have the same columns."""
    if _is_frame(value):
        return value  # type: ignore[return-value]
    paths = [value] if isinstance(value, str) else [str(path) for path in value]  # type: ignore[union-attr]
    for path in paths:
        chosen = spark_format(path, format)
        if chosen != "parquet":
            raise UsageError(
                f"{path}: the spark engine reads Parquet only (files, directories, globs, hive datasets), "
                f"not {chosen}; convert it to Parquet or use --engine polars or duckdb"
            )
    files = [file for path in paths for file in data_files(spark, path)]
    if all(_is_local(file) for file in files):
        from pipeline.io.read import check_parquet_schemas

        check_parquet_schemas([_local_path(file) for file in files])
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import AnalysisException

    try:
        return spark.read.parquet(*files)
    except AnalysisException as error:
        message = str(error).splitlines()[0]
        raise InvalidInput(f"{name}: cannot read as Parquet: {message}") from None
    except Py4JJavaError as error:  # a file Spark cannot read at all, e.g. a corrupt footer
        message = str(error.java_exception.getMessage()).splitlines()[0]
        raise InvalidInput(f"{name}: cannot read as Parquet: {message}") from None


def data_files(spark: SparkSession, path: str) -> list[str]:
    """The Parquet data files of ``path`` by :func:`pipeline.io.fs.data_files`: local paths
    listed as the other engines list them, URLs (``s3a://``, ``hdfs://``) through Hadoop's
    FileSystem by the same rules."""
    if _is_local(path):
        return fs.data_files(_local_path(path), "parquet")
    return fs.data_files(path, "parquet", _HadoopFileSystem(spark))


def _is_local(path: str) -> bool:
    return urlparse(path).scheme in ("", "file")


def _local_path(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


class _HadoopFileSystem:
    """:class:`pipeline.io.fs.FileSystem` over Hadoop's FileSystem API (HDFS, object stores)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def kind(self, path: str) -> fs.Kind:
        filesystem, hadoop_path = _filesystem(self.spark, path)
        if not filesystem.exists(hadoop_path):
            return "missing"
        return self._kind(filesystem.getFileStatus(hadoop_path))

    def entries(self, folder: str) -> list[tuple[str, fs.Kind]]:
        filesystem, hadoop_path = _filesystem(self.spark, folder)
        statuses = filesystem.listStatus(hadoop_path)
        return sorted((status.getPath().getName(), self._kind(status)) for status in statuses)

    def glob(self, pattern: str) -> list[str] | None:
        if self.kind(pattern) != "missing" or not glob.has_magic(pattern):
            return None
        filesystem, hadoop_path = _filesystem(self.spark, pattern)
        return sorted(str(status.getPath()) for status in filesystem.globStatus(hadoop_path) or [])

    @staticmethod
    def _kind(status: Any) -> fs.Kind:
        return "dir" if status.isDirectory() else "file" if status.isFile() else "other"


def _canonical(
    frame: DataFrame, wanted: dict[str, str], name: str, *, others: bool = True, drop: Sequence[str] = ()
) -> DataFrame:
    """The ``wanted`` columns under their canonical names, first, then (``others``) the user's
    other columns but ``drop``, as pipeline/io/read.py reads them for the other engines (they
    show in validation's example rows). A user column that carries a canonical name it was not
    given would shadow the renamed one, and is left out."""
    from pyspark.sql import functions

    found = frame.columns
    missing = [column for column in wanted if column not in found]
    if missing:
        listed, present = ", ".join(map(repr, missing)), ", ".join(map(repr, found))
        raise InvalidInput(f"{name}: missing column(s) {listed}; columns found: {present}")
    kept = [c for c in found if c not in wanted and c not in wanted.values() and c not in drop] if others else []

    def column(name: str) -> Any:
        return functions.col("`" + name.replace("`", "``") + "`")

    return frame.select(
        *(column(source).alias(target) for source, target in wanted.items()), *(column(c) for c in kept)
    )


# --- validation: Spark measures the inputs, pipeline/rules.py decides ----------------------------


@dataclass(frozen=True)
class SparkChecked:
    """Validated inputs, ids of one type on both sides, and the warnings found on the way."""

    run: DataFrame
    qrels: DataFrame
    warnings: tuple[rules.ValidationWarning, ...] = ()


def check_inputs(
    run: DataFrame,
    qrels: DataFrame,
    *,
    run_name: str,
    qrels_name: str,
    columns: Columns | None = None,
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = rules.DEFAULT_WARN_RESULTS_OVER,
    evaluation: Evaluation | None = None,
) -> SparkChecked:
    """The other engines' checks, exit codes and messages: Spark measures each input
    (:mod:`pipeline.engines.spark_stats`: one job per input, one for the warnings) and
    :mod:`pipeline.rules` decides. ``run`` has ``query_id, doc_id, score`` and ``qrels``
    ``query_id, doc_id, relevance``, each maybe followed by other columns (shown in example
    rows); ``columns`` gives the user's names for messages. ``evaluation`` (default: the
    defaults) gives the duplicate policy and the gain. Ids of different types on the two
    sides are aligned: BIGINT when both are integers, else STRING."""
    from pyspark.sql import functions

    from pipeline.engines import spark_stats as stats

    evaluation = evaluation or Evaluation()
    policy = rules.Policy(
        columns=columns or Columns(),
        allow_fractional_labels=allow_fractional_labels,
        warn_results_over=warn_results_over,
        run_duplicates=evaluation.duplicates,
        evaluation=evaluation,
    )
    bound = rules.gain_bound(evaluation.gain)
    measured: dict[str, rules.Measured] = {}
    probes: dict[str, stats.SparkProbe] = {}
    for frame, name, role, value_column in ((run, run_name, "run", "score"), (qrels, qrels_name, "qrels", "relevance")):
        types = stats.column_types(frame, ("query_id", "doc_id", value_column))
        probes[role] = stats.SparkProbe(frame, name, types, bound)
        measured[role] = rules.Measured(name, role, types, probes[role])  # type: ignore[arg-type]
        rules.check_types(measured[role], policy)
    label, label_type = functions.col("relevance"), measured["qrels"].types["relevance"]
    fractional = stats.fractional(label, label_type) if rules.counts_fractional(label_type, policy) else None
    # ids aligned from the schemas alone, so that the warnings' counts join in the same job
    aligned = _aligned_ids(run, qrels)
    (run_stats, probes["run"].duplicate), (qrels_stats, probes["qrels"].duplicate), counts = stats.measure(
        stats.Measure(run_name, run, "score"),
        stats.Measure(
            qrels_name,
            qrels,
            "relevance",
            fractional_test=fractional,
            over_gain_test=stats.over_gain(label, bound),
        ),
        stats.tally_counts(*aligned, evaluation, warn_results_over),
    )
    rules.check_stats(measured["run"], run_stats, measured["qrels"], qrels_stats, policy)
    counts["negative_labels"] = qrels_stats.negative
    tallies = stats.tallies(*aligned, evaluation, warn_results_over, counts, f"{run_name} and {qrels_name}")
    run, qrels = aligned
    return SparkChecked(run, qrels, rules.warnings(tallies, run_name=run_name, qrels_name=qrels_name, policy=policy))


def _aligned_ids(run: DataFrame, qrels: DataFrame) -> tuple[DataFrame, DataFrame]:
    from pyspark.sql import functions, types

    for column in ("query_id", "doc_id"):
        left, right = run.schema[column].dataType, qrels.schema[column].dataType
        if left == right:
            continue
        integers = isinstance(left, types.IntegralType) and isinstance(right, types.IntegralType)
        common = "bigint" if integers else "string"
        run = run.withColumn(column, functions.col(column).cast(common))
        qrels = qrels.withColumn(column, functions.col(column).cast(common))
    return run, qrels


# --- hive-partitioned datasets -----------------------------------------------------------------


def _filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """Hadoop's FileSystem for ``path`` and the path itself: local folders, HDFS and object
    stores (``s3a://``) are listed and renamed through the same API Spark writes with."""
    hadoop_path = spark._jvm.org.apache.hadoop.fs.Path(path)  # type: ignore[union-attr]
    return hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()), hadoop_path


def hive_partitions(spark: SparkSession, root: str) -> list[Partition]:
    """Every leaf ``key=value`` folder under ``root`` by the other engines' walk
    (:func:`pipeline.io.partitions.hive_partitions`), listed by Hadoop's FileSystem (no file
    is opened); empty when ``root`` is a file, a glob, missing, or not hive-partitioned."""
    filesystem = fs.LOCAL if _is_local(root) else _HadoopFileSystem(spark)
    return _hive_partitions(_local_path(root) if _is_local(root) else root, filesystem)


def partition_path(root: str, partition: Partition) -> str:
    """``root/key=value/...`` as text, so that URLs (``s3a://bucket/x``) keep their ``//``."""
    return f"{root.rstrip('/')}/{partition}"


def _is_folder(spark: SparkSession, path: str) -> bool:
    filesystem, hadoop_path = _filesystem(spark, path)
    return bool(filesystem.exists(hadoop_path) and filesystem.getFileStatus(hadoop_path).isDirectory())


@dataclass(frozen=True)
class SparkUnit:
    """One evaluated unit, as on the other engines: the whole input, or one hive partition
    (its ``key`` columns, as strings, first in both tables). Lazy DataFrames."""

    partition: Partition | None
    per_query: DataFrame
    summary: DataFrame
    warnings: tuple[rules.ValidationWarning, ...] = ()

    @classmethod
    def of(
        cls,
        partition: Partition | None,
        per_query_table: DataFrame,
        warnings: tuple[rules.ValidationWarning, ...] = (),
    ) -> SparkUnit:
        """The unit of a per-query table (without partition columns) and its summary."""
        return cls(
            partition=partition,
            per_query=_with_partition_columns(per_query_table, partition),
            summary=_with_partition_columns(summarize(per_query_table), partition),
            warnings=warnings,
        )

    def cached(self) -> SparkUnit:
        """The same unit with both tables persisted (:meth:`unpersist` it when done), so that
        the summary shown and the files written are computed once."""
        table = self.per_query.persist()
        # summary.sql reads only query_id, k and the measures, so the partition columns ride along
        summary = _with_partition_columns(summarize(table), self.partition).persist()
        return SparkUnit(self.partition, table, summary, self.warnings)

    def unpersist(self) -> None:
        self.per_query.unpersist()
        self.summary.unpersist()


def _with_partition_columns(frame: DataFrame, partition: Partition | None) -> DataFrame:
    """``frame`` with the partition's ``key`` columns (string values) first, as job.py does."""
    if partition is None:
        return frame
    from pyspark.sql import functions

    keys = [functions.lit(value).alias(key) for key, value in partition.as_dict().items()]
    return frame.select(*keys, *[column for column in frame.columns if column not in partition.as_dict()])


def evaluate_units(
    run: str,
    qrels: str | None,
    *,
    evaluation: Evaluation,
    partition_filters: Mapping[str, set[str]] | None = None,
    columns: Columns | None = None,
    spark: SparkSession | None = None,
    run_format: str | None = None,
    qrels_format: str | None = None,
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = rules.DEFAULT_WARN_RESULTS_OVER,
    missing_qrels_partition: str = "error",
) -> list[SparkUnit]:
    """Evaluate ``run`` as the other engines' batch job does: a hive-partitioned directory
    partition by partition (only those matching ``partition_filters``; a requested partition
    that does not exist is :class:`PartitionNotFound`), anything else as one unit.

    Only the chosen partition folders are given to Spark's reader, so no file of any other
    partition is listed or opened. Judgments are chosen as on the other engines
    (:func:`pipeline.io.partitions.judgments_partition`): the same partition's folder when
    they are partitioned like the run (a missing folder is an error unless
    ``missing_qrels_partition="whole"``), otherwise whole. Each unit is validated as on the other
    engines, and carries its warnings."""
    check_supported(evaluation_variables(evaluation))
    columns = columns or Columns()
    spark = spark or session()
    filters = dict(partition_filters or {})
    available = hive_partitions(spark, run)
    partitions = select_partitions(run, filters, available) if (available or filters) else []
    if not partitions:
        result = evaluate(
            run,
            qrels,
            evaluation=evaluation,
            columns=columns,
            spark=spark,
            run_format=run_format,
            qrels_format=qrels_format,
            allow_fractional_labels=allow_fractional_labels,
            warn_results_over=warn_results_over,
        )
        return [SparkUnit(None, result.per_query, result.summary, result.warnings)]
    # Every partition is read (schemas only) before any is validated, so that an unreadable
    # one fails the job at once; judgments used by several partitions are read once.
    qrels_inputs: dict[str, _Input] = {}
    qrels_partitions = hive_partitions(spark, qrels) if qrels is not None else []
    qrels_folders = [
        judgments_partition(partition, qrels, qrels_partitions, missing_qrels_partition) if qrels else None
        for partition in partitions  # every partition's judgments found before any is read
    ]
    inputs = []
    for partition, folder in zip(partitions, qrels_folders, strict=True):
        # a folder, whatever its name looks like
        run_input = _Input.read(spark, partition_path(run, partition), run_format or "parquet", "run")
        qrels_input = None
        if qrels is not None:
            qrels_path = partition_path(qrels, folder) if folder else qrels
            if qrels_path not in qrels_inputs:
                qrels_inputs[qrels_path] = _Input.read(spark, qrels_path, qrels_format, "qrels")
            qrels_input = qrels_inputs[qrels_path]
        inputs.append((partition, run_input, qrels_input))
    checks = (allow_fractional_labels, warn_results_over)
    results = [
        (partition, _evaluate_inputs(run_input, qrels_input, evaluation, columns, *checks))
        for partition, run_input, qrels_input in inputs
    ]
    return [SparkUnit.of(partition, result.per_query, result.warnings) for partition, result in results]


# --- outputs --------------------------------------------------------------------------------


def write(per_query_table: DataFrame, summary: DataFrame, out: str) -> list[str]:
    """Write ``OUT/per_query.parquet/`` and ``OUT/summary.parquet/``: see :func:`write_units`."""
    return write_units([SparkUnit(partition=None, per_query=per_query_table, summary=summary)], out)


def write_units(units: Sequence[SparkUnit], out: str) -> list[str]:
    """Write each unit as the other engines lay it out, ``OUT/[key=value/]per_query.parquet``
    and ``summary.parquet``, each a folder of part files written by Spark.

    Everything is first written by Spark under one staging folder ``OUT/_ndcg_staging_*``
    (Spark's readers skip ``_`` names); only when every table is complete are the folders
    renamed into place, replacing earlier outputs of the same units. A failed job leaves the
    previous outputs as they were. (Renames are atomic on local disks and HDFS; object stores
    copy instead.)"""
    from pyspark.errors import PySparkException

    if not units:
        return []
    spark = units[0].per_query.sparkSession
    token = uuid.uuid4().hex[:12]
    root = out.rstrip("/")
    staging = f"{root}/_ndcg_staging_{token}"
    filesystem, staging_path = _filesystem(spark, staging)
    placements = []
    try:
        for unit in units:
            folder = f"/{unit.partition}" if unit.partition else ""
            for name, frame in (("per_query", unit.per_query), ("summary", unit.summary)):
                staged, target = f"{staging}{folder}/{name}.parquet", f"{root}{folder}/{name}.parquet"
                try:
                    frame.write.mode("errorifexists").parquet(staged)
                except PySparkException as error:
                    raise UsageError(f"--out {target}: cannot write: {str(error).splitlines()[0]}") from None
                placements.append((staged, target))
        for staged, target in placements:
            _replace(spark, staged, target, token)
    finally:
        filesystem.delete(staging_path, True)
    return [target for _, target in placements]


def _replace(spark: SparkSession, staged: str, target: str, token: str) -> None:
    """Rename ``staged`` to ``target``; an existing ``target`` is moved aside first (Hadoop
    would move the new folder into it) and deleted once the new one is in place."""
    filesystem, target_path = _filesystem(spark, target)
    jvm_path = spark._jvm.org.apache.hadoop.fs.Path  # type: ignore[union-attr]
    staged_path = jvm_path(staged)
    filesystem.mkdirs(target_path.getParent())
    retired = None
    if filesystem.exists(target_path):
        retired = jvm_path(target_path.getParent(), f"_ndcg_retired_{target_path.getName()}_{token}")
        if not filesystem.rename(target_path, retired):
            raise UsageError(f"--out {target}: cannot move the previous output aside")
    if not filesystem.rename(staged_path, target_path):
        if retired is not None:
            filesystem.rename(retired, target_path)
        raise UsageError(f"--out {target}: cannot move the new output into place")
    if retired is not None:
        filesystem.delete(retired, True)
