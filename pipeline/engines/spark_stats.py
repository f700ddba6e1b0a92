"""The statistics validation needs of each input, measured by Spark; :mod:`pipeline.rules`
decides from them (see :func:`pipeline.engines.spark.check_inputs`).

Two Spark jobs per input pair when the inputs are valid: one aggregation per input (rows,
nulls per column, non-finite values, fractional labels, labels beyond the largest gain, and
the repeated (query_id, doc_id) pairs with the smallest of them, in one action), then one for
the warnings (every tally's count and first ids, in one action). Example rows are looked up
only when a rule fails.

pyspark is imported inside the functions, as in :mod:`pipeline.engines.spark`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline import rules
from pipeline.errors import InvalidInput
from pipeline.io.names import SUBTOPIC
from pipeline.io.read import DOC, LABEL, QUERY, SCORE
from pipeline.registry import Evaluation

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

INFINITY = float("inf")


def column_types(
    frame: DataFrame, columns: tuple[str, ...], *, unsigned_64: frozenset[str] = frozenset()
) -> dict[str, rules.ColumnType]:
    """The types of ``columns``, named as Polars names them so that messages read alike;
    ``unsigned_64``: the columns whose files hold a UINT64, which Spark reads as Decimal(20, 0)
    (an integer, as Polars reads it)."""
    from pyspark.sql import types

    found = {column: _column_type(frame.schema[column].dataType) for column in columns}
    for column in unsigned_64 & set(columns):
        if isinstance(frame.schema[column].dataType, types.DecimalType):
            found[column] = rules.ColumnType("UInt64", "integer")
    return found


def _column_type(data_type: Any) -> rules.ColumnType:
    from pyspark.sql import types

    integers = {types.ByteType: "Int8", types.ShortType: "Int16", types.IntegerType: "Int32", types.LongType: "Int64"}
    for spark_type, shown in integers.items():
        if isinstance(data_type, spark_type):
            return rules.ColumnType(shown, "integer")
    if isinstance(data_type, types.StringType):
        return rules.ColumnType("String", "string")
    if isinstance(data_type, types.FloatType):
        return rules.ColumnType("Float32", "float")
    if isinstance(data_type, types.DoubleType):
        return rules.ColumnType("Float64", "float")
    if isinstance(data_type, types.DecimalType):
        shown = f"Decimal(precision={data_type.precision}, scale={data_type.scale})"
        return rules.ColumnType(shown, "decimal", data_type.scale)
    named: dict[type, str] = {types.BooleanType: "Boolean", types.DateType: "Date", types.BinaryType: "Binary"}
    for other_type, shown in named.items():
        if isinstance(data_type, other_type):
            return rules.ColumnType(shown, "other")
    return rules.ColumnType(data_type.simpleString(), "other")


class SparkProbe:
    """The lookups of :class:`pipeline.rules.Probe` on one Spark input; the first duplicate
    comes with the statistics (:func:`input_stats`)."""

    def __init__(
        self,
        frame: DataFrame,
        name: str,
        types: dict[str, rules.ColumnType],
        bounds: tuple[rules.LabelBound, ...] = (),
        duplicate: tuple | None = None,
    ) -> None:
        self.frame, self.name, self.types, self.duplicate = frame, name, types, duplicate
        self.bounds = {bound.rule: bound for bound in bounds}

    def first_row(self, condition: rules.Condition) -> dict[str, object] | None:
        """Rows have no arrival order on Spark: "first" is the first Spark returns, which for
        one file read by one task is the first in the file."""
        rows = collect(self.name, self.frame.filter(self.where(condition)).limit(1))
        return rows[0].asDict() if rows else None

    def first_duplicate(self) -> tuple[object, ...] | None:
        return self.duplicate

    def where(self, condition: rules.Condition) -> Column:
        from pyspark.sql import functions

        if condition.kind == "unparsed":  # Spark reads Parquet only: every row parsed
            return functions.lit(False)
        assert condition.column is not None
        column = functions.col(condition.column)
        if condition.kind == "null":
            return column.isNull()
        if condition.kind == "value":
            return column.isNotNull()
        if condition.kind == "not_finite":
            return column.isNotNull() & ~finite(column)
        if condition.kind == "text":
            return column.isNotNull() & column.try_cast("double").isNull()
        if condition.kind == "fractional":
            return fractional(column, self.types[condition.column])
        if condition.kind == "inexact":
            test = inexact(column, self.types[condition.column])
            assert test is not None
            return test
        return over_bound(column, self.bounds[condition.kind])


def finite(column: Column) -> Column:
    from pyspark.sql import functions

    value = column.cast("double")
    return ~functions.isnan(value) & (functions.abs(value) != functions.lit(INFINITY))


def inexact(column: Column, column_type: rules.ColumnType) -> Column | None:
    """True on a score a double cannot hold exactly (:func:`pipeline.validate.inexact_score`),
    by the same test: an integer of 64 bits beyond 2^53 with more than 15 significant digits,
    a decimal with more than 15; None for a type that holds none."""
    from pyspark.sql import functions

    digits = functions.length(
        functions.regexp_replace(functions.regexp_replace(column.cast("string"), "[-.]", ""), "^0+|0+$", "")
    )
    many_digits = digits > functions.lit(rules.EXACT_DIGITS)
    if column_type.kind == "integer" and column_type.shown in ("Int64", "UInt64"):
        limit = functions.lit(rules.EXACT_INTEGER)
        return ((column > limit) | (column < -limit)) & many_digits
    if column_type.kind == "decimal":
        return many_digits
    return None


def fractional(column: Column, column_type: rules.ColumnType) -> Column:
    """True on a label with a fractional part; decimals in their own arithmetic."""
    from pyspark.sql import functions

    if column_type.kind == "decimal":
        return column != functions.floor(column)
    value = column.cast("double")
    # the remainder, not floor(): Spark's floor of a double is a BIGINT, which 1e300 overflows
    return finite(value) & (value % 1.0 != 0.0)


def over_bound(column: Column, bound: rules.LabelBound) -> Column:
    """True on a finite label beyond ``bound`` (see :class:`pipeline.rules.LabelBound`)."""
    from pyspark.sql import functions

    value = column.cast("double")
    beyond = finite(value) & (value > functions.lit(bound.largest_label))
    return beyond & ~value.isin(*bound.exempt) if bound.exempt else beyond


@dataclass(frozen=True)
class Measure:
    """What to measure of one input: its name, frame, value column and the label tests (the
    labels beyond each bound, by rule)."""

    name: str
    frame: DataFrame
    value_column: str
    fractional_test: Column | None = None
    over_bound_tests: dict[rules.LabelRule, Column] = field(default_factory=dict)
    inexact_test: Column | None = None


def measure(
    run: Measure, qrels: Measure, counts: DataFrame
) -> tuple[tuple[rules.InputStats, tuple | None], tuple[rules.InputStats, tuple | None], dict[str, int]]:
    """One action: each input's statistics with its smallest repeated (query_id, doc_id) and
    its count (or None), and the one-row ``counts`` of :func:`tally_counts`. When the action
    fails, each input is measured alone to name the one that cannot be read."""
    parts = [_aggregate(run, "run_"), _aggregate(qrels, "qrels_"), counts]
    try:
        (row,) = collect(f"{run.name} and {qrels.name}", parts[0].crossJoin(parts[1]).crossJoin(parts[2]))
    except InvalidInput:
        for one, prefix in ((run, "run_"), (qrels, "qrels_")):
            collect(one.name, _aggregate(one, prefix))
        raise
    values = row.asDict()
    measured = tuple(
        _stats(values, prefix, one.value_column, tuple(one.over_bound_tests))
        for one, prefix in ((run, "run_"), (qrels, "qrels_"))
    )
    return measured[0], measured[1], {code: values[code] for code in counts.columns}


def _aggregate(one: Measure, prefix: str) -> DataFrame:
    """One row: the input's statistics, its repeated pairs and smallest one, negative values."""
    from pyspark.sql import functions

    def count_if(test: Column | None) -> Column:
        return functions.count_if(test) if test is not None else functions.lit(0)

    value = functions.col(one.value_column)
    columns = (QUERY, DOC, one.value_column)
    measured = one.frame.agg(
        functions.count(functions.lit(1)).alias("rows"),
        *[count_if(functions.col(column).isNull()).alias(f"null_{column}") for column in columns],
        count_if(value.isNotNull() & ~finite(value)).alias("not_finite"),
        count_if(one.inexact_test).alias("inexact"),
        count_if(one.fractional_test).alias("fractional"),
        *[count_if(test).alias(rule) for rule, test in one.over_bound_tests.items()],
        *[
            functions.max(functions.when(test, value.cast("double"))).alias(f"{rule}_largest")
            for rule, test in one.over_bound_tests.items()
        ],
        count_if(value < 0).alias("negative"),
    )
    # judgments per subtopic: a document is judged once for each (query, subtopic)
    key = [QUERY, DOC, *([SUBTOPIC] if one.value_column == LABEL and SUBTOPIC in one.frame.columns else [])]
    pairs = one.frame.groupBy(*key).agg(functions.count(functions.lit(1)).alias("copies"))
    smallest = functions.min(functions.struct(*key, "copies"))
    repeated = pairs.filter(functions.col("copies") > 1).agg(
        functions.count(functions.lit(1)).alias("repeats"),
        # as the other engines name it: (query_id, doc_id, count[, subtopic])
        functions.when(
            smallest.isNotNull(),
            functions.struct(
                smallest[QUERY].alias(QUERY),
                smallest[DOC].alias(DOC),
                smallest["copies"].alias("copies"),
                *[smallest[SUBTOPIC].alias(SUBTOPIC) for _ in key[2:]],
            ),
        ).alias("first_duplicate"),
    )
    both = measured.crossJoin(repeated)
    return both.select(*(functions.col(column).alias(prefix + column) for column in both.columns))


