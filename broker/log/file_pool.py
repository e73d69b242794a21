"""A bounded pool of open descriptors for the segment files (``.log``, ``.index``, ``.timeindex``) of a process.

Theory of operation
-------------------
Kafka keeps every segment's files open and its packaging asks operators for an open-file limit of 100,000 or more.
Under the common limit of 1024 a broker that held three descriptors per segment could not even start with a few
hundred partitions, and running out mid-way left half-created topics behind. Here a segment file holds a
descriptor only while it is in the pool:

* a :class:`PooledFile` opens its file on first use (a new file is created by :meth:`FilePool.file`) and keeps the
  descriptor in the pool, most recently used last;
* when the pool is full, the least recently used *idle* descriptor is closed; its file reopens on the next use
  (without ``O_CREAT``: a file deleted meanwhile is an error, never silently recreated empty);
* every I/O call holds a *lease* on the descriptor (taken and released under the pool's lock), and eviction never
  closes a leased descriptor, so a ``pread`` running without the log lock never has its descriptor closed or
  reused under it; with every descriptor leased the pool grows past its capacity rather than wait;
* a *pinned* file (a deleted segment that fetches in flight may still read, see ``file.delete.delay.ms``) keeps its
  descriptor until it is closed, so it survives the unlink;
* when ``open`` fails with EMFILE/ENFILE (sockets or other files took the rest of the limit), the pool closes its
  idle descriptors and tries once more; a second failure reaches the caller as ``OSError``.

An idle partition therefore costs no descriptor once the pool has moved on, and the process's descriptors for
segment files never exceed :attr:`FilePool.capacity` plus the leases in flight. fsync works through any descriptor of
a file (Linux writes back the file, not the descriptor), so a flush after a reopen still covers earlier writes.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Final

__all__ = ["MIN_CAPACITY", "SHARE_OF_LIMIT", "FilePool", "PooledFile", "default_capacity", "raise_open_file_limit",
           "shared_file_pool"]

# The pool may use this share of the open-file soft limit: the rest is for client connections (one descriptor each),
# the listeners, log appenders, checkpoint writes and the interpreter's own files.
SHARE_OF_LIMIT: Final = 0.5
# Never fewer than this (a tiny limit still needs the active segment's three files and a reader's).
MIN_CAPACITY: Final = 8
# open() errors that mean "no descriptor left" rather than "this file is wrong": the pool sheds its idle ones once.
_OUT_OF_DESCRIPTORS: Final = frozenset({errno.EMFILE, errno.ENFILE})


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the process's open-file soft limit to its hard limit, as Kafka's packaging expects operators to (it
    cannot raise the hard one); ``(soft before, soft after)``, equal when there was nothing to raise."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard or soft == resource.RLIM_INFINITY:
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):  # a hard limit above the kernel's nr_open: keep the soft one
        return soft, soft
    return soft, hard


def default_capacity() -> int:
    """:data:`SHARE_OF_LIMIT` of the process's current open-file soft limit (unlimited: the hard limit, else 2**20)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = soft if soft != resource.RLIM_INFINITY else hard if hard != resource.RLIM_INFINITY else 2**20
    return max(MIN_CAPACITY, int(limit * SHARE_OF_LIMIT))


