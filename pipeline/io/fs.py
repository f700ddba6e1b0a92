"""Listing inputs: which files of a path are data, by one rule for every engine.

Every engine reads the list this module makes (Polars and DuckDB from local listings and from
object stores listed through ``pyarrow.fs``, :mod:`pipeline.io.objects`; Spark from the same
walk over Hadoop's FileSystem), so no engine applies hidden-file rules of its own and two
engines never read different files of one path. A Delta table's folder is never listed as data
files (it holds superseded ones): :mod:`pipeline.io.delta` reads it through its log.

This module stands on :mod:`pipeline.io.location` and :mod:`pipeline.errors` only: the file
systems it lists (an object store's, Hadoop's) are handed to it, never imported.

- **Hidden** (skipped, never descended into): names starting with ``.`` or ``_`` (a ``_``
  name holding ``=`` is a partition folder), and names ending in ``._COPYING_``. This is
  Spark's and Hadoop's rule, which Hive and most data tools share: ``_SUCCESS``,
  ``_temporary/``, ``.part-0.parquet.crc``, ``_inprogress.parquet`` are not data.
- **Data files** of a directory are every other file under it; for Parquet they must be
  named ``*.parquet`` or ``*.pq`` (anything else is an error naming it, not skipped: a
  stray file is more often a mistake than decoration).
- **Errors** name the path: a dangling symbolic link, a symbolic link to the folder holding it
  or to a folder above (a loop, named with its target), a FIFO, socket or device, a folder
  holding ``key=value`` partition folders *and* data files or other folders beside them (a
  half-migrated layout, whose loose files one engine would read and another would not), a
  directory without data files.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NoReturn, Protocol

from pipeline.errors import InvalidInput
from pipeline.io.location import DELTA_LOG, OBJECT_STORE_SCHEMES, is_local, is_object_store, local_path

__all__ = [
    "LOCAL",
    "OBJECT_STORE_SCHEMES",
    "PARQUET_SUFFIXES",
    "FileSystem",
    "Kind",
    "LocalFileSystem",
    "check_layout",
    "data_files",
    "is_hidden",
    "is_local",
    "is_object_store",
    "is_partition_folder",
    "local_path",
    "refuse_files_of_table",
]

Kind = Literal["file", "dir", "dangling", "other", "missing"]
PARQUET_SUFFIXES = (".parquet", ".pq")


def is_hidden(name: str) -> bool:
    """Whether a file or folder name is not data (Spark's ``shouldFilterOutPathName``)."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name) or name.endswith("._COPYING_")


def is_partition_folder(name: str) -> bool:
    return "=" in name and not is_hidden(name)


class FileSystem(Protocol):
    """What listing needs of a file system: the local one here, an object store's
    (:class:`pipeline.io.objects.ObjectStore`), Hadoop's in the Spark engine."""

    def kind(self, path: str) -> Kind: ...

    def entries(self, folder: str) -> list[tuple[str, Kind]]:
        """``(name, kind)`` of each entry of ``folder``."""
        ...

    def glob(self, pattern: str) -> list[str] | None:
        """The paths matching ``pattern``, or None when ``pattern`` is not a pattern."""
        ...

    def missing(self, path: str) -> str:
        """Why ``path``, which :meth:`kind` found missing, is not there, for the message."""
        ...


class LocalFileSystem:
    def kind(self, path: str) -> Kind:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return "dangling" if os.path.islink(path) else "missing"
        except OSError:
            return "other"
        if stat.S_ISDIR(mode):
            return "dir"
        return "file" if stat.S_ISREG(mode) else "other"

    def entries(self, folder: str) -> list[tuple[str, Kind]]:
        try:
            names = sorted(os.listdir(folder))
        except OSError as error:
            raise InvalidInput(f"{folder}: cannot list: {error.strerror or error}") from None
        return [(name, self.kind(os.path.join(folder, name))) for name in names]

    def glob(self, pattern: str) -> list[str] | None:
        # a path that exists is literal, even with [ * ? in its name
        if self.kind(pattern) != "missing" or not glob.has_magic(pattern):
            return None
        return sorted(glob.glob(pattern, recursive=True))

    def missing(self, path: str) -> str:
        return "no such file or directory"


LOCAL = LocalFileSystem()


def data_files(path: str, format: str, filesystem: FileSystem = LOCAL) -> list[str]:
    """The data files ``path`` names (a file, a directory, or a glob), sorted; an error naming
    the path when there are none or when something under it cannot be data."""
    matches = filesystem.glob(path)
    if matches is None:
        kind = filesystem.kind(path)
        if kind == "file":
            _refuse_inside_table([path], filesystem)
            return [path]  # named by the user: read even when its name looks hidden
        if kind == "dir":
            found = list(_walk(path, format, filesystem))
            _refuse_inside_table(found[:1], filesystem)  # a folder below a Delta table's (its partition)
            if not found:
                raise InvalidInput(
                    f"{path}: directory holds no {_data_description(format)}{_hidden_note(path, filesystem)}"
                )
            return found
        _refuse_kind(path, kind, filesystem)
    visible = [match for match in matches if not _hidden_below(match, path)]
    found = []
    for match in visible:
        kind = filesystem.kind(match)
        if kind == "dir":
            found.extend(_walk(match, format, filesystem))
        elif kind == "file":
            found.append(match)
        else:
            _refuse_kind(match, kind, filesystem)
    if not found:
        raise InvalidInput(f"{path}: nothing matches this pattern (looked for {_data_description(format)})")
    _refuse_inside_table(found, filesystem)
    return sorted(found)


def _refuse_inside_table(files: list[str], filesystem: FileSystem) -> None:
    """Data files named inside a Delta table's folder (``table/*.parquet``, ``table/dt=1/part-0.parquet``)
    are refused: the folder holds superseded files too (see :mod:`pipeline.io.delta`). Each folder
    above the files is looked at once."""
    checked: set[str] = set()
    for file in files:
        folder = file.rstrip("/").rsplit("/", 1)[0] if "/" in file else "."
        while folder and folder not in checked:
            checked.add(folder)
            if filesystem.kind(_join(folder, DELTA_LOG)) == "dir":
                refuse_files_of_table(file, folder)
            parent = folder.rsplit("/", 1)[0] if "/" in folder.rstrip("/") else ""
            if parent == folder or parent.endswith(":/") or parent.endswith(":"):
                break
            folder = parent


def check_layout(folder: str, entries: list[tuple[str, Kind]]) -> None:
    """Refuse a folder holding ``key=value`` partition folders and anything else visible
    beside them: the loose files are neither in a partition nor outside the dataset. A local
    folder's symbolic link to itself or a folder above is named first, as the loop it is."""
    if is_local(folder):
        _refuse_link_loops(folder, entries)
    partitions = [name for name, kind in entries if kind == "dir" and is_partition_folder(name)]
    others = [name for name, _ in entries if not is_hidden(name) and name not in partitions]
    if partitions and others:
        listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise InvalidInput(
            f"{_join(folder, others[0])}: beside the partition folders ({partitions[0]}, ...) of {folder} "
            f"there is {listed}: a half-migrated layout; move the file(s) into a partition folder or out of "
            "the dataset (names starting with _ or . are skipped as hidden)"
        )


def _walk(folder: str, format: str, filesystem: FileSystem, seen: frozenset[str] = frozenset()) -> Iterator[str]:
    entries = filesystem.entries(folder)
    if (DELTA_LOG, "dir") in entries:
        refuse_files_of_table(folder, folder)
    real = os.path.realpath(folder) if filesystem is LOCAL else folder
    if real in seen:
        raise InvalidInput(f"{folder}: a symbolic link loop (this folder is inside itself)")
    check_layout(folder, entries)
    for name, kind in entries:
        if is_hidden(name):
            continue
        path = _join(folder, name)
        if kind == "dir":
            yield from _walk(path, format, filesystem, seen | {real})
        elif kind == "file":
            if format == "parquet" and not name.lower().endswith(PARQUET_SUFFIXES):
                raise InvalidInput(
                    f"{path}: not a Parquet data file name (expected *.parquet or *.pq) in the dataset {folder}; "
                    "move it out or rename it (names starting with _ or . are skipped as hidden)"
                )
            yield path
        else:
            _refuse_kind(path, kind, filesystem)


def _refuse_link_loops(folder: str, entries: list[tuple[str, Kind]]) -> None:
    """A visible symbolic link of ``folder`` to the folder itself or a folder above it
    (``loop -> .``, ``dt=1/dt=2 -> ..``) makes the dataset contain itself: named, with its target."""
    here = os.path.realpath(local_path(folder))
    for name, kind in entries:
        path = os.path.join(local_path(folder), name)
        if kind != "dir" or is_hidden(name) or not os.path.islink(path):
            continue
        target = os.path.realpath(path)
        if here == target or here.startswith(target.rstrip(os.sep) + os.sep):
            where = "this folder itself" if target == here else f"{target}, a folder above it"
            raise InvalidInput(
                f"{_join(folder, name)}: a symbolic link loop: it points to {os.readlink(path)!r}, which is {where}, "
                "so the dataset would contain itself; remove the link or point it outside the dataset (or give it "
                "a name starting with _ or ., which is skipped as hidden)"
            )


def refuse_files_of_table(path: str, table: str, flag_hint: str = "--run/--qrels") -> NoReturn:
    """Reading a Delta table's folder as Parquet files is refused (it would read superseded
    files too): the message says how to read it as a table."""
    raise InvalidInput(
        f"{path}: inside the Delta table {table} (it holds {DELTA_LOG}/): its data files include those of "
        f"every earlier version, so reading them as Parquet files would score superseded data; read it as a "
        f"table: pass the table's folder {table} itself as {flag_hint} (without --run-format/--qrels-format "
        "parquet), --partition KEY=VALUE for one partition of it, and --run-version/--qrels-version N for an "
        "older version"
    )


def _refuse_kind(path: str, kind: Kind, filesystem: FileSystem) -> NoReturn:
    if kind == "dangling":
        raise InvalidInput(
            f"{path}: a dangling symbolic link (it points to {os.readlink(path)!r}, which does not exist)"
        )
    if kind == "missing":
        raise InvalidInput(f"{path}: {filesystem.missing(path)}")
    raise InvalidInput(f"{path}: not a regular file or directory ({_special_kind(path)})")


def _special_kind(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device")):
        if test(mode):
            return name
    return "a special file"


def _hidden_below(match: str, pattern: str) -> bool:
    """Whether a glob match is hidden in a part the pattern matched (not in the literal
    folders the pattern starts with, which the user named)."""
    prefix = pattern.split("*")[0].split("?")[0].split("[")[0]
    fixed = len(Path(prefix).parts) - (0 if prefix.endswith("/") else 1)
    return any(is_hidden(part) for part in Path(match).parts[max(fixed, 0) :])


def _hidden_note(folder: str, filesystem: FileSystem) -> str:
    hidden = [name for name, _ in filesystem.entries(folder) if is_hidden(name)]
    return f" (skipped as hidden: {', '.join(hidden[:4])}{', ...' if len(hidden) > 4 else ''})" if hidden else ""


def _data_description(format: str) -> str:
    return "Parquet files (*.parquet, *.pq)" if format == "parquet" else f"{format} files"


def _join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"
