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
from pipeline.io.read import DOC, LABEL, QUERY, SCORE, Columns, missing_columns_message
from pipeline.spec import Evaluation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


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
    allow_fractional_labels: bool,
    warn_results_over: int | None,
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
    run_frame = _canonical(
        run.frame,
        {in_run.query: "query_id", in_run.doc: "doc_id", in_run.score: "score"},
        run.name,
        role="run",
        drop=(in_run.label,) if inline else (),
    )
    qrels_frame = _canonical(
        qrels.frame,
        {in_qrels.query: "query_id", in_qrels.doc: "doc_id", in_qrels.label: "relevance"},
        qrels.name,
        role="qrels",
        others=not inline,
    )
    return check_inputs(
        run_frame,
        qrels_frame,
        run_name=run.name,
        qrels_name=qrels.name,
        columns=columns,
        allow_fractional_labels=allow_fractional_labels,
        warn_results_over=warn_results_over,
        evaluation=evaluation,
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
        return functions.col("`" + name.replace("`", "``") + "`")

    return frame.select(
        *(column(source).alias(target) for source, target in wanted.items()), *(column(c) for c in kept)
    )


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
