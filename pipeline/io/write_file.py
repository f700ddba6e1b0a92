"""Single files (the HTML report, its PNG figures, a comparison's files): staged beside the
target, then renamed over it only when the existing file is one of ours, or linked into place
without replacing anything (:func:`write_file`, :func:`write_files`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.io.disk import NO_LINKS, current_umask
from pipeline.io.output_errors import OutputError, output_error


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
        os.chmod(staged, 0o666 & ~current_umask())  # mkstemp's 0600 would be the published file's mode
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
        if error.errno not in NO_LINKS:
            raise
        os.replace(staged, path)