class PooledFile:
    """One file whose descriptor lives in a :class:`FilePool`; positional I/O only (thread-safe)."""

    __slots__ = ("_closing", "_fd", "_flags", "_leases", "_pinned", "_pool", "path")

    def __init__(self, pool: FilePool, path: Path) -> None:
        self.path = path
        self._pool = pool
        self._fd = -1
        self._flags = os.O_RDWR | os.O_CREAT  # until the file exists; then O_RDWR (see the module docstring)
        self._leases = 0
        self._pinned = False
        self._closing = False

    @property
    def is_open(self) -> bool:
        """True while a descriptor is held (tests)."""
        return self._fd >= 0

    def pread(self, length: int, position: int) -> bytes:
        """``os.pread`` under a lease."""
        fd = self._pool._acquire(self)
        try:
            return os.pread(fd, length, position)
        finally:
            self._pool._release(self)

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
        """``os.pwrite`` under a lease; the bytes written."""
        fd = self._pool._acquire(self)
        try:
            return os.pwrite(fd, data, position)
        finally:
            self._pool._release(self)

    def truncate(self, length: int) -> None:
        """``os.ftruncate`` under a lease."""
        fd = self._pool._acquire(self)
        try:
            os.ftruncate(fd, length)
        finally:
            self._pool._release(self)

    def size(self) -> int:
        """The file's size (``fstat``)."""
        fd = self._pool._acquire(self)
        try:
            return os.fstat(fd).st_size
        finally:
            self._pool._release(self)

    def fsync(self, *, data_only: bool = False) -> None:
        """``os.fsync`` (``fdatasync`` with ``data_only``) under a lease."""
        fd = self._pool._acquire(self)
        try:
            (os.fdatasync if data_only else os.fsync)(fd)
        finally:
            self._pool._release(self)

    def pin(self) -> None:
        """Keep the descriptor open until :meth:`close` (before the file is unlinked while readers may still come)."""
        self._pool._pin(self)

    def close(self) -> None:
        """Give the descriptor back (at once, or when the last lease ends); later I/O raises ``OSError``."""
        self._pool._close(self)


class FilePool:
    """Open descriptors of segment files, at most ``capacity`` idle or leased ones (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._open: OrderedDict[PooledFile, None] = OrderedDict()  # least recently used first

    @property
    def open_count(self) -> int:
        """Descriptors held now."""
        return len(self._open)

    def file(self, path: Path, *, create: bool = False) -> PooledFile:
        """A pooled handle on ``path``; with ``create`` the file is created now (empty) if missing.

        Raises:
            OSError: ``create`` and the file could not be created.
        """
        f = PooledFile(self, path)
        if not create:
            f._flags = os.O_RDWR
        else:
            self._acquire(f)
            self._release(f)
        return f

    # -- internals (PooledFile calls these) -------------------------------------------------------------------------
    def _acquire(self, f: PooledFile) -> int:
        with self._lock:
            if f._closing:
                raise OSError(errno.EBADF, f"{f.path} is closed")
            if f._fd < 0:
                self._make_room(self.capacity - 1)
                f._fd = self._open_fd(f)
                f._flags = os.O_RDWR
            f._leases += 1
            self._open[f] = None
            self._open.move_to_end(f)
            return f._fd

    def _open_fd(self, f: PooledFile) -> int:
        try:
            return os.open(f.path, f._flags, 0o644)
        except OSError as exc:
            if exc.errno not in _OUT_OF_DESCRIPTORS:
                raise
            self._make_room(0)
            return os.open(f.path, f._flags, 0o644)

    def _make_room(self, keep: int) -> None:
        """Close least recently used idle descriptors until at most ``keep`` are open (leased ones stay)."""
        need = len(self._open) - keep
        if need <= 0:
            return
        victims = []
        for f in self._open:  # oldest first; stops as soon as enough idle ones are found
            if f._leases == 0 and not f._pinned:
                victims.append(f)
                if len(victims) == need:
                    break
        for victim in victims:
            self._drop(victim)

    def _drop(self, f: PooledFile) -> None:
        del self._open[f]
        fd, f._fd = f._fd, -1
        os.close(fd)

    def _release(self, f: PooledFile) -> None:
        with self._lock:
            f._leases -= 1
            if f._closing and f._leases == 0 and f._fd >= 0:
                self._drop(f)

    def _pin(self, f: PooledFile) -> None:
        self._acquire(f)
        with self._lock:
            f._pinned = True

    def _close(self, f: PooledFile) -> None:
        with self._lock:
            if f._closing:
                return
            f._closing = True
            if f._pinned:
                f._pinned = False
                f._leases -= 1
            if f._leases == 0 and f._fd >= 0:
                self._drop(f)


_shared: FilePool | None = None
_shared_lock = threading.Lock()


def shared_file_pool() -> FilePool:
    """The process's pool, created on first use with :func:`default_capacity` (the broker raises its soft limit
    before its logs load, so the pool is sized from the raised limit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = FilePool(default_capacity())
        return _shared
