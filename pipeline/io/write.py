"""Writers: tables to files (:data:`FORMATS`), and the names of the output layer in one place.

Every output of the tool goes through one of these modules, each below the next:

- :mod:`pipeline.io.output_errors`: a write failure (a full or read-only disk, permissions, a
  file in the way) as an :class:`~pipeline.errors.OutputError` (exit 2) saying what to do;
- :mod:`pipeline.io.manifest`: a :class:`Unit` of outputs, its ``manifest.json``, and which
  files of a folder are ours (only those are ever replaced or removed);
- :mod:`pipeline.io.disk`: the lock on the output folder, syncing, the umask;
- :mod:`pipeline.io.publish_objects`: units under an object-store prefix;
- :mod:`pipeline.io.publish`: :func:`publish`, units replaced whole (staged beside the target
  and swapped in one step), and the repair of what a killed writer left;
- :mod:`pipeline.io.write_file`: single files (the HTML report, its figures);
- :mod:`pipeline.io.out_folder`: :func:`check_out_folder`, where outputs may go, before anything runs.

The names other modules import from here (``publish``, ``Unit``, ``OutputError``, ...) are those
modules' own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import polars as pl

from pipeline.errors import UsageError
from pipeline.io.format import trec_file_text
from pipeline.io.location import is_object_store
from pipeline.io.manifest import (
    GENERATOR,
    MANIFEST,
    OUTPUT_DIGESTS,
    SUCCESS,
    Unit,
    file_digest,
    owned_names,
    plain_name,
    unit_kind,
)
from pipeline.io.out_folder import check_out_folder
from pipeline.io.output_errors import OutputError, os_error_number, output_error
from pipeline.io.publish import exchange_folders, publish, retire
from pipeline.io.write_file import check_file_target, write_file, write_files

__all__ = [
    "FORMATS",
    "GENERATOR",
    "MANIFEST",
    "OUTPUT_DIGESTS",
    "SUCCESS",
    "OutputError",
    "Unit",
    "check_file_target",
    "check_out_folder",
    "exchange_folders",
    "file_digest",
    "os_error_number",
    "output_error",
    "owned_names",
    "plain_name",
    "publish",
    "retire",
    "unit_kind",
    "write_file",
    "write_files",
    "write_frame",
    "write_tables",
]


FORMATS: dict[str, tuple[str, Callable[[pl.DataFrame, Path], None]]] = {
    "parquet": (".parquet", lambda frame, path: frame.write_parquet(path)),
    "csv": (".csv", lambda frame, path: frame.write_csv(path)),
    "jsonl": (".jsonl", lambda frame, path: frame.write_ndjson(path)),
    "trec": (".trec", lambda frame, path: _write_text(path, trec_file_text(frame))),
}


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def write_frame(frame: pl.DataFrame, path: Path, format: str) -> None:
    """Write one frame in one of :data:`FORMATS` (no staging: for files inside a staging folder)."""
    if format not in FORMATS:
        raise UsageError(f"unknown output format {format!r}; expected one of {', '.join(FORMATS)}")
    FORMATS[format][1](frame, path)


def write_tables(
    out_dir: str | Path,
    tables: dict[str, pl.DataFrame],
    *,
    format: str = "parquet",
    manifest: Mapping[str, object] | None = None,
) -> list[Path]:
    """Write ``{name: frame}`` as ``out_dir/name.<ext>`` with a ``manifest.json`` (``manifest``
    plus the list of outputs), as one unit: all appear together or none do."""
    if format not in FORMATS:
        raise UsageError(f"unknown output format {format!r}; expected one of {', '.join(FORMATS)}")
    suffix, write = FORMATS[format]
    files = {f"{name}{suffix}": _frame_writer(write, frame) for name, frame in tables.items()}
    if is_object_store(str(out_dir)):  # Path would fold the URL's "//"
        publish(str(out_dir), [Unit(Path("."), files, dict(manifest or {}), success=False)])
        return [Path(name) for name in files]
    out = Path(out_dir)
    publish(out, [Unit(out, files, dict(manifest or {}), success=False)])
    return [out / name for name in files]


def _frame_writer(write: Callable[[pl.DataFrame, Path], None], frame: pl.DataFrame) -> Callable[[Path], None]:
    return lambda path: write(frame, path)
