"""Writers: tables to files, and the one staging helper every output of the tool goes through.

A *unit* is a folder of outputs written together (``per_query``, ``summary``, ``manifest.json``
and ``_SUCCESS`` of one evaluation or partition; ``comparison``, ``deltas`` and ``manifest.json``
of a comparison). :func:`publish` replaces units whole:

- **Only our files are replaced or removed.** A file is ours when the unit's ``manifest.json``
  (written by this tool: it names its ``generator``) lists it in ``"outputs"``; ``manifest.json``
  and ``_SUCCESS`` go with it. Anything else in the folder is the user's: it is kept, and a
  user's file holding a name the unit would write is refused (:class:`OutputError`, exit 2)
  before anything is written.
- **Atomic, whatever else is in the folder.** The new unit is built in a staging folder beside
  the target (``.staging-<name>-`` and 8 random characters); the user's files and folders of the target are
  hard-linked into it (folders recreated, their files linked), and the two folders are swapped
  in one step (``renameat2(RENAME_EXCHANGE)``), so a reader or a crash finds the whole old unit
  or the whole new one. Where the system has no exchange, two renames do it, and a kill between
  them is repaired by the next writer (below). Where hard links are impossible (a file system
  without them, files of another owner under ``protected_hardlinks``), the unit is replaced file
  by file instead, ``_SUCCESS`` removed first and written last, tables before the manifest: never
  lossy, but not atomic; a warning says so.
- **Concurrent writers serialize.** The output folder is locked (``flock`` on the folder itself,
  so no lock file is left in it) for the whole of a job's writing: two jobs writing one ``--out``
  leave one job's units, never a mix inside a unit.
- **Leftovers of a killed writer are repaired** by the next writer, under the lock (so they
  cannot belong to a live one): a staging folder still being built (it holds ``.ndcg-building``)
  is removed; an old unit swapped out but not yet cleaned has its files of ours removed, its
  hard-linked twins dropped, and anything else moved back into the unit folder.

Single files (the HTML report, its PNG figures) go through :func:`write_file`: staged beside the
target, then renamed over it only when the existing file is one of ours, or linked into place
without replacing anything.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.io.format import trec_file_text
from pipeline.io.fs import is_object_store

if TYPE_CHECKING:
    from pipeline.io.objects import ObjectStore

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, said in a warning
    fcntl = None  # type: ignore[assignment]

FORMATS: dict[str, tuple[str, Callable[[pl.DataFrame, Path], None]]] = {
    "parquet": (".parquet", lambda frame, path: frame.write_parquet(path)),
    "csv": (".csv", lambda frame, path: frame.write_csv(path)),
    "jsonl": (".jsonl", lambda frame, path: frame.write_ndjson(path)),
    "trec": (".trec", lambda frame, path: _write_text(path, trec_file_text(frame))),
}
MANIFEST = "manifest.json"
OUTPUT_DIGESTS = "output_digests"  # in a manifest: {output name: file_digest}
SUCCESS = "_SUCCESS"
BUILDING = ".ndcg-building"  # inside a staging folder until it is complete
_STAGING = re.compile(r"\.staging-(?P<name>.+)-[a-z0-9_]{8}")
_IN_PLACE_STAGING = ".ndcg-staging-"
_NO_LINKS = {errno.EPERM, errno.EACCES, errno.EMLINK, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}
_NO_LOCK = {errno.ENOLCK, errno.EBADF, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}
_OS_ERROR = re.compile(r"os error (\d+)")
log = logging.getLogger("ndcg")


def _version() -> str:
    try:
        return metadata.version("ndcg-pipeline")
    except metadata.PackageNotFoundError:
        return "unknown"


GENERATOR = f"ndcg-pipeline {_version()}"


class OutputError(UsageError):
    """An output cannot be written where asked (a file in the way that is not ours, a folder
    given as a file, a read-only or full disk). Exit 2: the user chooses another place."""


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


# --- units ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One folder of outputs: ``files`` maps each file name to a function writing it at a path.
    ``target`` is a local folder; under an object-store root, the folder relative to the root
    (``Path(".")`` for the root itself)."""

    target: Path
    files: Mapping[str, Callable[[Path], None]]
    manifest: Mapping[str, object] = field(default_factory=dict)
    success: bool = True  # write ``_SUCCESS`` last

    def names(self) -> set[str]:
        return {*self.files, MANIFEST, *([SUCCESS] if self.success else [])}


