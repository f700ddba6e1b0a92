"""Units of work of one evaluation: the inputs in one pass, or in hash buckets of queries.

:func:`evaluate_inputs` is what the job (and so the library) runs for each unit of output (the
whole input, or one hive partition: :mod:`pipeline.job`). Under a memory limit, on the engines
that read with Polars, a run too large to fit is split by a hash of its query ids into buckets
that are validated and evaluated one after the other; their per-query rows, summary and
warnings are those of one pass.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.aggregate import summarize
from pipeline.engines import Engine, Execution, out_of_memory
from pipeline.errors import InvalidInput, UsageError, first_line
from pipeline.inputs import Inputs, Prepared, Validated, prepare, unchanged_while_read
from pipeline.inputs import check as check_prepared
from pipeline.io.names import COLLECT_ENGINE
from pipeline.io.read import Columns, Source
from pipeline.registry import Evaluation, InputChecks, QueryWeights, option_fields
from pipeline.validate import WARNING_EXAMPLES, WARNING_ORDER, ValidationWarning, align_ids, id_casts
from pipeline.weights import (
    BOTH_WEIGHTS,
    check_weight_totals,
    check_weighted_values_representable,
    list_weight_sums,
    list_weights,
    list_weights_source,
    read_query_weights,
    weigh,
)

log = logging.getLogger(__name__)

# What holds the options of :data:`pipeline.registry.OPTIONS` given by part (``execution.threads``),
# by the name of the field holding it (a field of :class:`pipeline.job.Job`)
OPTION_HOLDERS: dict[str, Callable[..., Any]] = {
    "columns": Columns,
    "checks": InputChecks,
    "execution": Execution,
    "weights": QueryWeights,
}


def option_values(given: dict[str, Any]) -> dict[str, Any]:
    """The options of :data:`pipeline.registry.OPTIONS` in ``given`` (by name) as the fields holding
    them: ``{"run_format": "csv", "execution": Execution(threads=2), ...}``."""
    return option_fields(given, OPTION_HOLDERS)


@dataclass(frozen=True)
class Result:
    """What one evaluation produced, with the spec that produced it."""

    per_query: pl.DataFrame
    summary: pl.DataFrame
    evaluation: Evaluation
    engine: str
    warnings: tuple[ValidationWarning, ...] = ()
    # the rows validation counted in the run and the qrels (None: not counted here, as on Spark)
    input_rows: tuple[int, int] | None = None
    # ``query_id, weight`` of every evaluated query when the means are weighted (--query-weights),
    # or its TF-Ranking list weights (--doc-weight-col: pipeline.weights.list_weights)
    query_weights: pl.DataFrame | None = None

    @property
    def list_weights(self) -> pl.DataFrame | None:
        """The list weights of ``--doc-weight-col`` (None without it), which its outputs hold."""
        return self.query_weights if self.evaluation.doc_weight_col is not None else None


def evaluate_inputs(
    inputs: Inputs,
    evaluation: Evaluation,
    engine: Engine,
    execution: Execution,
    weights: QueryWeights | None = None,
) -> Result:
    """Validate and evaluate one unit's inputs on ``engine``: in one pass, or in buckets when
    ``execution.memory_limit`` is too small for the run (engines that evaluate out of core).
    An input that changes while it is read is refused (:func:`pipeline.inputs.unchanged_while_read`).
    With ``weights.path``, the summary's means are weighted by the queries' weights
    (:mod:`pipeline.weights`), taken from the engine's per-query table, as the groups' are."""
    (result,) = evaluate_units([inputs], evaluation, engine, execution, weights)
    return result


def evaluate_units(
    units: Sequence[Inputs],
    evaluation: Evaluation,
    engine: Engine,
    execution: Execution,
    weights: QueryWeights | None = None,
) -> list[Result]:
    """:func:`evaluate_inputs` of each unit (a job's partitions), each result what the unit
    alone gives. The engines that evaluate out of core take the units one after the other (a
    unit may need buckets of its own); the others validate every unit, then compute them
    together (:meth:`pipeline.engines.Engine.compute_units`: Spark plans one statement for
    all of them)."""
    if evaluation.doc_weight_col is not None and weights is not None and weights.path is not None:
        raise UsageError(BOTH_WEIGHTS)
    # the weights' own rules are checked before the evaluation, not after an hour of it
    table = None
    if weights is not None and weights.path is not None and units:
        table = read_query_weights(weights, units[0].columns)
    results = []
    if engine.out_of_core:
        for inputs in units:
            with unchanged_while_read(inputs):
                results.append(_evaluate(inputs, evaluation, engine, execution))
    else:
        with ExitStack() as reading:
            for inputs in units:
                reading.enter_context(unchanged_while_read(inputs))
            validated = [engine.load(inputs, evaluation, execution) for inputs in units]
            tables = engine.compute_units(validated, evaluation, execution)
            results = [
                _result(unit, per_query_table, summary, evaluation, engine)
                for unit, (per_query_table, summary) in zip(validated, tables, strict=True)
            ]
    if weights is None or table is None:
        return results
    weighed = []
    for result in results:
        query_weights = weigh(result.per_query, weights, table=table)
        summary = summarize(result.per_query.lazy(), weights=query_weights).collect()
        weighed.append(replace(result, summary=summary, query_weights=query_weights))
    return weighed


def _evaluate(inputs: Inputs, evaluation: Evaluation, engine: Engine, execution: Execution) -> Result:
    limit = execution.memory_limit
    if engine.out_of_core and limit is not None:
        if not _MEMORY_LIMIT.match(limit):
            raise UsageError(f"cannot read memory limit {limit!r}; expected a size such as 500MB, 4GB or 2GiB")
        read = inputs.run, inputs.qrels, inputs.columns, inputs.run_format, inputs.qrels_format
        prepared = prepare(*read, evaluation, text_in_memory=False)
        buckets = bucket_count(prepared, limit, floor=_floor(engine, evaluation, execution, limit))
        if buckets > 1:
            return _evaluate_in_buckets(prepared, buckets, inputs, evaluation, engine, execution)
        validated = Validated(prepared, check_prepared(prepared, inputs, evaluation), inputs.columns)
    else:
        validated = engine.load(inputs, evaluation, execution)
    per_query_table, summary = engine.compute(validated, evaluation, execution)
    return _result(validated, per_query_table, summary, evaluation, engine)


def _result(
    validated: Any, per_query_table: pl.DataFrame, summary: pl.DataFrame, evaluation: Evaluation, engine: Engine
) -> Result:
    """One unit's result from its engine's tables; under ``--doc-weight-col`` its summary's
    means weighted by the unit's list weights."""
    rows = validated.checked.rows if isinstance(validated, Validated) else None
    result = Result(per_query_table, summary, evaluation, engine.name, validated.warnings, rows)
    if evaluation.doc_weight_col is None:
        return result
    # TF-Ranking's mean weighs each list (--doc-weight-col): the means weighted as --query-weights weighs them
    sums = engine.list_weight_sums(validated, evaluation)
    return _list_weighted(result, sums, _run_name(validated), evaluation)


def _run_name(validated: Any) -> str:
    """The run's name in messages, whichever engine validated it."""
    return validated.prepared.run_name if isinstance(validated, Validated) else validated.run_name


def _list_weighted(result: Result, sums: pl.DataFrame, run_name: str, evaluation: Evaluation) -> Result:
    """The result with its summary's means weighted by TF-Ranking's list weights
    (:func:`pipeline.weights.list_weights`), which the groups' means take too."""
    table = list_weights(result.per_query, sums)
    check_weighted_values_representable(result.per_query, table, str(evaluation.doc_weight_col), run_name)
    check_weight_totals(result.per_query, table, list_weights_source(run_name, evaluation))
    summary = summarize(result.per_query.lazy(), weights=table).collect()
    return replace(result, summary=summary, query_weights=table)


# What an engine holds per run row while it evaluates beyond its floor (measured: about 160
# bytes at 10M rows of short string ids on Polars; DuckDB's smallest limit grows by 180 bytes
# a row with every measure, 50 with NDCG alone), with room to spare: what the memory limit
# leaves beyond the engine's floor, over this, is the number of run rows one bucket may have.
BYTES_PER_RUN_ROW = 300


def bucket_count(prepared: Prepared, memory_limit: str, *, floor: int = 0) -> int:
    """How many buckets of queries to evaluate one after the other so that each fits in
    ``memory_limit`` beside the ``floor`` bytes the engine takes whatever the rows
    (:meth:`pipeline.engines.Engine.memory_floor`); never more than the run has rows (a bucket
    holds at least one query). Counting a Parquet run's rows reads only its footers."""
    limit = _size_in_bytes(memory_limit)
    if limit <= 0:
        raise UsageError(f"memory limit {memory_limit!r} leaves no memory; give a size above 0, such as 500MB or 4GB")
    if limit <= floor:
        raise ValueError(f"memory limit {memory_limit!r} leaves no room beyond the engine's {floor} bytes")
    rows = prepared.run.select(pl.len()).collect().item()
    return max(1, min(rows, math.ceil(rows * BYTES_PER_RUN_ROW / (limit - floor))))


def _floor(engine: Engine, evaluation: Evaluation, execution: Execution, limit: str) -> int:
    """The engine's floor for this evaluation; a limit at or below it cannot hold even one query,
    so it is refused before anything is split, with the size it takes."""
    size = _size_in_bytes(limit)
    if size <= 0:
        raise UsageError(f"memory limit {limit!r} leaves no memory; give a size above 0, such as 500MB or 4GB")
    floor = engine.memory_floor(evaluation, execution)
    if size <= floor:
        raise out_of_memory(
            engine,
            f" (memory limit {limit}: the evaluation of these measures takes {_megabytes(floor)} in it whatever "
            "the run's size, and a bucket of queries needs room beyond that)",
        )
    return floor


def _bucket_of(buckets: int) -> pl.Expr:
    """Each row's bucket, from its query id. The ids of both inputs must have one type first
    (:func:`pipeline.validate.id_casts`): the hash of ``7`` as an integer is not that of
    ``"7"`` as text, and a query whose run and judgments fell in different buckets would be
    lost from both."""
    return pl.col("query_id").hash(seed=0) % buckets


def _evaluate_in_buckets(
    prepared: Prepared, buckets: int, inputs: Inputs, evaluation: Evaluation, engine: Engine, execution: Execution
) -> Result:
    """Out of core: the queries split by a hash of their id into ``buckets`` parts, each
    validated and evaluated alone, so that only one part is in memory at a time. Every check
    and every number is per query (duplicates, nulls, ranks, sums), so the parts give the same
    per-query rows and warnings as one pass; the summary is taken over all of them, in query
    order as always, by the engine's own sums, so the bits are the same too."""
    log.info("evaluating in %d buckets of queries to stay within %s", buckets, execution.memory_limit)
    tables: list[pl.DataFrame] = []
    weight_sums: list[pl.DataFrame] = []
    warnings: list[tuple[ValidationWarning, ...]] = []
    if prepared.run.select(pl.len()).collect().item() == 0:
        raise InvalidInput(f"{prepared.run_name}: no rows to evaluate (the input is empty)")
    if prepared.qrels.select(pl.len()).collect().item() == 0:
        raise InvalidInput(f"{prepared.qrels_name}: no rows to evaluate (the input is empty)")
    with _scratch_folder() as folder:
        for part in split_into_buckets(prepared, buckets, Path(folder)):
            checked = check_prepared(part, inputs, evaluation, require_rows=False)
            warnings.append(checked.warnings)
            # the bucket's files have the canonical column names; its per-query rows alone (the
            # summary is taken over all buckets: one per bucket cost DuckDB 0.3 s each)
            plan = engine.per_query_plan(Validated(part, checked, Columns()), evaluation, execution)
            try:
                tables.append(plan.collect(engine=COLLECT_ENGINE))
            except MemoryError:
                raise out_of_memory(engine, "") from None
            if evaluation.doc_weight_col is not None:
                weight_sums.append(list_weight_sums(checked.run, checked.qrels, evaluation))
    per_query_table = pl.concat(tables).sort(["query_id", "k"], nulls_last=False)
    summary = engine.summarize(per_query_table)
    result = Result(per_query_table, summary, evaluation, engine.name, merge_warnings(warnings))
    if evaluation.doc_weight_col is None:
        return result
    return _list_weighted(result, pl.concat(weight_sums), prepared.run_name, evaluation)


def split_into_buckets(prepared: Prepared, buckets: int, folder: Path) -> list[Prepared]:
    """Each input read once and written to ``folder`` as one Parquet file per bucket, then
    each bucket's inputs. Filtering the inputs for each bucket instead read all of them four
    times per bucket (validation, then evaluation): 100M rows in 10 buckets took 233 s.

    The ids are aligned (validation's rule) before they are hashed, so a query's run rows and
    judgments share a bucket whatever types the two inputs give its id. Only the buckets that
    hold rows of either input are returned: an empty bucket has no query to check or score."""
    casts = id_casts(prepared.run.collect_schema(), prepared.qrels.collect_schema())
    prepared = replace(prepared, run=align_ids(prepared.run, casts), qrels=align_ids(prepared.qrels, casts))
    schemas, filled = {}, set()
    for role, frame, name in (("run", prepared.run, prepared.run_name), ("qrels", prepared.qrels, prepared.qrels_name)):
        schemas[role] = frame.collect_schema()
        split = pl.PartitionBy(folder / role, key=_bucket_of(buckets).alias("bucket"), include_key=False)
        try:
            frame.sink_parquet(split, mkdir=True)
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as error:
            # a full disk does not always say so: the Parquet writer's footer failing on it reads
            # "Invalid thrift: transport error", which would blame the input
            needed = space_needed(prepared)
            if _no_space_left(error) or _short_of_space(folder, needed):
                raise _no_space_error(folder, error, needed) from None
            raise InvalidInput(f"{name}: cannot read: {first_line(error)}") from None
        written = {entry.name for entry in (folder / role).iterdir()}
        if not written or not written <= {f"bucket={bucket}" for bucket in range(buckets)}:
            # a bucket not found would be read as empty: refuse rather than drop its queries
            raise RuntimeError(f"unexpected layout of the split {role} in {folder / role}: {sorted(written)}")
        filled |= {int(entry.removeprefix("bucket=")) for entry in written}

    def bucket_input(role: str, bucket: int) -> tuple[pl.LazyFrame, Source | None]:
        files = folder / role / f"bucket={bucket}"
        if not files.is_dir():  # no query of this input fell in the bucket
            return pl.LazyFrame(schema=schemas[role]), None
        return pl.scan_parquet(files / "*.parquet", hive_partitioning=False), Source.of(files, "parquet")

    parts = []
    for bucket in sorted(filled):
        (run, run_source), (qrels, qrels_source) = bucket_input("run", bucket), bucket_input("qrels", bucket)
        parts.append(
            replace(prepared, run=run, qrels=qrels, run_source=run_source, qrels_source=qrels_source, inline=False)
        )
    return parts


_SCRATCH_PREFIX = "ndcg-buckets-"


@contextmanager
def _scratch_folder() -> Iterator[str]:
    """A folder of TMPDIR for the buckets, removed with everything in it when the evaluation
    ends, failed or not (a disk that filled up mid-split included)."""
    try:
        folder = tempfile.mkdtemp(prefix=_SCRATCH_PREFIX)
    except OSError as error:
        if _no_space_left(error):
            raise _no_space_error(Path(tempfile.gettempdir()), error) from None
        raise UsageError(
            f"cannot create a folder for the buckets in TMPDIR ({tempfile.gettempdir()}): {error}"
        ) from None
    try:
        yield folder
    except BaseException:
        _remove_until_gone(Path(folder))
        raise
    shutil.rmtree(folder, ignore_errors=True)


def _remove_until_gone(folder: Path, *, settle: float = 0.2, attempts: int = 15) -> None:
    """Remove the buckets' folder, again while files still appear in it: when a split fails
    (a full disk), Polars' writer threads may flush a file or two after the sink has raised."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        time.sleep(settle if folder.exists() else 0)
        if not folder.exists():
            time.sleep(settle)  # a late write would recreate it
            if not folder.exists():
                return


def space_needed(prepared: Prepared) -> int | None:
    """Bytes the buckets may take: the inputs' size on disk (the buckets hold the same rows as
    Parquet; text inputs shrink), or None when an input is not local files (a frame, an object
    store) and its size is not known without reading it."""
    total = 0
    for source, role in ((prepared.run_source, "run"), (prepared.qrels_source, "qrels")):
        if source is None and role == "qrels" and prepared.inline:
            source = prepared.run_source  # the run's labels are written as the qrels' buckets
        if source is None or not source.location.is_local or source.format == "delta":
            return None
        try:
            total += sum(os.path.getsize(file) for file in source.files())
        except (OSError, InvalidInput):
            return None
    return total


def _short_of_space(folder: Path, needed: int | None) -> bool:
    """Whether the disk of ``folder`` has less room left than the buckets need."""
    if needed is None:
        return False
    try:
        return shutil.disk_usage(folder).free < needed
    except OSError:
        return False


def _no_space_left(error: BaseException) -> bool:
    return (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "no space left" in str(error).lower()


def _no_space_error(folder: Path, error: BaseException, needed: int | None = None) -> UsageError:
    """A full disk is the machine's setting, not our bug: exit 2, naming where, how much room
    the buckets need and what to do."""
    tmpdir = folder.parent if folder.name.startswith(_SCRATCH_PREFIX) else folder
    try:
        # the partial bucket files are removed on the way out: their room counts as free
        partial = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder != tmpdir else 0
        free = f"{_megabytes(shutil.disk_usage(tmpdir).free + partial)} free"
    except OSError:
        free = "too little room"
    need = f"up to about {_megabytes(needed)} (the inputs' size)" if needed is not None else "about the inputs' size"
    return UsageError(
        f"no space left in TMPDIR ({tmpdir}, {free} with the partial buckets removed) to split the inputs into "
        f"buckets of queries for --memory-limit; the buckets need {need} ({first_line(error)}). Point TMPDIR "
        "at a folder with that much room (TMPDIR=/path/with/room ndcg ...), or raise --memory-limit so that "
        "fewer buckets, or none, are written"
    )


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def merge_warnings(parts: list[tuple[ValidationWarning, ...]]) -> tuple[ValidationWarning, ...]:
    """The warnings of several parts of one input as one pass would give them: counts added,
    the first ids (sorted) of all parts, in the order the checks report them."""
    merged: dict[str, ValidationWarning] = {}
    for warnings in parts:
        for warning in warnings:
            seen = merged.get(warning.code)
            if seen is None:
                merged[warning.code] = warning
                continue
            examples = tuple(sorted({*seen.examples, *warning.examples})[:WARNING_EXAMPLES])
            merged[warning.code] = replace(seen, count=seen.count + warning.count, examples=examples)
    return tuple(sorted(merged.values(), key=lambda w: WARNING_ORDER.index(w.code)))


def _size_in_bytes(memory_limit: str) -> int:
    match = _MEMORY_LIMIT.match(memory_limit)
    if match is None:
        raise UsageError(f"cannot read memory limit {memory_limit!r}; expected a size such as 500MB, 4GB or 2GiB")
    number = float(match.group(1))
    unit = match.group(2).lower()
    scale = {"b": 1, "bytes": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
    binary = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
    return int(number * {**scale, **binary}[unit])


# DuckDB's size syntax; checked here too so that the Polars engine does not ignore a typo.
_MEMORY_LIMIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|bytes|[kmgt]i?b)\s*$", re.IGNORECASE)
