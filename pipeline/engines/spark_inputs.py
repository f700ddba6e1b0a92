"""The Spark engine's inputs: Spark reads them, measures them, and :mod:`pipeline.rules` decides.

The other engines read with Polars and validate with :mod:`pipeline.validate`; here Spark reads
the same files (:mod:`pipeline.io.hadoop`), takes the same columns under the same names, and
measures each input in one Spark job (:mod:`pipeline.engines.spark_stats`) for the same rules,
so exit codes, messages and warnings are those of every engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline import rules
from pipeline.errors import InvalidInput
from pipeline.io import hadoop
from pipeline.io.names import SUBTOPIC
from pipeline.io.read import DOC, LABEL, QUERY, SCORE, Columns, missing_columns_message
from pipeline.registry import Evaluation, InputChecks

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


# The metadata key of a column that holds unsigned integers, which Spark has no type for (a
# Polars frame's UInt64 column handed to Spark as Decimal(20, 0))
UNSIGNED = "ndcg_unsigned_integer"


@dataclass(frozen=True)
class SparkInput:
    """A run or qrels as Spark read it, with the name its error messages use."""

    frame: DataFrame
    name: str

    @classmethod
    def read(
        cls, spark: SparkSession, value: str | Sequence[str] | DataFrame, format: str | None, role: str
    ) -> SparkInput:
        name = _name(value, role)
        return cls(frame=hadoop.read_parquet(spark, value, format, name), name=name)


def _name(value: object, role: str) -> str:
    if hadoop.is_frame(value):
        return f"{role} DataFrame"
    return value if isinstance(value, str) else ", ".join(map(str, value))  # type: ignore[call-overload]


def validated(
    run: SparkInput,
    qrels: SparkInput | None,
    evaluation: Evaluation,
    columns: Columns,
    checks: InputChecks,
) -> SparkChecked:
    """The inputs under their canonical names (as the other engines read them), validated."""
    inline = qrels is None
    if inline:  # the run's four columns named in one message, as the other engines read them
        wanted = {QUERY: columns.query, DOC: columns.doc, SCORE: columns.score, LABEL: columns.label}
        _require_columns(run.frame, wanted, run.name, "run (inline labels)")
    qrels = qrels or SparkInput(frame=run.frame, name=f"{run.name} (inline labels)")
    # each input's own names (inline labels: the run's, which are then the only names)
    columns = columns.with_inline_labels() if inline else columns
    in_run, in_qrels = columns.of("run"), columns.of("qrels")
    # as the other engines read them: inline labels are the run's three columns, and the run
    # keeps its other columns but the label
    weighted, judged = run.frame, qrels.frame
    if evaluation.doc_weight_col is not None:  # by the file's names, as the other engines check them
        if evaluation.doc_weights_in == "run":
            wanted = {QUERY: in_run.query, DOC: in_run.doc, SCORE: in_run.score}
            _require_columns(run.frame, wanted, run.name, "run (inline labels)" if inline else "run")
            weighted = _document_weights(run.frame, evaluation.doc_weight_col, run.name, in_run)
        elif inline:
            from pipeline.weights import inline_qrels_weights_message

            raise InvalidInput(inline_qrels_weights_message(run.name))
        else:
            wanted = {QUERY: in_qrels.query, DOC: in_qrels.doc, LABEL: in_qrels.label}
            _require_columns(qrels.frame, wanted, qrels.name, "qrels")
            judged = _document_weights(qrels.frame, evaluation.doc_weight_col, qrels.name, in_qrels, role="qrels")
    run_frame = _canonical(
        weighted,
        {in_run.query: "query_id", in_run.doc: "doc_id", in_run.score: "score"},
        run.name,
        role="run",
        drop=(in_run.label,) if inline else (),
    )
    qrels_frame = _canonical(
        judged,
        {in_qrels.query: "query_id", in_qrels.doc: "doc_id", in_qrels.label: "relevance"},
        qrels.name,
        role="qrels",
        others=not inline,
    )
    run_ids = {in_run.query: QUERY, in_run.doc: DOC}
    qrels_ids = {in_qrels.query: QUERY, in_qrels.doc: DOC}
    unsigned: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
    sides = ((run.frame, run_ids), (qrels.frame, qrels_ids))
    if any(_read_from_uint64(frame, name) for frame, ids in sides for name in ids):
        unsigned = (_parquet_unsigned(run.frame, run_ids), _parquet_unsigned(qrels.frame, qrels_ids))
    return check_inputs(
        run_frame,
        qrels_frame,
        run_name=run.name,
        qrels_name=qrels.name,
        columns=columns,
        checks=checks,
        evaluation=evaluation,
        unsigned_ids=unsigned,
    )


def _document_weights(run: DataFrame, column: str, run_name: str, names: Columns, role: str = "run") -> DataFrame:
    """The run (under the file's names) with its weight ``column`` as ``doc_weight`` (a double),
    checked by the other engines' rules in their words (:func:`pipeline.weights.document_weights`):
    one Spark job counts each problem, a second reads the first row of the first problem found.
    The column stays as it is: read as another too (the inline labels), it is read as that.
    ``role`` "qrels": the judgments' weights (``doc_weights_in`` qrels), the label read as another."""
    from pyspark.sql import functions

    from pipeline.engines import spark_stats as stats
    from pipeline.expressions import DOC_WEIGHT
    from pipeline.weights import DOCUMENT_WEIGHT_PROBLEMS, bad_weights_message, read_as_another, weight_column_problem

    refused_names = read_as_another(names, role)
    shown = None
    if column in run.columns and column not in refused_names:
        found = stats.column_types(run, (column,))[column]
        shown = None if found.kind in ("integer", "float", "decimal") else found.shown
    problem = weight_column_problem(run_name, column, run.columns, shown, refused_names)
    if problem:
        raise InvalidInput(problem)
    weight = functions.col(quoted(column)).cast("double")
    tests = {
        "a null weight": weight.isNull(),
        "a NaN weight": functions.isnan(weight),
        "an infinite weight": functions.abs(weight) == functions.lit(float("inf")),
        "a negative weight": weight < 0,  # NaN sorts above every number in Spark, as it does not count here
    }
    assert tuple(tests) == tuple(problem for problem, _ in DOCUMENT_WEIGHT_PROBLEMS)
    (counts,) = stats.collect(
        run_name, run.select(*(functions.count_if(test).alias(str(i)) for i, test in enumerate(tests.values())))
    )
    for i, (problem, test) in enumerate(tests.items()):
        if counts[i]:
            first = run.filter(test).select(
                functions.col(quoted(names.query)).cast("string").alias("query"),
                functions.col(quoted(names.doc)).cast("string").alias("doc"),
                weight.alias("weight"),
            )
            (row,) = stats.collect(run_name, first.limit(1))
            raise InvalidInput(bad_weights_message(run_name, column, problem, counts[i], row.asDict(), role))
    return run.withColumn(DOC_WEIGHT, weight)


def _read_from_uint64(frame: DataFrame, name: str) -> bool:
    """Whether Spark's type of the column ``name`` is the one it reads a Parquet UINT64 as,
    Decimal(20, 0) (Spark has no unsigned integer; a decimal of that type is refused as an id
    on every engine, so the files' own types are read only then)."""
    from pyspark.sql import types

    if name not in frame.columns:
        return False
    data_type = frame.schema[name].dataType
    return isinstance(data_type, types.DecimalType) and (data_type.precision, data_type.scale) == (20, 0)


def _parquet_unsigned(frame: DataFrame, ids: dict[str, str]) -> frozenset[str]:
    """Of the id columns ``ids`` (a file's name -> the canonical one), those every Parquet file
    of ``frame`` holds as unsigned integers (UINT8 to UINT64), under their canonical names. The
    other engines read them as unsigned integers (Polars' UInt64, which joins a UInt64 of the
    other input as a number and a signed one as text); Spark reads a UINT64 as Decimal(20, 0)
    and the narrower ones as wider signed integers, so only the files' footers tell them apart
    from a DECIMAL(20, 0) or a signed column. A frame not read from files has those its
    metadata marks (a Polars frame's unsigned columns, see pipeline.engines.spark's _as_spark)."""
    marked = frozenset(ids[name] for name in ids if name in frame.columns and frame.schema[name].metadata.get(UNSIGNED))
    files = frame.inputFiles()
    if not files:
        return marked
    spark = frame.sparkSession
    jvm: Any = spark._jvm
    configuration = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
    # local files without Hadoop's checksum layer, as they are read (pipeline.io.hadoop's
    # _literal_reader): its ".name.crc" path cannot be parsed for a name holding ':'
    configuration.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    configuration.set("fs.file.impl.disable.cache", "true")
    unsigned = {name for name in ids if name in frame.columns}
    for file in files:
        # the URI Spark lists, not a path re-parsed from text: a name may hold ':' or '['
        location = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(file))
        source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(location, configuration)
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
        try:
            schema = reader.getFooter().getFileMetaData().getSchema()
        finally:
            reader.close()
        unsigned = {name for name in unsigned if _is_unsigned(schema, name)}
        if not unsigned:
            break
    return marked | frozenset(ids[name] for name in unsigned)