def publish(
    root: str | Path,
    units: Sequence[Unit],
    *,
    flag: str = "--out",
    on_written: Callable[[Unit], None] | None = None,
) -> list[Path]:
    """Replace each unit's folder (``root`` or a folder below it) whole, under a lock on ``root``.
    Every unit is checked before any is written; ``flag`` names the option in messages."""
    if not str(root).strip():
        raise OutputError(f"{flag} is empty: give a folder for the outputs")
    if is_object_store(str(root)):
        return _publish_objects(str(root), units, flag=flag, on_written=on_written)
    given = os.path.abspath(root)
    root = Path(os.path.realpath(root))  # a symlinked output folder is written where it points
    placed = [
        Unit(root / os.path.relpath(os.path.abspath(u.target), given), u.files, u.manifest, u.success) for u in units
    ]
    created = _make_folder(root, flag)
    try:
        with _guard(flag, root), _Lock(root) as lock:
            for unit in placed:
                _recover(unit.target)
            lock.follow()
            for unit in placed:
                _check_unit(unit, root, flag)
            for unit, given_unit in zip(placed, units, strict=True):
                _publish_unit(unit, lock, flag)
                if on_written:
                    on_written(given_unit)
    except OutputError:
        if created:
            with contextlib.suppress(OSError):
                root.rmdir()  # only when still empty: a folder made for nothing is not left behind
        raise
    return [unit.target for unit in placed]


def _make_folder(root: Path, flag: str) -> bool:
    if root.is_dir():
        return False
    if root.exists() or root.is_symlink():
        raise OutputError(f"{flag} {root} is a file, not a folder: give a folder for the outputs")
    try:
        root.mkdir(parents=True)
    except FileExistsError:
        return False
    except OSError as error:
        raise output_error(error, root, flag) from None
    return True


def _check_unit(unit: Unit, root: Path, flag: str) -> None:
    """Refuse, before anything is written, a target that is a file or a user's file in the way."""
    for folder in [*reversed(unit.target.relative_to(root).parents), unit.target.relative_to(root)]:
        path = root / folder
        if path.is_symlink() and path != root:
            raise OutputError(f"{path} is a symbolic link; {flag} units are replaced whole, so give a real folder")
        if path.exists() and not path.is_dir():
            raise OutputError(f"{path} is a file, not a folder: move it away or choose another {flag}")
    if not unit.target.is_dir():
        return
    _check_kind(unit, flag)
    owned = owned_names(unit.target)
    for name in sorted(unit.names()):
        path = unit.target / name
        if (path.exists() or path.is_symlink()) and name not in owned:
            raise OutputError(
                f"{path} was not written by ndcg-pipeline (no manifest.json of ours lists it) and is left as it "
                f"is: move it away or choose another {flag}"
            )


# What each command writes: a manifest without ``command`` (older ones) is told by its outputs.
_KINDS = {"evaluate": {"per_query", "summary"}, "compare": {"comparison", "deltas"}}


def unit_kind(manifest: Mapping[str, object], files: Iterable[str]) -> str | None:
    """The command that writes (or wrote) a unit: its manifest's ``command``, else told by its files."""
    command = manifest.get("command")
    if isinstance(command, str) and command:
        return command
    stems = {name.split(".", 1)[0] for name in files if isinstance(name, str)}
    kinds = [kind for kind, names in _KINDS.items() if names <= stems]
    return kinds[0] if len(kinds) == 1 else None


def _check_kind(unit: Unit, flag: str) -> None:
    """An output of another command is not replaced: ``compare --out`` over an evaluation (or the
    reverse) would delete what the user asked the other command for."""
    old = _our_manifest(unit.target / MANIFEST)
    if old is None:
        return
    outputs = old.get("outputs")
    was = unit_kind(old, outputs if isinstance(outputs, list) else [])
    new = unit_kind(unit.manifest, unit.files)
    if was is not None and new is not None and was != new:
        raise OutputError(
            f"{unit.target} holds the output of ndcg {was}; ndcg {new} does not replace it: choose another {flag}"
        )


