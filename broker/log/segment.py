"""One log segment: ``<base offset>.log`` plus its ``.index`` and ``.timeindex`` (Kafka's ``LogSegment``).

The ``.log`` file is a plain concatenation of record batches. ``size`` is the committed length: bytes past it
are never read, so readers can ``pread`` without the log lock while an append is in progress (the append
writes first and only then moves ``size``). All mutation happens under the owning :class:`~broker.log.log.Log`'s
lock; reads take no lock at all.

The three files' descriptors come from :mod:`broker.log.file_pool`: a segment nobody reads or writes holds none
once the pool has moved on. :meth:`LogSegment.delete_files` pins the ``.log`` descriptor before unlinking, so reads
in flight keep working until :meth:`LogSegment.close`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from broker.protocol.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, RecordBatchInfo, batch_size, read_batch_header

from ._batch import check_batch, first_record_at_or_after
from .errors import CorruptRecordError, RecordTooLargeError, StorageError
from .file_pool import FilePool, shared_file_pool
from .index import OffsetIndex, TimeIndex

__all__ = ["LOG_SUFFIX", "LogSegment", "file_name", "whole_batches_prefix"]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
# Bytes read per pread while walking batch headers: one index interval (4 KiB) plus room for the batches around it.
SCAN_CHUNK_BYTES = 64 * 1024


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's zero-padded segment file name (``00000000000000000042.log``)."""
    return f"{base_offset:020d}{suffix}"


def whole_batches_prefix(data: bytes) -> int:
    """Length of the longest prefix of ``data`` made of whole batches (by their Length fields)."""
    pos, end = 0, len(data)
    while end - pos >= LOG_OVERHEAD:
        size = batch_size(data, pos)
        if size < BATCH_HEADER_SIZE or pos + size > end:
            break
        pos += size
    return pos


