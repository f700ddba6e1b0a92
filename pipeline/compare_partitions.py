"""``ndcg compare`` over hive-partitioned systems: ``out/model_a/dt=2026-11-22/per_query.parquet``
(outputs of ``ndcg evaluate --out`` over partitioned logs), or partitioned runs scored here.

Partitions are paired by their value (``dt=2026-11-22`` of one system with the same folder of
the others); a partition only some systems have is left out, named in a warning. The per-query
tables of the paired partitions are stacked with their partition columns, and the comparison
pairs queries by ``(partition, query)`` (:attr:`pipeline.compare.Options.partition_by`): query
ids are only unique within a day of logs, so ``q1`` of two days is two units. Listing folders
opens no file; only the chosen partitions are read (or evaluated).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.errors import InvalidInput, NothingToEvaluate, PartitionNotFound
from pipeline.groups import RESERVED_COLUMNS, attach_shared_groups, check_group_names
from pipeline.io.outputs import (
    LIST_WEIGHTS,
    PER_QUERY,
    output_partitions,
    read_conventions,
    read_list_weights,
    read_per_query,
    recorded_judgments,
    with_partition_columns,
)
from pipeline.io.partitions import Partition, hive_partitions, select_partitions
from pipeline.rules import ValidationWarning, shared_warnings

if TYPE_CHECKING:
    from pipeline.job import Job

log = logging.getLogger("ndcg")


def run_partitions(path: str) -> list[Partition]:
    """The hive partitions of a run (empty when it is a file or not partitioned)."""
    return hive_partitions(path) if Path(path).is_dir() else []


def paired_partitions(
    found: Mapping[str, list[Partition]], filters: Mapping[str, set[str]], what: str
) -> tuple[list[Partition], list[str]]:
    """The partitions every system has (after ``filters``, checked as ``evaluate --partition``
    checks them, over the partitions of all systems), and a line per system naming the ones it
    alone lacks or has. Systems partitioned differently, or sharing no partition, are errors."""
    keys = {name: {tuple(k for k, _ in p.values) for p in parts} for name, parts in found.items()}
    layouts = set().union(*keys.values())
    if len(layouts) > 1:
        shown = "; ".join(f"{name}: {', '.join('/'.join(k) for k in sorted(ks))}" for name, ks in keys.items())
        raise InvalidInput(f"the {what} are partitioned by different keys ({shown}); compare like with like")
    union = sorted({p for parts in found.values() for p in parts})
    chosen = set(select_partitions("the " + what, dict(filters), union)) if filters else set(union)
    selected = {name: [p for p in parts if p in chosen] for name, parts in found.items()}
    common = sorted(set.intersection(*(set(parts) for parts in selected.values())))
    notes = []
    for name, parts in selected.items():
        missing = sorted(chosen - set(parts))
        if missing:
            notes.append(f"{name} has no {_listed(missing)}")
    if not common:
        shown = "; ".join(f"{name}: {_listed(parts) or 'none'}" for name, parts in selected.items())
        raise NothingToEvaluate(f"the {what} share no partition to compare ({shown})")
    return common, notes


def _warn_unpaired(notes: list[str], common: list[Partition]) -> None:
    if notes:
        log.warning(
            "partitions not compared (not in every system): %s; compared: %s", "; ".join(notes), _listed(common)
        )


def _listed(partitions: Sequence[Partition], most: int = 5) -> str:
    shown = ", ".join(str(p) for p in partitions[:most])
    return shown + (f", ... ({len(partitions)} in all)" if len(partitions) > most else "")


def read_partitioned_outputs(
    names: Sequence[str], paths: Sequence[str], filters: Mapping[str, set[str]]
) -> tuple[
    dict[str, pl.DataFrame],
    dict[str, Any],
    tuple[str, ...],
    list[str],
    dict[str | None, dict[str, Any]],
    dict[str, pl.DataFrame],
]:
    """Per-query tables (stacked over the paired partitions), the conventions of each
    ``system/partition``, the partition keys, the notes on unpaired partitions, the
    judgments each system's partition was scored against (``{partition: {system: record}}``,
    :func:`pipeline.io.outputs.recorded_judgments`), and the list weights (with their partition
    columns) of the systems evaluated with ``--doc-weight-col`` in every paired partition."""
    found = {name: output_partitions(path) for name, path in zip(names, paths, strict=True)}
    flat = [name for name, parts in found.items() if not parts]
    if flat:
        layered = [name for name, parts in found.items() if parts]
        example = found[layered[0]][0]
        raise InvalidInput(
            f"{', '.join(layered)} {'is' if len(layered) == 1 else 'are'} partitioned ({example}, ...) but "
            f"{', '.join(flat)} {'is' if len(flat) == 1 else 'are'} not (no key=value folders, or a "
            f"{PER_QUERY} of its own): compare one partition's folder with an unpartitioned output instead "
            f"(--baseline {paths[names.index(layered[0])]}/{example})"
        )
    common, notes = paired_partitions(found, filters, "outputs")
    read: dict[tuple[str, Partition], pl.DataFrame] = {}
    recorded: dict[tuple[str, Partition], Any] = {}
    judged: dict[tuple[str, Partition], Any] = {}
    weighed: dict[tuple[str, Partition], pl.DataFrame] = {}  # --doc-weight-col's list weights, where written
    for name, path in zip(names, paths, strict=True):
        for partition in common:
            folder = str(partition.path(path))
            table = read_per_query(folder)
            if table.height == 0:  # written by hand: `ndcg evaluate` writes no empty partition
                log.warning("%s: %s has no rows: partition %s is not compared", folder, PER_QUERY, partition)
                found = {**found, name: [p for p in found[name] if p != partition]}
                continue
            read[name, partition] = with_partition_columns(table, partition, f"{folder}/{PER_QUERY}")
            recorded[name, partition] = read_conventions(folder)
            judged[name, partition] = recorded_judgments(folder)
            if isinstance(recorded[name, partition], dict) and recorded[name, partition].get("doc_weight_col"):
                # evaluated with --doc-weight-col: its list weights, read (and refused without) here
                weights = read_list_weights(folder)
                weighed[name, partition] = with_partition_columns(weights, partition, f"{folder}/{LIST_WEIGHTS}")
    if len(read) < len(names) * len(common):  # an empty partition leaves the pairing
        common, notes = paired_partitions(found, filters, "outputs")
    _warn_unpaired(notes, common)
    tables = {name: [read[name, partition] for partition in common] for name in names}
    conventions = {f"{name}/{partition}": recorded[name, partition] for name in names for partition in common}
    keys = tuple(key for key, _ in common[0].values)
    judgments: dict[str | None, dict[str, Any]] = {
        str(partition): {name: judged[name, partition] for name in names} for partition in common
    }
    list_weights = {
        name: _stack([weighed[name, partition] for partition in common], name)
        for name in names
        if all((name, partition) in weighed for partition in common)
    }
    stacked = {name: _stack(parts, name) for name, parts in tables.items()}
    return stacked, conventions, keys, notes, judgments, list_weights


def _stack(tables: list[pl.DataFrame], name: str) -> pl.DataFrame:
    try:
        return pl.concat(tables, how="diagonal_relaxed")
    except pl.exceptions.PolarsError as error:
        raise InvalidInput(f"{name}: the per-query tables of its partitions do not stack: {error}") from None


def evaluate_partitioned_runs(
    names: Sequence[str],
    runs: Sequence[str],
    job: Job,
    filters: Mapping[str, set[str]],
    group_by: tuple[str, ...] = (),
) -> tuple[dict[str, pl.DataFrame], tuple[str, ...], list[str], dict[str, pl.DataFrame]]:
    """Each run evaluated by ``job`` (its ``run`` replaced), over the partitions every run has:
    the job evaluates each partition as ``ndcg evaluate`` does (with its own judgments when they
    are partitioned like the run), and its per-query tables come with their partition columns.
    With ``group_by``, each partition's queries get their groups from that partition of every
    run (or from the job's query attributes): :func:`pipeline.groups.attach_shared_groups`.
    Under ``--doc-weight-col``, each run's list weights too, with their partition columns."""
    from pipeline.job import run_jobs

    found = {name: run_partitions(run) for name, run in zip(names, runs, strict=True)}
    flat = [name for name, parts in found.items() if not parts]
    if flat:
        raise InvalidInput(
            f"{', '.join(n for n in names if n not in flat)} partitioned (key=value folders) but "
            f"{', '.join(flat)} not: compare runs partitioned alike, or one partition's folder with a run"
        )
    common, notes = paired_partitions(found, filters, "runs")
    _warn_unpaired(notes, common)
    if group_by:
        check_group_names(group_by, RESERVED_COLUMNS | {key for key, _ in common[0].values})
    # the paired partitions as filters of the job: each key's values (a combination of values
    # no run pairs is left out below)
    chosen = {key: {value for p in common for k, value in p.values if k == key} for key, _ in common[0].values}
    evaluated: dict[Partition, dict[str, pl.DataFrame]] = {partition: {} for partition in common}
    weighed: dict[Partition, dict[str, pl.DataFrame]] = {partition: {} for partition in common}
    warned: dict[Partition, list[tuple[str, ValidationWarning]]] = {partition: [] for partition in common}
    # every run's partitions evaluated together: on Spark, one statement for those of one shape
    jobs = [replace(job, run=run, partition_filters=chosen, out=None) for run in runs]
    for name, units in zip(names, run_jobs(jobs), strict=True):
        for unit in units:
            if unit.partition in evaluated:
                warned[unit.partition] += [(name, warning) for warning in unit.result.warnings]
                evaluated[unit.partition][name] = unit.per_query
                if unit.result.list_weights is not None:  # --doc-weight-col's, as the partition's rows
                    weighed[unit.partition][name] = with_partition_columns(
                        unit.result.list_weights, unit.partition, name
                    )
    for partition, found_in_partition in warned.items():
        for shared_by, warning in shared_warnings(found_in_partition):
            log.warning("%s, partition %s: %s", shared_by, partition, warning)
    if group_by:
        for partition, tables in evaluated.items():
            folders = [str(partition.path(run)) for run in runs]
            evaluated[partition], warnings = attach_shared_groups(
                tables, folders, group_by, query_attributes=job.query_attributes
            )
            for name, warning in warnings:
                log.warning("%s, partition %s: %s", name, partition, warning)
    stacked = {name: _stack([evaluated[partition][name] for partition in common], name) for name in names}
    keys = tuple(key for key, _ in common[0].values)
    list_weights = {
        name: _stack([weighed[partition][name] for partition in common], name)
        for name in names
        if job.evaluation.doc_weight_col is not None
    }
    return stacked, keys, notes, list_weights


def check_filters(filters: Mapping[str, set[str]]) -> None:
    if filters:
        raise PartitionNotFound(
            "--partition selects partitions of partitioned outputs or runs (key=value folders); none is partitioned"
        )
