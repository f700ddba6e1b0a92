"""What identifies the data an input was read from, cheaply: recorded in each unit's
``manifest.json`` under ``"inputs"`` (``inputs.run.identity``, ``inputs.qrels.identity``,
``inputs.query_attributes.identity``), and what ``ndcg evaluate --skip-unchanged`` compares
(:func:`same`) to tell whether a partition's inputs changed since its outputs were written.
The shape, one of:

- local files: ``{"kind": "files", "files": [{"path", "size", "mtime_ns", "ctime_ns", "device",
  "inode"}, ...]}``,
  the data files read (:meth:`pipeline.io.read.Source.files`), sorted by path;
- objects of an object store: ``{"kind": "objects", "files": [{"path", "size", "etag",
  "version_id"}, ...]}`` (``version_id`` null on a bucket without versioning);
- a Delta table: ``{"kind": "delta", "table": URL or path, "id": its log's table id, "version": N}``,
  the version read;
- anything else (a frame given to the Python API, a Hadoop URL read by Spark, an ``hf://``
  file): ``{"kind": "unknown"}``, which is never the same as a later identity (treated as
  changed: such a unit is always recomputed).

A local file is identified by its size, its modification time and its status-change time, in
nanoseconds, and its device and inode numbers, from one ``stat`` (no byte is read). The times
alone do not tell two files apart: the kernel stamps them from a clock that ticks every few
milliseconds, so files written in one tick (a script writing two data sets, one run's and its
judgments') carry the same times, and a relative path (``runs/part-0.parquet``) names another
file from another directory. The device and inode name the file itself: another file, or a file
replaced by a rename (a writer's atomic swap), is another inode. The modification time can be set back by
anyone (``touch -d``, ``os.utime``, ``cp -p``, ``rsync -t``); the status-change time cannot:
the kernel sets it to now on every write, rename or ``utime``, so a file rewritten with the same
size and its old modification time restored still counts as changed. It also changes on
``chmod``, ``chown`` or a new hard link: then a partition is recomputed that did not need to be,
never the other way round.

A file changed just before it is identified is *unsettled* (``"settled": false``): a rewrite of
the same size in the same clock tick, after the identity was taken, would leave the same size
and times behind (git calls such an index entry "racily clean"). It is never the same as a
later identity, so its unit is recomputed on the next run, which then finds it settled.
"Just before" is :data:`SETTLING_NS` (100 ms) of this machine's clock, or
:data:`SETTLING_WHOLE_SECONDS_NS` (2.1 s) on a file system that stamps whole seconds (FAT's
two-second stamps included); a file server's clock is assumed within that of this machine's. A
record without the field (a manifest of an earlier version) is not identified either:
recomputed once. What no identity from ``stat`` catches is a file whose bytes change under the
same inode without the kernel knowing (a disk edited beneath the file system): rerun without
``--skip-unchanged`` after such surgery.

An object is identified by its size, ETag and version id (one HEAD request each): a rewrite
gets a new ETag, or on a versioned bucket a new version id even with the same bytes. An object
without either (a store that gives neither) is never the same as a later one. A Delta table is
identified by its id and the version read: a commit makes a new version, and a table deleted
and written again at the same path (at version 0 again) has a new id.

The job identifies its inputs *before* reading them (:func:`pipeline.reuse.reuse_key`): a file
replaced in between is recorded with its old identity, so the next run sees it changed and
recomputes, never the other way round.

The same identities guard one run against an input that changes *while* it is read
(:func:`changed_while_read`, :func:`refuse_changed`): the engines read an input by its name,
several times (validation, then the engine's own pass, then the row counts and groups of the
manifest; DuckDB and Spark open the files themselves), so a file replaced between two reads
would be validated in one version and scored in the other. Each input is identified before its
first read and again after its last, and a difference is refused (exit 3, naming the file),
before anything is written. An input that cannot be identified (a frame, a Hadoop URL read by
Spark, an object without ETag or version id) is not checked. Identities are compared without
``settled``, which only says how old the file was when identified.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from pipeline.errors import InvalidInput
from pipeline.io.delta import table_id, table_version
from pipeline.io.location import local_path
from pipeline.io.manifest import file_digest
from pipeline.io.objects import object_store
from pipeline.io.read import Source

UNKNOWN: dict[str, Any] = {"kind": "unknown"}
# what identifies a local file besides its size (a record without one of them is not identified)
_FILE_STAMPS = ("mtime_ns", "ctime_ns", "device", "inode")
# How long after its last change a file's stamps are taken to be final: a few kernel clock
# ticks (1 to 10 ms each), or a whole-second file system's granularity and one tick more.
SETTLING_NS = 100_000_000
SETTLING_WHOLE_SECONDS_NS = 2_100_000_000


def identify(source: Any) -> dict[str, Any]:
    """The identity of an input: a :class:`~pipeline.io.read.Source`, a path or URL (its
    format guessed from the name), or anything else (``{"kind": "unknown"}``)."""
    if isinstance(source, (str, os.PathLike)):
        source = Source.of(str(source))
    if not isinstance(source, Source):
        return dict(UNKNOWN)
    if source.location.delta_table:
        version = table_version(source)
        return {"kind": "delta", "table": source.path, "id": table_id(source), "version": version}
    if source.location.is_local:
        return {"kind": "files", "files": [_local_file(path) for path in source.files()]}
    if source.location.is_object_store:
        if not object_store(source.path).listable:  # hf://: nothing to ask the store for here
            return dict(UNKNOWN)
        return {"kind": "objects", "files": [object_store(path).identity(path) for path in source.files()]}
    return dict(UNKNOWN)


def identified(identity: object) -> bool:
    """Whether an identity can ever be :func:`same` as another: a known kind with every field
    that tells a change (a local file's size, times, device and inode, an object's size and its ETag or
    version id, a table's id and version)."""
    if not isinstance(identity, dict):
        return False
    kind = identity.get("kind")
    if kind == "delta":
        return all(isinstance(identity.get(name), t) for name, t in (("version", int), ("table", str), ("id", str)))
    files = identity.get("files")
    if kind not in ("files", "objects") or not isinstance(files, list):
        return False
    for record in files:
        if not isinstance(record, dict) or not isinstance(record.get("size"), int):
            return False
        if kind == "files" and not (
            all(isinstance(record.get(name), int) for name in _FILE_STAMPS) and record.get("settled") is True
        ):
            return False
        if kind == "objects" and not (record.get("etag") or record.get("version_id")):
            return False
    return True


def same(first: dict[str, Any] | None, second: dict[str, Any] | None) -> bool:
    """Whether two identities name the same data: equal, and identified (an unknown identity,
    or an object without an ETag or version id, is never the same)."""
    return first is not None and identified(first) and first == second


def differences(old: object, new: dict[str, Any]) -> list[str]:
    """What changed between a recorded identity and a new one, for people: ``added x``,
    ``removed y``, ``changed z (size 10 -> 12)``, ``version 3 -> 4``; empty when they are
    :func:`same`."""
    if same(old if isinstance(old, dict) else None, new):
        return []
    if not isinstance(old, dict) or "kind" not in old:
        return ["no identity recorded"]
    unsettled = _unsettled(old)
    if unsettled:
        return unsettled
    if not identified(old):
        return [f"not identified before ({old.get('kind')})"]
    if not identified(new):
        return [f"cannot be identified ({new.get('kind', 'unknown')})"]
    if old.get("kind") != new.get("kind"):
        return [f"was {old.get('kind')}, now {new.get('kind')}"]
    return _changes(old, new)


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two identities of one kind, for people."""
    if new["kind"] == "delta":
        if old.get("table") != new.get("table"):
            return [f"table {old.get('table')} -> {new.get('table')}"]
        if old.get("id") != new.get("id"):
            return [f"table {new['table']} is another table (id {old.get('id')} -> {new.get('id')})"]
        return [f"table {new['table']} version {old.get('version')} -> {new.get('version')}"]
    before = {str(record.get("path")): record for record in old["files"]}
    after = {str(record.get("path")): record for record in new["files"]}
    changes = [f"added {path}" for path in after if path not in before]
    changes += [f"removed {path}" for path in before if path not in after]
    for path, record in after.items():
        if path in before and before[path] != record:
            fields = [
                _stamp_change(name, before[path].get(name), record.get(name))
                for name in sorted({*record, *before[path]})
                if before[path].get(name) != record.get(name)
            ]
            changes.append(f"changed {path} ({', '.join(fields)})")
    return changes or ["changed"]


# How people read the stamps of a file record: times as dates, sizes as sizes, the rest by name.
_STAMP_NAMES = {
    "mtime_ns": "modified",
    "ctime_ns": "status changed",
    "settled": "settled",
}


def _stamp_change(name: str, old: object, new: object) -> str:
    """``modified 2026-11-21 10:00:00Z -> 2026-11-26 15:32:11Z``, ``size 1,200 bytes -> 14,313
    bytes (14.3 kB)``: one stamp's change in words and dates (UTC), never raw nanoseconds; two
    times shown only as precisely as it takes to tell them apart."""
    if name.endswith("_ns") and isinstance(old, int) and isinstance(new, int):
        shown = _times(old, new)
    elif name == "size" and isinstance(old, int) and isinstance(new, int):
        shown = (_size(old), _size(new))
    else:
        shown = (_word(old), _word(new))
    return f"{_STAMP_NAMES.get(name, name)} {shown[0]} -> {shown[1]}"


def _word(value: object) -> str:
    return "yes" if value is True else "no" if value is False else "none" if value is None else str(value)


def _times(old_ns: int, new_ns: int) -> tuple[str, str]:
    from datetime import UTC, datetime

    def text(ns: int, digits: int) -> str:
        seconds, fraction = divmod(ns, 1_000_000_000)
        stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")
        return f"{stamp}{'.' + f'{fraction:09d}'[:digits] if digits else ''}Z"

    for digits in (0, 3, 6, 9):
        if text(old_ns, digits) != text(new_ns, digits):
            break
    return text(old_ns, digits), text(new_ns, digits)


def _size(count: int) -> str:
    if count < 10_000:
        return f"{count:,} byte{'' if count == 1 else 's'}"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count:,} bytes ({count / scale:.1f} {unit})"
    return f"{count:,} bytes"


def changed_while_read(before: object, after: object) -> list[str]:
    """What changed in an input between its identity taken before its first read and after its
    last (``changed x (size 10 -> 12)``, ``added y``, ``table t version 3 -> 4``, ``can no
    longer be read``); empty when nothing did, or when ``before`` identifies nothing to compare
    (a frame, a Hadoop URL: ``{"kind": "unknown"}``)."""
    if not isinstance(before, dict) or before.get("kind") not in ("files", "objects", "delta"):
        return []
    read_before, read_after = _as_read(before), _as_read(after)
    if read_before == read_after:
        return []
    if not isinstance(read_after, dict) or read_after.get("kind") != before.get("kind"):
        return ["can no longer be read"]
    return _changes(read_before, read_after)


class ChangedWhileRead(InvalidInput):
    """An input changed between its first read and its last: its numbers could mix versions."""


def refuse_changed(before: dict[str, Any], after: dict[str, Any], names: dict[str, Any] | None = None) -> None:
    """Raise :class:`ChangedWhileRead` (exit 3) naming each input of ``before`` (a role -> identity
    map, as :func:`pipeline.reuse.reuse_key` records them) whose identity in ``after`` differs, by
    its name in ``names`` (role -> path as given), else by what the identity says."""
    problems = []
    for role, identity in before.items():
        changes = changed_while_read(identity, after.get(role))
        if changes:
            shown = "; ".join(changes[:3]) + (f"; ... ({len(changes)} in all)" if len(changes) > 3 else "")
            problems.append(f"{(names or {}).get(role) or _name(identity, role)} ({shown})")
    if problems:
        raise ChangedWhileRead(
            f"{'; '.join(problems)}: changed while it was read (its numbers could mix two versions); "
            "nothing was written; run again"
        )


def _as_read(identity: Any) -> Any:
    """An identity without what does not tell a change of the data (a file's ``settled``)."""
    if not isinstance(identity, dict) or not isinstance(identity.get("files"), list):
        return identity
    files = [
        {name: value for name, value in record.items() if name != "settled"} if isinstance(record, dict) else record
        for record in identity["files"]
    ]
    return {**identity, "files": files}


def _name(identity: dict[str, Any], role: str) -> str:
    """The input an identity names: its table, its one file, or the role and its files' count."""
    if identity.get("kind") == "delta":
        return f"the Delta table {identity.get('table')}"
    files = identity.get("files") or []
    if len(files) == 1 and isinstance(files[0], dict):
        return str(files[0].get("path"))
    return f"the {role} ({len(files)} files)"


def unsettled_paths(identity: object) -> list[str]:
    """The files of an identity of local files that had changed just before it was taken."""
    records = _file_records(identity)
    return [str(record.get("path")) for record in records if record.get("settled") is False]


def _file_records(identity: object) -> list[dict[str, Any]]:
    if not isinstance(identity, dict) or identity.get("kind") != "files" or not isinstance(identity.get("files"), list):
        return []
    return [record for record in identity["files"] if isinstance(record, dict)]


def _unsettled(old: dict[str, Any]) -> list[str]:
    """Why a recorded identity of local files cannot be trusted (see the module's text)."""
    reasons = [
        f"{path} had changed just before it was read last time: "
        "a change in the same clock tick would not show in its times"
        for path in unsettled_paths(old)
    ]
    if not reasons and any("settled" not in record for record in _file_records(old)):
        reasons = ["identity recorded by an earlier version (without settled stamps)"]
    return reasons


def _local_file(path: str) -> dict[str, Any]:
    try:
        status = os.stat(local_path(path))
    except OSError as error:
        raise InvalidInput(f"{path}: cannot read: {error.strerror or error}") from None
    return {
        "path": path,
        "size": status.st_size,
        "mtime_ns": status.st_mtime_ns,
        "ctime_ns": status.st_ctime_ns,
        "device": status.st_dev,
        "inode": status.st_ino,
        "settled": _settled(status.st_ctime_ns, status.st_mtime_ns, time.time_ns()),
    }


def _settled(ctime_ns: int, mtime_ns: int, now_ns: int) -> bool:
    """Whether a file last changed at ``ctime_ns`` (every write sets it; a modification time set
    into the future counts too) is old enough at ``now_ns`` that a rewrite would change its stamps."""
    whole_seconds = ctime_ns % 1_000_000_000 == 0 and mtime_ns % 1_000_000_000 == 0
    settling = SETTLING_WHOLE_SECONDS_NS if whole_seconds else SETTLING_NS
    return max(ctime_ns, mtime_ns) <= now_ns - settling


def judgments_digest(identity: dict[str, Any] | None) -> str | None:
    """``sha256:<hex>`` of the local files an identity names: of the file's bytes for one file
    (what ``sha256sum`` prints), else of the lines ``<file digest> <name>`` of each file in
    order of name (its path below the files' common folder). None for other identities, or a
    file gone since it was identified. ``ndcg compare`` tells outputs scored against the same
    judgments by it, wherever the file was copied to (an object's ETag and a Delta table's id
    and version, in the identity, serve it there)."""
    if not isinstance(identity, dict) or identity.get("kind") != "files" or not identity.get("files"):
        return None
    paths = [local_path(str(record.get("path"))) for record in identity["files"] if isinstance(record, dict)]
    try:
        digests = [file_digest(Path(path)) for path in paths]
    except OSError:
        return None
    if len(paths) == 1:
        return digests[0]
    root = os.path.commonpath([os.path.dirname(path) for path in paths])
    named = sorted((os.path.relpath(path, root), digest) for path, digest in zip(paths, digests, strict=True))
    lines = "".join(f"{digest.removeprefix('sha256:')} {name}\n" for name, digest in named)
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()
