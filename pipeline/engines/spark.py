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

import math
import os
import shutil
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from pipeline import rules
from pipeline.engines.spark_inputs import SparkChecked, SparkInput, validated
from pipeline.errors import UsageError, install_hint
from pipeline.expressions import TIE_BOUNDS_PER_QUERY, TIE_BOUNDS_SUMMARY
from pipeline.io import hadoop
from pipeline.io.read import Columns, Source
from pipeline.spec import COMPANION_MEASURES, SQL_VARIABLES, Evaluation, spark_refusals
from pipeline.sql_files import PER_QUERY_STEPS, VARIABLES, evaluation_variables, per_query_steps, sql_file

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import DataFrame, SparkSession

    from pipeline.inputs import Inputs

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
    if not submitted:
        # Spark's progress bars only where a person watches stderr, as on every engine (a
        # scheduler's log would fill with them, on a cluster master too)
        builder = builder.config("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
    if master is not None:
        builder = builder.master(master)
    elif not submitted:
        builder = builder.master("local[*]").config("spark.ui.enabled", "false")
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
    # the SQL's columns are fixed: the companion measures not asked for are null, and so are
    # the tie bounds without tie_bounds
    table = table.drop(*(name for name in COMPANION_MEASURES if name not in evaluation.companions))
    return table if evaluation.tie_bounds else table.drop(*TIE_BOUNDS_PER_QUERY)


def summarize(per_query_table: DataFrame) -> DataFrame:
    """The summary ``k, queries, cg, dcg, idcg, ndcg`` computed by ``sql/summary.sql``."""
    from pyspark.sql import functions

    missing = [column for column in TIE_BOUNDS_PER_QUERY if column not in per_query_table.columns]
    types = {"ndcg_min": "double", "ndcg_max": "double", "ties_straddle_k": "boolean"}
    unasked = [name for name in COMPANION_MEASURES if name not in per_query_table.columns]
    types.update(dict.fromkeys(unasked, "double"))
    complete = per_query_table.withColumns(
        {column: functions.lit(None).cast(types[column]) for column in (*missing, *unasked)}
    )
    with _private_views({"per_query": complete}) as tables:
        summary = _run_query(per_query_table.sparkSession, "summary.sql", {}, tables).drop(*unasked)
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
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = rules.DEFAULT_WARN_RESULTS_OVER,
) -> SparkResult:
    """Validate and evaluate Parquet paths (files, directories, globs, hive datasets) or
    Spark DataFrames; ``qrels=None`` reads inline labels from the run. Validation is the other
    engines' (:func:`pipeline.engines.spark_inputs.check_inputs`); its warnings are in the
    result. The tables stay in Spark, lazy."""
    from pipeline.inputs import Inputs

    checks = (allow_fractional_labels, warn_results_over)
    inputs = Inputs(run, qrels, columns or Columns(), run_format, qrels_format, *checks)
    checked = load(inputs, evaluation, spark=spark)
    table = per_query(checked.run, checked.qrels, evaluation)
    return SparkResult(per_query=table, summary=summarize(table), evaluation=evaluation, warnings=checked.warnings)


def load(
    inputs: Inputs, evaluation: Evaluation, *, master: str | None = None, spark: SparkSession | None = None
) -> SparkChecked:
    """Read (Parquet paths or Spark DataFrames) and validate as the other engines do: the
    Spark engine's :meth:`pipeline.engines.Engine.load`."""
    import polars as pl

    for value in (inputs.run, inputs.qrels):
        if isinstance(value, (pl.LazyFrame, pl.DataFrame, Source)):
            raise UsageError("the spark engine takes Parquet paths or Spark DataFrames, not Polars frames")
    check_supported(evaluation_variables(evaluation))
    given = (inputs.run, inputs.qrels)
    spark = spark or next((v.sparkSession for v in given if hadoop.is_frame(v)), None) or session(master)  # type: ignore[union-attr]
    run = SparkInput.read(spark, inputs.run, inputs.run_format, "run")
    qrels = None if inputs.qrels is None else SparkInput.read(spark, inputs.qrels, inputs.qrels_format, "qrels")
    checks = (inputs.allow_fractional_labels, inputs.warn_results_over)
    return validated(run, qrels, evaluation, inputs.columns, *checks)


def compute(checked: SparkChecked, evaluation: Evaluation) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The per-query table, computed once, and its summary, as Polars frames.

    The table is checkpointed before it is summarised, so the summary is planned over its rows
    and not over ``sql/per_query.sql`` a second time (that planning took about 21 s of 50 s
    on the sample; caching the table did not spare it)."""
    table = per_query(checked.run, checked.qrels, evaluation).localCheckpoint(eager=True)
    return _to_polars(table), _to_polars(summarize(table))


def _to_polars(frame: DataFrame) -> pl.DataFrame:
    import polars as pl

    table = pl.from_arrow(frame.toArrow())
    assert isinstance(table, pl.DataFrame)
    return table
