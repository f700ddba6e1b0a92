"""Publishing units of outputs: the one staging helper every output folder of the tool goes through.

A *unit* is a folder of outputs written together (``per_query``, ``summary``, ``manifest.json``
and ``_SUCCESS`` of one evaluation or partition; ``comparison``, ``deltas`` and ``manifest.json``
of a comparison). :func:`publish` replaces units whole:

- **Only our files are replaced or removed.** A file is ours when the unit's ``manifest.json``
  (written by this tool: it names its ``generator``) lists it in ``"outputs"``; ``manifest.json``
  and ``_SUCCESS`` go with it. Anything else in the folder is the user's: it is kept, and a
  user's file holding a name the unit would write is refused (:class:`~pipeline.errors.OutputError`, exit 2)
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
  hard-linked twins dropped, and anything else moved back into the unit folder. A folder is
  taken for a leftover of ours only when its name has the staging pattern *and* it holds the
  building marker or a manifest of ours (or nothing at all): a user's folder of that name is
  never touched. The clean-up removes the manifest last, so a kill during it leaves a folder
  that is still recognisably ours, which the next writer finishes. Every writer looks at the
  leftovers of its units' names, and at every leftover inside ``--out`` (those of partitions it
  does not write this time included).
- **A folder that cannot be renamed** (``--out`` is a mount point: the swap fails with ``EBUSY``
  or ``EXDEV``) is replaced file by file, each file renamed into place inside it (built in a
  staging folder inside it), ``_SUCCESS`` removed first and written last, with a warning; the
  staging folder is removed on every path.

Under an object-store prefix, :func:`publish` hands the units to
:func:`pipeline.io.publish_objects.publish_objects` (no rename there: ``_SUCCESS`` says when a
unit is whole). Single files go through :mod:`pipeline.io.write_file`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.io.disk import NO_LINKS, FolderLock, current_umask, fsync_folder
from pipeline.io.location import Location
from pipeline.io.manifest import BUILDING, MANIFEST, SUCCESS, Unit, build_unit, our_manifest, owned_names, unit_kind
from pipeline.io.output_errors import STAGING, OutputError, guarded, output_error
from pipeline.io.publish_objects import publish_objects

_IN_PLACE_STAGING = ".ndcg-staging-"
# a folder that cannot be renamed (a mount point) or renamed across file systems
_NOT_RENAMABLE = (errno.EBUSY, errno.EXDEV)
log = logging.getLogger("ndcg")


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
    if Location.of(root).is_object_store:
        return publish_objects(str(root), units, flag=flag, on_written=on_written)
    given = os.path.abspath(root)
    root = Path(os.path.realpath(root))  # a symlinked output folder is written where it points
    placed = [
        Unit(root / os.path.relpath(os.path.abspath(u.target), given), u.files, u.manifest, u.success) for u in units
    ]
    created = _make_folder(root, flag)
    try:
        with guarded(flag, root), FolderLock(root) as lock:
            _recover_all(root, [unit.target for unit in placed])
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


def _check_kind(unit: Unit, flag: str) -> None:
    """An output of another command is not replaced: ``compare --out`` over an evaluation (or the
    reverse) would delete what the user asked the other command for."""
    old = our_manifest(unit.target / MANIFEST)
    if old is None:
        return
    outputs = old.get("outputs")
    was = unit_kind(old, outputs if isinstance(outputs, list) else [])
    new = unit_kind(unit.manifest, unit.files)
    if was is not None and new is not None and was != new:
        raise OutputError(
            f"{unit.target} holds the output of ndcg {was}; ndcg {new} does not replace it: choose another {flag}"
        )


def _publish_unit(unit: Unit, lock: FolderLock, flag: str) -> None:
    target = unit.target
    target.parent.mkdir(parents=True, exist_ok=True)
    existing = target.is_dir()
    owned = owned_names(target) if existing else set()
    if existing and os.path.ismount(target):
        log.warning(
            "%s is a mount point, which cannot be swapped for a new folder: its outputs are replaced "
            "one by one (not atomic as a whole)",
            target,
        )
        _replace_in_place(unit, target, owned, None, flag)
        return
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
        build_unit(staging, unit, flag)
        if existing:
            try:
                _link_foreign(target, staging, owned)
            except _NoLinks as why:
                log.warning("%s: cannot hard-link %s; replacing the outputs file by file (not atomic)", target, why)
                _replace_in_place(unit, target, owned, staging, flag)
                return
        (staging / BUILDING).unlink()
        os.chmod(staging, mode)
        fsync_folder(staging)
        if target == lock.root:
            lock.adopt(staging)  # the folder that becomes the root keeps the lock held
        try:
            _swap(staging, target)
        except OSError as error:
            if not existing or error.errno not in _NOT_RENAMABLE:
                raise
            # a mount point not seen as one (a bind mount of the same file system)
            log.warning(
                "%s cannot be swapped for a new folder (%s): its outputs are replaced one by one "
                "(not atomic as a whole)",
                target,
                error.strerror,
            )
            _replace_in_place(unit, target, owned, staging, flag)
            return
        swapped = True
        fsync_folder(target.parent)
        if existing:
            retire(staging, target)
    finally:
        if not swapped:
            shutil.rmtree(staging, ignore_errors=True)  # our files and hard links only


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
        mode = 0o777 & ~current_umask()
        mode |= stat.S_IMODE(os.stat(staging.parent).st_mode) & stat.S_ISGID
    # writable by us while it is built (files made in it take its group); ``mode`` itself just before the swap
    os.chmod(staging, mode | stat.S_IRWXU)
    return mode


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
            if error.errno in NO_LINKS:
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
        # Two renames: between them the target is missing; the next writer puts it back (see
        # _recover). A rename refused (a mount point) leaves everything where it was.
        retired = Path(tempfile.mkdtemp(prefix=f".staging-{target.name}-", dir=target.parent))
        try:
            os.rename(target, retired)
        except OSError:
            retired.rmdir()
            raise
        try:
            os.rename(staging, target)
        except OSError:
            os.rename(retired, target)
            raise
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
        build_unit(built, unit, flag)
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


# --- leftovers of a killed writer ----------------------------------------------------------


def _recover_all(root: Path, targets: list[Path]) -> None:
    """Called under the lock on ``root``: the leftovers of each target's name beside it, and every
    leftover of ours inside ``root`` (a unit below it is only ever written under this lock), so that
    a partition not written this time is repaired too."""
    names = {target for target in targets}
    for folder in sorted({target.parent for target in targets}):
        if (folder == root or root in folder.parents) and folder.is_dir():
            names |= {folder / match["name"] for p in folder.iterdir() if (match := STAGING.fullmatch(p.name))}
    for target in sorted(names):
        _recover(target)


def _recover(target: Path) -> None:
    """Called under the lock: every staging folder of ours of ``target`` was left by a writer that died."""
    parent = target.parent
    if not parent.is_dir():
        return
    leftovers = sorted(
        p
        for p in parent.iterdir()
        if (match := STAGING.fullmatch(p.name)) and match["name"] == target.name and _ours(p)
    )
    for empty in [p for p in leftovers if not any(p.iterdir())]:
        empty.rmdir()  # made by a writer killed before it put anything in it
        leftovers.remove(empty)
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


def _ours(folder: Path) -> bool:
    """Whether a folder named like a staging folder is one of ours: a real folder holding the
    building marker, a manifest of ours, or nothing."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    if (folder / BUILDING).exists() or our_manifest(folder / MANIFEST) is not None:
        return True
    return not any(folder.iterdir())


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
    # the manifest last: it is what tells a later writer that a folder left by a kill is ours
    for entry in sorted(old.iterdir(), key=lambda entry: entry.name == MANIFEST):
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