def owned_names(folder: Path) -> set[str]:
    """Names in ``folder`` that a previous run of this tool wrote, as its manifest records them."""
    manifest = _our_manifest(folder / MANIFEST)
    if manifest is None:
        success = folder / SUCCESS
        # an empty marker carries nothing to lose (Spark and Hadoop write the same one)
        empty = success.is_file() and not success.is_symlink() and success.stat().st_size == 0
        return {SUCCESS} if empty else set()
    outputs = manifest.get("outputs")
    if not isinstance(outputs, list) and manifest.get("command") == "compare":
        outputs = ["comparison.parquet", "deltas.parquet"]  # written before manifests listed their outputs
    listed = {name for name in outputs or [] if isinstance(name, str) and plain_name(name)}
    return {MANIFEST, SUCCESS, *listed}


def plain_name(name: str) -> bool:
    """Whether a name a manifest lists is one of a folder's own files (not ``..``, a path or a staging folder)."""
    return name not in ("", ".", "..") and "/" not in name and "\\" not in name and not _STAGING.fullmatch(name)


def _our_manifest(path: Path) -> dict | None:
    if not path.is_file() or path.is_symlink():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    versions = data.get("versions")
    ours = (
        str(data.get("generator", "")).startswith("ndcg-pipeline")
        or (isinstance(versions, dict) and "ndcg-pipeline" in versions and isinstance(data.get("outputs"), list))
        or (data.get("command") == "compare" and "systems" in data)
    )
    return data if ours else None


def _publish_unit(unit: Unit, lock: _Lock, flag: str) -> None:
    target = unit.target
    target.parent.mkdir(parents=True, exist_ok=True)
    existing = target.is_dir()
    owned = owned_names(target) if existing else set()
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{target.name}-", dir=target.parent))
    except OSError as error:
        if not existing or error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        # the folder is writable but its parent is not: nowhere to build a folder beside it
        log.warning("cannot stage beside %s (%s): replacing its files one by one", target, error.strerror)
        _replace_in_place(unit, target, owned, None, flag)
        return
    swapped = False
    try:
        mode = _match_mode(staging, target if existing else None)
        (staging / BUILDING).touch()
        _build(staging, unit, flag)
        if existing:
            try:
                _link_foreign(target, staging, owned)
            except _NoLinks as why:
                log.warning("%s: cannot hard-link %s; replacing the outputs file by file (not atomic)", target, why)
                _replace_in_place(unit, target, owned, staging, flag)
                return
        (staging / BUILDING).unlink()
        os.chmod(staging, mode)
        _fsync(staging)
        if target == lock.root:
            lock.adopt(staging)  # the folder that becomes the root keeps the lock held
        swapped = True
        _swap(staging, target)
        _fsync(target.parent)
        if existing:
            retire(staging, target)
    finally:
        if not swapped:
            shutil.rmtree(staging, ignore_errors=True)  # our files and hard links only


def _build(staging: Path, unit: Unit, flag: str) -> None:
    """The manifest first (it names every output, so leftovers are recognised), then the files,
    then the manifest again with their digests, ``_SUCCESS`` last; each fsynced.
    A failure names the file the user asked for, not the staged one."""
    kind = unit_kind(unit.manifest, unit.files)
    manifest = {
        **unit.manifest,
        **({"command": kind} if kind else {}),
        "outputs": list(unit.files),
        "generator": GENERATOR,
    }
    with _guard(flag, unit.target / MANIFEST):
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    for name, write in unit.files.items():
        with _guard(flag, unit.target / name):
            write(staging / name)
    # then what each output holds, so that a later run can tell them from edited or damaged ones
    # (``ndcg evaluate --skip-unchanged`` keeps only outputs that are still what was written)
    manifest[OUTPUT_DIGESTS] = {name: file_digest(staging / name) for name in unit.files}
    with _guard(flag, unit.target / MANIFEST):
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    if unit.success:
        (staging / SUCCESS).write_bytes(b"")
    for name in unit.names():
        with open(staging / name, "rb") as handle:
            os.fsync(handle.fileno())


