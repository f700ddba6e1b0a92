"""What identifies the data an input was read from, for the manifest (``"inputs"``).

A later run compares identities to tell whether its inputs changed since an output was
written: two identities are the same data when they are equal (``==`` of the JSON values).
The shape, one of:

- local files: ``{"kind": "files", "files": [{"path", "size", "mtime_ns"}, ...]}``, the data
  files read (:meth:`pipeline.io.read.Source.files`), sorted by path;
- objects of an object store: ``{"kind": "objects", "files": [{"path", "size", "etag",
  "version_id"}, ...]}`` (``version_id`` null on a bucket without versioning);
- a Delta table: ``{"kind": "delta", "table": URL or path, "version": N}``, the version read;
- anything else (a frame given to the Python API, a Hadoop URL read by Spark):
  ``{"kind": "unknown"}``, which never equals a later identity (treat it as changed).

Identities are taken when the job describes its inputs, after they were read; a file replaced
in between is not told apart (its size or time or ETag would be the new one's).
"""

from __future__ import annotations

import os
from typing import Any

from pipeline.errors import InvalidInput
from pipeline.io import fs

UNKNOWN: dict[str, Any] = {"kind": "unknown"}


def identify(source: Any) -> dict[str, Any]:
    """The identity of an input: a :class:`~pipeline.io.read.Source`, a path or URL (its
    format guessed from the name), or anything else (``{"kind": "unknown"}``)."""
    from pipeline.io.read import Source

    if isinstance(source, (str, os.PathLike)):
        source = Source.of(str(source))
    if not isinstance(source, Source):
        return dict(UNKNOWN)
    if source.format == "delta":
        from pipeline.io.delta import table_version

        return {"kind": "delta", "table": source.path, "version": table_version(source)}
    if fs.is_local(source.path):
        return {"kind": "files", "files": [_local_file(path) for path in source.files()]}
    if fs.is_object_store(source.path):
        from pipeline.io.objects import object_store

        if not object_store(source.path).listable:  # hf://: nothing to ask the store for here
            return dict(UNKNOWN)
        return {"kind": "objects", "files": [object_store(path).identity(path) for path in source.files()]}
    return dict(UNKNOWN)


def same(first: dict[str, Any] | None, second: dict[str, Any] | None) -> bool:
    """Whether two identities name the same data (an unknown identity is never the same)."""
    return first is not None and first.get("kind", "unknown") != "unknown" and first == second


def _local_file(path: str) -> dict[str, Any]:
    try:
        status = os.stat(fs.local_path(path))
    except OSError as error:
        raise InvalidInput(f"{path}: cannot read: {error.strerror or error}") from None
    return {"path": path, "size": status.st_size, "mtime_ns": status.st_mtime_ns}
