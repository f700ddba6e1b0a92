"""Delta Lake tables as inputs: a folder (local, or a prefix of an object store) holding
``_delta_log/``, read at one version through its log, never by listing its data files.

A Delta table's folder holds the data files of every version, superseded ones included (an
overwrite adds files and only marks the old ones removed in the log), so reading the folder as
a directory of Parquet files, or globbing it, would score an old version of the table silently:
:func:`refuse_files_of_table` makes that an error saying how to read the table. The table is
read by Polars (``pl.scan_delta``) at a version resolved once per job
(:func:`pipeline.io.read.table_source`), so every unit of a job reads one snapshot. Partition
columns of the table are its partitions, as a hive layout's folders are (listed from the log's
active files, not from folders).

The ``deltalake`` package is an optional extra (``pip install -e '.[delta]'``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar
from urllib.parse import quote

from pipeline.errors import InvalidInput, UsageError, first_line, install_hint
from pipeline.io.fs import refuse_files_of_table
from pipeline.io.location import DELTA_LOG, Location
from pipeline.io.objects import filesystem_for, scrub, storage_options
from pipeline.io.partitions import RESERVED_NAMES, Partition

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "DELTA_LOG",
    "NULL_PARTITION",
    "Table",
    "data_files",
    "is_table",
    "narrowed",
    "parse_version",
    "partitions",
    "refuse_files_of_table",
    "resolve_version",
    "scan",
    "table_id",
    "table_version",
]

# the value Delta (and Hive) write for a null partition value
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


class Table(Protocol):
    """What reading a table takes of an input: a :class:`pipeline.io.read.Source` of format
    ``delta`` (named by this protocol so that this module stands below the readers), a
    dataclass, so that :func:`narrowed` can make one narrowed to a partition."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def path(self) -> str: ...

    @property
    def version(self) -> int | None: ...

    @property
    def partition(self) -> tuple[tuple[str, str], ...]: ...


TableT = TypeVar("TableT", bound=Table)


def is_table(path: str | Location) -> bool:
    """Whether ``path`` is a Delta table's folder (it holds ``_delta_log/``). Globs never are."""
    location = Location.of(path)
    path = location.text
    if location.is_hadoop or any(c in path for c in "*?["):
        return False
    filesystem = filesystem_for(location)
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


def partitions(source: Table) -> list[Partition]:
    """The partitions of the table at the source's version: one per distinct value of its
    partition columns among the files the version holds (in the table's column order)."""
    table = _open(source.path, source.version)
    keys = list(table.metadata().partition_columns)
    if not keys:
        return []
    reserved = [key for key in keys if key in RESERVED_NAMES]
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


def narrowed(source: TableT, partition: Partition) -> TableT:
    """The source reading only ``partition``'s rows (its files only), without its columns: the
    job adds the partition's values to the outputs, as for hive folders."""
    return replace(source, partition=partition.values)


def scan(source: Table) -> pl.LazyFrame:
    """The table at the source's version, narrowed to its partition (the partition columns then
    dropped), lazily."""
    import polars as pl

    # the table opened here (its version checked against the latest first) is the one Polars reads
    table = _open(source.path, source.version)
    try:
        frame = pl.scan_delta(table)
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


def data_files(source: Table) -> list[str]:
    """The data files the source's version holds (of its partition only, when narrowed)."""
    table = _open(source.path, source.version)
    filters = [(key, "=", value) for key, value in Partition(source.partition).as_dict().items()] or None
    try:
        try:
            return sorted(table.file_uris(file_pruning_predicate=filters))
        except TypeError:  # deltalake before file_pruning_predicate
            return sorted(table.file_uris(partition_filters=filters))
    except Exception as error:
        raise InvalidInput(f"{source.path}: cannot list the Delta table's files: {_message(error)}") from None


def table_version(source: Table) -> int:
    """The version the source reads (resolved when it was made; the current one otherwise)."""
    return source.version if source.version is not None else resolve_version(source.path, None)


def table_id(source: Table) -> str | None:
    """The table's id (its log's ``metaData.id``, made when the table is created): a table
    deleted and written again at the same path starts again at version 0 under a new id."""
    try:
        identifier = _open(source.path, table_version(source)).metadata().id
    except InvalidInput:
        raise
    except Exception:
        return None
    return str(identifier) if identifier else None


def _open(path: str, version: int | None) -> Any:
    """The table at ``version`` (None: the current one). The current version is read first and
    a later one refused, naming the latest: deltalake walks every version number up to the one
    asked for, so a Unix time typed as a version took hours, and one beyond 64 bits failed with
    "int too big to convert"."""
    table = _load(path)
    if version is None:
        return table
    latest = int(table.version())
    if version > latest:
        raise InvalidInput(f"{path}: the Delta table has no version {version}; its latest is {latest}")
    if version != latest:
        try:
            table.load_as_version(version)
        except Exception as error:
            raise InvalidInput(
                f"{path}: cannot read version {version} of the Delta table (its latest is {latest}): {_message(error)}"
            ) from None
    return table


def _load(path: str) -> Any:
    _require()
    from deltalake import DeltaTable

    try:
        return DeltaTable(path, storage_options=_storage_options(path))
    except Exception as error:
        raise InvalidInput(f"{path}: cannot read the Delta table: {_message(error)}") from None


def _storage_options(path: str) -> dict[str, str] | None:
    if not Location.of(path).is_object_store:
        return None
    options = storage_options(path)
    return {"AWS_ALLOW_HTTP": "true"} if options else None


def _require() -> None:
    try:
        import deltalake  # noqa: F401
    except ImportError:
        raise UsageError(f"reading a Delta table needs the deltalake package: {install_hint('delta')}") from None


def _message(error: BaseException) -> str:
    return scrub(first_line(error))


def _join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"
