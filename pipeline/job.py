"""One evaluation as a batch job: partitions -> engine -> staged, atomic outputs -> manifest.

Every unit of output (the whole dataset, or one hive partition of it) is a folder holding
``per_query``, ``summary``, ``manifest.json`` and, written last, ``_SUCCESS``. A unit is
built in a staging folder and swapped into place whole, so a crash or a kill leaves the
previous output of that unit intact, and a rerun replaces exactly the units it evaluates.
All units are computed before any is written: a job that fails writes nothing. The job only
orchestrates: the units are listed here, read, validated and evaluated by
:func:`pipeline.units.evaluate_units` on an engine (on Spark, in one statement), grouped, and
written by :func:`pipeline.io.write.publish` (the lock on ``--out``, the user's files kept, leftovers of a
killed job repaired); which units ``--skip-unchanged`` leaves alone is :mod:`pipeline.reuse`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipeline import reuse
from pipeline.aggregate import summarize
from pipeline.engines import Engine, Execution, engine_named
from pipeline.errors import InvalidInput, NothingToEvaluate, UsageError
from pipeline.groups import RESERVED_COLUMNS, attach_groups, check_group_names, query_groups, scan_group_source
from pipeline.inputs import Inputs
from pipeline.io import delta, fs
from pipeline.io.format import check_trec_ids
from pipeline.io.identity import refuse_changed
from pipeline.io.outputs import LIST_WEIGHTS_STEM
from pipeline.io.partitions import Partition, hive_partitions, judgments_partition, partition_values, select_partitions
from pipeline.io.read import QUERY, Columns, Source, table_source
from pipeline.io.write import FORMATS, exchange_folders, publish
from pipeline.io.write import Unit as OutputUnit
from pipeline.registry import OPTION, Evaluation, InputChecks, QueryWeights
from pipeline.units import Result, evaluate_units
from pipeline.weights import check_weight_totals, list_weights_source


@dataclass(frozen=True)
class Job:
    """Everything one run of the job needs; built from flags or a TOML file by the CLI. The
    fields named by :data:`pipeline.registry.OPTIONS` take those options (the options given by part,
    such as ``execution.threads``, in ``columns``, ``checks`` and ``execution``:
    :func:`pipeline.units.option_values` builds them)."""

    run: str
    qrels: str | None
    evaluation: Evaluation
    engine: str = "polars"
    columns: Columns = field(default_factory=Columns)
    run_format: str | None = None
    qrels_format: str | None = None
    # the version of a Delta table given as run or qrels: a number or an ISO time (None: current)
    run_version: str | int | None = None
    qrels_version: str | int | None = None
    checks: InputChecks = field(default_factory=InputChecks)
    execution: Execution = field(default_factory=Execution)
    out: str | None = None
    out_format: str = "parquet"
    partition_filters: dict[str, set[str]] = field(default_factory=dict)
    group_by: tuple[str, ...] = ()
    query_attributes: str | None = None
    # one weight per query in the summary's means (--query-weights; see pipeline/weights.py)
    weights: QueryWeights = field(default_factory=QueryWeights)
    # a run partition without its folder in judgments partitioned like the run: "error" (exit
    # 3) or "whole" (scored against all the judgments, with a warning)
    missing_qrels_partition: str = OPTION["missing_qrels_partition"].default
    # leave a unit's outputs alone when its manifest.json says they were computed from the same
    # inputs (their identity), options and tool version (see :mod:`pipeline.reuse`)
    skip_unchanged: bool = OPTION["skip_unchanged"].default


@dataclass(frozen=True)
class Unit:
    """One evaluated unit: the whole input, or one partition of it."""

    partition: Partition | None
    result: Result
    per_query: pl.DataFrame
    summary: pl.DataFrame
    manifest: dict[str, Any]


@dataclass(frozen=True)
class _Planned:
    """A unit to evaluate: its partition, its inputs, and what its outputs depend on
    (:func:`pipeline.reuse.reuse_key`, taken before the inputs are read)."""

    partition: Partition | None
    run: str | Source
    qrels: str | Source | None
    key: dict[str, Any]


def run_job(
    job: Job,
    *,
    on_unit: Callable[[Unit], None] | None = None,
    before_write: Callable[[list[Unit]], None] | None = None,
    on_decision: Callable[[Partition | None, bool, str], None] | None = None,
) -> list[Unit]:
    """Evaluate every selected unit, then write each one atomically (when ``job.out``);
    ``before_write`` may refuse the units (raise) before anything is written. With
    ``job.skip_unchanged``, a unit whose outputs are current is neither evaluated nor written
    (nor returned); ``on_decision(partition, skipped, reason)`` hears why each was skipped or
    recomputed."""
    (units,) = run_jobs([job], on_unit=on_unit, before_write=before_write, on_decision=on_decision)
    return units


def run_jobs(
    jobs: Sequence[Job],
    *,
    on_unit: Callable[[Unit], None] | None = None,
    before_write: Callable[[list[Unit]], None] | None = None,
    on_decision: Callable[[Partition | None, bool, str], None] | None = None,
) -> list[list[Unit]]:
    """:func:`run_job` of each job, for jobs that differ only in their inputs and outputs (the
    runs of ``ndcg compare``): every job's units are evaluated together, so an engine that plans
    one statement for several units (Spark) plans one for the units of every job, then each
    job's units are checked and written as its own."""
    started = _now()
    # a file: URL is a local path (Spark users write them); listing and writing take paths
    jobs = [
        replace(job, run=_local(job.run), qrels=job.qrels and _local(job.qrels), out=job.out and _local(job.out))
        for job in jobs
    ]
    first = jobs[0]
    shared = (first.engine, first.evaluation, first.execution, first.weights)
    if any((job.engine, job.evaluation, job.execution, job.weights) != shared for job in jobs):
        raise ValueError("run_jobs evaluates jobs of one engine, evaluation, execution and weights")
    engine = engine_named(first.engine)
    # every job is refused before any is read: an engine's refusal (Spark's of a TREC file) then
    # comes before its session starts, not after the first job has started it
    for job in jobs:
        engine.check_job(job)
    plans = []
    for job in jobs:
        planned = _plan(job, engine)
        plans.append(reuse.units_to_recompute(job.out, planned, on_decision) if job.skip_unchanged else planned)
    inputs = [
        Inputs(plan.run, plan.qrels, job.columns, job.run_format, job.qrels_format, job.checks)
        for job, planned in zip(jobs, plans, strict=True)
        for plan in planned
    ]
    results = iter(evaluate_units(inputs, first.evaluation, engine, first.execution, first.weights))
    evaluated = [
        [_unit(job, plan, next(results), started) for plan in planned] for job, planned in zip(jobs, plans, strict=True)
    ]
    # every job's units checked before any job's are written: one that fails writes nothing
    for job, planned, units in zip(jobs, plans, evaluated, strict=True):
        if planned:
            _check(job, planned, units, before_write)
    for job, planned, units in zip(jobs, plans, evaluated, strict=True):
        if planned:
            _write(job, engine, units, on_unit)
    return evaluated