def _stats(
    values: dict[str, Any], prefix: str, value_column: str, bound_rules: tuple[rules.LabelRule, ...]
) -> tuple[rules.InputStats, tuple | None]:
    stats = rules.InputStats(
        rows=values[prefix + "rows"],
        nulls={column: values[f"{prefix}null_{column}"] for column in (QUERY, DOC, value_column)},
        not_finite=values[prefix + "not_finite"],
        inexact=values[prefix + "inexact"],
        fractional=values[prefix + "fractional"],
        over_bound={
            rule: rules.OverBound(values[prefix + rule], values[f"{prefix}{rule}_largest"]) for rule in bound_rules
        },
        repeats=values[prefix + "repeats"],
        negative=values[prefix + "negative"],
    )
    duplicate = values[prefix + "first_duplicate"]
    return stats, (tuple(duplicate) if duplicate is not None else None)


def gain(label: Column, evaluation: Evaluation) -> Column:
    """The gain of each label, as :func:`pipeline.expressions.gain` and ``sql/ranking/judgments.sql``
    compute it."""
    from pyspark.sql import functions

    spec = evaluation.gain
    value = label.cast("double")
    if spec.kind == "binary":
        threshold = evaluation.relevance_threshold
        by_kind = (value > 0 if threshold is None else value >= threshold).cast("double")
    elif spec.kind == "exponential":
        by_kind = functions.pow(functions.lit(2.0), value) - 1.0
    else:
        by_kind = value
    mapped = by_kind
    for level, level_gain in reversed(spec.levels):
        mapped = functions.when(value == level, functions.lit(float(level_gain))).otherwise(mapped)
    return functions.when(value.isNull() | (value < 0), functions.lit(0.0)).otherwise(mapped)


