"""Reading and writing the user's files safely: the one rule every file paradec writes goes through.
Standard library only (trace replay uses it).

Reading: only a regular file. A FIFO blocks open() and read() until a writer comes, forever if
none does, and a device such as /dev/zero never ends; both are refused before a byte is read.
Writing (plan, before any work, then write_atomic or replacing):
- only over a regular file or to a new name in a folder that exists (a rename over /dev/full would turn the
  device, for every program on the machine, into a file);
- never over a file the same command reads, nor over another output of the same command (bench's JSON and the
  CSV beside it), compared by the path every link resolved and by inode (a hard link is the same file);
- a read-only file is refused unless the user forces it (--force), as a shell's redirection refuses it;
- a symlink counts as what it points to: the write goes to its target (a new one for a dangling link), through a
  temporary file beside the target renamed over it, so the link stays and a full disk or a killed process leaves
  the old file whole instead of a truncated one."""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

MAX_ENTRIES = 10_000  # a weights folder holds a handful of files; more are not looked at
NEW_MODE = 0o644  # a new file's mode: readable by others (mkstemp's 0600 would hide a trace from them)


class NotRegular(OSError):
    """The path exists but is not a regular file (a FIFO, a device, a folder)."""


class Refused(ValueError):
    """An output the rule refuses; the message is one line for the user."""


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


def target(path: str | os.PathLike) -> Path:
    """Where a write to path lands: the file its links lead to (a dangling link's missing target), else path."""
    return Path(os.path.realpath(path))


def read_only(path: str | os.PathLike) -> bool:
    """Whether an existing file is protected from writing: no write permission for this process, or none in
    its mode at all (root may write anything, but a file of mode 444 was protected by someone)."""
    return not os.access(path, os.W_OK) or not os.stat(path).st_mode & 0o222