def _is_unsigned(schema: Any, name: str) -> bool:
    """Whether the Parquet (parquet-mr) ``schema`` holds ``name`` as an unsigned integer."""
    if not schema.containsField(name):
        return False
    field = schema.getType(name)
    if not field.isPrimitive():
        return False
    annotation = field.getLogicalTypeAnnotation()
    return (
        annotation is not None
        and annotation.getClass().getSimpleName() == "IntLogicalTypeAnnotation"
        and not annotation.isSigned()
    )


def _require_columns(frame: DataFrame, wanted: dict[str, str], name: str, role: str) -> None:
    """The other engines' message (pipeline.io.read) for columns that are not there."""
    found = frame.columns
    missing = {canonical: given for canonical, given in wanted.items() if given not in found}
    if missing:
        raise InvalidInput(f"{name}: {missing_columns_message(missing, found, role=role)}")


def _canonical(
    frame: DataFrame, wanted: dict[str, str], name: str, *, role: str, others: bool = True, drop: Sequence[str] = ()
) -> DataFrame:
    """The ``wanted`` columns under their canonical names, first, then (``others``) the user's
    other columns but ``drop``, as pipeline/io/read.py reads them for the other engines (they
    show in validation's example rows). A user column that carries a canonical name it was not
    given would shadow the renamed one, and is left out."""
    from pyspark.sql import functions

    _require_columns(frame, {canonical: given for given, canonical in wanted.items()}, name, role)
    found = frame.columns
    kept = [c for c in found if c not in wanted and c not in wanted.values() and c not in drop] if others else []

    def column(name: str) -> Any:
        return functions.col(quoted(name))

    return frame.select(
        *(column(source).alias(target) for source, target in wanted.items()), *(column(c) for c in kept)
    )


