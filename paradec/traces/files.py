"""Reading and writing the user's files safely. Standard library only (trace replay uses it).

Reading: only a regular file. A FIFO blocks open() and read() until a writer comes, forever if
none does, and a device such as /dev/zero never ends; both are refused before a byte is read.
Writing: only over a regular file or to a new name (a rename over /dev/full would turn the device, for
every program on the machine, into a file), to a temporary file beside the target, then renamed over it,
so a full disk or a killed process leaves the old file whole instead of a truncated one."""
from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

MAX_ENTRIES = 10_000  # a weights folder holds a handful of files; more are not looked at


class NotRegular(OSError):
    """The path exists but is not a regular file (a FIFO, a device, a folder)."""


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """At most `limit` bytes of a regular file. OSError (NotRegular included) when unreadable."""
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)


def _not_regular(path) -> NotRegular:
    return NotRegular(errno.EINVAL, "not a regular file (a FIFO, a device or a folder)", str(path))


def writable(path: str | os.PathLike) -> None:
    """OSError unless path is a regular file or a new name in a folder this process may write to: checked
    before the work whose result it will hold. A symlink counts as what it points to."""
    path = Path(path)
    if not path.name:
        raise IsADirectoryError(errno.EISDIR, "names no file", str(path))
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise _not_regular(path)
    except FileNotFoundError:  # a new name (or a dangling symlink, which the rename replaces)
        pass
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder", str(path.parent))
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "the folder is not writable", str(path.parent))


def only_regular(path: str | os.PathLike) -> None:
    """NotRegular when path, or a file directly in the folder it names, is a FIFO, a device or a socket:
    a loader that opens one blocks until a writer comes (forever) or reads without end."""
    path = Path(path)
    if not path.is_dir():
        if path.exists() and not path.is_file():
            raise _not_regular(path)
        return
    with os.scandir(path) as entries:
        for n, entry in enumerate(entries):
            if n >= MAX_ENTRIES:
                break
            if not (entry.is_dir() or entry.is_file()) and os.path.exists(entry.path):  # not a dangling link
                raise _not_regular(entry.path)


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write text (UTF-8) to path by a rename: the old file stays whole if writing fails. OSError
    (NotRegular) when path is not a regular file or a new name."""
    path = Path(path)
    writable(path)
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


class StdoutError(OSError):
    """Standard output cannot be written (a full disk, /dev/full, a closed pipe)."""


def print_out(text: str) -> None:
    """text and a newline on stdout, flushed now, so that a failed write is a StdoutError here rather
    than a traceback at exit. After one, stdout points at /dev/null: exit's own flush then has nowhere
    to fail."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except OSError as e:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        raise StdoutError(e.errno, f"cannot write to standard output: {e.strerror or e}") from None
