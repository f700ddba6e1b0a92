"""Hive-partitioned datasets: ``root/dt=2026-11-21/part-0.parquet``.

A partition is named by its ``key=value`` folders. Selecting partitions here means the job
reads only those folders, so nothing in any other partition is opened (a corrupt file in an
unrequested partition cannot break a run).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pipeline.errors import InvalidInput, PartitionNotFound, UsageError
from pipeline.io.fs import LOCAL, FileSystem, check_layout, is_partition_folder
from pipeline.registry import MEASURE_NAMES

# --missing-qrels-partition: what a run partition whose folder is missing from judgments
# partitioned like the run is scored against
MISSING_QRELS_PARTITION = ("error", "whole")


@dataclass(frozen=True, order=True)
class Partition:
    """One leaf folder of a hive layout: its ``(key, value)`` pairs, outermost first."""

    values: tuple[tuple[str, str], ...]

    def path(self, root: str | Path) -> Path:
        return Path(root).joinpath(*[f"{key}={value}" for key, value in self.values])

    def relative(self) -> Path:
        return Path(*[f"{key}={value}" for key, value in self.values])

    def as_dict(self) -> dict[str, str]:
        return {key: unquote(value) for key, value in self.values}

    def __str__(self) -> str:
        return "/".join(f"{key}={value}" for key, value in self.values)


# The columns of the outputs (per-query and summary tables, a grouped summary's ``overall``
# marker): a partition key may not take one of these names, nor a group column
# (pipeline.groups.RESERVED_COLUMNS is this set).
OUTPUT_COLUMNS = frozenset(
    {"query_id", "k", "queries", *MEASURE_NAMES, "ndcg_min", "ndcg_max", "ties_straddle_k", "tie_sensitive_queries"}
    | {"overall"}
)
# Canonical input columns and the outputs' columns: a partition key of one of these names would
# be added over (or beside) the column of that name.
RESERVED_NAMES = OUTPUT_COLUMNS | {"query_id", "doc_id", "score", "relevance"}


def check_partition_keys(files: list[str], columns: list[str], root: str = "") -> None:
    """Refuse a ``key=value`` folder between ``root`` (the dataset's folder, or the fixed part
    of a glob) and a data file whose key is a column of the data files (``columns``) or a
    canonical or output column name. A reader applying the folder's value would replace the
    column's (DuckDB's hive detection did: a silently wrong number), and the job adding the key
    to the outputs would clash with the column; which of the two was meant cannot be told, so
    the folder or the column must be renamed. Folders above ``root`` are the user's own path
    (``/data/k=5/run.parquet`` names a file, not a partition) and are not read as partitions.
    Every engine's reader and the job's partition listing call this, so all engines refuse the
    same layouts."""
    reserved = RESERVED_NAMES
    seen: set[str] = set()
    prefix = str(root).rstrip("/") + "/" if root else ""
    for path in files:
        parent = str(path).rstrip("/").rsplit("/", 1)[0]
        if prefix and not (parent + "/").startswith(prefix):
            continue
        below = (parent + "/")[len(prefix) :].rstrip("/") if prefix else parent
        for folder in below.split("/"):
            if folder in seen or not is_partition_folder(folder):
                continue
            seen.add(folder)
            key = folder.partition("=")[0]
            if key in columns:
                why = "a column of the data files"
            elif key in reserved:
                why = "a column name of the inputs or outputs"
            else:
                continue
            where = prefix + below[: below.index(folder) + len(folder)]
            raise InvalidInput(
                f"{where}: partition folder {folder!r} names column {key!r}, which is {why}; the folder's value "
                "and the column's cannot both be kept: rename the folder's key or the column"
            )


def parse_partition_filters(texts: list[str]) -> dict[str, set[str]]:
    """``["dt=2026-11-21", "dt=2026-11-22", "locale=de"]`` -> ``{"dt": {...}, "locale": {...}}``:
    values of one key are alternatives, different keys must all match."""
    filters: dict[str, set[str]] = {}
    for text in texts:
        key, equals, value = text.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise UsageError(f"cannot read partition {text!r}: expected key=value, e.g. dt=2026-11-21")
        filters.setdefault(key.strip(), set()).add(value.strip())
    return filters


def hive_partitions(
    root: str | Path, filesystem: FileSystem = LOCAL, only: dict[str, set[str]] | None = None
) -> list[Partition]:
    """Every leaf partition folder under ``root`` (empty when ``root`` is not a directory or not
    hive-partitioned), listed through ``filesystem`` (the local one, an object store's, or
    Hadoop's on Spark); no file is opened. A folder holding partition folders and other data
    beside them is an error naming it (see :func:`pipeline.io.fs.check_layout`).

    ``only`` (``{key: values}``, as ``--partition`` gives them) narrows the listing: a folder of
    a key in ``only`` with another value is returned as it is, not listed below (one listing
    request a folder: on an object store, a thousand days listed to evaluate one took 70 to
    99 s). Such a folder matches no filter of ``only``, so :func:`select_partitions` and
    :func:`judgments_partition` never choose it, and it still says which values the key has."""
    if filesystem.kind(str(root)) != "dir":
        return []
    found: list[Partition] = []
    wanted = only or {}

    def walk(folder: str, values: tuple[tuple[str, str], ...]) -> None:
        entries = filesystem.entries(folder)
        check_layout(folder, entries)
        children = [name for name, kind in entries if kind == "dir" and is_partition_folder(name)]
        if not children:
            if values:
                found.append(Partition(values))
            return
        for name in children:
            key, _, value = name.partition("=")
            if key in wanted and value not in wanted[key]:
                found.append(Partition((*values, (key, value))))
                continue
            walk(f"{folder.rstrip('/')}/{name}", (*values, (key, value)))

    walk(str(root), ())
    check_partition_keys([f"{str(root).rstrip('/')}/{partition}/_" for partition in found], [], str(root))
    return found


def partition_values(partitions: list[Partition]) -> dict[str, set[str]]:
    """``{key: values}`` of ``partitions``: what listing another dataset partitioned like them
    needs to look at (``only`` of :func:`hive_partitions`)."""
    values: dict[str, set[str]] = {}
    for partition in partitions:
        for key, value in partition.values:
            values.setdefault(key, set()).add(value)
    return values


def judgments_partition(
    partition: Partition, qrels_root: str, qrels_partitions: list[Partition], missing: str = "error"
) -> Partition | None:
    """The folder of ``qrels_root`` holding the judgments of the run's ``partition``, or None
    for the whole judgments.

    Judgments are narrowed by each of the run's partition keys they are partitioned by,
    outermost first (judgments by ``dt`` serve a run by ``dt`` and ``locale``); judgments not
    partitioned by the run's outermost key are used whole. A value missing from judgments
    partitioned by its key means that day's judgments have not landed: scoring it against every
    other day's would be a silently wrong number, so it is an error unless ``missing`` is
    ``"whole"`` (``--missing-qrels-partition whole``)."""
    candidates = qrels_partitions
    depth = 0
    for key, value in partition.values:
        if key not in {p.values[depth][0] for p in candidates if len(p.values) > depth}:
            break
        candidates = [p for p in candidates if len(p.values) > depth and p.values[depth] == (key, value)]
        if not candidates:
            folder = Partition(partition.values[: depth + 1])
            if missing == "whole":
                logging.getLogger("ndcg").warning(
                    "%s/%s: no such folder: partition %s is scored against all the judgments in %s "
                    "(--missing-qrels-partition whole)",
                    qrels_root.rstrip("/"),
                    folder,
                    partition,
                    qrels_root,
                )
                return None
            raise InvalidInput(
                f"{qrels_root.rstrip('/')}/{folder}: no such folder: the judgments are partitioned by {key!r} but "
                f"have no {key}={value} for the run's partition {partition}; add that day's judgments, or pass "
                "--missing-qrels-partition whole to score it against all the judgments"
            )
        depth += 1
    return Partition(partition.values[:depth]) if depth else None


def select_partitions(
    root: str | Path, filters: dict[str, set[str]], available: list[Partition] | None = None
) -> list[Partition]:
    """The partitions of ``root`` matching ``filters``; every filter value must exist.

    ``available`` is the partitions of ``root`` when they were listed elsewhere (the spark
    engine lists object stores through Hadoop); by default the local folders are listed."""
    available = hive_partitions(root) if available is None else available
    if not filters:
        return available
    if not available:
        raise PartitionNotFound(
            f"{root}: not a hive-partitioned dataset (no key=value folders), cannot select {_show(filters)}"
        )
    keys = {key for partition in available for key, _ in partition.values}
    for key, values in filters.items():
        if key not in keys:
            raise PartitionNotFound(f"{root}: no partition key {key!r}; keys found: {', '.join(sorted(keys))}")
        present = {value for partition in available for k, value in partition.values if k == key}
        missing = sorted(values - present)
        if missing:
            raise PartitionNotFound(
                f"{root}: partition {key}={missing[0]} does not exist; "
                f"{key} has {len(present)} value(s), e.g. {', '.join(sorted(present)[-3:])}"
            )
    chosen = [p for p in available if all(dict(p.values).get(k, None) in v for k, v in filters.items())]
    if not chosen:
        raise PartitionNotFound(f"{root}: no partition matches {_show(filters)} together")
    return chosen


def _show(filters: dict[str, set[str]]) -> str:
    return " ".join(f"{key}={value}" for key, values in sorted(filters.items()) for value in sorted(values))