def _check(
    job: Job, planned: list[_Planned], units: list[Unit], before_write: Callable[[list[Unit]], None] | None
) -> None:
    """A job's evaluated units refused when one is empty or an input changed meanwhile, then
    offered to ``before_write``."""
    for unit in units:
        if unit.per_query.height == 0:
            where = f" in partition {unit.partition}" if unit.partition else ""
            raise NothingToEvaluate(f"no query is in both {job.run} and {job.qrels or 'its inline labels'}{where}")
    # identified again after the last read (the engine's, the manifests' row counts, the groups):
    # an input that changed while the job read it is refused before anything is written
    for plan in planned:
        names = {
            "run": _path_of(plan.run),
            "qrels": plan.qrels and _path_of(plan.qrels),
            "query_attributes": job.query_attributes,
            "query_weights": job.weights.path,
        }
        refuse_changed(plan.key["inputs"], reuse.reuse_key(job, plan.run, plan.qrels)["inputs"], names)
    if before_write:
        before_write(units)


def _write(job: Job, engine: Engine, units: list[Unit], on_unit: Callable[[Unit], None] | None) -> None:
    """A job's units written (when ``job.out``): by the job's writer, or by the engine that reads
    a cluster's file system."""
    if job.out and engine.writes(job.out):
        write_units(job.out if fs.is_object_store(job.out) else Path(job.out), units, job.out_format, on_unit=on_unit)
    elif job.out:  # a cluster's file system (s3a://, hdfs://): the engine that reads it writes it
        tables = [
            (
                str(unit.partition or ""),
                {
                    "per_query": unit.per_query,
                    "summary": unit.summary,
                    **({LIST_WEIGHTS_STEM: unit.result.list_weights} if unit.result.list_weights is not None else {}),
                },
            )
            for unit in units
        ]
        engine.write_remote(job.out, tables, job.execution)


