"""Delta Lake tables as inputs: a folder (local, or a prefix of an object store) holding
``_delta_log/``, read at one version through its log, never by listing its data files.

A Delta table's folder holds the data files of every version, superseded ones included (an
overwrite adds files and only marks the old ones removed in the log), so reading the folder as
a directory of Parquet files, or globbing it, would score an old version of the table silently:
:func:`refuse_files_of_table` makes that an error saying how to read the table. The table is
read by Polars (``pl.scan_delta``) at a version resolved once per job (:func:`table_source`),
so every unit of a job reads one snapshot. Partition columns of the table are its partitions,
as a hive layout's folders are (listed from the log's active files, not from folders).

The ``deltalake`` package is an optional extra (``pip install -e '.[delta]'``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pipeline.errors import InvalidInput, UsageError, first_line, install_hint
from pipeline.io import fs

if TYPE_CHECKING:
    import polars as pl

    from pipeline.io.partitions import Partition
    from pipeline.io.read import Columns, Source

DELTA_LOG = "_delta_log"
# the value Delta (and Hive) write for a null partition value
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def is_table(path: str) -> bool:
    """Whether ``path`` is a Delta table's folder (it holds ``_delta_log/``). Globs never are."""
    if not (fs.is_local(path) or fs.is_object_store(path)) or any(c in path for c in "*?["):
        return False
    filesystem = fs.filesystem_for(path)
    # the path itself first, so that a store that cannot be reached is named by the input's URL
    return filesystem.kind(path) == "dir" and filesystem.kind(_join(path, DELTA_LOG)) == "dir"


