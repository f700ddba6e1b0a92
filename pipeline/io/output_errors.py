"""Write failures as messages saying what happened and what to do: :class:`OutputError` (exit 2,
the user chooses another place) from an ``OSError`` or a Polars error carrying an OS error.

A failure inside a staging folder (:data:`STAGING`, where publishing builds a unit before it
takes the target's place) is reported under the target's name: the staging folder is ours."""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from pipeline.errors import OutputError

__all__ = ["STAGING", "OutputError", "guarded", "os_error_number", "output_error"]


# the staging folders publishing builds a unit in, beside its target: ``.staging-<name>-`` and 8 random characters
STAGING = re.compile(r"\.staging-(?P<name>.+)-[a-z0-9_]{8}")
_OS_ERROR = re.compile(r"os error (\d+)")


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
def guarded(flag: str, path: object) -> Iterator[None]:
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
        staged = named is not None and any(STAGING.fullmatch(part) for part in Path(os.fsdecode(named)).parts)
        raise output_error(error, path if named is None or staged else named, flag) from None