def _per_query(run: DataFrame, qrels: DataFrame, evaluation: Evaluation) -> DataFrame:
    """Every query of either input: its results in the run, whether it is in each input, and
    whether any of its judgments gains more than 0 under the evaluation."""
    from pyspark.sql import functions

    # the results --retrieved-scores positive leaves out of the ranking (rules.warnings says so); under
    # max-score (first is refused on Spark) a result is the copy kept, as pipeline.validate counts it
    if evaluation.duplicates == "max-score":
        run = run.groupBy(QUERY, DOC).agg(functions.max(SCORE).alias(SCORE))
    positive_only = evaluation.retrieved_scores == "positive"
    not_retrieved = functions.count_if(functions.col(SCORE) <= 0) if positive_only else functions.lit(0)
    per_run = run.groupBy(QUERY).agg(
        functions.count(functions.lit(1)).alias("results"),
        not_retrieved.alias("not_retrieved"),
        functions.lit(True).alias("in_run"),
    )
    per_qrels = qrels.groupBy(QUERY).agg(
        functions.bool_or(gain(functions.col(LABEL), evaluation) > 0).alias("any_relevant"),
        functions.lit(True).alias("in_qrels"),
    )
    return per_run.join(per_qrels, on=QUERY, how="full")


def _query_tests(warn_results_over: int | None) -> dict[str, Column]:
    """Which rows of :func:`_per_query` each warning about queries counts."""
    from pyspark.sql import functions

    over = functions.col("results") > warn_results_over if warn_results_over is not None else functions.lit(False)
    return {
        "queries_only_in_run": functions.col("in_qrels").isNull(),
        "queries_only_in_qrels": functions.col("in_run").isNull(),
        "queries_without_relevant": functions.col("in_qrels") & ~functions.col("any_relevant"),
        "results_over_limit": functions.col("in_run") & over,
        "results_not_retrieved": functions.col("in_run") & (functions.col("not_retrieved") > 0),
    }