def file_digest(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def _match_mode(staging: Path, target: Path | None) -> int:
    """The staging folder (``mkdtemp`` makes it 0700) gets the mode the published folder should
    have: an existing folder's own (setgid and group included), a new one's ``0o777 & ~umask``
    (and setgid when its parent has it, as ``mkdir`` would)."""
    if target is not None:
        before = os.stat(target)
        with contextlib.suppress(OSError):  # another group than ours: keep the parent's
            os.chown(staging, -1, before.st_gid)
        mode = stat.S_IMODE(before.st_mode)
    else:
        mode = 0o777 & ~_umask()
        mode |= stat.S_IMODE(os.stat(staging.parent).st_mode) & stat.S_ISGID
    # writable by us while it is built (files made in it take its group); ``mode`` itself just before the swap
    os.chmod(staging, mode | stat.S_IRWXU)
    return mode


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _NoLinks(Exception):
    pass


def _link_foreign(source: Path, staging: Path, owned: set[str]) -> None:
    for entry in source.iterdir():
        if entry.name not in owned and entry.name != BUILDING:
            _link_tree(entry, staging / entry.name)


def _link_tree(source: Path, target: Path) -> None:
    """``source`` again at ``target`` without copying data: files hard-linked, folders recreated."""
    mode = os.lstat(source).st_mode
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISREG(mode):
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError as error:
            if error.errno in _NO_LINKS:
                raise _NoLinks(f"{source} ({error.strerror})") from None
            raise
    elif stat.S_ISDIR(mode):
        target.mkdir()
        for entry in source.iterdir():
            _link_tree(entry, target / entry.name)
        shutil.copystat(source, target, follow_symlinks=False)
    else:
        raise _NoLinks(f"{source} (not a regular file)")


def _swap(staging: Path, target: Path) -> None:
    if not target.exists():
        os.rename(staging, target)
    elif not exchange_folders(staging, target):
        # Two renames: between them the target is missing; the next writer puts it back (see _recover).
        retired = Path(tempfile.mkdtemp(prefix=f".staging-{target.name}-", dir=target.parent))
        os.rename(target, retired)
        os.rename(staging, target)
        os.rename(retired, staging)


def exchange_folders(first: Path, second: Path) -> bool:
    """Swap two folders in one atomic step (Linux ``renameat2`` with ``RENAME_EXCHANGE``), so
    that a reader, or a crash, never finds the target missing. False where the system or the
    file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_current_directory, rename_exchange = -100, 2
    if renameat2(at_current_directory, os.fsencode(first), at_current_directory, os.fsencode(second), rename_exchange):
        error = ctypes.get_errno()
        if error in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV):
            return False
        raise OSError(error, os.strerror(error), str(second))
    return True


def _replace_in_place(unit: Unit, target: Path, owned: set[str], built: Path | None, flag: str) -> None:
    """The fallback without hard links: ``_SUCCESS`` away first, tables, stale outputs of ours,
    the manifest, ``_SUCCESS`` last; the user's files are never touched."""
    if built is None:
        built = Path(tempfile.mkdtemp(prefix=_IN_PLACE_STAGING, dir=target))
        _build(built, unit, flag)
    try:
        (target / SUCCESS).unlink(missing_ok=True)
        for name in unit.files:
            _move(built / name, target / name)
        for name in sorted(owned - unit.names()):
            if (target / name).is_file():
                (target / name).unlink()
        _move(built / MANIFEST, target / MANIFEST)
        if unit.success:
            _move(built / SUCCESS, target / SUCCESS)
    finally:
        shutil.rmtree(built, ignore_errors=True)  # our files, and hard links made before one failed


def _move(source: Path, target: Path) -> None:
    try:
        os.replace(source, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        partial = target.with_name(f".{target.name}.ndcg-partial")
        shutil.copyfile(source, partial)
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)


# --- object stores -------------------------------------------------------------------------

OBJECT_STAGING = "_ndcg_staging-"  # a hidden prefix (readers skip names starting with _)
# A staging prefix older than this is a killed writer's (publishing takes seconds): removed by the
# next writer. A younger one may be another job's, still uploading, and is left alone.
STALE_STAGING_SECONDS = 3600


def _publish_objects(
    root: str, units: Sequence[Unit], *, flag: str, on_written: Callable[[Unit], None] | None
) -> list[Path]:
    """Units under an object-store prefix, which has no atomic rename: every unit is checked, then
    every file of every unit is built locally and uploaded under ``ROOT/_ndcg_staging-<id>/``;
    only then each unit is published: its ``_SUCCESS`` removed, the tables copied into place
    (server-side), outputs of ours no longer written removed, ``manifest.json`` and last
    ``_SUCCESS`` written. A reader that waits for ``_SUCCESS`` never sees a half-written unit; a
    failed or killed job leaves the unit without ``_SUCCESS`` (and, when killed, a hidden staging
    prefix, removed by a writer an hour later). The user's objects under the prefix are never touched, and one of theirs
    holding a name the unit writes is refused before anything is written. Concurrent writers are
    not serialized (no lock on a bucket)."""
    from pipeline.io.objects import object_store

    root = root.rstrip("/")
    store = object_store(root)
    if not store.listable:
        raise OutputError(f"{flag} {root}: outputs are written to s3://, gs://, az:// or abfs[s]:// prefixes")
    try:
        return _publish_to(store, root, units, flag=flag, on_written=on_written)
    except InvalidInput as error:  # reading what is there failed: the output cannot be written there
        raise OutputError(f"cannot write {flag} {root}: {error}; choose another {flag}") from None


def _publish_to(
    store: ObjectStore, root: str, units: Sequence[Unit], *, flag: str, on_written: Callable[[Unit], None] | None
) -> list[Path]:
    if store.kind(store.prefix) == "missing":
        raise OutputError(f"{flag} {root}: no such bucket {store.bucket!r}; create it, or choose another {flag}")
    targets = [root if unit.target == Path(".") else f"{root}/{unit.target.as_posix()}" for unit in units]
    for unit, target in zip(units, targets, strict=True):
        if unit.target.is_absolute() or ".." in unit.target.parts:
            raise OutputError(f"{unit.target}: a unit under {flag} {root} is named by a folder relative to it")
        _check_object_unit(store, unit, target, flag)
    now = int(time.time())
    for entry, kind in store.entries(root) if store.kind(root) == "dir" else []:
        stamp = entry.removeprefix(OBJECT_STAGING).split("-", 1)[0]
        stale = stamp.isdigit() and now - int(stamp) > STALE_STAGING_SECONDS
        if entry.startswith(OBJECT_STAGING) and kind == "dir" and stale:
            store.delete_prefix(f"{root}/{entry}")  # left by a killed writer
    staging = f"{root}/{OBJECT_STAGING}{now}-{os.urandom(6).hex()}"
    try:
        with tempfile.TemporaryDirectory(prefix="ndcg-out-") as local:
            built = []
            for index, (unit, target) in enumerate(zip(units, targets, strict=True)):
                folder = Path(local) / str(index)
                folder.mkdir()
                _build(folder, unit, flag)
                prefix = f"{staging}/{index}"
                for name in unit.files:
                    store.write_bytes(f"{prefix}/{name}", (folder / name).read_bytes())
                built.append((unit, target, prefix, (folder / MANIFEST).read_bytes()))
            for unit, target, prefix, manifest in built:
                owned = _owned_objects(store, target)
                store.delete(f"{target}/{SUCCESS}")
                for name in unit.files:
                    store.copy(f"{prefix}/{name}", f"{target}/{name}")
                for name in sorted(owned - unit.names()):
                    store.delete(f"{target}/{name}")
                store.write_bytes(f"{target}/{MANIFEST}", manifest)
                if unit.success:
                    store.write_bytes(f"{target}/{SUCCESS}", b"")
                if on_written:
                    on_written(unit)
    finally:
        with contextlib.suppress(Exception):
            store.delete_prefix(staging)
    return [Path(target) for target in targets]


def _owned_objects(store: object, target: str) -> set[str]:
    """Names under ``target`` a manifest of ours lists (see :func:`owned_names`)."""
    from pipeline.io.objects import ObjectStore

    assert isinstance(store, ObjectStore)
    data = store.read_bytes(f"{target}/{MANIFEST}")
    manifest = _manifest_of(data) if data is not None else None
    if manifest is None:
        success = store.read_bytes(f"{target}/{SUCCESS}")
        return {SUCCESS} if success == b"" else set()
    outputs = manifest.get("outputs")
    listed = {name for name in outputs or [] if isinstance(name, str) and plain_name(name)}
    return {MANIFEST, SUCCESS, *listed}


def _check_object_unit(store: object, unit: Unit, target: str, flag: str) -> None:
    from pipeline.io.objects import ObjectStore

    assert isinstance(store, ObjectStore)
    if store.kind(target) == "file":
        raise OutputError(f"{target} is an object, not a prefix: choose another {flag}")
    if store.kind(target) != "dir":
        return
    data = store.read_bytes(f"{target}/{MANIFEST}")
    old = _manifest_of(data) if data is not None else None
    if old is not None:
        outputs = old.get("outputs")
        was = unit_kind(old, outputs if isinstance(outputs, list) else [])
        new = unit_kind(unit.manifest, unit.files)
        if was is not None and new is not None and was != new:
            raise OutputError(
                f"{target} holds the output of ndcg {was}; ndcg {new} does not replace it: choose another {flag}"
            )
    owned = _owned_objects(store, target)
    present = {name for name, _ in store.entries(target)}
    for name in sorted(unit.names()):
        if name in present and name not in owned:
            raise OutputError(
                f"{target}/{name} was not written by ndcg-pipeline (no manifest.json of ours lists it) and is left "
                f"as it is: move it away or choose another {flag}"
            )


def _manifest_of(data: bytes) -> dict | None:
    """A manifest of ours from its bytes (see :func:`_our_manifest`), or None."""
    with tempfile.TemporaryDirectory(prefix="ndcg-manifest-") as folder:
        path = Path(folder) / MANIFEST
        path.write_bytes(data)
        return _our_manifest(path)


# --- leftovers of a killed writer ----------------------------------------------------------


def _recover(target: Path) -> None:
    """Called under the lock: every staging folder of ``target`` was left by a writer that died."""
    parent = target.parent
    if not parent.is_dir():
        return
    leftovers = sorted(
        p
        for p in parent.iterdir()
        if (match := _STAGING.fullmatch(p.name)) and match["name"] == target.name and p.is_dir() and not p.is_symlink()
    )
    complete = [p for p in leftovers if not (p / BUILDING).exists()]
    if complete and target.is_dir() and not target.is_symlink() and not any(target.iterdir()):
        target.rmdir()  # an empty folder where the unit was: made while it sat between two renames
    if not target.exists() and complete:
        # killed between the two renames: put back a whole unit, the newest complete one
        chosen = max(complete, key=lambda p: ((p / SUCCESS).exists(), _mtime(p / MANIFEST)))
        os.rename(chosen, target)
        leftovers.remove(chosen)
        log.warning("%s was missing after a killed job; put back from %s", target, chosen.name)
    for leftover in leftovers:
        if (leftover / BUILDING).exists() or not target.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)  # never published: our files and hard links
        else:
            retire(leftover, target)
    if target.is_dir():
        for inner in target.iterdir():
            if inner.name.startswith(_IN_PLACE_STAGING) and inner.is_dir():
                shutil.rmtree(inner, ignore_errors=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def retire(old: Path, new: Path) -> None:
    """Empty the folder swapped out by a publish: our outputs (its manifest lists them) are
    removed, entries hard-linked into ``new`` lose their second name, anything else (made after
    the links were) is moved into ``new``. A folder that cannot be emptied is left, with a warning."""
    owned = owned_names(old)
    for entry in list(old.iterdir()):
        _retire_entry(entry, new / entry.name, entry.name in owned)
    try:
        old.rmdir()
    except OSError:
        log.warning("%s: left in place, it holds files that could not be put back into %s", old, new)


def _retire_entry(entry: Path, twin: Path, ours: bool) -> None:
    mode = os.lstat(entry).st_mode
    if (ours or _same_entry(entry, twin)) and not stat.S_ISDIR(mode):
        entry.unlink()
    elif stat.S_ISDIR(mode) and twin.is_dir() and not twin.is_symlink():
        for child in list(entry.iterdir()):
            _retire_entry(child, twin / child.name, False)
        with contextlib.suppress(OSError):
            entry.rmdir()
    elif not (twin.exists() or twin.is_symlink()):
        os.rename(entry, twin)


def _same_entry(first: Path, second: Path) -> bool:
    try:
        a, b = os.lstat(first), os.lstat(second)
    except OSError:
        return False
    if stat.S_ISLNK(a.st_mode) and stat.S_ISLNK(b.st_mode):
        return os.readlink(first) == os.readlink(second)
    return os.path.samestat(a, b)


def _fsync(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot sync a folder
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


# --- the lock ------------------------------------------------------------------------------


class _Lock:
    """An exclusive ``flock`` on the output folder itself. When a job swaps the folder (its
    root is a unit), a waiting job wakes holding the old folder: it sees that the path now names
    another folder and locks that one instead."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.descriptors: list[int] = []

    def __enter__(self) -> _Lock:
        if fcntl is None:
            log.warning("no file locks on this system: concurrent jobs writing %s are not serialized", self.root)
            return self
        for attempt in range(1000):
            try:
                descriptor = os.open(self.root, os.O_RDONLY)
            except FileNotFoundError:  # another job is between two renames of the root
                time.sleep(0.01)
                if attempt > 500:
                    self.root.mkdir(parents=True, exist_ok=True)
                continue
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            except OSError as error:
                os.close(descriptor)
                if error.errno not in _NO_LOCK:
                    raise
                log.warning("cannot lock %s (%s): concurrent jobs writing it are not serialized", self.root, error)
                return self
            with contextlib.suppress(FileNotFoundError):
                if os.path.samestat(os.fstat(descriptor), os.stat(self.root)):
                    self.descriptors.append(descriptor)
                    return self
            os.close(descriptor)
        raise OSError(errno.EBUSY, "the output folder keeps changing; is another job writing it?", str(self.root))

    def adopt(self, folder: Path) -> None:
        """Also lock ``folder``: it is about to take the root's place."""
        if fcntl is not None and self.descriptors:
            descriptor = os.open(folder, os.O_RDONLY)
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            self.descriptors.append(descriptor)

    def follow(self) -> None:
        """Lock the folder now at the root's path if recovery put another one there."""
        if self.descriptors and not any(os.path.samestat(os.fstat(d), os.stat(self.root)) for d in self.descriptors):
            self.adopt(self.root)

    def __exit__(self, *exc: object) -> None:
        for descriptor in self.descriptors:
            os.close(descriptor)
        self.descriptors.clear()


# --- single files --------------------------------------------------------------------------


def check_file_target(path: Path, is_ours: Callable[[Path], bool], flag: str) -> None:
    """Refuse a file target that is a folder, or an existing file this tool did not write."""
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a folder; give a file path")
    if (path.exists() or path.is_symlink()) and not is_ours(path):
        raise OutputError(
            f"{path} exists and was not written by ndcg-pipeline; it is left as it is: remove it or choose another "
            f"{flag}"
        )


def write_file(path: Path, data: bytes, *, is_ours: Callable[[Path], bool], flag: str) -> Path:
    """``data`` at ``path``, whole: staged beside it, then renamed over a file of ours, or linked
    where no file is (so that a file appearing meanwhile is not replaced)."""
    return write_files([(path, data, is_ours, flag)])[0]


def write_files(files: Sequence[tuple[Path, bytes, Callable[[Path], bool], str]]) -> list[Path]:
    """Several files as one unit (``(path, data, is_ours, flag)`` each): every one checked, then
    every one staged beside its target and synced, and only then all placed; a failure while
    staging (a full disk) leaves none of them written."""
    for path, _, is_ours, flag in files:
        check_file_target(path, is_ours, flag)
    staged: list[Path] = []
    try:
        for path, data, _, flag in files:
            staged.append(_stage_file(path, data, flag))
        for (path, _, is_ours, flag), file in zip(files, staged, strict=True):
            try:
                _place_file(file, path, is_ours, flag)
            except OSError as error:
                raise output_error(error, error.filename or path, flag) from None
    finally:
        for file in staged:
            file.unlink(missing_ok=True)
    return [path for path, *_ in files]


def _stage_file(path: Path, data: bytes, flag: str) -> Path:
    staged: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.staging-", dir=path.parent)
        staged = Path(name)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(staged, 0o666 & ~_umask())  # mkstemp's 0600 would be the published file's mode
    except OSError as error:
        if staged is not None:
            staged.unlink(missing_ok=True)
        raise output_error(error, error.filename or path, flag) from None
    return staged


def _place_file(staged: Path, path: Path, is_ours: Callable[[Path], bool], flag: str) -> None:
    if path.exists():
        os.replace(staged, path)
        return
    try:
        os.link(staged, path)
    except FileExistsError:
        check_file_target(path, is_ours, flag)  # appeared meanwhile: replace it only if it is ours
        os.replace(staged, path)
    except OSError as error:
        if error.errno not in _NO_LINKS:
            raise
        os.replace(staged, path)


# --- errors --------------------------------------------------------------------------------


def os_error_number(error: BaseException) -> int | None:
    """The errno of an OSError, or of a Polars error carrying ``(os error N)`` in its text."""
    number = getattr(error, "errno", None)
    if isinstance(number, int):
        return number
    found = _OS_ERROR.search(str(error))
    return int(found.group(1)) if found else None


def output_error(error: BaseException, path: object, flag: str = "--out") -> OutputError:
    """A user's or a machine's write failure, said as what happened and what to do."""
    number = os_error_number(error)
    where = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else str(path)
    advice = {
        errno.ENOSPC: "no space left on the device; free some space or choose another " + flag,
        errno.EDQUOT: "disk quota exceeded; free some space or choose another " + flag,
        errno.EROFS: "read-only file system; choose a writable " + flag,
        errno.EACCES: "permission denied; choose a folder you can write to with " + flag,
        errno.EPERM: "operation not permitted; choose a folder you can write to with " + flag,
        errno.ENOTDIR: "a part of the path is a file, not a folder; choose another " + flag,
        errno.EEXIST: "a file is in the way; choose another " + flag,
        errno.ENAMETOOLONG: "the name is too long; choose a shorter " + flag,
    }
    message = advice.get(number or -1) or f"{os.strerror(number) if number else error}; choose another {flag}"
    return OutputError(f"cannot write {where}: {message}")


@contextlib.contextmanager
def _guard(flag: str, path: object) -> Iterator[None]:
    """A write failure of the machine (full disk, read-only, permissions) as an :class:`OutputError`
    naming ``path`` (or the file the OS named); a Polars error without an OS error behind it stays
    what it is, a bug of ours."""
    try:
        yield
    except OutputError:
        raise
    except (OSError, pl.exceptions.PolarsError) as error:
        if isinstance(error, pl.exceptions.PolarsError) and os_error_number(error) is None:
            raise
        named = getattr(error, "filename", None)
        staged = named is not None and any(_STAGING.fullmatch(part) for part in Path(os.fsdecode(named)).parts)
        raise output_error(error, path if named is None or staged else named, flag) from None


def _read_from(role: str, path: str) -> list[tuple[str, str, bool]]:
    """What an input reads, for :func:`check_out_folder`: the path or folder, its name in a
    message, and whether files below that folder are read too. A glob lists from its literal
    leading folder (``runs/*.parquet``: ``runs``), and below it only through a ``**`` or a
    wildcard folder (``runs/*/x.parquet``); a path with a wildcard character that exists
    (a folder named ``runs[1]``, or any path below one) is read as itself, and only that is
    checked."""
    literal = (path, f"the {role}", True)
    if not glob.has_magic(path) or (not is_object_store(path) and os.path.exists(path)):
        return [literal]
    parts = path.split("/")
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    rest = parts[first:]
    folder = "/".join(parts[:first]) or ("/" if path.startswith("/") else ".")
    return [literal, (folder, f"the folder {folder} of the {role} glob {path}", len(rest) > 1 or "**" in rest[0])]


def _object_prefix(url: str) -> str:
    """An object URL as the store names its keys, to compare two of them: the scheme in lower
    case, and no empty or ``.`` part in the key (``s3://b//r/./o`` and ``S3://b/r/o`` are the
    prefix ``s3://b/r/o``, as the store writes them)."""
    scheme, rest = url.split("://", 1)
    parts = [part for part in rest.split("/") if part not in ("", ".")]
    return f"{scheme.lower()}://{'/'.join(parts)}"


def check_out_folder(out: str | None, inputs: Iterable[tuple[str, str | None]], flag: str = "--out") -> None:
    """Before anything runs: an ``--out`` that is empty, a file, an input itself or inside an
    input folder (or a glob's folder, where its outputs would match the glob next time) is
    refused (``inputs``: (role, path) pairs)."""
    if out is None:
        return
    if not out.strip():
        raise OutputError(f"{flag} is empty: give a folder for the outputs, or leave {flag} out to only print")
    read = [entry for role, path in inputs if path for entry in _read_from(role, path)]
    if is_object_store(out):
        target = _object_prefix(out)
        for path, name, below in read:
            if not is_object_store(path):
                continue
            source = _object_prefix(path)
            if target == source or (below and target.startswith(source + "/")):
                raise OutputError(
                    f"{flag} {out} is {name} or inside it: outputs there would be read as part of it; "
                    "choose a prefix outside it"
                )
        return
    resolved = os.path.realpath(out)
    for path, name, below in read:
        if not os.path.exists(path):
            continue
        source = os.path.realpath(path)
        if resolved == source:
            itself = "" if name.startswith("the folder ") else " itself"
            raise OutputError(f"{flag} {out} is {name}{itself}; choose another folder for the outputs")
        if below and os.path.isdir(source) and resolved.startswith(source.rstrip(os.sep) + os.sep):
            folder = name if name.startswith("the folder ") else f"{name} folder {path}"
            raise OutputError(
                f"{flag} {out} is inside {folder}: outputs there would be read as part of it; "
                "choose a folder outside it"
            )
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"{flag} {out} is a file, not a folder: give a folder for the outputs")
