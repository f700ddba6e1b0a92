"""The engines by name: :data:`ENGINES`. Each has one interface (:class:`Engine`).

An engine reads and validates :class:`~pipeline.inputs.Inputs` its own way (:meth:`Engine.load`:
Polars reads for the Polars and DuckDB engines, Spark for Spark; the rules are the same,
:mod:`pipeline.rules`), then turns the validated inputs into the per-query table and the summary
(:meth:`Engine.compute`), both brought back as Polars frames. Everything else (units, groups,
writers, manifests) is the job's (:mod:`pipeline.job`), the same for every engine.

This is the only place that tells engines apart. The engines' modules are imported when an engine
is used, not before: DuckDB costs a Polars-only run a tenth of a second, pyspark more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pipeline.errors import InvalidInput, OutOfMemory, UsageError, first_line
from pipeline.io import fs
from pipeline.io.objects import filesystem_for
from pipeline.registry import Evaluation

if TYPE_CHECKING:
    import polars as pl

    from pipeline.inputs import Inputs, Validated

T = TypeVar("T")


@dataclass(frozen=True)
class Execution:
    """How an engine runs, not what it computes: DuckDB's threads, the memory limit of the
    Polars and DuckDB engines (out of core beyond it), the Spark master. The ``execution``
    options of :data:`pipeline.registry.OPTIONS`, by their names."""

    threads: int | None = None
    memory_limit: str | None = None
    spark_master: str | None = None


class Engine(Protocol):
    name: str
    # evaluates hash buckets of Polars-read inputs one by one under a memory limit (pipeline.units)
    out_of_core: bool
    # takes the fronts' inputs as given (Spark DataFrames), not converted to Polars frames
    native_frames: bool

    def load(self, inputs: Inputs, evaluation: Evaluation, execution: Execution) -> Any:
        """Read and validate: an object with the validation's ``warnings``."""
        ...

    def compute(
        self, validated: Any, evaluation: Evaluation, execution: Execution
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The per-query table and its summary."""
        ...

    def compute_units(
        self, validated: Sequence[Any], evaluation: Evaluation, execution: Execution
    ) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
        """:meth:`compute` of several units (a job's partitions), each unit's tables as it alone
        gives them: one by one, or (Spark) in one statement."""
        ...

    def per_query_plan(self, validated: Any, evaluation: Evaluation, execution: Execution) -> pl.LazyFrame: ...

    def summarize(self, per_query_table: pl.DataFrame) -> pl.DataFrame:
        """The summary of a per-query table, as :meth:`compute` sums it (same bits)."""
        ...

    def list_weight_sums(self, validated: Any, evaluation: Evaluation) -> pl.DataFrame:
        """The sums of TF-Ranking's list weights over the validated run (``--doc-weight-col``):
        :func:`pipeline.weights.list_weight_sums`."""
        ...

    def memory_floor(self, evaluation: Evaluation, execution: Execution) -> int:
        """Bytes the engine takes to evaluate whatever the run's size (its memory limit counts
        them before the run's rows: :func:`pipeline.units.bucket_count`)."""
        ...

    def filesystem(self, path: str, execution: Execution) -> fs.FileSystem:
        """Where ``path``'s partitions are listed."""
        ...

    def check_job(self, job: Any) -> None:
        """Refuse the job's options this engine cannot honour (exit 2)."""
        ...

    def writes(self, out: str) -> bool:
        """Whether the job's writer (:func:`pipeline.io.write.publish`) writes ``out``; else
        :meth:`write_remote` does."""
        ...

    def write_remote(self, out: str, tables: list[tuple[str, dict[str, pl.DataFrame]]], execution: Execution) -> None:
        """Write ``(relative folder, {name: table})`` under a non-local ``out`` (Parquet)."""
        ...


_OUT_OF_MEMORY = (
    "out of memory in the {engine} engine{detail}; nothing was written. Give it more room with "
    "--memory-limit (e.g. --memory-limit 8GB), use fewer --threads, or evaluate fewer partitions at once"
)


def out_of_memory(engine: Engine, detail: str) -> OutOfMemory:
    """The error of an engine out of memory: exit 1, nothing written, what to do."""
    label = {"duckdb": "DuckDB", "polars": "Polars"}.get(engine.name, engine.name)
    return OutOfMemory(_OUT_OF_MEMORY.format(engine=label, detail=detail))


class _PolarsRead:
    """Engines over inputs read and validated by Polars (:mod:`pipeline.inputs`)."""

    name: str
    out_of_core = True
    native_frames = False

    def load(self, inputs: Inputs, evaluation: Evaluation, execution: Execution) -> Validated:
        from pipeline.inputs import load

        return load(inputs, evaluation)

    def filesystem(self, path: str, execution: Execution) -> fs.FileSystem:
        return filesystem_for(path)

    # each engine's own (PolarsEngine, DuckDBEngine)
    compute: Callable[[Validated, Evaluation, Execution], tuple[pl.DataFrame, pl.DataFrame]]

    def compute_units(
        self, validated: Sequence[Validated], evaluation: Evaluation, execution: Execution
    ) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
        # each unit's statement or plan is made in milliseconds: nothing to share
        return [self.compute(unit, evaluation, execution) for unit in validated]

    def check_job(self, job: Any) -> None:
        pass

    def list_weight_sums(self, validated: Validated, evaluation: Evaluation) -> pl.DataFrame:
        from pipeline.weights import list_weight_sums

        return list_weight_sums(validated.checked.run, validated.checked.qrels, evaluation)

    def memory_floor(self, evaluation: Evaluation, execution: Execution) -> int:
        # Polars has no cap of its own: the bytes per run row are measured over its whole use
        return 0

    def writes(self, out: str) -> bool:
        return fs.is_local(out) or fs.is_object_store(out)

    def write_remote(self, out: str, tables: list[tuple[str, dict[str, pl.DataFrame]]], execution: Execution) -> None:
        raise UsageError(
            f"--out {out}: the {self.name} engine writes to local folders and object stores "
            f"({', '.join(s + '://' for s in fs.OBJECT_STORE_SCHEMES if s != 'hf')})"
        )


class PolarsEngine(_PolarsRead):
    name = "polars"

    def per_query_plan(self, validated: Validated, evaluation: Evaluation, execution: Execution) -> pl.LazyFrame:
        """The Polars engine's plan, given the distinct query ids validation counted."""
        from pipeline.engines import polars as polars_engine

        checked = validated.checked
        return polars_engine.per_query(
            checked.run,
            checked.qrels,
            evaluation,
            run_queries=checked.run_queries,
            judged_queries=checked.qrels_queries,
        )

    def compute(
        self, validated: Validated, evaluation: Evaluation, execution: Execution
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        # One collect of the plan; the summary is a small aggregate of its result. (collect_all
        # over both plans measured 3.5x slower: the shared subplan was not reused.)
        from pipeline.io.names import COLLECT_ENGINE

        try:
            table = self.per_query_plan(validated, evaluation, execution).collect(engine=COLLECT_ENGINE)
        except MemoryError:
            raise OutOfMemory(_OUT_OF_MEMORY.format(engine="Polars", detail="")) from None
        return table, self.summarize(table)

    def summarize(self, per_query_table: pl.DataFrame) -> pl.DataFrame:
        from pipeline.aggregate import summarize

        return summarize(per_query_table.lazy()).collect()


class DuckDBEngine(_PolarsRead):
    name = "duckdb"

    def memory_floor(self, evaluation: Evaluation, execution: Execution) -> int:
        """DuckDB's peak over a small run (:func:`pipeline.engines.duckdb.statement_floor`): its
        hash joins hold whole blocks whatever their rows, so a statement with every measure
        needs about 50 MB before the run's rows count."""
        from pipeline.engines import duckdb as duckdb_engine

        return duckdb_engine.statement_floor(evaluation)

    def per_query_plan(self, validated: Validated, evaluation: Evaluation, execution: Execution) -> pl.LazyFrame:
        from pipeline.engines import duckdb as duckdb_engine

        return self._run(validated, evaluation, execution, duckdb_engine.per_query_table).lazy()

    def compute(
        self, validated: Validated, evaluation: Evaluation, execution: Execution
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        from pipeline.engines import duckdb as duckdb_engine

        return self._run(validated, evaluation, execution, duckdb_engine.evaluate)

    def _run(self, validated: Validated, evaluation: Evaluation, execution: Execution, tables: Callable[..., T]) -> T:
        """``tables(connection, evaluation)`` over the validated inputs, in a kept connection;
        DuckDB reads Parquet inputs itself where it may (:func:`pipeline.inputs.native_parquet`)."""
        import duckdb
        import polars as pl

        from pipeline.engines import duckdb as duckdb_engine
        from pipeline.inputs import native_parquet

        threads, memory_limit = execution.threads, execution.memory_limit
        try:
            connection = duckdb_engine.take_connection(threads=threads, memory_limit=memory_limit)
        except duckdb.Error as error:
            given = {"--threads": threads, "--memory-limit": memory_limit}
            flags = " ".join(f"{flag} {value!r}" for flag, value in given.items() if value is not None)
            raise UsageError(f"DuckDB refused {flags}: {first_line(error)}") from None
        failed = True
        try:
            parquet = native_parquet(validated, evaluation)
            if parquet is not None:
                run_source, qrels_source = parquet
                # each input's own names (sql/inputs.sql's per-input variables); inline labels
                # are read from the run under the run's names
                in_run = validated.columns.of("run")
                in_qrels = in_run if qrels_source is None else validated.columns.of("qrels")
                duckdb_engine.read_parquet_inputs(
                    connection,
                    run_source.files(),
                    qrels_source.files() if qrels_source else None,
                    {
                        "run_query_col": in_run.query,
                        "run_doc_col": in_run.doc,
                        "score_col": in_run.score,
                        "label_col": in_run.label,  # the label of inline labels
                        "qrels_query_col": in_qrels.query,
                        "qrels_doc_col": in_qrels.doc,
                        "qrels_label_col": in_qrels.label,
                    },
                )
            else:
                duckdb_engine.register_inputs(connection, validated.checked.run, validated.checked.qrels)
            duckdb_engine.hash_query_ids(connection, validated.checked.run_queries, validated.checked.qrels_queries)
            result = tables(connection, evaluation)
            failed = False
            return result
        except duckdb.OutOfMemoryException as error:
            limit = f" (memory limit {memory_limit})" if memory_limit else ""
            raise OutOfMemory(_OUT_OF_MEMORY.format(engine="DuckDB", detail=f"{limit}: {first_line(error)}")) from None
        except MemoryError:
            raise OutOfMemory(_OUT_OF_MEMORY.format(engine="DuckDB", detail=" (reading the inputs)")) from None
        except (
            duckdb.IOException,
            duckdb.InvalidInputException,
            duckdb.ConversionException,
            pl.exceptions.PolarsError,
            OSError,
        ) as error:
            # Inputs passed validation in Polars; DuckDB reading them differently is still the
            # input's fault (e.g. a file replaced or corrupted between the two reads).
            raise InvalidInput(f"DuckDB cannot read the inputs: {first_line(error)}") from None
        finally:
            duckdb_engine.release_connection(connection, threads=threads, memory_limit=memory_limit, failed=failed)

    def summarize(self, per_query_table: pl.DataFrame) -> pl.DataFrame:
        """``sql/summary.sql``'s sums, each adding the queries one by one in id order as Polars' do
        (the same bits from the same per-query table)."""
        from pipeline.engines import duckdb as duckdb_engine

        return duckdb_engine.summarize(per_query_table)


class SparkEngine:
    """Spark reads the Parquet inputs (paths, or Spark DataFrames), measures them for the shared
    rules, computes the per-query table once and brings both tables back."""

    name = "spark"
    out_of_core = False
    native_frames = True

    def load(self, inputs: Inputs, evaluation: Evaluation, execution: Execution) -> Any:
        from pipeline.engines import spark as spark_engine

        return spark_engine.load(inputs, evaluation, master=execution.spark_master)

    def compute(
        self, validated: Any, evaluation: Evaluation, execution: Execution
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        from pipeline.engines import spark as spark_engine

        return spark_engine.compute(validated, evaluation)

    def compute_units(
        self, validated: Sequence[Any], evaluation: Evaluation, execution: Execution
    ) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
        from pipeline.engines import spark as spark_engine

        return spark_engine.compute_units(validated, evaluation)

    def per_query_plan(self, validated: Any, evaluation: Evaluation, execution: Execution) -> pl.LazyFrame:
        from pipeline.engines import spark as spark_engine

        return spark_engine.per_query_table(validated, evaluation).lazy()

    def summarize(self, per_query_table: pl.DataFrame) -> pl.DataFrame:
        raise UsageError("the spark engine does not evaluate in buckets; size Spark with spark-submit")

    def list_weight_sums(self, validated: Any, evaluation: Evaluation) -> pl.DataFrame:
        from pipeline.engines import spark as spark_engine

        return spark_engine.list_weight_sums(validated, evaluation)

    def memory_floor(self, evaluation: Evaluation, execution: Execution) -> int:
        raise UsageError("the spark engine does not evaluate in buckets; size Spark with spark-submit")

    def filesystem(self, path: str, execution: Execution) -> fs.FileSystem:
        if fs.is_local(path):
            return fs.LOCAL
        from pipeline.engines import spark as spark_engine
        from pipeline.io import hadoop

        return hadoop.HadoopFileSystem(spark_engine.session(execution.spark_master))

    def check_job(self, job: Any) -> None:
        """Everything the Spark engine refuses by design is refused here, before its session
        starts: a refused job costs no JVM."""
        if job.execution.threads or job.execution.memory_limit:
            raise UsageError("--threads and --memory-limit are for the duckdb engine; size Spark with spark-submit")
        unsupported = [
            flag
            for flag, given in (("--group-by", job.group_by), ("--query-attributes", job.query_attributes))
            if given
        ]
        if unsupported:
            raise UsageError(
                f"{', '.join(unsupported)}: not supported by the spark engine; for one summary per day or "
                "locale, partition the logs by it (each partition is summarised on its own), or use --engine "
                "polars or duckdb"
            )
        from pipeline.io import delta

        if (
            job.run_version is not None
            or job.qrels_version is not None
            or any(path and delta.is_table(path) for path in (job.run, job.qrels))
        ):
            raise UsageError(
                "Delta tables are read by the polars and duckdb engines; on Spark, read the table with "
                "spark.read.format('delta') and pass the DataFrame to pipeline.engines.spark.evaluate"
            )
        if job.out and not fs.is_local(job.out) and job.out_format != "parquet":
            raise UsageError(f"the spark engine writes Parquet only, not --out-format {job.out_format}")
        from pipeline.engines import spark as spark_engine  # pyspark is not imported by it, nor Java started

        spark_engine.refuse_before_session(job.run, job.qrels, job.run_format, job.qrels_format, job.evaluation)

    def writes(self, out: str) -> bool:
        return fs.is_local(out)  # a cluster's file system is written by Spark (write_remote)

    def write_remote(self, out: str, tables: list[tuple[str, dict[str, pl.DataFrame]]], execution: Execution) -> None:
        from pipeline.engines import spark as spark_engine
        from pipeline.io import hadoop

        hadoop.write_tables(spark_engine.session(execution.spark_master), out, tables)


ENGINES: dict[str, Engine] = {"polars": PolarsEngine(), "duckdb": DuckDBEngine(), "spark": SparkEngine()}


def engine_named(name: object) -> Engine:
    """The engine called ``name``; exit 2 naming the engines otherwise."""
    if not isinstance(name, str) or name not in ENGINES:
        raise UsageError(f"unknown engine {name!r}; expected one of {', '.join(ENGINES)}")
    return ENGINES[name]
