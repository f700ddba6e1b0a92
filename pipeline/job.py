"""One evaluation as a batch job: partitions -> engine -> staged, atomic outputs -> manifest.

Every unit of output (the whole dataset, or one hive partition of it) is a folder holding
``per_query``, ``summary``, ``manifest.json`` and, written last, ``_SUCCESS``. A unit is
built in a staging folder and swapped into place whole, so a crash or a kill leaves the
previous output of that unit intact, and a rerun replaces exactly the units it evaluates.
All units are computed before any is written: a job that fails writes nothing. The writing
itself (the lock on ``--out``, the user's files kept, leftovers of a killed job repaired) is
:func:`pipeline.io.write.publish`'s.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.aggregate import RESERVED_COLUMNS, check_group_names, summarize
from pipeline.engines import Engine, Execution, engine_named
from pipeline.errors import InvalidInput, NdcgError, NothingToEvaluate, UsageError, first_line
from pipeline.inputs import Inputs
from pipeline.io import delta, fs
from pipeline.io.format import check_trec_ids
from pipeline.io.identity import UNKNOWN, differences, identified, identify, refuse_changed, same, unsettled_paths
from pipeline.io.partitions import (
    Partition,
    hive_partitions,
    judgments_partition,
    partition_values,
    select_partitions,
)
from pipeline.io.read import QUERY, Columns, Source, scan_qrels, scan_run, table_source
from pipeline.io.write import (
    FORMATS,
    OUTPUT_DIGESTS,
    OutputError,
    exchange_folders,
    file_digest,
    plain_name,
    publish,
)
from pipeline.io.write import Unit as OutputUnit
from pipeline.rules import ValidationWarning
from pipeline.spec import Evaluation
from pipeline.units import Result, evaluate_inputs
from pipeline.validate import is_id_type

SUCCESS = "_SUCCESS"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Job:
    """Everything one run of the job needs; built from flags or a TOML file by the CLI."""

    run: str
    qrels: str | None
    evaluation: Evaluation
    engine: str = "polars"
    columns: Columns = field(default_factory=Columns)
    run_format: str | None = None
    qrels_format: str | None = None
    out: str | None = None
    out_format: str = "parquet"
    partition_filters: dict[str, set[str]] = field(default_factory=dict)
    group_by: tuple[str, ...] = ()
    query_attributes: str | None = None
    threads: int | None = None
    memory_limit: str | None = None
    spark_master: str | None = None
    # how inputs are checked: allow_fractional_labels, warn_results_over (see Inputs)
    evaluate_options: dict[str, Any] = field(default_factory=dict)
    # a run partition without its folder in judgments partitioned like the run: "error" (exit
    # 3) or "whole" (scored against all the judgments, with a warning)
    missing_qrels_partition: str = "error"
    # the version of a Delta table given as run or qrels: a number or an ISO time (None: current)
    run_version: str | int | None = None
    qrels_version: str | int | None = None
    # leave a unit's outputs alone when its manifest.json says they were computed from the same
    # inputs (their identity), options and tool version (see :func:`reuse_key`, :func:`recompute_reason`)
    skip_unchanged: bool = False


@dataclass(frozen=True)
class Unit:
    """One evaluated unit: the whole input, or one partition of it."""

    partition: Partition | None
    result: Result
    per_query: pl.DataFrame
    summary: pl.DataFrame
    manifest: dict[str, Any]


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
    started = _now()
    # a file: URL is a local path (Spark users write them); listing and writing take paths
    job = replace(job, run=_local(job.run), qrels=job.qrels and _local(job.qrels), out=job.out and _local(job.out))
    engine = engine_named(job.engine)
    engine.check_job(job)
    execution = Execution(threads=job.threads, memory_limit=job.memory_limit, spark_master=job.spark_master)
    run_table, qrels_table = _delta_tables(job)
    available = (
        delta.partitions(run_table)
        if run_table
        else hive_partitions(job.run, engine.filesystem(job.run, execution), only=job.partition_filters)
    )
    partitions = (
        select_partitions(job.run, job.partition_filters, available) if available or job.partition_filters else []
    )
    selected: list[Partition | None] = list(partitions) or [None]
    # every partition's judgments are found before any is evaluated, so a missing one fails at once
    qrels_partitions = (
        (
            delta.partitions(qrels_table)
            if qrels_table
            else hive_partitions(job.qrels, engine.filesystem(job.qrels, execution), only=partition_values(partitions))
        )
        if partitions and job.qrels
        else []
    )
    qrels_paths = [_qrels_path(job, partition, qrels_partitions, qrels_table) for partition in selected]
    # the inputs are identified before they are read: a file changing meanwhile is seen next time
    keys = [reuse_key(job, _run_path(job, p, run_table), q) for p, q in zip(selected, qrels_paths, strict=True)]
    if job.skip_unchanged:
        if not job.out or not fs.is_local(job.out):
            raise UsageError("--skip-unchanged needs a local --out (the outputs whose manifest.json it reads)")
        chosen = []
        for partition, qrels, key in zip(selected, qrels_paths, keys, strict=True):
            reason = recompute_reason(Path(job.out), partition, key)
            if on_decision:
                on_decision(partition, reason is None, reason or _unchanged_note(Path(job.out), partition))
            if reason is not None:
                chosen.append((partition, qrels, key))
        if not chosen:
            return []
        selected, qrels_paths, keys = (list(column) for column in zip(*chosen, strict=True))
    units = [
        _evaluate_unit(job, engine, execution, partition, qrels, started, key, run_table)
        for partition, qrels, key in zip(selected, qrels_paths, keys, strict=True)
    ]
    for unit in units:
        if unit.per_query.height == 0:
            where = f" in partition {unit.partition}" if unit.partition else ""
            raise NothingToEvaluate(f"no query is in both {job.run} and {job.qrels or 'its inline labels'}{where}")
    # identified again after the last read (the engine's, the manifests' row counts, the groups):
    # an input that changed while the job read it is refused before anything is written
    for partition, qrels, key in zip(selected, qrels_paths, keys, strict=True):
        run_path = _run_path(job, partition, run_table)
        names = {"run": _name(run_path), "qrels": qrels and _name(qrels), "query_attributes": job.query_attributes}
        refuse_changed(key["inputs"], reuse_key(job, run_path, qrels)["inputs"], names)
    if before_write:
        before_write(units)
    if job.out and engine.writes(job.out):
        write_units(job.out if fs.is_object_store(job.out) else Path(job.out), units, job.out_format, on_unit=on_unit)
    elif job.out:  # a cluster's file system (s3a://, hdfs://): the engine that reads it writes it
        tables = [(str(unit.partition or ""), {"per_query": unit.per_query, "summary": unit.summary}) for unit in units]
        engine.write_remote(job.out, tables, execution)
    return units


def _delta_tables(job: Job) -> tuple[Source | None, Source | None]:
    """The run and the judgments as Delta tables at one version each, resolved once for the whole
    job (None for an input that is not a Delta table: see :mod:`pipeline.io.delta`)."""
    run = (
        table_source(job.run, job.run_version, "--run-version", job.columns)
        if job.run_format in (None, "delta")
        else None
    )
    qrels = (
        table_source(job.qrels, job.qrels_version, "--qrels-version", job.columns)
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


def _evaluate_unit(
    job: Job,
    engine: Engine,
    execution: Execution,
    partition: Partition | None,
    qrels_path: str | Source | None,
    started: str,
    key: dict[str, Any],
    run_table: Source | None = None,
) -> Unit:
    run_path = _run_path(job, partition, run_table)
    inputs = Inputs(run_path, qrels_path, job.columns, job.run_format, job.qrels_format, **job.evaluate_options)
    result = evaluate_inputs(inputs, job.evaluation, engine, execution)
    per_query, summary = result.per_query, result.summary
    if job.group_by:
        check_group_names(job.group_by, RESERVED_COLUMNS | set(partition.as_dict() if partition else ()))
        source = job.query_attributes or _name(run_path)
        per_query, unlabelled = _attach_groups(per_query, _query_groups(job, run_path), source, job.group_by)
        if unlabelled is not None:
            result = replace(result, warnings=(*result.warnings, unlabelled))
        summary = summarize(per_query.lazy(), group_by=job.group_by).collect()
        per_query = per_query.select(QUERY, *job.group_by, pl.exclude(QUERY, *job.group_by))
    if partition:
        keys = [pl.lit(value).alias(key) for key, value in partition.as_dict().items()]
        per_query = per_query.select(*keys, pl.all())
        summary = summary.select(*keys, pl.all())
    manifest = _manifest(job, partition, run_path, qrels_path, result, per_query, started, key)
    return Unit(partition=partition, result=result, per_query=per_query, summary=summary, manifest=manifest)


def _name(value: str | Source) -> str:
    return value.path if isinstance(value, Source) else value


def _query_groups(job: Job, run_path: str | Source) -> pl.DataFrame:
    """``query_id`` and its group columns, from the run or from ``--query-attributes``; a
    query may belong to one group per column only."""
    source_path = job.query_attributes or _name(run_path)
    columns = job.columns
    if isinstance(run_path, Source) and not job.query_attributes:
        source = run_path
    else:
        source = Source.of(source_path, job.run_format if not job.query_attributes else None, columns)
    frame = scan_run(source) if not job.query_attributes else _scan_attributes(source)
    found = frame.collect_schema().names()
    missing = [c for c in job.group_by if c not in found]
    if missing:
        raise InvalidInput(
            f"{source_path}: no group column(s) {', '.join(map(repr, missing))}; columns found: {', '.join(found)}"
        )
    pairs = frame.select(QUERY, *job.group_by).unique().collect()
    conflicts = pairs.filter(pl.len().over(QUERY) > 1).sort(QUERY, *job.group_by)
    if conflicts.height:
        query = conflicts[QUERY][0]
        values = conflicts.filter(pl.col(QUERY) == query).drop(QUERY).rows()
        raise InvalidInput(
            f"{source_path}: query {query!r} belongs to more than one group of {', '.join(job.group_by)}: "
            f"{', '.join(map(str, values[:5]))}; a query's group must be fixed"
        )
    return pairs


def _attach_groups(
    per_query: pl.DataFrame, groups: pl.DataFrame, source: str, group_by: tuple[str, ...]
) -> tuple[pl.DataFrame, ValidationWarning | None]:
    """The per-query table with each query's group columns. Query ids of two types (integers
    in one, text in the other) are joined as text, as evaluation pairs run and qrels. A query
    without a row in ``source`` (zero-filled by all_queries, or absent from the attributes)
    joins the null group, with a warning; when no query has one, the ids cannot be the same
    ids and that is an error, not a table of null groups."""
    ours, theirs = per_query.schema[QUERY], groups.schema[QUERY]
    if not is_id_type(theirs):
        raise InvalidInput(
            f"{source}: query ids of type {theirs} cannot be joined to the evaluated query ids ({ours}); "
            "expected text or integers"
        )
    as_text = ours != theirs or pl.Categorical in (ours, theirs)
    key = (pl.col(QUERY).cast(pl.String) if as_text else pl.col(QUERY)).alias("_group_key")
    labelled = per_query.with_columns(key).join(
        groups.select(key, *group_by, pl.lit(True).alias("_grouped")), on="_group_key", how="left"
    )
    missing = labelled.filter(pl.col("_grouped").is_null()).get_column(QUERY).cast(pl.String).unique().sort()
    labelled = labelled.drop("_group_key", "_grouped")
    if missing.len() == 0:
        return labelled, None
    examples = tuple(missing.head(5).to_list())
    if missing.len() == per_query.get_column(QUERY).n_unique():
        found = groups.get_column(QUERY).head(3).to_list()
        raise InvalidInput(
            f"{source}: none of the {missing.len()} evaluated queries has a row here, so no query would get "
            f"a {', '.join(group_by)} value: evaluated query ids ({ours}) e.g. {', '.join(map(repr, examples[:3]))}; "
            f"query ids here ({theirs}) e.g. {', '.join(map(repr, found))}"
        )
    warning = ValidationWarning(
        "queries_without_group",
        f"evaluated queries without a row in {source}, summarised in the group whose {', '.join(group_by)} is null",
        missing.len(),
        examples,
    )
    return labelled, warning


def _scan_attributes(source: Source) -> pl.LazyFrame:
    # the run's reader: its CSV and Parquet checks apply to the attributes too
    from pipeline.io.read import scan_attributes

    return scan_attributes(source)


def _manifest(
    job: Job,
    partition: Partition | None,
    run_path: str | Source,
    qrels_path: str | Source | None,
    result: Result,
    per_query: pl.DataFrame,
    started: str,
    key: dict[str, Any],
) -> dict[str, Any]:
    # validation already counted the queries found on one side only
    counted = {warning.code: warning.count for warning in result.warnings}
    only_in_run = counted.get("queries_only_in_run", 0)
    only_in_qrels = counted.get("queries_only_in_qrels", 0)
    evaluated = per_query[QUERY].n_unique()
    # the identities were taken before the inputs were read (reuse_key): recorded as taken
    identities = key["inputs"]
    return {
        "inputs": {
            "run": _describe_input(job, run_path, "run", identities["run"]),
            "qrels": _describe_input(job, qrels_path, "qrels", identities["qrels"]) if qrels_path else None,
            "query_attributes": _describe_attributes(job.query_attributes, identities["query_attributes"]),
        },
        "settings": key["settings"],
        "partition": partition.as_dict() if partition else None,
        "engine": job.engine,
        "options": {**job.evaluation.describe(), "group_by": list(job.group_by), **job.evaluate_options},
        "queries": {
            "evaluated": evaluated,
            "only_in_run_not_evaluated": only_in_run,
            "only_in_qrels": only_in_qrels,
            "zero_filled": only_in_qrels if job.evaluation.all_queries else 0,
            "skipped": 0 if job.evaluation.all_queries else only_in_qrels,
        },
        "warnings": [warning.as_dict() for warning in result.warnings],
        "versions": _versions(),
        "started_at": started,
        "finished_at": None,  # set when the unit is written
    }


def reuse_key(job: Job, run_path: str | Source, qrels_path: str | Source | None) -> dict[str, Any]:
    """What a unit's outputs depend on, as its manifest records it: the identity of each input
    (:func:`pipeline.io.identity.identify`: local files, objects, a Delta table's version), taken
    before the input is read, the options that change a number (the
    resolved conventions and cutoffs, the groups, the input checks), the settings that change
    the files (column names, input and output formats), and the tool's version. The engine and
    its execution options (threads, memory limit, Spark master) change no number (the engines
    agree to 1e-9, tested) and are not part of it."""

    def identity(given: str | Source | None, format: str | None) -> dict[str, Any] | None:
        if given is None:
            return None
        if isinstance(given, Source):  # a Delta table (or a partition of it): its version
            source = given
        elif fs.is_local(given) or fs.is_object_store(given):
            source = Source.of(given, format, job.columns)
        else:  # read by Spark through Hadoop (s3a://, hdfs://): not identified, always recomputed
            return dict(UNKNOWN)
        try:
            return identify(source)
        except (NdcgError, OSError):  # the reader says what is wrong with it, in its own words
            return dict(UNKNOWN)

    return {
        "inputs": {
            "run": identity(run_path, job.run_format),
            "qrels": identity(qrels_path, job.qrels_format),
            "query_attributes": identity(job.query_attributes, None),
        },
        "options": {**job.evaluation.describe(), "group_by": list(job.group_by), **job.evaluate_options},
        "settings": {
            "columns": asdict(job.columns),
            "run_format": job.run_format,
            "qrels_format": job.qrels_format,
            "out_format": job.out_format,
        },
        "version": _versions()["ndcg-pipeline"],
        "source": source_digest(),
    }


def _plain_json(value: object) -> object:
    """As JSON gives it back (tuples as lists, map keys as text), so a key compares equal to
    the one read from a manifest."""
    return json.loads(json.dumps(value, default=str))


def recompute_reason(out: Path, partition: Partition | None, key: dict[str, Any]) -> str | None:
    """Why the unit's outputs under ``out`` must be computed again, or None when its
    ``manifest.json`` (one of ours, with every output it lists as it was written, and ``_SUCCESS``) records
    the same inputs (:func:`pipeline.io.identity.same`), options, settings and version as ``key``."""
    folder = out / partition.relative() if partition else out
    path = folder / MANIFEST
    if not path.is_file():
        return f"no {MANIFEST} in {folder}" if folder.is_dir() else "never written"
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        problem = None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        recorded, problem = None, f"is unreadable ({type(error).__name__}: {first_line(error)})"
    versions = recorded.get("versions") if isinstance(recorded, dict) else None
    outputs = recorded.get("outputs") if isinstance(recorded, dict) else None
    if problem is None and (not isinstance(versions, dict) or not isinstance(outputs, list)):
        problem = "is not a manifest of ndcg evaluate"
    if problem is not None or not isinstance(recorded, dict) or not isinstance(versions, dict):
        # the unit must be recomputed, but without a manifest of ours its files cannot be told from
        # the user's, and only files of ours are ever replaced: said now, before anything is evaluated
        raise OutputError(
            f"{path} {problem or 'is not ours'}: the outputs of {folder} must be recomputed, but without a "
            "readable manifest of ours they cannot be told from files of yours, and none is replaced; restore "
            "the manifest, or move the folder away, and rerun"
        )
    listed = [*(outputs or []), SUCCESS]
    # a manifest of ours names files of its own folder only: nothing elsewhere is looked at, nor kept
    foreign = [name for name in listed if isinstance(name, str) and not plain_name(name)]
    if foreign:
        return f"{MANIFEST} lists output(s) outside {folder}: {', '.join(foreign)}"
    missing = [name for name in listed if not isinstance(name, str) or not (folder / name).is_file()]
    if missing:
        return f"output(s) missing: {', '.join(map(str, missing))}"
    if versions.get("ndcg-pipeline") != key["version"]:
        return f"ndcg-pipeline version changed: {versions.get('ndcg-pipeline')} -> {key['version']}"
    if versions.get(SOURCE) != key["source"]:
        # a checkout or an editable install: the code changes without the version
        return f"ndcg-pipeline's code changed ({SOURCE} {versions.get(SOURCE)} -> {key['source']})"
    for part in ("options", "settings"):
        old, new = recorded.get(part), _plain_json(key[part])
        if old != new:
            old_map = old if isinstance(old, dict) else {}
            new_map = new if isinstance(new, dict) else {}
            changed = [n for n in sorted({*old_map, *new_map}) if old_map.get(n) != new_map.get(n)] or ["all"]
            return f"{part} changed: {', '.join(changed)}"
    raw_inputs = recorded.get("inputs")
    inputs: dict[str, Any] = raw_inputs if isinstance(raw_inputs, dict) else {}
    for role in ("run", "qrels", "query_attributes"):
        new = key["inputs"][role]
        entry = inputs.get(role)
        if new is None or entry is None:
            if new is not None or entry is not None:
                return f"{role} changed: {'none before' if entry is None else 'none now'}"
            continue
        if not identified(new):
            fresh = unsettled_paths(new)
            if fresh:  # identified once it settles: on the next run
                shown = ", ".join(fresh[:3]) + (f", ... ({len(fresh)} in all)" if len(fresh) > 3 else "")
                return f"{role} changed: {shown} changed just now (within a clock tick of this run)"
            return f"the {role} cannot be identified ({new.get('kind', 'unknown')}): always recomputed"
        if not same(entry.get("identity") if isinstance(entry, dict) else None, new):
            changes = differences(entry.get("identity") if isinstance(entry, dict) else None, new)
            shown = "; ".join(changes[:3]) + (f"; ... ({len(changes)} in all)" if len(changes) > 3 else "")
            return f"{role} changed: {shown}"
    # last: it reads the outputs, the other checks only the manifest and the inputs' stamps
    return _changed_outputs(folder, [name for name in listed if name != SUCCESS], recorded.get(OUTPUT_DIGESTS))


def _changed_outputs(folder: Path, names: list[str], digests: object) -> str | None:
    """Why outputs are no longer what the manifest says was written (edited, truncated, replaced
    by another tool), or None: such outputs are recomputed, never kept."""
    if not isinstance(digests, dict):
        return f"outputs not verifiable: {MANIFEST} records no {OUTPUT_DIGESTS} (written by an earlier version)"
    changed = []
    for name in names:
        path = folder / name
        if path.is_symlink():  # this tool writes files, never links: replaced since
            changed.append(f"{name} (a symbolic link now)")
            continue
        try:
            digest = file_digest(path)
        except OSError as error:  # unreadable (permissions) or gone meanwhile: it cannot vouch for itself
            changed.append(f"{name} ({error.strerror or type(error).__name__})")
            continue
        if digests.get(name) != digest:
            changed.append(name)
    return f"output(s) changed since written: {', '.join(changed)}" if changed else None


def _unchanged_note(out: Path, partition: Partition | None) -> str:
    folder = out / partition.relative() if partition else out
    try:
        finished = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("finished_at")
    except (OSError, ValueError, AttributeError):
        finished = None
    return f"unchanged: same inputs, options and version as its outputs of {finished or 'earlier'}"


def _describe_input(job: Job, given: str | Source, role: str, identity: dict[str, Any] | None) -> dict[str, Any]:
    """Where an input is, how many rows it has, and what identifies the data read (as
    :func:`reuse_key` took it, before reading: :func:`pipeline.io.identity.identify`)."""
    if isinstance(given, Source):  # a Delta table (or a partition of it)
        frame = scan_run(given) if role == "run" else scan_qrels(given)
        rows = int(frame.select(pl.len()).collect().item())
        return {"path": given.path, "format": given.format, "rows": rows, "identity": identity}
    path = given
    if not (fs.is_local(path) or fs.is_object_store(path)):  # read by Spark through Hadoop: no footer read here
        format = job.run_format if role == "run" else job.qrels_format
        return {"path": path, "format": format, "rows": None, "identity": identity}
    source = Source.of(path, job.run_format if role == "run" else job.qrels_format, job.columns)
    frame = scan_run(source) if role == "run" else scan_qrels(source)
    rows = int(frame.select(pl.len()).collect().item())
    return {"path": path, "format": source.format, "rows": rows, "identity": identity}


def _describe_attributes(path: str | None, identity: dict[str, Any] | None) -> dict[str, Any] | None:
    if path is None:
        return None
    source = Source.of(path)
    return {"path": path, "format": source.format, "identity": identity}


# the manifest's versions key for :func:`source_digest`
SOURCE = "ndcg-pipeline-source"


@functools.cache
def source_digest() -> str:
    """A digest of the code that computes the numbers (the package's Python files and its SQL
    steps): in a checkout or an editable install the code changes without the version, and
    ``--skip-unchanged`` must not keep outputs the former code computed."""
    from pipeline.sql_files import SQL_DIR

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    files: list[tuple[str, Traversable]] = [
        (f"pipeline/{p.relative_to(package).as_posix()}", p) for p in sorted(package.rglob("*.py"))
    ]
    files += [(f"sql/{entry.name}", entry) for entry in sorted(SQL_DIR.iterdir(), key=lambda e: e.name)]
    for name, entry in files:
        if name.endswith((".py", ".sql")) and entry.is_file():
            digest.update(name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("ndcg-pipeline", "polars", "duckdb", "pyarrow"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    versions[SOURCE] = source_digest()
    return versions


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
            },
            manifest={**unit.manifest, "finished_at": finished},
        )
        for unit in units
    ]
    written = dict(zip(map(id, files), units, strict=True))
    return publish(out, files, on_written=(lambda f: on_unit(written[id(f)])) if on_unit else None)


def write_unit(out: Path, unit: Unit, out_format: str) -> Path:
    """One unit's folder replaced whole: see :func:`write_units`."""
    return write_units(out, [unit], out_format)[0]


def _writer(write: Callable[[pl.DataFrame, Path], None], frame: pl.DataFrame) -> Callable[[Path], None]:
    return lambda path: write(frame, path)


_exchange = exchange_folders  # the atomic swap of two folders, kept under its former name


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
