"""Sparse segment indexes: ``.index`` (offset -> file position) and ``.timeindex`` (timestamp -> offset).

On disk, exactly Kafka's entry layouts: the offset index holds 8-byte entries (relative offset i32, position i32),
the time index 12-byte entries (timestamp i64, relative offset i32), big-endian, offsets relative to the
segment's base offset. Unlike Kafka the files are not pre-allocated and memory-mapped: entries are appended with
``pwrite`` and mirrored in two in-memory lists, searched with ``bisect``, so a lookup never touches the file and its
descriptor (from :mod:`broker.log.file_pool`) is needed only to append, truncate and flush. The indexes are rebuilt
from the log whenever a segment is recovered, and sanity-checked on load.

Lookup semantics (Kafka's ``OffsetIndex.lookup``): the entry with the largest offset <= target, else
``(base_offset, 0)``. Entries are written for a batch's *last* offset at the batch's *start* position, so the
batch that holds the target starts at or after the returned position.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path

from .file_pool import FilePool, shared_file_pool

__all__ = ["OffsetIndex", "TimeIndex"]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _Index:
    entry: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int, files: FilePool | None = None) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry.size)
        self._keys: list[int] = []
        self._values: list[int] = []
        self._file = (files or shared_file_pool()).file(path, create=True)
        raw = self._file.pread(self._file.size(), 0)
        usable = len(raw) - len(raw) % self.entry.size
        for a, b in self.entry.iter_unpack(raw[:usable]):
            self._load_entry(a, b)
        if usable != len(raw):
            self._file.truncate(usable)

    def _load_entry(self, a: int, b: int) -> None:
        raise NotImplementedError

    @property
    def entries(self) -> int:
        """Number of entries."""
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        """True when the index has reached ``segment.index.bytes``."""
        return len(self._keys) >= self.max_entries

    @property
    def size_bytes(self) -> int:
        """Bytes on disk."""
        return len(self._keys) * self.entry.size

    def _write(self, a: int, b: int) -> None:
        self._file.pwrite(self.entry.pack(a, b), self.size_bytes)

    def _truncate_entries(self, count: int) -> None:
        del self._keys[count:]
        del self._values[count:]
        self._file.truncate(self.size_bytes)

    def reset(self) -> None:
        """Remove every entry (before a rebuild)."""
        self._truncate_entries(0)

    def flush(self) -> None:
        """fsync the file."""
        self._file.fsync()

    def close(self) -> None:
        """Give the descriptor back (idempotent)."""
        self._file.close()


class OffsetIndex(_Index):
    """``<base>.index``: last offset of an indexed batch -> that batch's start position."""

    entry = _OFFSET_ENTRY

    def _load_entry(self, a: int, b: int) -> None:
        self._keys.append(self.base_offset + a)
        self._values.append(b)

    def sanity_ok(self, file_size: int) -> bool:
        """Entries strictly increasing in offset and position, positions inside the segment file."""
        keys, values = self._keys, self._values
        return (all(keys[i] < keys[i + 1] and values[i] < values[i + 1] for i in range(len(keys) - 1))
                and all(self.base_offset <= k for k in keys[:1]) and all(v < file_size for v in values[-1:]))

    def append(self, offset: int, position: int) -> None:
        """Add ``offset -> position`` (ignored unless both grow)."""
        if self._keys and (offset <= self._keys[-1] or position <= self._values[-1]):
            return
        self._write(offset - self.base_offset, position)
        self._keys.append(offset)
        self._values.append(position)

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the largest entry with offset <= target, else ``(base_offset, 0)``."""
        i = bisect.bisect_right(self._keys, target_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int]:
        """The newest entry, or ``(base_offset, 0)``."""
        if not self._keys:
            return self.base_offset, 0
        return self._keys[-1], self._values[-1]

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._keys, offset))

    def truncate_to_position(self, position: int) -> None:
        """Remove entries pointing at or past ``position``."""
        self._truncate_entries(bisect.bisect_left(self._values, position))


class TimeIndex(_Index):
    """``<base>.timeindex``: largest timestamp so far -> the offset holding it (both strictly increasing)."""

    entry = _TIME_ENTRY

    def _load_entry(self, a: int, b: int) -> None:
        self._keys.append(a)
        self._values.append(self.base_offset + b)

    def _write(self, a: int, b: int) -> None:
        self._file.pwrite(self.entry.pack(a, b - self.base_offset), self.size_bytes)

    def sanity_ok(self) -> bool:
        """Timestamps and offsets strictly increasing."""
        keys, values = self._keys, self._values
        return all(keys[i] < keys[i + 1] and values[i] < values[i + 1] for i in range(len(keys) - 1))

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add ``timestamp -> offset`` when the timestamp is newer than the last entry's."""
        if timestamp < 0 or (self._keys and (timestamp <= self._keys[-1] or offset <= self._values[-1])):
            return
        self._write(timestamp, offset)
        self._keys.append(timestamp)
        self._values.append(offset)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """``(timestamp, offset)`` of the largest entry with timestamp <= target, else ``(-1, base_offset)``."""
        i = bisect.bisect_right(self._keys, target_timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int]:
        """The newest entry, or ``(-1, base_offset)``."""
        if not self._keys:
            return -1, self.base_offset
        return self._keys[-1], self._values[-1]

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset is >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._values, offset))