def _plan(job: Job, engine: Engine) -> list[_Planned]:
    """The selected units, each with its run and judgments; every partition's judgments are
    found before any is evaluated, so a missing one fails at once. The inputs are identified
    before they are read: a file changing meanwhile is seen next time."""
    run_table, qrels_table = _delta_tables(job)
    available = (
        delta.partitions(run_table)
        if run_table
        else hive_partitions(job.run, engine.filesystem(job.run, job.execution), only=job.partition_filters)
    )
    partitions = (
        select_partitions(job.run, job.partition_filters, available) if available or job.partition_filters else []
    )
    selected: list[Partition | None] = list(partitions) or [None]
    qrels_partitions = (
        (
            delta.partitions(qrels_table)
            if qrels_table
            else hive_partitions(
                job.qrels, engine.filesystem(job.qrels, job.execution), only=partition_values(partitions)
            )
        )
        if partitions and job.qrels
        else []
    )
    planned = []
    for partition in selected:
        run = _run_path(job, partition, run_table)
        qrels = _qrels_path(job, partition, qrels_partitions, qrels_table)
        planned.append(_Planned(partition, run, qrels, reuse.reuse_key(job, run, qrels)))
    return planned


def _path_of(given: str | Source) -> str:
    return given.path if isinstance(given, Source) else given


def _delta_tables(job: Job) -> tuple[Source | None, Source | None]:
    """The run and the judgments as Delta tables at one version each, resolved once for the whole
    job (None for an input that is not a Delta table: see :mod:`pipeline.io.delta`)."""
    run = (
        table_source(job.run, job.run_version, "--run-version", job.columns.of("run"))
        if job.run_format in (None, "delta")
        else None
    )
    qrels = (
        table_source(job.qrels, job.qrels_version, "--qrels-version", job.columns.of("qrels"))
        if job.qrels and job.qrels_format in (None, "delta")
        else None
    )
    for flag, given, table in (("--run-format", job.run_format, run), ("--qrels-format", job.qrels_format, qrels)):
        if given == "delta" and table is None:
            raise InvalidInput(f"{flag} delta: {job.run if flag == '--run-format' else job.qrels} is not a Delta table")
    for flag, version, table in (
        ("--run-version", job.run_version, run),
        ("--qrels-version", job.qrels_version, qrels),
    ):
        if version is not None and table is None:
            raise UsageError(f"{flag} reads a Delta table; the input it goes with is not one (or has a format given)")
    return run, qrels


def _qrels_path(
    job: Job, partition: Partition | None, qrels_partitions: list[Partition], table: Source | None = None
) -> str | Source | None:
    """The judgments of one unit: the same partition's folder when the judgments are
    partitioned like the run (see :func:`judgments_partition`), else all of them."""
    whole = table or job.qrels
    if partition is None or job.qrels is None:
        return whole
    folder = judgments_partition(partition, job.qrels, qrels_partitions, job.missing_qrels_partition)
    if table is not None:
        return delta.narrowed(table, folder) if folder else table
    return _under(job.qrels, folder) if folder else job.qrels


def _local(path: str) -> str:
    return fs.local_path(path) if fs.is_local(path) else path


def _under(root: str, partition: Partition) -> str:
    """A partition's folder: a local path as the system writes it, a URL (``s3a://b/x``) as text."""
    return str(partition.path(root)) if fs.is_local(root) else f"{root.rstrip('/')}/{partition}"


def _run_path(job: Job, partition: Partition | None, run_table: Source | None = None) -> str | Source:
    """The run of one unit: a partition of the Delta table, a partition's folder, or all of it."""
    if run_table is not None:
        return delta.narrowed(run_table, partition) if partition else run_table
    return _under(job.run, partition) if partition else job.run


def _unit(job: Job, planned: _Planned, result: Result, started: str) -> Unit:
    """One unit of output from its evaluation: its groups, its partition's columns, its manifest."""
    partition, run_path = planned.partition, planned.run
    per_query, summary = result.per_query, result.summary
    if job.group_by:
        check_group_names(job.group_by, RESERVED_COLUMNS | set(partition.as_dict() if partition else ()))
        source, rows = scan_group_source(
            run_path, query_attributes=job.query_attributes, run_format=job.run_format, columns=job.columns
        )
        per_query, unlabelled = attach_groups(per_query, query_groups(rows, source, job.group_by), source, job.group_by)
        if unlabelled is not None:
            result = replace(result, warnings=(*result.warnings, unlabelled))
        if result.query_weights is not None:
            weighed_by = (
                list_weights_source(str(run_path), job.evaluation)
                if job.evaluation.doc_weight_col is not None
                else str(job.weights.path)
            )
            check_weight_totals(per_query, result.query_weights, weighed_by, job.group_by)
        summary = summarize(per_query.lazy(), group_by=job.group_by, weights=result.query_weights).collect()
        per_query = per_query.select(QUERY, *job.group_by, pl.exclude(QUERY, *job.group_by))
    if partition:
        keys = [pl.lit(value).alias(key) for key, value in partition.as_dict().items()]
        per_query = per_query.select(*keys, pl.all())
        summary = summary.select(*keys, pl.all())
    manifest = _manifest(job, planned, result, per_query, started)
    return Unit(partition=partition, result=result, per_query=per_query, summary=summary, manifest=manifest)


