"""Which entries of an input tree the file source may open: regular files only (file-system calls, no Spark).

Theory of operation: an input tree is whatever an operator (or an attacker) left there, and only regular files are
input. Every other kind of entry hurts when treated as one:

* a FIFO opened for reading blocks until a writer appears, i.e. forever for a stale one (the pipeline hangs);
* a symlink loop fails every stat and open with ELOOP, on every trigger and every restart;
* a dangling symlink, a socket or an unreadable file fails its open;
* a device may act on open (a tape rewinds, a terminal becomes the controlling one).

So an entry is vetted with lstat/stat before anything opens it (`entry_problem`), and every open of an input file
is `open_regular`: O_NONBLOCK, so an entry swapped for a FIFO between the stat and the open does not block, and an
fstat of what was opened, so only a regular file is ever read. Symlinks to regular files are followed (operators
link log files and directories into the tree). A problem is a short reason the dq row and the log carry.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from jobs import PipelineIOError

__all__ = ["NotRegularFile", "entry_problem", "mode_problem", "open_regular"]

# What a non-regular entry is, by its stat mode, and why it is never opened.
_MODE_PROBLEMS: tuple[tuple[int, str], ...] = (
    (stat.S_IFIFO, "FIFO (named pipe): not opened, a read would block until a writer appears"),
    (stat.S_IFSOCK, "socket: not a file"),
    (stat.S_IFCHR, "character device: not opened"),
    (stat.S_IFBLK, "block device: not opened"),
    (stat.S_IFDIR, "directory where a file was expected"),
)
# O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; O_NOCTTY: a terminal never becomes
# the process's controlling terminal. Neither changes how a regular file reads.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(PipelineIOError):
    """An input entry that is not a readable regular file; `reason` says what it is."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def mode_problem(mode: int) -> str | None:
    """Why an entry of this stat mode is not read; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = stat.S_IFMT(mode)
    for fmt, reason in _MODE_PROBLEMS:
        if kind == fmt:
            return reason
    return f"not a regular file (mode {oct(kind)})"


def _os_problem(exc: OSError) -> str:
    return f"unreadable: {exc.strerror or exc}"


def entry_problem(path: str) -> str | None:
    """Why `path` is not a readable regular file, from lstat/stat only (nothing is opened); None when it is one.

    A symlink is judged by its target; a loop and a dangling link have reasons of their own. An entry that has
    vanished (a rotated log deleted meanwhile) raises FileNotFoundError: it is gone, not a problem to report.
    """
    lst = os.lstat(path)
    if not stat.S_ISLNK(lst.st_mode):
        return mode_problem(lst.st_mode)
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop"
        if exc.errno == errno.ENOENT:
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            return f"dangling symlink (target {target} does not exist)"
        return _os_problem(exc)
    return mode_problem(st.st_mode)


def open_regular(path: str) -> BinaryIO:
    """Open `path` for binary reading, only if it is a regular file (raises NotRegularFile otherwise, and for a
    file that cannot be opened); never blocks, whatever `path` is by the time of the open.

    FileNotFoundError of a plain entry propagates: a vanished file is no problem to report.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        if os.path.islink(path):
            raise NotRegularFile(path, entry_problem(path) or "dangling symlink") from None
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(path, "symlink loop") from None
        if exc.errno == errno.ENXIO:  # a socket (or a device without its hardware)
            try:
                reason = mode_problem(os.stat(path).st_mode) or _os_problem(exc)
            except OSError:
                reason = _os_problem(exc)
            raise NotRegularFile(path, reason) from None
        raise NotRegularFile(path, _os_problem(exc)) from None
    try:
        problem = mode_problem(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if problem is not None:
        os.close(fd)
        raise NotRegularFile(path, problem)
    return os.fdopen(fd, "rb")