def writable(path: str | os.PathLike) -> Path:
    """The target a write to path replaces or creates; OSError unless it is a regular file or a new name in a
    folder this process may write to. A symlink counts as what it points to (a loop is refused)."""
    path = Path(path)
    if not path.name:
        raise IsADirectoryError(errno.EISDIR, "names no file", str(path))
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise _not_regular(path)
    except FileNotFoundError:  # a new name, or a dangling symlink: its target is made
        pass
    real = target(path)
    if not real.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder", str(real.parent))
    if not os.access(real.parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "the folder is not writable", str(real.parent))
    return real


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: the same target once links are resolved, or the same inode."""
    if target(a) == target(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):  # a new name is no other file
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _inside(path, folder) -> bool:
    """Whether an existing file lies in a folder the command reads (a model's, a drafter's), or is a hard link
    to one of the files directly in it."""
    try:
        if not (os.path.isdir(folder) and os.path.isfile(path)):
            return False
        if target(path).is_relative_to(target(folder)):
            return True
        st = os.stat(path)
        with os.scandir(folder) as entries:
            return any(e.inode() == st.st_ino and e.stat().st_dev == st.st_dev
                       for e, _ in zip(entries, range(MAX_ENTRIES)) if e.is_file())
    except (OSError, ValueError):
        return False


Named = Sequence[tuple[str, "str | os.PathLike | None"]]


def plan(outputs: Named, inputs: Named = (), force: bool = False) -> list[Path]:
    """Every output of a command checked by the rule before any work: (what it is, its path) pairs, against
    the (what, path) pairs the command reads (files, or folders whose existing files it may read) and against
    each other; a read-only file only with `force` (the writes that follow do not ask again). Their targets, in
    order; Refused with one line for the first that breaks the rule."""
    targets = []
    for n, (what, path) in enumerate(outputs):
        try:
            targets.append(writable(path))
            if not force and targets[-1].exists() and read_only(path):
                raise PermissionError(errno.EACCES, "the file is read-only (--force replaces it)", str(path))
        except OSError as e:
            raise Refused(f"cannot write {what} {path}: {e.strerror or e}") from None
        for name, read in inputs:
            if read is not None and (same_file(path, read) or _inside(path, read)):
                how = "is" if same_file(path, read) else "lies in"
                raise Refused(f"cannot write {what} {path}: it {how} {name} {read}, which this command reads")
        for name, other in outputs[:n]:
            if same_file(path, other):
                raise Refused(f"cannot write {what} {path}: the {name} {other} goes there too")
    return targets


def plan_in(what: str, folder: str | os.PathLike, names: Sequence[str], inputs: Named = (), force: bool = False,
            parents: bool = False) -> None:
    """plan() for the files named `names` that a command writes into a folder (--out of a trainer), made when
    new: its parent must exist (unless `parents`: a cache's folders are made too)."""
    real = target(folder)
    if os.path.lexists(folder) and not real.is_dir():
        raise Refused(f"cannot write {what} {folder}: not a folder")
    if real.is_dir():
        plan([(f"{what} file", Path(folder) / name) for name in names], inputs, force)
        return
    if not parents and not real.parent.is_dir():
        raise Refused(f"cannot write {what} {folder}: no such folder {real.parent}")
    if real.parent.is_dir() and not os.access(real.parent, os.W_OK | os.X_OK):
        raise Refused(f"cannot write {what} {folder}: the folder {real.parent} is not writable")


def announce(prog: str, outputs: Named) -> None:
    """Say on stderr, before any work, what the command will write (and where a link leads)."""
    shown = []
    for what, path in outputs:
        real = target(path)
        link = f" (a link to {real})" if os.path.islink(path) else ""
        shown.append(f"{what} {path}{link}")
    print(printable(f"{prog}: will write {'; '.join(shown)}"), file=sys.stderr)


@contextlib.contextmanager
def replacing(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside path's target for a writer that takes a path (safetensors, torch.save); once the
    block ends, renamed over the target, the old file's mode kept. OSError (NotRegular) as writable()."""
    real = writable(path)
    mode = stat.S_IMODE(os.stat(real).st_mode) if real.exists() else NEW_MODE
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())  # on disk before the rename makes it the file
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write text (UTF-8) to path's target by a rename: the old file stays whole if writing fails. OSError
    (NotRegular) as writable()."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


# C0 and C1 control characters and DEL: an escape sequence from a file could move the cursor, retitle the
# window or rewrite what the terminal shows
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}


def printable(text: str, keep: str = "") -> str:
    """text with every control character (those in `keep` aside) shown escaped, for a terminal."""
    return text.translate({c: e for c, e in _CONTROLS.items() if chr(c) not in keep})


class StdoutError(OSError):
    """Standard output cannot be written (a full disk, /dev/full, a closed or broken pipe)."""


def keep_std_streams() -> None:
    """Closed standard streams (`>&-`) opened on /dev/null: otherwise the next file opened takes their number,
    and whatever writes to that number (a library's own output) writes into it. A closed stdout stays
    sys.stdout None, so that print_out still says it is closed."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is None:  # print(file=None) would write to stdout
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the process's own stream, open until exit)


def print_out(text: str) -> None:
    """text and a newline on stdout, flushed now, so that a failed write is a StdoutError here rather than a
    traceback at exit. On a terminal, control characters other than newlines and tabs are shown escaped.
    After a failure stdout points at /dev/null: exit's own flush then has nowhere to fail."""
    out = sys.stdout
    if out is None:
        raise StdoutError(errno.EBADF, "cannot write to standard output: it is closed")
    try:
        out.write((printable(text, "\n\t") if out.isatty() else text) + "\n")
        out.flush()
    except (OSError, ValueError) as e:  # ValueError: a stream closed by the program
        null = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):
            os.dup2(null, out.fileno())
        os.close(null)
        raise StdoutError(getattr(e, "errno", None) or errno.EBADF,
                          f"cannot write to standard output: {getattr(e, 'strerror', None) or e}") from None
