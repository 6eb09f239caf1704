"""Reading and writing the user's files safely. Standard library only (trace replay uses it).

Reading: only a regular file. A FIFO blocks open() and read() until a writer comes, forever if
none does, and a device such as /dev/zero never ends; both are refused before a byte is read.
Writing: to a temporary file beside the target, then renamed over it, so a full disk or a killed
process leaves the old file whole instead of a truncated one."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


class NotRegular(OSError):
    """The path exists but is not a regular file (a FIFO, a device, a folder)."""


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """At most `limit` bytes of a regular file. OSError (NotRegular included) when unreadable."""
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file (a FIFO, a device or a folder)", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write text (UTF-8) to path by a rename: the old file stays whole if writing fails."""
    path = Path(path)
    if not path.name:
        raise IsADirectoryError(f"{str(path)!r} names no file")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename makes it the file
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the trace from other readers
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