@dataclass(frozen=True)
class SparkChecked:
    """Validated inputs, ids of one type on both sides, and the warnings found on the way."""

    run: DataFrame
    qrels: DataFrame
    warnings: tuple[rules.ValidationWarning, ...] = ()
    # the run's name in messages (the list weights' totals under --doc-weight-col)
    run_name: str = "run"


def check_inputs(
    run: DataFrame,
    qrels: DataFrame,
    *,
    run_name: str,
    qrels_name: str,
    columns: Columns | None = None,
    checks: InputChecks | None = None,
    evaluation: Evaluation | None = None,
    unsigned_ids: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
) -> SparkChecked:
    """The other engines' checks, exit codes and messages: Spark measures each input
    (:mod:`pipeline.engines.spark_stats`: one job per input, one for the warnings) and
    :mod:`pipeline.rules` decides. ``run`` has ``query_id, doc_id, score`` and ``qrels``
    ``query_id, doc_id, relevance``, each maybe followed by other columns (shown in example
    rows); ``columns`` gives the user's names for messages. ``evaluation`` (default: the
    defaults) gives the duplicate policy and the gain. ``unsigned_ids`` are the run's and the
    qrels' id columns their files hold as unsigned integers (a UINT64 is a Decimal(20, 0) here,
    read as an integer id). Ids of different types on the two sides are aligned as the other
    engines align them (:func:`pipeline.validate.id_casts`): BIGINT when both are integers,
    DECIMAL(20, 0) when a UINT64 meets an unsigned integer, else STRING."""
    from pyspark.sql import functions

    from pipeline.engines import spark_stats as stats

    evaluation = evaluation or Evaluation()
    checks = checks or InputChecks()
    policy = rules.Policy(
        columns=columns or Columns(),
        checks=checks,
        run_duplicates=evaluation.duplicates,
        evaluation=evaluation,
    )
    bounds = rules.label_bounds(evaluation)
    measured: dict[str, rules.Measured] = {}
    probes: dict[str, stats.SparkProbe] = {}
    sides = (
        (run, run_name, "run", "score", unsigned_ids[0]),
        (qrels, qrels_name, "qrels", "relevance", unsigned_ids[1]),
    )
    for frame, name, role, value_column, unsigned in sides:
        types = stats.column_types(frame, ("query_id", "doc_id", value_column), unsigned_64=unsigned)
        probes[role] = stats.SparkProbe(frame, name, types, bounds if role == "qrels" else ())
        measured[role] = rules.Measured(name, role, types, probes[role])  # type: ignore[arg-type]
        rules.check_types(measured[role], policy)
    label, label_type = functions.col("relevance"), measured["qrels"].types["relevance"]
    fractional = stats.fractional(label, label_type) if rules.counts_fractional(label_type, policy) else None
    # ids aligned from the schemas alone, so that the warnings' counts join in the same job
    aligned = _aligned_ids(run, qrels, unsigned_ids)
    (run_stats, probes["run"].duplicate), (qrels_stats, probes["qrels"].duplicate), counts = stats.measure(
        stats.Measure(
            run_name, run, "score", inexact_test=stats.inexact(functions.col("score"), measured["run"].types["score"])
        ),
        stats.Measure(
            qrels_name,
            qrels,
            "relevance",
            fractional_test=fractional,
            over_bound_tests={bound.rule: stats.over_bound(label, bound) for bound in bounds},
        ),
        stats.tally_counts(*aligned, evaluation, checks.warn_results_over),
    )
    rules.check_stats(measured["run"], run_stats, measured["qrels"], qrels_stats, policy)
    counts["negative_labels"] = qrels_stats.negative
    tallies = stats.tallies(*aligned, evaluation, checks.warn_results_over, counts, f"{run_name} and {qrels_name}")
    run, qrels = aligned
    if evaluation.doc_weight_col is not None and evaluation.doc_weights_in == "qrels":
        run, qrels = _judged_weights(run, qrels, evaluation, run_name, qrels_name)
    if SUBTOPIC in qrels.columns:
        # one type on every engine: an integer subtopic 3 is the text "3", as in a TREC file
        qrels = qrels.withColumn(SUBTOPIC, functions.col(SUBTOPIC).cast("string"))
    found = rules.warnings(tallies, run_name=run_name, qrels_name=qrels_name, policy=policy)
    return SparkChecked(run, qrels, found, run_name)


