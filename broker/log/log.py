"""One partition's log (Kafka's ``Log`` / ``UnifiedLog``): appends, reads, truncation, flushes, retention.

Locking: one ``threading.Lock`` per log serializes every mutation (append, roll, truncate, retention, log start
offset). The segment list is copy-on-write, so a read takes the lock only to snapshot a few numbers and the
list, then ``pread``s outside it; segments deleted meanwhile keep their descriptors open for
``file.delete.delay.ms``. ``flush`` fsyncs outside the log lock too (under its own flush lock), so one fsync
covers every append made before it started: concurrent acks=all producers share fsyncs (group commit).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from pathlib import Path

from broker.log4j import Log4j, default_log4j
from broker.protocol.batch import (
    RecordBatchInfo,
    read_batch_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

from ._batch import check_record_framing, validate_batches
from ._lines import DEFAULT_LINE_VERSION, log_identity, log_start_offset_line
from ._loader import load_segments
from ._retention import (
    Predicate,
    deletable_prefix,
    log_start_breach,
    retention_ms_breach,
    retention_size_breach,
    size_messages,
    start_breach_message,
    time_messages,
)
from .checkpoint import CheckpointDelay, TopicPartition, fsync_dir
from .config import LogConfig
from .epoch_cache import LeaderEpochCache
from .errors import (
    LogError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from .results import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, AppendInfo, FetchData, LogStartOffsetIncrementReason
from .segment import LogSegment

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "AppendInfo",
    "FetchData",
    "Log",
    "LogStartOffsetIncrementReason",
    "wall_clock_ms",
]


def wall_clock_ms() -> int:
    """Milliseconds since the epoch (the default clock)."""
    return time.time_ns() // 1_000_000


class Log:
    """A partition directory ``<log.dir>/<topic>-<partition>`` and its segments (the broker gets them from
    :class:`~broker.log.manager.LogManager`; tests may build one directly)."""

    def __init__(
        self,
        directory: Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int | None = None,
        clean_shutdown: bool = False,
        clock: Callable[[], int] = wall_clock_ms,
        log4j: Log4j | None = None,
        epoch_checkpoint_delay: CheckpointDelay | None = None,
        flush_listener: Callable[[float], None] | None = None,
        line_version: str = DEFAULT_LINE_VERSION,
    ) -> None:
        """Open (creating if needed) and load the partition directory; see :mod:`broker.log._loader`."""
        started = time.monotonic()
        self.dir = directory
        self.topic_partition = topic_partition
        self.config = config
        self._clock = clock
        self._flush_listener = flush_listener  # gets each flush's duration in ms (LogFlushRateAndTimeMs)
        logs = log4j or default_log4j()
        self.line_version = line_version
        logger_name, ident = log_identity(line_version, str(topic_partition), str(directory.parent))
        self.logger = logs.get_logger(logger_name, ident)
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._dir_dirty = False
        directory.mkdir(parents=True, exist_ok=True)
        self.epoch_cache = LeaderEpochCache(directory, str(topic_partition), delay=epoch_checkpoint_delay, log4j=logs)
        result = load_segments(
            directory,
            config,
            recovery_point=recovery_point,
            clean_shutdown=clean_shutdown,
            now_ms=clock(),
            log=self.logger,
            segment_log=logs.get_logger("kafka.log.LogSegment"),
            on_batch=lambda b: self.epoch_cache.assign(b.partition_leader_epoch, b.base_offset),
        )
        segments = result.segments
        if not segments:
            segments = [self._new_segment(log_start_offset)]
        self._segments: list[LogSegment] = segments
        self._next_offset = segments[-1].next_offset
        self._log_start_offset = min(max(log_start_offset, segments[0].base_offset), self._next_offset)
        self._recovery_point = self._next_offset
        self._truncations = 0  # bumped by every truncation, so a flush racing one does not advance the recovery point
        self._high_watermark = self._log_start_offset
        self._high_watermark = self._clamp(high_watermark if high_watermark is not None else self._next_offset)
        self._last_flush_ms = clock()
        self._pending_close: list[tuple[int, LogSegment]] = []
        self._closed = False
        self.epoch_cache.truncate_from_end(self._next_offset)
        self.epoch_cache.clear_and_flush_earliest(self._log_start_offset)
        self.logger.info(
            f"Completed load of log with {len(segments)} segments, log start offset {self._log_start_offset} and "
            f"log end offset {self._next_offset} in {int((time.monotonic() - started) * 1000)} ms"
        )

    # -- offsets ------------------------------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record will get."""
        return self._next_offset

    @property
    def log_start_offset(self) -> int:
        """The first offset readable."""
        return self._log_start_offset

    @property
    def high_watermark(self) -> int:
        """The last committed offset + 1 (consumers read below it)."""
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        """Everything below this offset is fsynced."""
        return self._recovery_point

    @property
    def segments(self) -> list[LogSegment]:
        """A snapshot of the segments, oldest first."""
        return self._segments

    @property
    def size_bytes(self) -> int:
        """Total size of the segment files."""
        return sum(s.size for s in self._segments)

    def _clamp(self, offset: int) -> int:
        return min(max(offset, self._log_start_offset), self._next_offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark (clamped to [log start, log end]); returns the value set."""
        with self._lock:
            self._high_watermark = self._clamp(offset)
            return self._high_watermark

    # -- appends ------------------------------------------------------------------------------------------------
    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int, *, durable: bool = False
    ) -> AppendInfo:
        """Validate ``records``, assign offsets from the log end offset, stamp ``leader_epoch``, append.

        Args:
            records: one or more record batches v2 (a Produce partition's ``Records``).
            leader_epoch: the partition leader epoch, written into every batch.
            durable: fsync before returning (the Produce handler passes ``acks == -1``; see the package doc).

        Raises:
            CorruptRecordError: bad CRC, magic, or lengths (nothing is appended).
            RecordTooLargeError: a batch above ``max.message.bytes`` (nothing is appended).
            StorageError: the disk write failed.
        """
        batches = validate_batches(records, self.config.max_message_bytes)
        check_record_framing(records, batches)
        buf = bytearray(records)
        with self._lock:
            self._check_open()
            now = self._clock()
            offset = self._next_offset
            stamp = self.config.message_timestamp_type == "LogAppendTime"
            for info in batches:
                set_base_offset(buf, info.position, offset)
                set_partition_leader_epoch(buf, info.position, leader_epoch)
                if stamp:
                    set_log_append_time(buf, info.position, info.size, now)
                offset += info.last_offset_delta + 1
            patched = [read_batch_header(buf, info.position) for info in batches]
            result = self._append_locked(buf, patched, now, -1 if not stamp else now)
        self._after_append(durable, result.last_offset + 1)
        return result

    def append_as_follower(self, records: bytes | bytearray | memoryview, *, durable: bool = False) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets and leader epochs.

        Raises:
            CorruptRecordError, RecordTooLargeError: as :meth:`append_as_leader`.
            UnexpectedAppendOffsetError: the first offset is below the log end offset (truncate first) or the
                batches' offsets go backwards.
        """
        batches = validate_batches(records, max(self.config.max_message_bytes, 2**31 - 1))
        with self._lock:
            self._check_open()
            expected = self._next_offset
            for info in batches:
                if info.base_offset < expected:
                    raise UnexpectedAppendOffsetError(
                        f"Unexpected offset in append to {self.topic_partition}. First offset {info.base_offset} is "
                        f"less than the next offset {expected}. First 10 offsets in append: "
                        f"{[b.base_offset for b in batches[:10]]}, last offset in append: {batches[-1].last_offset}. "
                        f"Log start offset = {self._log_start_offset}",
                        first_offset=info.base_offset,
                        log_end_offset=self._next_offset,
                    )
                expected = info.next_offset
            result = self._append_locked(records, batches, self._clock(), -1)
        self._after_append(durable, result.last_offset + 1)
        return result

    def _append_locked(
        self, buf: bytes | bytearray | memoryview, batches: list[RecordBatchInfo], now: int, log_append_time: int
    ) -> AppendInfo:
        if len(buf) > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {len(buf)} bytes in append to partition {self.topic_partition} which exceeds "
                f"the maximum configured segment size of {self.config.segment_bytes}."
            )
        first, last = batches[0].base_offset, batches[-1].last_offset
        segment = self._segments[-1]
        newest = max(b.max_timestamp for b in batches)
        if segment.should_roll(len(buf), last, newest, self.config.segment_bytes, self.config.segment_ms, now):
            segment = self._roll(max(first, self._next_offset))
        for info in batches:
            self.epoch_cache.assign(info.partition_leader_epoch, info.base_offset)
        segment.append(buf, batches)
        self._next_offset = batches[-1].next_offset
        best = max(batches, key=lambda b: b.max_timestamp)
        return AppendInfo(
            first,
            last,
            log_append_time,
            self._log_start_offset,
            best.max_timestamp,
            best.last_offset,
            len(batches),
            last - first + 1,
            len(buf),
        )

    def _after_append(self, durable: bool, end: int) -> None:
        # Flush only up to this append's end: a concurrent flush that already covered it makes this a no-op
        # (group commit), instead of every caller chasing the ever-moving log end offset.
        if durable:
            self.flush(end)
        elif self._next_offset - self._recovery_point >= self.config.flush_messages:
            self.flush()

    def _new_segment(self, base_offset: int) -> LogSegment:
        self._dir_dirty = True  # the new file names reach the disk with the next flush's directory fsync
        return LogSegment(
            self.dir, base_offset, self.config.index_interval_bytes, self.config.segment_index_bytes, self._clock()
        )

    def _roll(self, new_base: int) -> LogSegment:
        started = time.monotonic()
        active = self._segments[-1]
        active.on_become_inactive()
        if active.size == 0 and active.base_offset == new_base:
            return active
        segment = self._new_segment(new_base)
        self._segments = [*self._segments, segment]
        self.logger.info(
            f"Rolled new log segment at offset {new_base} in {int((time.monotonic() - started) * 1000)} ms."
        )
        return segment

    def roll(self) -> None:
        """Start a new active segment at the log end offset (no-op when the active one is empty)."""
        with self._lock:
            self._check_open()
            if self._segments[-1].size > 0:
                self._roll(self._next_offset)

    # -- reads --------------------------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None, min_one_batch: bool = True) -> FetchData:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` and below ``max_offset``.

        Args:
            offset: the fetch offset.
            max_bytes: the size limit; exceeded only by the first batch when ``min_one_batch``.
            max_offset: exclusive upper bound (the high watermark for consumers); None = log end offset.
            min_one_batch: return the first batch even if it is larger than ``max_bytes``.

        Raises:
            OffsetOutOfRangeError: ``offset`` below the log start offset or above the log end offset.
        """
        # No lock: like Kafka's volatile nextOffsetMetadata, a few plain reads give a usable snapshot (the log end
        # offset moves only after its bytes are written; the segment list is replaced, never mutated), so a
        # fetch never waits behind an append stuck in a slow epoch-checkpoint fsync.
        self._check_open()
        end = self._next_offset
        start, hw = self._log_start_offset, self._high_watermark
        segments = self._segments
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(
                f"Received request for offset {offset} for partition {self.topic_partition}, but we only have log "
                f"segments in the range {start} to {end}.",
                offset=offset,
                log_start_offset=start,
                log_end_offset=end,
            )
        limit = end if max_offset is None else min(max_offset, end)
        empty = FetchData(b"", hw, start, end)
        if offset >= limit or max_bytes < 0:
            return empty
        first = max(bisect.bisect_right(segments, offset, key=lambda s: s.base_offset) - 1, 0)
        for segment in segments[first:]:
            if segment.base_offset >= limit:
                break
            if limit >= segment.next_offset:
                max_position = segment.size
            else:
                holding = segment.translate_offset(limit)
                max_position = holding.position if holding is not None else segment.size
            data = segment.read(offset, max_bytes, max_position, min_one_batch)
            if data is not None:
                return FetchData(data, hw, start, end)
        return empty

    def offset_for_timestamp(self, timestamp: int, max_offset: int | None = None) -> tuple[int, int] | None:
        """ListOffsets: ``(timestamp, offset)``; -2 = earliest, -1 = latest, else the first record whose
        timestamp is >= ``timestamp`` (None when there is none below ``max_offset``)."""
        self._check_open()
        end = self._next_offset
        start, segments = self._log_start_offset, self._segments
        limit = end if max_offset is None else min(max_offset, end)
        if timestamp == EARLIEST_TIMESTAMP:
            return -1, start
        if timestamp == LATEST_TIMESTAMP:
            return -1, limit
        for segment in segments:
            if segment.max_timestamp >= timestamp and segment.next_offset > start:
                found = segment.find_offset_by_timestamp(timestamp, start)
                if found is not None:
                    return found if found[1] < limit else None
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: ``(epoch, end offset)`` from the leader epoch cache."""
        return self.epoch_cache.end_offset_for(epoch, self._next_offset)

    # -- truncation ---------------------------------------------------------------------------------------------
    def truncate_to(self, target: int) -> bool:
        """Follower truncation: drop every offset >= ``target`` (whole batches); True if anything was removed."""
        if target < 0:
            raise ValueError(f"Cannot truncate partition {self.topic_partition} to a negative offset ({target}).")
        with self._lock:
            self._check_open()
            if target >= self._next_offset:
                self.logger.info(
                    f"Truncating to {target} has no effect as the largest offset in the log is {self._next_offset - 1}"
                )
                return False
            self.logger.info(f"Truncating to offset {target}")
            if target < self._segments[0].base_offset:
                self._truncate_fully_locked(target)
                return True
            doomed = [s for s in self._segments if s.base_offset > target]
            kept = [s for s in self._segments if s.base_offset <= target]
            self._retire(doomed)
            self._segments = kept
            kept[-1].truncate_to(target)
            self._next_offset = kept[-1].next_offset
            self._after_truncation()
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and restart the log, empty, at ``new_offset``."""
        with self._lock:
            self._check_open()
            self._truncate_fully_locked(new_offset)

    def _truncate_fully_locked(self, new_offset: int) -> None:
        self.logger.debug(f"Truncate and start at offset {new_offset}")
        self._retire(self._segments)
        segment = self._new_segment(new_offset)
        self._segments = [segment]
        self._next_offset = new_offset
        self._log_start_offset = new_offset
        self.epoch_cache.clear()
        self._after_truncation()

    def _after_truncation(self) -> None:
        end = self._next_offset
        self.epoch_cache.truncate_from_end(end)
        self._log_start_offset = min(self._log_start_offset, end)
        self._recovery_point = min(self._recovery_point, end)
        self._truncations += 1
        self._high_watermark = min(self._high_watermark, end)

    def _retire(self, segments: list[LogSegment]) -> None:
        """Unlink now, close after ``file.delete.delay.ms`` (readers may hold the segment)."""
        deadline = self._clock() + self.config.file_delete_delay_ms
        for segment in segments:
            segment.delete_files()
            self._pending_close.append((deadline, segment))

    def close_retired_segments(self, now_ms: int | None = None) -> int:
        """Close deleted segments whose delay has passed; returns how many."""
        now = self._clock() if now_ms is None else now_ms
        with self._lock:
            due = [s for deadline, s in self._pending_close if deadline <= now]
            self._pending_close = [(d, s) for d, s in self._pending_close if d > now]
        for segment in due:
            segment.close()
        return len(due)

    # -- log start offset and retention -------------------------------------------------------------------------
    def increment_log_start_offset(self, new_offset: int, reason: LogStartOffsetIncrementReason) -> bool:
        """Move the log start offset forward (DeleteRecords, a follower adopting the leader's, retention).

        Raises:
            OffsetOutOfRangeError: ``new_offset`` above the high watermark.
        """
        with self._lock:
            self._check_open()
            return self._increment_log_start_locked(new_offset, reason)

    def _increment_log_start_locked(self, new_offset: int, reason: LogStartOffsetIncrementReason) -> bool:
        if new_offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {new_offset} of partition {self.topic_partition} since "
                f"it is larger than the high watermark {self._high_watermark}",
                offset=new_offset,
                log_start_offset=self._log_start_offset,
                log_end_offset=self._next_offset,
            )
        if new_offset <= self._log_start_offset:
            return False
        self._log_start_offset = new_offset
        self.logger.info(
            log_start_offset_line(
                self.line_version, str(self.topic_partition), str(self.dir.parent), new_offset, reason.value
            )
        )
        self.epoch_cache.clear_and_flush_earliest(new_offset)
        self._recovery_point = max(self._recovery_point, min(new_offset, self._next_offset))
        return True

    def delete_old_segments(self) -> int:
        """Retention: delete whole old segments breaching ``retention.ms``, ``retention.bytes`` or below the log
        start offset (never one holding offsets at or above the high watermark); returns how many."""
        now = self._clock()
        cfg = self.config
        with self._lock:
            self._check_open()
            deleted = 0
            if cfg.retention_ms >= 0:
                deleted += self._delete_where(
                    retention_ms_breach(now, cfg.retention_ms), lambda doomed: time_messages(doomed, cfg.retention_ms)
                )
            if cfg.retention_bytes >= 0:
                total = self.size_bytes
                deleted += self._delete_where(
                    retention_size_breach(total, cfg.retention_bytes),
                    lambda doomed: size_messages(doomed, total, cfg.retention_bytes),
                )
            deleted += self._delete_where(
                log_start_breach(self._log_start_offset),
                lambda doomed: start_breach_message(doomed, self._log_start_offset),
            )
        self.close_retired_segments(now)
        return deleted

    def _delete_where(self, predicate: Predicate, messages: Callable[[list[LogSegment]], list[str]]) -> int:
        doomed = deletable_prefix(self._segments, self._next_offset, self._high_watermark, predicate)
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self._roll(self._next_offset)  # a log always keeps one segment: start the next before deleting all
        for line in messages(doomed):
            self.logger.info(line)
        kept = [s for s in self._segments if s not in doomed]
        self._retire(doomed)
        self._segments = kept
        self._increment_log_start_locked(kept[0].base_offset, LogStartOffsetIncrementReason.SEGMENT_DELETION)
        return len(doomed)

    # -- durability ---------------------------------------------------------------------------------------------
    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets below ``offset`` (default: the log end offset) and advance the
        recovery point. Runs outside the log lock; one call covers every append made before it."""
        with self._flush_lock:
            with self._lock:
                self._check_open()
                target = self._next_offset if offset is None else min(offset, self._next_offset)
                if target <= self._recovery_point:
                    return
                point, truncations = self._recovery_point, self._truncations
                dirty = [
                    s
                    for i, s in enumerate(self._segments)
                    if (self._segments[i + 1].base_offset if i + 1 < len(self._segments) else target + 1) > point
                    and s.base_offset < target
                ]
            if self.logger.is_debug_enabled():
                self.logger.debug(
                    f"Flushing log up to offset {target}, last flushed: {self._last_flush_ms},  "
                    f"current time: {self._clock()}, unflushed: {target - point}"
                )
            active = self._segments[-1]
            started = time.monotonic()
            for segment in dirty:
                # The active segment is always re-scanned by recovery (its index rebuilt), so only its data
                # needs the fsync; a rolled segment may be trusted after a crash, so its indexes are synced too.
                segment.flush(indexes=segment is not active)
            if self._dir_dirty:
                self._dir_dirty = False
                fsync_dir(self.dir)
            if self._flush_listener is not None:
                self._flush_listener((time.monotonic() - started) * 1000.0)
            with self._lock:
                if truncations == self._truncations:
                    self._recovery_point = max(self._recovery_point, target)
                self._last_flush_ms = self._clock()

    def flush_if_due(self, now_ms: int | None = None) -> bool:
        """The ``flush.ms`` policy: flush when the last flush is older than ``flush.ms``; True if it flushed."""
        now = self._clock() if now_ms is None else now_ms
        if self._next_offset > self._recovery_point and now - self._last_flush_ms >= self.config.flush_ms:
            self.flush()
            return True
        return False

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"The log for partition {self.topic_partition} is closed")

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def close(self, *, flush: bool = True) -> None:
        """Flush (unless told not to) and close every file; later calls raise :class:`StorageError`."""
        if self._closed:
            return
        if flush:
            try:
                self.flush()
                self._segments[-1].flush()  # the active segment's indexes too: a clean shutdown trusts them
            except LogError:
                pass
        with self._lock:
            self._closed = True
            for segment in self._segments:
                segment.on_become_inactive()
                segment.close()
            for _deadline, segment in self._pending_close:
                segment.close()
            self._pending_close = []