def tally_counts(run: DataFrame, qrels: DataFrame, evaluation: Evaluation, warn_results_over: int | None) -> DataFrame:
    """One row: how many queries each warning about queries concerns (ids aligned already);
    the count of negative labels comes with the qrels' statistics."""
    from pyspark.sql import functions

    tests = _query_tests(warn_results_over)
    return _per_query(run, qrels, evaluation).agg(
        *(functions.count_if(test).alias(code) for code, test in tests.items())
    )


def tallies(
    run: DataFrame,
    qrels: DataFrame,
    evaluation: Evaluation,
    warn_results_over: int | None,
    counts: dict[str, int],
    name: str,
) -> dict[str, rules.Tally]:
    """Each warning's count and first ids, sorted as text: one action, for the warnings that
    have any (none when no count is above 0)."""
    from pyspark.sql import functions

    both = _per_query(run, qrels, evaluation)
    sets = {code: both.filter(test).select(QUERY) for code, test in _query_tests(warn_results_over).items()}
    sets["negative_labels"] = qrels.filter(functions.col(LABEL) < 0).select(
        functions.concat_ws("/", functions.col(QUERY).cast("string"), functions.col(DOC).cast("string"))
    )
    parts = [
        ids.select(functions.lit(code).alias("code"), functions.col(ids.columns[0]).cast("string").alias("id"))
        .orderBy("id")
        .limit(rules.WARNING_EXAMPLES)
        for code, ids in sets.items()
        if counts.get(code)
    ]
    if not parts:
        return {}
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    examples: dict[str, list[str]] = {}
    for row in collect(name, union):
        examples.setdefault(row["code"], []).append(row["id"])
    return {code: rules.Tally(counts[code], tuple(examples.get(code, ()))) for code in counts if counts[code]}


def collect(name: str, frame: DataFrame) -> list:
    """Run one action; a failure to read is the input's fault (exit 3), as on Polars."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        return frame.collect()
    except Py4JJavaError as error:
        message = str(error.java_exception.getMessage()).strip().splitlines()
    except PySparkException as error:
        message = str(error).strip().splitlines()
    raise InvalidInput(f"{name}: cannot read: {message[0] if message else 'Spark failed'}") from None
