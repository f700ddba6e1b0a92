"""What an input file *is*, cheaply: the identity ``ndcg evaluate --skip-unchanged`` compares to
tell whether a partition's inputs changed since its outputs were written (recorded in each
unit's ``manifest.json`` under ``"inputs"``).

A local file is identified by its size, its modification time and its status-change time, in
nanoseconds, from one ``stat`` (no byte is read). The modification time can be set back by
anyone (``touch -d``, ``os.utime``, ``cp -p``, ``rsync -t``); the status-change time cannot:
the kernel sets it to now on every write, rename or ``utime``, so a file rewritten with the same
size and its old modification time restored still counts as changed. It also changes on
``chmod``, ``chown`` or a new hard link: then a partition is recomputed that did not need to be,
never the other way round. What no identity from ``stat`` catches is a file whose bytes change
under the same inode without the kernel knowing (a disk edited beneath the file system, a
clock set back before a rewrite that lands in the same nanosecond): rerun without
``--skip-unchanged`` after such surgery.

A file on another file system (``s3a://``, ``hdfs://``) has no identity here yet (``None``):
a unit with such an input is always recomputed. Object stores would add their own fields (an
ETag, a version id) in :func:`identify`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pipeline.io import fs

FIELDS = ("size", "mtime_ns", "ctime_ns")


def identify(paths: Iterable[str]) -> list[dict[str, Any]]:
    """One record per file, in the order given: ``{"path", "size", "mtime_ns", "ctime_ns"}``
    for a local file, ``{"path", "identity": None}`` for one this module cannot identify."""
    records: list[dict[str, Any]] = []
    for path in paths:
        if not fs.is_local(path):
            records.append({"path": path, "identity": None})
            continue
        status = os.stat(fs.local_path(path))
        records.append(
            {"path": path, "size": status.st_size, "mtime_ns": status.st_mtime_ns, "ctime_ns": status.st_ctime_ns}
        )
    return records


def identified(records: Iterable[dict[str, Any]]) -> bool:
    """True when every record carries an identity (so equal records mean unchanged files)."""
    return all(all(isinstance(record.get(name), int) for name in FIELDS) for record in records)


def differences(old: object, new: list[dict[str, Any]]) -> list[str]:
    """What changed between two lists of records, for people: ``added x``, ``removed y``,
    ``changed z (size 10 -> 12)``; empty when they are the same."""
    if not isinstance(old, list) or not all(isinstance(record, dict) for record in old):
        return ["no file identities recorded"]
    before = {str(record.get("path")): record for record in old}
    after = {record["path"]: record for record in new}
    changes = [f"added {path}" for path in after if path not in before]
    changes += [f"removed {path}" for path in before if path not in after]
    for path, record in after.items():
        if path in before and before[path] != record:
            fields = [
                f"{name} {before[path].get(name)} -> {record.get(name)}"
                for name in sorted({*record, *before[path]})
                if before[path].get(name) != record.get(name)
            ]
            changes.append(f"changed {path} ({', '.join(fields)})")
    return changes