def _judged_weights(
    run: DataFrame, qrels: DataFrame, evaluation: Evaluation, run_name: str, qrels_name: str
) -> tuple[DataFrame, DataFrame]:
    """:func:`pipeline.weights.judged_weights` in Spark, in its words: each result weighs its
    judgment's weight, or ``unjudged_weight``; one job counts the documents whose rows disagree and
    the results without a judgment, a second reads the first of the first problem found."""
    from pyspark.sql import functions

    from pipeline.engines import spark_stats as stats
    from pipeline.expressions import DOC_WEIGHT
    from pipeline.weights import disagreeing_weights_message, unweighted_results_message

    column, weight, ids = str(evaluation.doc_weight_col), functions.col(DOC_WEIGHT), ["query_id", "doc_id"]
    judged = qrels.groupBy(*ids).agg(functions.min(weight).alias("low"), functions.max(weight).alias("high"))
    differing = judged.filter(functions.col("low") != functions.col("high"))
    weighted = run.drop(DOC_WEIGHT).join(judged.select(*ids, functions.col("low").alias(DOC_WEIGHT)), ids, "left")
    unweighted = weighted.filter(weight.isNull()) if evaluation.unjudged_weight is None else weighted.limit(0)
    (counts,) = stats.collect(
        qrels_name,
        differing.agg(functions.count(functions.lit(1)).alias("differing")).crossJoin(
            unweighted.agg(functions.count(functions.lit(1)).alias("unweighted"))
        ),
    )
    # the first by its ids as text, as the other engines order them
    shown = [functions.col(name).cast("string").alias(name) for name in ids]
    if counts["differing"]:
        (row,) = stats.collect(qrels_name, differing.select(*shown, "low", "high").orderBy(*ids).limit(1))
        first = {"query": row["query_id"], "doc": row["doc_id"], "low": row["low"], "high": row["high"]}
        raise InvalidInput(disagreeing_weights_message(qrels_name, column, counts["differing"], first))
    if counts["unweighted"]:
        (row,) = stats.collect(run_name, unweighted.select(*shown).orderBy(*ids).limit(1))
        first = {"query": row["query_id"], "doc": row["doc_id"]}
        raise InvalidInput(unweighted_results_message(run_name, qrels_name, column, counts["unweighted"], first))
    if evaluation.unjudged_weight is not None:
        weighted = weighted.withColumn(
            DOC_WEIGHT, functions.coalesce(weight, functions.lit(evaluation.unjudged_weight))
        )
    return weighted, qrels.drop(DOC_WEIGHT)