def _manifest(job: Job, planned: _Planned, result: Result, per_query: pl.DataFrame, started: str) -> dict[str, Any]:
    # validation already counted the queries found on one side only
    counted = {warning.code: warning.count for warning in result.warnings}
    only_in_run = counted.get("queries_only_in_run", 0)
    only_in_qrels = counted.get("queries_only_in_qrels", 0)
    evaluated = per_query[QUERY].n_unique()
    return {
        # the identities were taken before the inputs were read (reuse_key): recorded as taken
        "inputs": reuse.recorded_inputs(job, planned.run, planned.qrels, planned.key, rows=result.input_rows),
        "settings": planned.key["settings"],
        "partition": planned.partition.as_dict() if planned.partition else None,
        "engine": job.engine,
        "options": reuse.options(job),
        "queries": {
            "evaluated": evaluated,
            # evaluated (with every document unjudged) under queries_without_judgments evaluate
            "only_in_run_not_evaluated": only_in_run if job.evaluation.queries_without_judgments == "skip" else 0,
            "only_in_qrels": only_in_qrels,
            "zero_filled": only_in_qrels if job.evaluation.all_queries else 0,
            "skipped": 0 if job.evaluation.all_queries else only_in_qrels,
        },
        "warnings": [warning.as_dict() for warning in result.warnings],
        "versions": reuse.tool_versions(),
        "started_at": started,
        "finished_at": None,  # set when the unit is written
    }


def write_units(
    out: Path | str, units: list[Unit], out_format: str, *, on_unit: Callable[[Unit], None] | None = None
) -> list[Path]:
    """Each unit's folder replaced whole by :func:`pipeline.io.write.publish` (staged, swapped in
    one step, the user's files kept, ``_SUCCESS`` last), every unit checked before any is written.
    ``out`` is a local folder or an object-store URL (staged under a prefix, then published)."""
    remote = isinstance(out, str) and fs.is_object_store(out)
    base = Path(".") if remote else Path(out)
    if out_format not in FORMATS:
        raise UsageError(f"unknown output format {out_format!r}; expected one of {', '.join(FORMATS)}")
    suffix, write = FORMATS[out_format]
    if out_format == "trec":
        for unit in units:
            check_trec_ids(unit.per_query)
    finished = _now()
    files = [
        OutputUnit(
            target=base / unit.partition.relative() if unit.partition else base,
            files={
                f"per_query{suffix}": _writer(write, unit.per_query),
                f"summary{suffix}": _writer(write, unit.summary),
                **_list_weights_file(unit, out_format),
            },
            manifest={**unit.manifest, "finished_at": finished},
        )
        for unit in units
    ]
    written = dict(zip(map(id, files), units, strict=True))
    return publish(out, files, on_written=(lambda f: on_unit(written[id(f)])) if on_unit else None)


def _list_weights_file(unit: Unit, out_format: str) -> dict[str, Callable[[Path], None]]:
    """``list_weights<suffix>`` under ``--doc-weight-col``: each query's TF-Ranking list weights,
    which weigh the summary's means and ``ndcg compare``'s (a per-query table does not hold them).
    Not in TREC text, whose lines are measures."""
    weights = unit.result.list_weights
    if weights is None or out_format == "trec":
        return {}
    suffix, write = FORMATS[out_format]
    return {f"{LIST_WEIGHTS_STEM}{suffix}": _writer(write, weights.sort(QUERY))}


def write_unit(out: Path, unit: Unit, out_format: str) -> Path:
    """One unit's folder replaced whole: see :func:`write_units`."""
    return write_units(out, [unit], out_format)[0]


def _writer(write: Callable[[pl.DataFrame, Path], None], frame: pl.DataFrame) -> Callable[[Path], None]:
    return lambda path: write(frame, path)


_exchange = exchange_folders  # the atomic swap of two folders, kept under its former name


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
