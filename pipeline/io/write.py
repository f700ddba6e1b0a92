"""Writers: tables to files, staged and moved into place whole.

Every output of one evaluation is first written into a staging folder beside the target and
then renamed into place, so a crash leaves either the previous outputs or the new ones, never
a half-written file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl

from pipeline.errors import UsageError
from pipeline.io.format import trec_file_text

FORMATS: dict[str, tuple[str, Callable[[pl.DataFrame, Path], None]]] = {
    "parquet": (".parquet", lambda frame, path: frame.write_parquet(path)),
    "csv": (".csv", lambda frame, path: frame.write_csv(path)),
    "jsonl": (".jsonl", lambda frame, path: frame.write_ndjson(path)),
    "trec": (".trec", lambda frame, path: _write_text(path, trec_file_text(frame))),
}


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def write_frame(frame: pl.DataFrame, path: Path, format: str) -> None:
    """Write one frame in one of :data:`FORMATS`."""
    if format not in FORMATS:
        raise UsageError(f"unknown output format {format!r}; expected one of {', '.join(FORMATS)}")
    FORMATS[format][1](frame, path)


def write_tables(out_dir: str | Path, tables: dict[str, pl.DataFrame], *, format: str = "parquet") -> list[Path]:
    """Write ``{name: frame}`` as ``out_dir/name.<ext>``; all appear together or none do."""
    if format not in FORMATS:
        raise UsageError(f"unknown output format {format!r}; expected one of {', '.join(FORMATS)}")
    suffix, write = FORMATS[format]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        staged = []
        for name, frame in tables.items():
            path = staging / f"{name}{suffix}"
            write(frame, path)
            staged.append(path)
        placed = []
        for path in staged:
            target = out / path.name
            os.replace(path, target)
            placed.append(target)
        return placed
    finally:
        shutil.rmtree(staging, ignore_errors=True)