class LogSegment:
    """A segment's files and in-memory state (opened or created by the constructor, then :meth:`load`ed or
    :meth:`recover`ed by the loader)."""

    def __init__(
        self, directory: Path, base_offset: int, index_interval_bytes: int, max_index_bytes: int, now_ms: int,
        files: FilePool | None = None,
    ) -> None:
        pool = files or shared_file_pool()
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = directory / file_name(base_offset, LOG_SUFFIX)
        self._file = pool.file(self.log_path, create=True)
        self.size = self._file.size()
        self.offset_index = OffsetIndex(directory / file_name(base_offset, INDEX_SUFFIX), base_offset, max_index_bytes,
                                        pool)
        self.time_index = TimeIndex(directory / file_name(base_offset, TIME_INDEX_SUFFIX), base_offset, max_index_bytes,
                                    pool)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.rolling_timestamp: int | None = None  # first batch's max timestamp (Kafka's rollingBasedTimestamp)
        self.created_ms = now_ms
        self._bytes_since_index = 0
        self.recovery_error = ""  # why the last recover() stopped early, for the loader's log line

    # -- loading ----------------------------------------------------------------------------------------------
    def load(self) -> bool:
        """Rebuild the in-memory state of a segment written earlier, trusting its contents.

        Returns False when the indexes fail their sanity check (the caller then runs :meth:`recover`).
        """
        if not self.offset_index.sanity_ok(max(self.size, 1)) or not self.time_index.sanity_ok():
            return False
        _, position = self.offset_index.last_entry()
        ts, off = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = ts, off
        last: RecordBatchInfo | None = None
        for info in self.scan(position, self.size, verify=False):
            last = info
            self._note_timestamp(info)
        if last is None:
            return self.size == 0
        if last.position + last.size != self.size:
            return False
        self.next_offset = last.next_offset
        self._bytes_since_index = self.size - position
        first = next(self.scan(0, self.size, verify=False), None)
        self.rolling_timestamp = first.max_timestamp if first is not None else None
        return True

    def recover(self, max_message_bytes: int | None, on_batch: Callable[[RecordBatchInfo], None] | None = None) -> int:
        """Validate every batch, cut the file after the last valid one, rebuild both indexes.

        Returns:
            The number of bytes truncated (0 when the segment was whole).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.rolling_timestamp = None
        self._bytes_since_index = 0
        valid = 0
        try:
            for info in self.scan(0, self.size, verify=True, max_size=max_message_bytes):
                if info.base_offset < self.next_offset or info.last_offset - self.base_offset > 2**31 - 1:
                    raise CorruptRecordError(
                        f"Out of order offset {info.base_offset} in segment "
                        f"{self.log_path} (expected at least {self.next_offset})"
                    )
                self._index_batch(info, info.position)
                self.next_offset = info.next_offset
                if self.rolling_timestamp is None:
                    self.rolling_timestamp = info.max_timestamp
                if on_batch is not None:
                    on_batch(info)
                valid = info.position + info.size
        except (CorruptRecordError, RecordTooLargeError) as exc:
            self.recovery_error = str(exc)
        truncated = self.size - valid
        if truncated > 0:
            self._file.truncate(valid)
            self.size = valid
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        return truncated

    # -- scanning ----------------------------------------------------------------------------------------------
    def scan(self, start: int, end: int, *, verify: bool, max_size: int | None = None) -> Iterator[RecordBatchInfo]:
        """The batches between file positions ``start`` and ``end``, with absolute positions.

        With ``verify``, every batch is fully validated (CRC included) and a bad one raises
        :class:`CorruptRecordError`; without, the walk only reads headers and stops at the first implausible one.
        """
        window, win_start = b"", start
        pos = start
        while pos < end:
            rel = pos - win_start
            if rel + BATCH_HEADER_SIZE > len(window):
                window, win_start, rel = (
                    self._pread(min(max(SCAN_CHUNK_BYTES, BATCH_HEADER_SIZE), end - pos), pos),
                    pos,
                    0,
                )
            if len(window) - rel < BATCH_HEADER_SIZE:
                if verify:
                    raise CorruptRecordError(f"Found a partial batch of {end - pos} bytes at position {pos}")
                return
            size = batch_size(window, rel)
            if verify:
                if BATCH_HEADER_SIZE <= size <= end - pos and rel + size > len(window):
                    window, win_start, rel = self._pread(max(size, min(SCAN_CHUNK_BYTES, end - pos)), pos), pos, 0
                info = check_batch(window, rel, min(len(window), end - win_start), max_size, True, win_start)
            else:
                if size < BATCH_HEADER_SIZE or pos + size > end:
                    return
                info = read_batch_header(window, rel, win_start)
            yield info
            pos += info.size

    def translate_offset(self, offset: int, start_position: int = 0) -> RecordBatchInfo | None:
        """The first batch whose last offset is >= ``offset`` (the one holding it), or None past the end."""
        _, position = self.offset_index.lookup(offset)
        for info in self.scan(max(position, start_position), self.size, verify=False):
            if info.last_offset >= offset:
                return info
        return None

    # -- appends -----------------------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: list[RecordBatchInfo]) -> None:
        """Write ``data`` (whose batches are ``batches``, positions relative to ``data``) at the end.

        Raises:
            StorageError: the write failed (disk full, I/O error).
        """
        physical = self.size
        try:
            written = self._file.pwrite(data, physical)
            if written != len(data):
                self._file.truncate(physical)
        except OSError as exc:
            raise StorageError(f"Error while appending records to {self.log_path}: {exc}") from exc
        if written != len(data):
            raise StorageError(f"Short write appending to {self.log_path}: {written} of {len(data)} bytes")
        for info in batches:
            self._index_batch(info, physical + info.position)
        if self.rolling_timestamp is None:
            self.rolling_timestamp = batches[0].max_timestamp
        self.next_offset = batches[-1].next_offset
        self.size = physical + len(data)

    def _index_batch(self, info: RecordBatchInfo, position: int) -> None:
        self._note_timestamp(info)
        if self._bytes_since_index > self.index_interval_bytes:
            self.offset_index.append(info.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += info.size

    def _note_timestamp(self, info: RecordBatchInfo) -> None:
        if info.max_timestamp > self.max_timestamp:
            self.max_timestamp = info.max_timestamp
            self.offset_of_max_timestamp = info.last_offset

    def on_become_inactive(self) -> None:
        """The segment was rolled: write the final time index entry (Kafka's onBecomeInactiveSegment)."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def should_roll(
        self, incoming_bytes: int, max_offset: int, max_timestamp: int, segment_bytes: int, segment_ms: int, now_ms: int
    ) -> bool:
        """Kafka's ``shouldRoll``: size, age (``segment.ms``), full indexes, or relative offsets overflowing.

        Age is the incoming batches' max timestamp minus the first batch's (Kafka's ``timeWaitedForRoll``), or
        wall time since creation when the segment has no timestamps.
        """
        if self.size == 0:
            return False
        if self.rolling_timestamp is not None and self.rolling_timestamp >= 0:
            waited = max_timestamp - self.rolling_timestamp
        else:
            waited = now_ms - self.created_ms
        return (
            self.size > segment_bytes - incoming_bytes
            or waited > segment_ms
            or self.offset_index.is_full
            or self.time_index.is_full
            or max_offset - self.base_offset > 2**31 - 1
        )

    # -- reads -------------------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int, max_position: int, min_one_batch: bool) -> bytes | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_bytes`` (but at least one batch
        when ``min_one_batch``), never past ``max_position``. None when this segment holds no such offset."""
        limit = min(max_position, self.size)
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        if found.position >= limit:
            return b""
        want = min(max_bytes, limit - found.position)
        if want < found.size:
            if not min_one_batch:
                return b""
            want = found.size
        data = self._pread(want, found.position)
        return data[: whole_batches_prefix(data)]

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """``(record timestamp, offset)`` of the first record at or after ``start_offset`` with a timestamp >=
        ``timestamp``, or None (Kafka's ``findOffsetByTimestamp``)."""
        _, indexed_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(indexed_offset, start_offset))
        for info in self.scan(position, self.size, verify=False):
            if info.max_timestamp >= timestamp and info.last_offset >= start_offset:
                found = first_record_at_or_after(self._pread(info.size, info.position), info, timestamp, start_offset)
                if found is not None:
                    return found
        return None

    @property
    def largest_timestamp(self) -> int:
        """Newest record timestamp, or the file's mtime (ms) when the segment has none (Kafka's rule)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return self.last_modified_ms or self.created_ms

    # -- mutation ----------------------------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Drop every batch holding offsets >= ``offset`` from the batch that holds ``offset``; bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position = found.position
        removed = self.size - position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to(found.base_offset)
        self._file.truncate(position)
        self.size = position
        self.next_offset = found.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry()
        _, index_position = self.offset_index.last_entry()
        self._bytes_since_index = 0
        for info in self.scan(index_position, position, verify=False):
            self._note_timestamp(info)
        if position == 0:
            self.rolling_timestamp = None
        return removed

    def flush(self, *, indexes: bool = True) -> None:
        """fsync the log file and (unless told not to) both indexes."""
        try:
            # fdatasync: the data and the file size (needed to read it back) reach the disk; the mtime need not.
            self._file.fsync(data_only=True)
            if indexes:
                self.offset_index.flush()
                self.time_index.flush()
        except OSError as exc:
            raise StorageError(f"Error while flushing {self.log_path}: {exc}") from exc

    def delete_files(self) -> None:
        """Unlink the three files. The ``.log`` descriptor is pinned first and keeps working until :meth:`close`
        (readers in flight)."""
        try:
            self._file.pin()
        except OSError:
            pass  # already closed, or no descriptor to be had: nobody can read it after the unlink either way
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    def close(self) -> None:
        """Give the descriptors back (idempotent)."""
        self._file.close()
        self.offset_index.close()
        self.time_index.close()

    def _pread(self, length: int, position: int) -> bytes:
        try:
            return self._file.pread(length, position)
        except OSError as exc:
            raise StorageError(f"Error while reading {self.log_path}: {exc}") from exc

    @property
    def last_modified_ms(self) -> int:
        """The ``.log`` file's mtime in ms (0 once deleted)."""
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    def __repr__(self) -> str:
        largest = f"Some({self.max_timestamp})" if self.max_timestamp >= 0 else "None"
        return (
            f"LogSegment(baseOffset={self.base_offset}, size={self.size}, "
            f"lastModifiedTime={self.last_modified_ms}, largestRecordTimestamp={largest})"
        )
