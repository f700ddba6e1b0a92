"""What writing outputs asks of the operating system: an exclusive lock on the output folder
(:class:`FolderLock`, ``flock`` on the folder itself, so no lock file is left in it), syncing a
folder's entries, the user's umask, and the errors that mean hard links cannot be made."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, said in a warning
    fcntl = None  # type: ignore[assignment]


NO_LINKS = {errno.EPERM, errno.EACCES, errno.EMLINK, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}
_NO_LOCK = {errno.ENOLCK, errno.EBADF, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


log = logging.getLogger("ndcg")


class FolderLock:
    """An exclusive ``flock`` on the output folder itself. When a job swaps the folder (its
    root is a unit), a waiting job wakes holding the old folder: it sees that the path now names
    another folder and locks that one instead."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.descriptors: list[int] = []

    def __enter__(self) -> FolderLock:
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


def fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot sync a folder
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