def _aligned_ids(
    run: DataFrame, qrels: DataFrame, unsigned_ids: tuple[frozenset[str], frozenset[str]]
) -> tuple[DataFrame, DataFrame]:
    from pyspark.sql import functions, types

    for column in ("query_id", "doc_id"):
        left, right = run.schema[column].dataType, qrels.schema[column].dataType
        if left == right:
            continue
        unsigned = [column in unsigned_ids[0], column in unsigned_ids[1]]
        # a UINT64 (Decimal(20, 0) here, only when its files say so) is an integer id
        integers = all(
            isinstance(side, types.IntegralType) or (isinstance(side, types.DecimalType) and is_unsigned)
            for side, is_unsigned in zip((left, right), unsigned, strict=True)
        )
        uint64 = isinstance(left, types.DecimalType) or isinstance(right, types.DecimalType)
        if integers and uint64:
            # as Polars: a UINT64 beside an unsigned integer stays a number (DECIMAL(20, 0) holds
            # every UINT64); beside a signed one, text, which alone holds both ranges exactly
            common = "decimal(20,0)" if all(unsigned) else "string"
        else:
            common = "bigint" if integers else "string"
        run = run.withColumn(column, functions.col(column).cast(common))
        qrels = qrels.withColumn(column, functions.col(column).cast(common))
    return run, qrels


def quoted(name: str) -> str:
    """A column name as a Spark SQL identifier: in backticks, a backtick in it doubled (a name
    with dots, spaces or backticks is read as one column, never a path into a struct)."""
    return "`" + name.replace("`", "``") + "`"
