"""Hive-partitioned datasets: ``root/dt=2026-11-21/part-0.parquet``.

A partition is named by its ``key=value`` folders. Selecting partitions here means the job
reads only those folders, so nothing in any other partition is opened (a corrupt file in an
unrequested partition cannot break a run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pipeline.errors import PartitionNotFound, UsageError


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


def hive_partitions(root: str | Path) -> list[Partition]:
    """Every leaf partition folder under ``root`` (empty when ``root`` is not hive-partitioned)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found: list[Partition] = []

    def walk(folder: Path, values: tuple[tuple[str, str], ...]) -> None:
        children = sorted(
            p for p in folder.iterdir() if p.is_dir() and "=" in p.name and not p.name.startswith((".", "_"))
        )
        if not children:
            if values:
                found.append(Partition(values))
            return
        for child in children:
            key, _, value = child.name.partition("=")
            walk(child, (*values, (key, value)))

    walk(root, ())
    return found


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