def parse_version(text: str | int, flag: str) -> int | datetime:
    """``--run-version`` as given: a version number, or an ISO 8601 time (UTC unless it says),
    which reads the table as it was then."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise UsageError(f"{flag} {text}: a version is a number >= 0")
        return text
    value = str(text).strip()
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"{flag} {text!r}: expected a version number (e.g. 3) or a time (e.g. 2026-11-21T00:00:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def table_source(path: str, version: str | int | None, flag: str, columns: Columns | None = None) -> Source | None:
    """The Delta table at ``path`` as a :class:`~pipeline.io.read.Source` at one resolved version
    (the current one, or ``version``), or None when ``path`` is not a Delta table (``version``
    given for it is then a usage error)."""
    from pipeline.io.read import Columns, Source

    if not is_table(path):
        if version is not None:
            raise UsageError(f"{flag}: {path} is not a Delta table (no {DELTA_LOG}/ folder in it)")
        return None
    resolved = resolve_version(path, None if version is None else parse_version(version, flag))
    return Source(path=path, format="delta", columns=columns or Columns(), version=resolved)


def resolve_version(path: str, version: int | datetime | None) -> int:
    """The version number of ``path`` to read: the current one, ``version`` itself (checked to
    exist), or the last one committed at or before a time."""
    table = _open(path, version if isinstance(version, int) else None)
    if isinstance(version, datetime):
        try:
            table.load_as_version(version)
        except Exception as error:
            raise InvalidInput(
                f"{path}: no version of the Delta table at {version.isoformat()}: {_message(error)}"
            ) from None
        # a time before the first commit loads the first version: the table did not exist then
        committed = _committed_at(path, int(table.version()))
        if committed is not None and committed > version:
            raise InvalidInput(
                f"{path}: no version of the Delta table at {version.isoformat()}: its first version, "
                f"{table.version()}, was committed later, at {committed.isoformat()}"
            )
    return int(table.version())


def _committed_at(path: str, version: int) -> datetime | None:
    """When ``version`` of the table was committed (its commit's timestamp), or None when the
    log does not say. Read from the table at its current version: deltalake numbers the history
    of a table loaded at an older version wrongly."""
    try:
        history = _open(path, None).history()
    except Exception:
        return None
    for entry in history:
        if entry.get("version") == version and isinstance(entry.get("timestamp"), int):
            return datetime.fromtimestamp(entry["timestamp"] / 1000, tz=UTC)
    return None


def partitions(source: Source) -> list[Partition]:
    """The partitions of the table at the source's version: one per distinct value of its
    partition columns among the files the version holds (in the table's column order)."""
    from pipeline.io.partitions import Partition, _reserved_names

    table = _open(source.path, source.version)
    keys = list(table.metadata().partition_columns)
    if not keys:
        return []
    reserved = [key for key in keys if key in _reserved_names()]
    if reserved:
        raise InvalidInput(
            f"{source.path}: the Delta table is partitioned by {reserved[0]!r}, a column name of the inputs or "
            "outputs; its partitions cannot be evaluated one by one (the column would be dropped from each): "
            "give the table partitioned by another column"
        )
    import polars as pl

    actions = pl.DataFrame(table.get_add_actions(flatten=True))
    values = actions.select([pl.col(f"partition.{key}").cast(pl.String).fill_null(NULL_PARTITION) for key in keys])
    return sorted(
        Partition(tuple((key, quote(str(value), safe="=:- ")) for key, value in zip(keys, row, strict=True)))
        for row in values.unique().rows()
    )


def narrowed(source: Source, partition: Partition) -> Source:
    """The source reading only ``partition``'s rows (its files only), without its columns: the
    job adds the partition's values to the outputs, as for hive folders."""
    from dataclasses import replace

    return replace(source, partition=partition.values)


def scan(source: Source) -> pl.LazyFrame:
    """The table at the source's version, narrowed to its partition (the partition columns then
    dropped), lazily."""
    import polars as pl

    from pipeline.io.partitions import Partition

    _require()
    options = _storage_options(source.path)
    try:
        frame = pl.scan_delta(source.path, version=source.version, storage_options=options)
        names = frame.collect_schema().names()
    except Exception as error:
        raise InvalidInput(f"{source.path}: cannot read the Delta table: {_message(error)}") from None
    if source.partition:
        values = Partition(source.partition).as_dict()
        missing = [key for key in values if key not in names]
        if missing:
            raise InvalidInput(f"{source.path}: no partition column {missing[0]!r} in the Delta table")
        condition = pl.lit(True)
        for key, value in values.items():
            column = pl.col(key).cast(pl.String)
            condition &= column.is_null() if value == NULL_PARTITION else column == value
        frame = frame.filter(condition).drop(list(values))
    return frame


def data_files(source: Source) -> list[str]:
    """The data files the source's version holds (of its partition only, when narrowed)."""
    from pipeline.io.partitions import Partition

    table = _open(source.path, source.version)
    filters = [(key, "=", value) for key, value in Partition(source.partition).as_dict().items()] or None
    try:
        try:
            return sorted(table.file_uris(file_pruning_predicate=filters))
        except TypeError:  # deltalake before file_pruning_predicate
            return sorted(table.file_uris(partition_filters=filters))
    except Exception as error:
        raise InvalidInput(f"{source.path}: cannot list the Delta table's files: {_message(error)}") from None


def table_version(source: Source) -> int:
    """The version the source reads (resolved when it was made; the current one otherwise)."""
    return source.version if source.version is not None else resolve_version(source.path, None)


def table_id(source: Source) -> str | None:
    """The table's id (its log's ``metaData.id``, made when the table is created): a table
    deleted and written again at the same path starts again at version 0 under a new id."""
    try:
        identifier = _open(source.path, table_version(source)).metadata().id
    except InvalidInput:
        raise
    except Exception:
        return None
    return str(identifier) if identifier else None


def refuse_files_of_table(path: str, table: str, flag_hint: str = "--run/--qrels") -> None:
    """Reading a Delta table's folder as Parquet files is refused (it would read superseded
    files too): the message says how to read it as a table."""
    raise InvalidInput(
        f"{path}: inside the Delta table {table} (it holds {DELTA_LOG}/): its data files include those of "
        f"every earlier version, so reading them as Parquet files would score superseded data; read it as a "
        f"table: pass the table's folder {table} itself as {flag_hint} (without --run-format/--qrels-format "
        "parquet), --partition KEY=VALUE for one partition of it, and --run-version/--qrels-version N for an "
        "older version"
    )


def _open(path: str, version: int | None) -> Any:
    _require()
    from deltalake import DeltaTable

    try:
        return DeltaTable(path, version=version, storage_options=_storage_options(path))
    except Exception as error:
        text = _message(error)
        if version is not None and re.search(r"version|not found|invalid", text, re.IGNORECASE):
            try:
                latest = DeltaTable(path, storage_options=_storage_options(path)).version()
            except Exception:
                latest = None
            if latest is not None and version > latest:
                raise InvalidInput(
                    f"{path}: the Delta table has no version {version}; its latest is {latest}"
                ) from None
        raise InvalidInput(f"{path}: cannot read the Delta table: {text}") from None


def _storage_options(path: str) -> dict[str, str] | None:
    if not fs.is_object_store(path):
        return None
    from pipeline.io.objects import storage_options

    options = storage_options(path)
    return {"AWS_ALLOW_HTTP": "true"} if options else None


def _require() -> None:
    try:
        import deltalake  # noqa: F401
    except ImportError:
        raise UsageError(f"reading a Delta table needs the deltalake package: {install_hint('delta')}") from None


def _message(error: BaseException) -> str:
    from pipeline.io.objects import scrub

    return scrub(first_line(error))


def _join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"
