"""The leader epoch cache (``LeaderEpochFileCache``): epoch -> start offset, persisted in ``leader-epoch-checkpoint``.

Every change is written through at once with the checkpoint dance (temp file, fsync, rename). In Kafka up to 3.6
that write happens under ``Log.lock`` -- and, on a follower, under the fetcher's ``partitionMapLock`` -- which is
the KAFKA-6974 contention this project reproduces; :class:`~broker.log.checkpoint.CheckpointDelay` slows the
fsync on purpose. Callers hold the owning log's lock; this class adds its own small lock for readers.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple

from broker.log4j import Log4j, default_log4j

from .checkpoint import CheckpointDelay, read_checkpoint, write_checkpoint
from .errors import StorageError

__all__ = ["LEADER_EPOCH_CHECKPOINT", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochEntry", "LeaderEpochCache"]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_LOGGER = "kafka.server.epoch.LeaderEpochFileCache"


class EpochEntry(NamedTuple):
    """One epoch and the first offset written in it."""

    epoch: int
    start_offset: int

    def __str__(self) -> str:
        return f"EpochEntry(epoch={self.epoch}, startOffset={self.start_offset})"


class LeaderEpochCache:
    """The epoch entries of one partition, backed by ``<partition dir>/leader-epoch-checkpoint``."""

    def __init__(self, partition_dir: Path, topic_partition: str, *, delay: CheckpointDelay | None = None,
                 log4j: Log4j | None = None) -> None:
        self.path = partition_dir / LEADER_EPOCH_CHECKPOINT
        self.topic_partition = topic_partition
        self._delay = delay or CheckpointDelay()
        logs = log4j or default_log4j()
        self._log = logs.get_logger(_LOGGER)
        self._log_ident = logs.get_logger(_LOGGER, f"[LeaderEpochCache {topic_partition}] ")
        self._lock = threading.Lock()
        self._entries: list[EpochEntry] = []
        try:
            raw = read_checkpoint(self.path)
            self._entries = [EpochEntry(int(e[0]), int(e[1])) for e in raw]
        except StorageError as exc:
            if isinstance(exc.__cause__, OSError):
                raise  # the file could not be read (no descriptor left, I/O error): not malformed, the log fails
            self._log_ident.warn(f"Ignoring malformed {self.path}; the epoch cache starts empty")
        except (ValueError, IndexError):
            self._log_ident.warn(f"Ignoring malformed {self.path}; the epoch cache starts empty")
            self._entries = []

    # -- queries ---------------------------------------------------------------------------------------------
    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, oldest first."""
        with self._lock:
            return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or -1."""
        with self._lock:
            return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: ``(epoch, end offset)`` of ``requested_epoch`` (Kafka's ``endOffsetFor``)."""
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH or not self._entries:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if self._entries[-1].epoch == requested_epoch:
                return requested_epoch, log_end_offset
            later = [e for e in self._entries if e.epoch > requested_epoch]
            earlier = [e for e in self._entries if e.epoch <= requested_epoch]
            if not later:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if not earlier:
                return requested_epoch, later[0].start_offset
            return earlier[-1].epoch, later[0].start_offset

    # -- updates (callers hold the log lock) ---------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset``; flushes when the cache changes."""
        if epoch < 0:
            return
        with self._lock:
            if self._entries and self._entries[-1].epoch == epoch:
                return
            kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
            self._entries = [*kept, EpochEntry(epoch, start_offset)]
            entries = list(self._entries)
        self._flush(entries)

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (follower truncation; Kafka's truncateFromEnd)."""
        with self._lock:
            removed = [e for e in self._entries if e.start_offset >= end_offset]
            if end_offset < 0 or not removed:
                return
            self._entries = [e for e in self._entries if e.start_offset < end_offset]
            entries = list(self._entries)
        self._flush(entries)
        self._log_ident.debug(
            f"Cleared entries ListBuffer({', '.join(map(str, removed))}) from epoch cache after truncating to end "
            f"offset {end_offset}, leaving {len(entries)} entries in the cache.")

    def clear_and_flush_earliest(self, offset: int) -> None:
        """Drop entries wholly below ``offset``, keeping the epoch of ``offset`` (log start offset moved).

        Logs Kafka 1.1's line ``Cleared earliest N entries from epoch cache based on passed offset X leaving M in
        EpochFile for partition T``. The flush (an fsync) runs in the caller's locks, as in Kafka before 3.7.
        """
        with self._lock:
            if offset < 0 or not self._entries or self._entries[0].start_offset >= offset:
                return
            earliest = [e for e in self._entries if e.start_offset < offset]
            remaining = [e for e in self._entries if e.start_offset >= offset]
            if not remaining or offset < remaining[0].start_offset:
                remaining.insert(0, EpochEntry(earliest[-1].epoch, offset))
            self._entries = remaining
            entries = list(remaining)
        self._flush(entries)
        self._log.info(f"Cleared earliest {len(earliest)} entries from epoch cache based on passed offset {offset} "
                       f"leaving {len(entries)} in EpochFile for partition {self.topic_partition}")

    def clear(self) -> None:
        """Remove every entry (and flush)."""
        with self._lock:
            self._entries = []
        self._flush([])

    def _flush(self, entries: list[EpochEntry]) -> None:
        write_checkpoint(self.path, (f"{e.epoch} {e.start_offset}" for e in entries), before_fsync=self._delay.apply)
